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

    struct Merge {
        var winner: Int64
        var columns: [String]
        var values: [DatabaseValue]
    }

    var number: Int
    var groups = 0
    var losers: [Int64] = []
    var skipped = 0
    var merges: [Merge] = []
    var repoints: [Repoint] = []
    var childDeletes: [ChildDelete] = []
    var samples: [GroupSample] = []

    var counts: Counts {
        var c = Counts()
        c.groups = groups
        c.deleted = losers.count
        c.updated = merges.count
        c.repointed = repoints.count
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

    init(configured: Int, maxTransactionMilliseconds: Int) {
        self.configured = max(1, configured)
        self.limit = Double(maxTransactionMilliseconds) / 1000
        self.current = self.configured
    }

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
