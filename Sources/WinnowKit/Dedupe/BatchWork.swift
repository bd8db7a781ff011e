import Foundation
import GRDB

/// Counts of what a run did (or, for `plan` and `check`, would do).
public struct Counts: Sendable, Equatable, Codable {
    /// Duplicate groups resolved.
    public var groups = 0
    /// Losers deleted from the rules' tables.
    public var deleted = 0
    /// Winners changed by `merge`.
    public var updated = 0
    /// Child rows re-pointed from a loser to its winner.
    public var repointed = 0
    /// Child rows deleted because re-pointing made them duplicates (link tables).
    public var childrenDeleted = 0
    /// Rows whose `hash_column` was filled or corrected.
    public var hashed = 0
    /// Losers left alone because a concurrent write made them no longer a duplicate of their winner.
    public var skipped = 0
    /// Committed transactions (batches).
    public var batches = 0

    public init() {}

    public static func + (lhs: Counts, rhs: Counts) -> Counts {
        var c = lhs
        c.groups += rhs.groups
        c.deleted += rhs.deleted
        c.updated += rhs.updated
        c.repointed += rhs.repointed
        c.childrenDeleted += rhs.childrenDeleted
        c.hashed += rhs.hashed
        c.skipped += rhs.skipped
        c.batches += rhs.batches
        return c
    }

    public var changedAnything: Bool { deleted + updated + repointed + childrenDeleted + hashed > 0 }
}

/// One duplicate group as shown by `plan`.
public struct GroupSample: Sendable, Codable, Equatable {
    public var key: [String]
    public var winner: Int64
    public var losers: [Int64]
}

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
    var losers: [Int64] = []
    var skipped = 0
    /// Winners changed by `merge`: their new values are in `temp.winnow_merged`.
    var merges = 0
    /// The distinct sets of merge columns (indexes into the rule's) those winners change.
    var mergeColumnSets: [[Int]] = []
    /// Re-pointing decided row by row (paths whose child has a unique key on the reference).
    var repoints: [Repoint] = []
    var childDeletes: [ChildDelete] = []
    /// Re-pointing as a set: per path, how many of its rows `temp.winnow_moves` holds.
    var moved: [(path: Int, count: Int)] = []
    /// Whether the writer must check, before the losers go, that no child row still points at
    /// one (the batch runs with SQLite's foreign-key enforcement off).
    var checksReferences = false
    var samples: [GroupSample] = []

    var counts: Counts {
        var c = Counts()
        c.groups = groups
        c.deleted = losers.count
        c.updated = merges
        c.repointed = repoints.count + moved.reduce(0) { $0 + $1.count }
        c.childrenDeleted = childDeletes.count
        c.skipped = skipped
        c.batches = 1
        return c
    }
}

/// Adapts the batch size so that one write transaction stays under `max_transaction_ms`.
struct BatchSizer {
    let configured: Int
    let limit: TimeInterval
    private(set) var current: Int

    /// `start`: the first size, when smaller than `configured` (row-range loops start small and
    /// double while fast, so the first transaction is never the long one).
    init(configured: Int, maxTransactionMilliseconds: Int, start: Int? = nil) {
        self.configured = max(1, configured)
        self.limit = Double(maxTransactionMilliseconds) / 1000
        self.current = max(1, min(self.configured, start ?? self.configured))
    }

    /// The first size of loops over row ranges (copies, hashes, emptying a table).
    static let rowRangeStart = 1000

    /// Feeds back how long a transaction of `size` units took.
    mutating func record(size: Int, seconds: TimeInterval) {
        guard size > 0 else { return }
        if seconds > limit, current > 1 {
            let fitted = Int(Double(size) * limit / max(seconds, 1e-6) * 0.8)
            current = max(1, min(current - 1, fitted))
        } else if seconds < limit / 4, current < configured {
            current = min(configured, current * 2)
        }
    }
}
