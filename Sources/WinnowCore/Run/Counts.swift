import Foundation

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
