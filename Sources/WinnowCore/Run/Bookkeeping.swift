import Foundation

/// winnow's own tables (docs/reference.md section 4). Never deduplicated, inspected or migrated. Each
/// dialect spells their DDL (``SQLDialect/bookkeepingSchema``); this names and installs them.
///
/// - `winnow_runs`: one row per `run` or `restore`, with its status and counts, updated in the
///   same transaction as each batch so that the counts always match what is committed.
/// - `winnow_journal`: deleted rows and before-images (`op` = `delete` or `update`), each an exact
///   image of the columns listed by its `shape`.
/// - `winnow_journal_shapes`: the column lists of journal images, stored once per table shape.
/// - `winnow_run_rules`: what each rule of a run did, and its key columns (`winnow show`).
/// - `winnow_run_groups`: per loser deleted by an archiving run, the winner it was merged into
///   (`winnow show` lists the groups from it and the journal).
/// - `winnow_taken_losers` (SQLite): losers whose values a merge took into their winner ahead
///   of their deletion; no merge takes them again (emptied when their rule is done). Earlier
///   releases kept them in `winnow_merged_losers`, read until it is empty and then dropped.
/// - `winnow_given_merges` (SQLite): the merged values of losers a stretch of merges deleted
///   before their winner's merge; a run that stops before that merge leaves them to the next,
///   which merges them into their winners first (emptied once their winners hold them).
/// - `winnow_moved_ahead` (SQLite): children re-pointed ahead of their loser's deletion, each
///   with its loser and winner; the next run of a killed one moves back those whose loser is no
///   longer that winner's (emptied when their rule is done).
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

    /// Columns added to the bookkeeping tables after they were first released: `install` adds
    /// the ones a database written by an earlier winnow lacks, and readers select NULL for
    /// them there (a read-only command never changes the database).
    ///
    /// - `winnow_runs.reinserted`, `.reverted`: what a restore put back (NULL for a run).
    /// - `winnow_runs.pruned_at`: when the run's journal was pruned (it can no longer be restored).
    /// - `winnow_run_rules.key_columns`: the rule's key columns, a JSON array.
    /// - `winnow_journal.rule`: the rule whose batch journaled the entry.
    public static let addedColumns: [(table: String, column: String, definition: String)] = [
        ("winnow_runs", "reinserted", "BIGINT"), ("winnow_runs", "reverted", "BIGINT"), ("winnow_runs", "pruned_at", "TEXT"),
        ("winnow_run_rules", "key_columns", "TEXT"), ("winnow_journal", "rule", "BIGINT"),
    ]

    /// Creates the bookkeeping tables that are missing and adds the columns an earlier
    /// winnow's tables lack. Called inside a write transaction. Where everything is in place it
    /// takes no lock on winnow's tables that a reader or writer of them would wait for, or make
    /// it wait (``SchemaStatement``): a run starting beside `pg_dump`, `winnow show` or
    /// another run's batches does not queue behind them.
    public static func install(_ session: any DatabaseSession) throws {
        for statement in session.dialect.bookkeepingSchema {
            if let probe = statement.neededIf, try session.row(probe) == nil { continue }
            try session.execute(statement.sql)
        }
        for table in Set(addedColumns.map(\.table)) {
            let present = try columns(of: table, session)
            for added in addedColumns where added.table == table && !present.contains(added.column) {
                try session.execute(
                    "ALTER TABLE \(session.dialect.bookkeeping(table)) ADD COLUMN \(added.column.sqlIdentifier) \(added.definition)")
            }
        }
    }

    /// The columns one of winnow's tables has (empty when it is missing).
    public static func columns(of table: String, _ session: any DatabaseSession) throws -> Set<String> {
        let query = session.dialect.columnNames(ofBookkeeping: table)
        return Set(try session.rows(query.sql, query.arguments).compactMap { $0.values.first?.string })
    }

    /// `column` where `present` has it, else NULL (for a SELECT list over an older table).
    public static func column(_ column: String, in present: Set<String>) -> String {
        present.contains(column) ? column.sqlIdentifier : "NULL"
    }

    /// Whether the database has winnow's tables (a read-only command must not create them).
    public static func isInstalled(_ session: any DatabaseSession) throws -> Bool {
        try session.tableExists("winnow_runs")
    }

    /// `date` in UTC as `2026-11-27T04:30:34.195Z` (ISO 8601 with milliseconds, truncated):
    /// every timestamp winnow stores, so that they compare as text. Formatted by hand: a
    /// Foundation date formatter loads time zone and calendar data first, a few milliseconds
    /// of every run's start.
    public static func timestamp(_ date: Date = Date()) -> String {
        let seconds = date.timeIntervalSince1970
        let whole = seconds.rounded(.down)
        var time = time_t(whole)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "1970-01-01T00:00:00.000Z" }
        let millis = min(999, Int((seconds - whole) * 1000))
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(Int(parts.tm_year) + 1900, 4))-\(padded(Int(parts.tm_mon) + 1, 2))-\(padded(Int(parts.tm_mday), 2))"
            + "T\(padded(Int(parts.tm_hour), 2)):\(padded(Int(parts.tm_min), 2)):\(padded(Int(parts.tm_sec), 2)).\(padded(millis, 3))Z"
    }
}
