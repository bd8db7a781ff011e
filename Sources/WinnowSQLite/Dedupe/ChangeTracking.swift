import Foundation
import WinnowCore
import GRDB

/// Change tracking for `incremental: true` rules.
///
/// Three small triggers on the rule's table (`winnow_track_*`) record in `winnow_changes` the
/// rowid of every inserted row and of every row whose key columns (or hash column) change. An
/// incremental run then looks up, through an index, only the keys of those rows: after a run the
/// table has no duplicates under the rule, deletes cannot create any, and every insert or key
/// change is in the log, so this finds exactly what a full run would. Until the triggers have been
/// in place since a completed run, a run is a full one (and installs them).
enum ChangeTracking {
    static func install(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS winnow_changes (id INTEGER PRIMARY KEY, tbl TEXT NOT NULL, rid INTEGER NOT NULL);
                CREATE INDEX IF NOT EXISTS winnow_changes_by_table ON winnow_changes (tbl, id);
                CREATE TABLE IF NOT EXISTS winnow_tracking (tbl TEXT PRIMARY KEY, columns TEXT NOT NULL, since_run INTEGER, installed_at TEXT NOT NULL);
                """)
    }

    static func triggerNames(_ table: String) -> [String] {
        ["winnow_track_insert_\(table)", "winnow_track_update_\(table)"]
    }

    static func literal(_ text: String) -> String { SQLiteDialect().literal(text) }

    /// Whether the table's changes have been tracked since a completed run, for these columns.
    static func isTracking(_ db: Database, rule: CompiledRule) throws -> Bool {
        guard try db.tableExists("winnow_tracking") else { return false }
        guard let row = try Row.fetchOne(db, sql: "SELECT columns, since_run FROM winnow_tracking WHERE tbl = ?", arguments: [rule.table]),
            (row[0] as String) == columnsKey(rule), let since: Int64 = row[1]
        else { return false }
        let triggers =
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM main.sqlite_master WHERE type = 'trigger' AND name IN (?, ?)",
                arguments: StatementArguments(triggerNames(rule.table))) ?? 0
        guard triggers == 2 else { return false }
        return try Bool.fetchOne(
            db, sql: "SELECT 1 FROM winnow_runs WHERE id = ? AND status = ?",
            arguments: [since, RunStatus.completed.rawValue]) ?? false
    }

    /// The key columns: a stored hash derives from them (and winnow's own hash writes must not
    /// log every row).
    static func trackedColumns(_ rule: CompiledRule) -> [String] { rule.keyColumns }

    static func columnsKey(_ rule: CompiledRule) -> String { trackedColumns(rule).joined(separator: "\u{1F}") }

    /// Installs (or renews) the triggers; `since_run` is set when this run completes.
    static func start(_ db: Database, rule: CompiledRule) throws {
        try db.writeTransaction {
            try install(db)
            try stop(db, table: rule.table)
            let t = rule.table.sqlIdentifier
            let names = triggerNames(rule.table)
            let rowid = "NEW.\(rule.rowID)"
            try db.execute(
                sql: """
                    CREATE TRIGGER main.\(names[0].sqlIdentifier) AFTER INSERT ON \(t) BEGIN
                        INSERT INTO winnow_changes (tbl, rid) VALUES (\(literal(rule.table)), \(rowid)); END;
                    CREATE TRIGGER main.\(names[1].sqlIdentifier) AFTER UPDATE OF \(trackedColumns(rule).map(\.sqlIdentifier).joined(separator: ", ")) ON \(t) BEGIN
                        INSERT INTO winnow_changes (tbl, rid) VALUES (\(literal(rule.table)), \(rowid)); END;
                    """)
            try db.execute(
                sql: "INSERT INTO winnow_tracking (tbl, columns, since_run, installed_at) VALUES (?, ?, NULL, ?)",
                arguments: [rule.table, columnsKey(rule), Bookkeeping.timestamp()])
        }
    }

    /// Marks the tracking as complete up to this run.
    static func completed(_ db: Database, table: String, runID: Int64) throws {
        try db.execute(sql: "UPDATE winnow_tracking SET since_run = ? WHERE tbl = ?", arguments: [runID, table])
    }

    /// Removes a table's triggers and its log (a rule that no longer says incremental).
    static func stop(_ db: Database, table: String) throws {
        for name in triggerNames(table) { try db.execute(sql: "DROP TRIGGER IF EXISTS main.\(name.sqlIdentifier)") }
        if try db.tableExists("winnow_tracking") {
            try db.execute(sql: "DELETE FROM winnow_tracking WHERE tbl = ?", arguments: [table])
            try db.execute(sql: "DELETE FROM winnow_changes WHERE tbl = ?", arguments: [table])
        }
    }

    static func isInstalled(_ db: Database, table: String) throws -> Bool {
        try
            (Int.fetchOne(
                db, sql: "SELECT count(*) FROM main.sqlite_master WHERE type = 'trigger' AND name IN (?, ?)",
                arguments: StatementArguments(triggerNames(table))) ?? 0) > 0
    }

    /// The highest change id of the table now (changes after it belong to the next run).
    static func lastChange(_ db: Database, table: String) throws -> Int64 {
        guard try db.tableExists("winnow_changes") else { return 0 }
        return try Int64.fetchOne(db, sql: "SELECT max(id) FROM winnow_changes WHERE tbl = ?", arguments: [table]) ?? 0
    }

    /// SQL restricting a rule's rows to those sharing a key with a row changed up to `upTo`.
    static func scope(_ rule: CompiledRule, upTo: Int64) -> String {
        let changed = "(SELECT rid FROM main.winnow_changes WHERE tbl = \(literal(rule.table)) AND id <= \(upTo))"
        if rule.rule.hash, let column = rule.hashColumn {
            // Stored hashes of unchanged rows are current (a run stored them, and a key change
            // would have logged the row); a changed row is in by its rowid, whatever it stores.
            return """
                (\(column.sqlIdentifier) IN (SELECT \(rule.hashExpression()) FROM \(rule.qualifiedTable) WHERE \(rule.rowID) IN \(changed))
                 OR \(rule.rowID) IN \(changed))
                """
        }
        let lookup = rule.lookupColumns.map(\.sqlIdentifier)
        let tuple = lookup.count == 1 ? lookup[0] : "(\(lookup.joined(separator: ", ")))"
        return "\(tuple) IN (SELECT \(lookup.joined(separator: ", ")) FROM \(rule.qualifiedTable) WHERE \(rule.rowID) IN \(changed))"
    }

    static func forget(_ db: Database, table: String, upTo: Int64) throws {
        try db.execute(sql: "DELETE FROM winnow_changes WHERE tbl = ? AND id <= ?", arguments: [table, upTo])
    }
}
