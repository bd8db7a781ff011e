import Foundation
import GRDB

/// Applies migration steps, each in its own short transaction (a rebuild in many).
struct MigrationExecutor {
    let db: Database
    let settings: BatchSettings

    func apply(_ step: MigrationStep) throws {
        switch step {
        case let .backfill(table, column, value):
            try backfill(table: table, column: column, value: value)
        case let .rebuild(rebuild):
            _ = try TableRebuilder(db: db, rebuild: rebuild, settings: settings).run()
        case .dropTable:
            // DROP TABLE deletes the rows first; with foreign keys on that would cascade.
            let foreignKeys = try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") ?? false
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            defer { if foreignKeys { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
            try transaction(step)
        default:
            try transaction(step)
        }
    }

    private func transaction(_ step: MigrationStep) throws {
        do {
            try db.inTransaction(.immediate) {
                for sql in MigrationSQL.statements(step) { try db.execute(sql: sql) }
                return .commit
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            if case let .createIndex(table, index, _) = step {
                throw WinnowError.refused("cannot create unique index \(index.name) on \(table)(\(index.columns.joined(separator: ", "))): the table holds duplicates of that key; add a dedupe rule for it (\(error.message ?? ""))")
            }
            throw WinnowError.refused("\(step.summary): \(error.message ?? "constraint failed")")
        }
    }

    /// Fills NULLs with the default in batches of rows, one transaction each.
    private func backfill(table: String, column: String, value: DefaultValue) throws {
        let literal = value.isLiteral ? value.sql : "(\(value.sql))"
        var sizer = BatchSizer(configured: max(1000, settings.size * 10), maxTransactionMilliseconds: settings.maxTransactionMilliseconds)
        while true {
            let started = Date()
            var changed = 0
            try db.inTransaction(.immediate) {
                try db.execute(sql: """
                    UPDATE main.\(table.sqlIdentifier) SET \(column.sqlIdentifier) = \(literal)
                    WHERE rowid IN (SELECT rowid FROM main.\(table.sqlIdentifier) WHERE \(column.sqlIdentifier) IS NULL LIMIT ?)
                    """, arguments: [sizer.current])
                changed = db.changesCount
                return .commit
            }
            if changed == 0 { break }
            sizer.record(size: sizer.current, seconds: Date().timeIntervalSince(started))
            if settings.pauseMilliseconds > 0 { Thread.sleep(forTimeInterval: Double(settings.pauseMilliseconds) / 1000) }
        }
    }
}
