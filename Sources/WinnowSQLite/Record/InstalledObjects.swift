import Foundation
import GRDB
import WinnowCore

/// What winnow created in a SQLite file: its `winnow_*` tables (their indexes go with them)
/// and its `winnow_*` triggers, on its own tables or on user tables (`winnow_track_*` of
/// incremental rules, `winnow_capture_*` of a rebuild in progress).
enum InstalledObjects {
    static let named = "name LIKE 'winnow\\_%' ESCAPE '\\'"

    static func list(_ db: Database) throws -> [WinnowObject] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT type, name, tbl_name FROM main.sqlite_master WHERE type IN ('table', 'trigger') AND \(named)
                ORDER BY type = 'table', name
                """)
        return try rows.map { row in
            let name: String = row[1]
            if (row[0] as String) == "trigger" { return WinnowObject(kind: .trigger, name: name, on: row[2]) }
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\(name.sqlIdentifier)") ?? 0
            return WinnowObject(kind: .table, name: name, rows: count)
        }
    }

    /// Triggers first (one on a user table would otherwise write into a table that is gone),
    /// then the tables.
    static func remove(_ objects: [WinnowObject], db: Database) throws {
        for object in objects where object.kind == .trigger {
            try db.execute(sql: "DROP TRIGGER IF EXISTS main.\(object.name.sqlIdentifier)")
        }
        for object in objects where object.kind == .table {
            try db.execute(sql: "DROP TABLE IF EXISTS main.\(object.name.sqlIdentifier)")
        }
    }
}
