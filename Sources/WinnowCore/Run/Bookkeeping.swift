import Foundation

/// winnow's own tables (CONTRACT section 4). Never deduplicated, inspected or migrated. Each
/// dialect spells their DDL (``SQLDialect/bookkeepingSchema``); this names and installs them.
///
/// - `winnow_runs`: one row per `run` or `restore`, with its status and counts, updated in the
///   same transaction as each batch so that the counts always match what is committed.
/// - `winnow_journal`: deleted rows and before-images (`op` = `delete` or `update`), each an exact
///   image of the columns listed by its `shape`.
/// - `winnow_journal_shapes`: the column lists of journal images, stored once per table shape.
/// - `winnow_lock`: the run lock (at most one row).
public enum Bookkeeping {
    public static let formatVersion = 1

    /// The prefix of every table winnow owns.
    public static let tablePrefix = "winnow_"

    /// Whether a table name belongs to winnow's bookkeeping (ASCII case-insensitively, as
    /// SQLite compares names).
    public static func isWinnowTable(_ name: String) -> Bool {
        name.utf8.count >= 7 && name.prefix(7).lowercased() == tablePrefix
    }

    /// Creates the bookkeeping tables that are missing. Called inside a write transaction.
    public static func install(_ session: any DatabaseSession) throws {
        for statement in session.dialect.bookkeepingSchema { try session.execute(statement) }
    }

    /// Whether the database has winnow's tables (a read-only command must not create them).
    public static func isInstalled(_ session: any DatabaseSession) throws -> Bool {
        try session.tableExists("winnow_runs")
    }

    public static func timestamp(_ date: Date = Date()) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
