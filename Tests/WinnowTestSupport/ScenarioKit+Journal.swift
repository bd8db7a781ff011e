import Foundation
import GRDB

extension ScenarioKit {
    /// The typed journal tables of a SQLite file (`winnow_journal_rows_<shape>`), with the
    /// table each keeps rows of and its columns as journaled.
    package static func typedJournals(_ db: Database) throws -> [(relation: String, table: String, columns: [String])] {
        guard try db.tableExists("winnow_journal_shapes") else { return [] }
        return try Row.fetchAll(
            db,
            sql: """
                SELECT m.name, s.tbl, s.columns FROM main.sqlite_master AS m JOIN main.winnow_journal_shapes AS s
                ON m.name = 'winnow_journal_rows_' || s.id
                WHERE m.type = 'table' ORDER BY s.id
                """
        ).map {
            (
                relation: "main.\"\($0[0] as String)\"", table: $0[1],
                columns: try JSONDecoder().decode([String].self, from: Data(($0[2] as String).utf8))
            )
        }
    }

    /// Both journals of a SQLite file as one query of `(run_id, batch, op, tbl, rid)`: the
    /// entries of `winnow_journal` and the deleted rows of the typed journal.
    package static func journalEntries(_ db: Database) throws -> String {
        var parts: [String] = []
        if try db.tableExists("winnow_journal") {
            parts.append(
                """
                SELECT j.run_id, j.batch, j.op, s.tbl, j.rid FROM main.winnow_journal AS j
                JOIN main.winnow_journal_shapes AS s ON s.id = j.shape_id
                """)
        }
        for typed in try typedJournals(db) {
            parts.append(
                "SELECT winnow_run, winnow_batch, 'delete', '\(typed.table.replacingOccurrences(of: "'", with: "''"))', winnow_rid FROM \(typed.relation)"
            )
        }
        return parts.isEmpty ? "SELECT NULL, NULL, NULL, NULL, NULL WHERE 0" : parts.joined(separator: " UNION ALL ")
    }

    /// Which winner each loser went to, as one query of `(run_id, tbl, winner, loser)`: the rows
    /// of `winnow_run_groups` and of the typed journal.
    package static func groupPairs(_ db: Database) throws -> String {
        var parts: [String] = []
        if try db.tableExists("winnow_run_groups") {
            parts.append("SELECT run_id, tbl, winner, loser FROM main.winnow_run_groups")
        }
        for typed in try typedJournals(db) {
            parts.append(
                "SELECT winnow_run, '\(typed.table.replacingOccurrences(of: "'", with: "''"))', winnow_winner, winnow_rid FROM \(typed.relation)"
            )
        }
        return parts.isEmpty ? "SELECT NULL, NULL, NULL, NULL WHERE 0" : parts.joined(separator: " UNION ALL ")
    }

    /// The value of `sql` on the file at `path`, where `{entries}` stands for
    /// ``journalEntries(_:)`` and `{groups}` for ``groupPairs(_:)``.
    package static func intOverJournal(_ path: String, _ sql: String) throws -> Int {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            let query = sql.replacingOccurrences(of: "{entries}", with: "(\(try journalEntries(db)))")
                .replacingOccurrences(of: "{groups}", with: "(\(try groupPairs(db)))")
            return try Int.fetchOne(db, sql: query) ?? -1
        }
    }
}
