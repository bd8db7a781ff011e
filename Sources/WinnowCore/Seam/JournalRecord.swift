import Foundation

/// One entry of `winnow_journal`, as `winnow show` reads it: a deleted row or the
/// before-image of a changed one, its values as SQL literals (what SQLite's `quote()` gives).
public struct JournalRecord: Sendable {
    public enum Operation: String, Sendable {
        case delete, update
    }

    public var batch: Int
    /// The rule whose batch wrote it (nil: journaled by a winnow that did not record it).
    public var rule: Int?
    public var operation: Operation
    public var table: String
    /// The row (for an update: as it is after the change).
    public var key: RowKey
    public var columns: [String]
    /// The row as the journal keeps it, column by column.
    public var before: [String]
    /// An update's row as it is in the table now (what `restore` would overwrite); nil when
    /// that row, its table or one of its columns is gone, and for a delete.
    public var now: [String]?

    public init(
        batch: Int, rule: Int?, operation: Operation, table: String, key: RowKey, columns: [String], before: [String], now: [String]? = nil
    ) {
        self.batch = batch
        self.rule = rule
        self.operation = operation
        self.table = table
        self.key = key
        self.columns = columns
        self.before = before
        self.now = now
    }
}
