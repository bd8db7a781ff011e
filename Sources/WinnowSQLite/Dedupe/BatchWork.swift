import Foundation
import WinnowCore
import GRDB

/// Everything one batch will change, computed by reading only. The ``BatchWriter`` applies it;
/// a dry run simply does not.
struct BatchWork {
    struct Repoint {
        var path: Int
        var childRowID: Int64
        var values: [DatabaseValue]
    }

    struct ChildDelete {
        var path: Int
        var childRowID: Int64
    }

    var number: Int
    var groups = 0
    /// Losers the batch deletes (all of `temp.winnow_batch`).
    var deleted = 0
    var skipped = 0
    /// Winners changed by `merge`: their new values are in `temp.winnow_merged`.
    var merges = 0
    /// The distinct sets of merge columns (indexes into the rule's) those winners change.
    var mergeColumnSets: [[Int]] = []
    /// Whether the merges go ahead of their losers' deletion (``MergeAheadBatches``): the
    /// losers they take are recorded, so that no merge takes them again.
    var recordsTakenLosers = false
    /// The values of the losers the transaction deletes before their winner's merge, merged by
    /// winner and packed (``GivenMergesRecord``): recorded in the same transaction.
    var given: [UInt8]?
    /// Losers recorded as taken by their winner, packed (``TakenLosersRecord``), where the
    /// transaction merges values kept for them into it
    /// (``DedupeExecutor/settleGivenMerges(_:state:batchNumber:totals:)``).
    var taken: [UInt8]?
    /// Whether every merge value read for it was an integer or NULL (merge decisions read the
    /// whole queue: ``DedupeExecutor/givesAhead(_:)``).
    var integersOnly = true
    /// Re-pointing decided row by row (paths whose child has a unique key on the reference).
    var repoints: [Repoint] = []
    var childDeletes: [ChildDelete] = []
    /// Re-pointing as a set: per path, how many of its rows `temp.winnow_moves` holds.
    var moved: [(path: Int, count: Int)] = []
    /// Where the moves are instead the path's rows of the record of the moves ahead
    /// (`temp.winnow_ahead`) for child rows in `(after, upTo]`: a stretch of children that
    /// applies them from there (``AheadBatches``; only where the rule does not archive).
    var movedAhead: (after: Int64, upTo: Int64)?
    /// Whether the writer must check, before the losers go, that no child row still points at
    /// one (the batch runs with SQLite's foreign-key enforcement off).
    var checksReferences = false
    var samples: [GroupSample] = []

    /// Adds what `piece`, applied in the same transaction as this batch, changed.
    mutating func absorb(_ piece: BatchWork) {
        groups += piece.groups
        deleted += piece.deleted
        skipped += piece.skipped
        merges += piece.merges
        repoints += piece.repoints
        childDeletes += piece.childDeletes
        moved += piece.moved
        samples += piece.samples
    }

    var counts: Counts {
        var c = Counts()
        c.groups = groups
        c.deleted = deleted
        c.updated = merges
        c.repointed = repoints.count + moved.reduce(0) { $0 + $1.count }
        c.childrenDeleted = childDeletes.count
        c.skipped = skipped
        c.batches = 1
        return c
    }
}
