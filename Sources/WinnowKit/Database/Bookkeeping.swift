import Foundation
import GRDB

/// winnow's own tables (CONTRACT section 4). Never deduplicated, inspected or migrated.
///
/// - `winnow_runs`: one row per `run` or `restore`, with its status and counts, updated in the
///   same transaction as each batch so that the counts always match what is committed.
/// - `winnow_journal`: deleted rows and before-images (`op` = `delete` or `update`), each an exact
///   ``ValueCodec`` image of the columns listed by its `shape`.
/// - `winnow_journal_shapes`: the column lists of journal images, stored once per table shape.
/// - `winnow_lock`: the run lock (at most one row).
public enum Bookkeeping {
    public static let formatVersion = 1

    public static func install(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE IF NOT EXISTS winnow_runs (
                id INTEGER PRIMARY KEY,
                command TEXT NOT NULL,
                job TEXT,
                started_at TEXT NOT NULL,
                finished_at TEXT,
                status TEXT NOT NULL,
                archive INTEGER NOT NULL DEFAULT 0,
                groups INTEGER NOT NULL DEFAULT 0,
                deleted INTEGER NOT NULL DEFAULT 0,
                updated INTEGER NOT NULL DEFAULT 0,
                repointed INTEGER NOT NULL DEFAULT 0,
                children_deleted INTEGER NOT NULL DEFAULT 0,
                hashed INTEGER NOT NULL DEFAULT 0,
                skipped INTEGER NOT NULL DEFAULT 0,
                batches INTEGER NOT NULL DEFAULT 0,
                migration_steps INTEGER NOT NULL DEFAULT 0,
                seconds REAL NOT NULL DEFAULT 0,
                restores_run INTEGER,
                restored_by INTEGER,
                message TEXT
            );
            CREATE TABLE IF NOT EXISTS winnow_journal_shapes (
                id INTEGER PRIMARY KEY,
                tbl TEXT NOT NULL,
                columns TEXT NOT NULL,
                UNIQUE (tbl, columns)
            );
            CREATE TABLE IF NOT EXISTS winnow_journal (
                id INTEGER PRIMARY KEY,
                run_id INTEGER NOT NULL,
                batch INTEGER NOT NULL,
                op TEXT NOT NULL CHECK (op IN ('delete', 'update')),
                shape_id INTEGER NOT NULL,
                rid INTEGER NOT NULL,
                image BLOB NOT NULL
            );
            CREATE INDEX IF NOT EXISTS winnow_journal_by_run ON winnow_journal (run_id, id);
            CREATE TABLE IF NOT EXISTS winnow_lock (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                run_id INTEGER,
                pid INTEGER NOT NULL,
                process_start TEXT,
                host TEXT NOT NULL,
                acquired_at TEXT NOT NULL
            );
            """)
    }

    /// Whether the database has winnow's tables (a read-only command must not create them).
    public static func isInstalled(_ db: Database) throws -> Bool {
        try db.tableExists("winnow_runs")
    }

    /// The id of a journal shape (table + column list), created on first use.
    static func shapeID(_ db: Database, table: String, columns: [String]) throws -> Int64 {
        let json = String(decoding: try JSONEncoder().encode(columns), as: UTF8.self)
        try db.execute(sql: "INSERT OR IGNORE INTO winnow_journal_shapes (tbl, columns) VALUES (?, ?)", arguments: [table, json])
        guard let id = try Int64.fetchOne(db, sql: "SELECT id FROM winnow_journal_shapes WHERE tbl = ? AND columns = ?",
                                          arguments: [table, json]) else {
            throw WinnowError.internal("journal shape for \(table) not found after insert")
        }
        return id
    }

    static func timestamp(_ date: Date = Date()) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
