import Foundation
import GRDB
import WinnowCore

/// Applies a rule's merges ahead of the deletions, in stretches of the winners' rowids, so that
/// the batches after it can delete the losers in stretches of theirs (``DedupeExecutor/filesByPosition``).
/// Batches by group would update a few hundred winners and delete their losers all over the
/// table in each transaction, and so rewrite most of its pages at every commit when the
/// duplicates are scattered, as real ones are; here every page is written about once for the
/// winners and once for the losers.
///
/// Every group's merge is decided once, over all its rows as found, into `temp.winnow_decided`
/// (``DedupeExecutor/mergeAhead(_:state:losers:checksReferences:batchNumber:totals:samples:)``); each stretch moves its part into `temp.winnow_merged`
/// and the writer applies it like a batch's merges (journaled when the rule archives), and
/// records the losers the merge took (`winnow_merged_losers`) in the same transaction. A merge
/// never takes a recorded loser again: neither a batch of this run that settles a group again
/// after another connection's commit, nor a run that finishes the job after this one was
/// killed. Only while no other connection has committed since the discovery (checked inside
/// each transaction; the stretch then stops the loop, and the batches settle the remaining
/// groups whole, as they are then).
///
/// The same transaction then deletes, as a batch would (``DedupeExecutor/read(batch:after:upTo:sql:state:wantSamples:takenUpTo:)``),
/// the losers in the stretch's rowids whose winner's merge has been applied: this stretch's
/// or an earlier one's. The stretch has just written those pages for its winners, and a
/// loser whose values its winner holds is deleted without merging it again, whenever that
/// happens (also by a run that finishes the job after this one was killed), so no loser's
/// values need keeping. Only the losers whose winner lies in a later stretch wait for the
/// batches after the stretches; the last stretch takes every loser after it too, and every
/// loser of a winner after its last (those winners' merges change nothing).
struct MergeAheadBatches: BatchSource {
    let executor: DedupeExecutor
    let sql: BatchStatements
    /// `PRAGMA data_version` when the losers were found.
    let foundAt: Int64
    /// The sets of merge columns the decisions change (every stretch updates by each).
    let columnSets: [[Int]]
    /// What the batches carry from one to the next (the deletions read through it).
    var state: DedupeExecutor.BatchState
    /// Whether the deletions check the references they touch (foreign-key enforcement is off).
    let checksReferences: Bool

    init(
        executor: DedupeExecutor, sql: BatchStatements, foundAt: Int64, columnSets: [[Int]], state: DedupeExecutor.BatchState,
        checksReferences: Bool
    ) {
        self.executor = executor
        self.sql = sql
        self.foundAt = foundAt
        self.columnSets = columnSets
        self.state = state
        // The stretch's losers are read after their winners' merges: nothing is merged again.
        self.state.mergedAhead = true
        self.checksReferences = checksReferences
    }

    private var db: Database { executor.db }
    var writes: Bool { executor.writer.writes }
    var start: Int64 { .min }

    func nextBound(after: Int64, size: Int) throws -> Int64? {
        return try Int64.fetchOne(db.cachedStatement(sql: sql.nextDecided), arguments: [after, size])
    }

    mutating func apply(_ bounds: BatchBounds, number: Int, totals: Counts, wantSamples: Bool) throws -> BatchOutcome? {
        let (executor, sql, foundAt, columnSets, checksReferences) = (executor, sql, foundAt, columnSets, checksReferences)
        // The last stretch deletes the losers after its last winner too, and those of the
        // winners after it (no merge of theirs changes anything: none was decided).
        let last = try nextBound(after: bounds.upTo, size: 1) == nil
        let losersUpTo = last ? Int64.max : bounds.upTo
        let takenUpTo = last ? Int64.max : bounds.upTo
        var state = self.state
        defer { self.state = state }
        let applied = try executor.writer.transaction(db) { () -> (merged: BatchWork, deleted: BatchWork)? in
            let db = executor.db
            guard try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA main.data_version")) == foundAt else { return nil }
            try db.cachedStatement(sql: sql.clearMerged).execute()
            try db.cachedStatement(sql: sql.stageDecided).execute(arguments: [bounds.after, bounds.upTo])
            var merged = BatchWork(number: number)
            merged.merges = db.changesCount
            merged.mergeColumnSets = columnSets
            merged.recordsTakenLosers = true
            if merged.merges > 0 { try executor.writer.apply(merged, rule: executor.rule, sql: sql, db: db) }
            var deleted = try executor.read(
                batch: number, after: bounds.after, upTo: losersUpTo, sql: sql, state: &state, wantSamples: wantSamples,
                takenUpTo: takenUpTo)
            deleted.checksReferences = checksReferences
            if deleted.deleted > 0 || !deleted.moved.isEmpty {
                try executor.writer.apply(deleted, rule: executor.rule, sql: sql, db: db)
            }
            try db.cachedStatement(sql: sql.forgetQueuedTaken).execute(arguments: [bounds.after, losersUpTo, takenUpTo])
            guard merged.merges > 0 || deleted.deleted > 0 else { return (merged, deleted) }
            try executor.writer.recordProgress(totals + Self.counts(merged, deleted), db: db)
            return (merged, deleted)
        }
        guard let (merged, deleted) = applied else { return nil }
        return BatchOutcome(
            counts: Self.counts(merged, deleted), units: bounds.size, done: deleted.deleted + deleted.skipped,
            samples: deleted.samples, isBatch: merged.merges > 0 || deleted.deleted > 0)
    }

    /// One stretch's counts: its merges and its deletions, as one batch.
    static func counts(_ merged: BatchWork, _ deleted: BatchWork) -> Counts {
        var counts = merged.counts + deleted.counts
        counts.batches = 1
        return counts
    }
}
