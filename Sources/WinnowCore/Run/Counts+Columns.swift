import Foundation

/// Counts as `winnow_runs` and `winnow_run_rules` store them: one column each, in one order.
extension Counts {
    /// The count columns, in the order of ``columnValues`` and ``init(_:from:)``.
    public static let columns = ["groups", "deleted", "updated", "repointed", "children_deleted", "hashed", "skipped", "batches"]

    /// The values of ``columns``, in order.
    public var columnValues: [SQLValue] {
        [groups, deleted, updated, repointed, childrenDeleted, hashed, skipped, batches].map(SQLValue.init)
    }

    /// Counts read from ``columns`` selected at `offset` of `row`.
    public init(_ row: SQLRow, from offset: Int) throws {
        self.init()
        groups = try row.int(offset)
        deleted = try row.int(offset + 1)
        updated = try row.int(offset + 2)
        repointed = try row.int(offset + 3)
        childrenDeleted = try row.int(offset + 4)
        hashed = try row.int(offset + 5)
        skipped = try row.int(offset + 6)
        batches = try row.int(offset + 7)
    }
}
