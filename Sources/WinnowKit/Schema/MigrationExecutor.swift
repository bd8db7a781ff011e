import Foundation
import GRDB

/// Applies migration steps, each in its own short transaction (a rebuild in many).
struct MigrationExecutor {
    let db: Database
    let settings: BatchSettings

    /// Applies one step; returns a remark worth reporting, if any.
    @discardableResult
    func apply(_ step: MigrationStep) throws -> String? {
        switch step {
        case let .backfill(table, column, value):
            try backfill(table: table, column: column, value: value)
        case let .rebuild(rebuild):
            let outcome = try TableRebuilder(db: db, rebuild: rebuild, settings: settings).run()
            if outcome.resumed {
                return "the rebuild of \(rebuild.table) resumed where an interrupted run left it"
            }
        case .dropTable:
            // DROP TABLE deletes the rows first; with foreign keys on that would cascade.
            let foreignKeys = try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") ?? false
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            defer { if foreignKeys { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
            try transaction(step)
        default:
            try transaction(step)
        }
        return nil
    }

    private func transaction(_ step: MigrationStep) throws {
        do {
            try db.writeTransaction {
                // One statement each: makeStatement refuses trailing statements, so nothing written
                // in a schema file can smuggle in a second one.
                for sql in MigrationSQL.statements(step) { try db.makeStatement(sql: sql).execute() }
                return
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            if case let .createIndex(table, index, _) = step {
                throw WinnowError.refused("cannot create unique index \(index.name) on \(table)(\(index.columns.joined(separator: ", "))): the table holds duplicates of that key; add a dedupe rule for it (\(error.message ?? ""))")
            }
            throw WinnowError.refused("\(step.summary): \(error.message ?? "constraint failed")")
        }
    }

    /// Fills NULLs with the default in batches of rowid ranges, one transaction each (a range
    /// scan per batch: the cost is one pass over the table, whatever the number of NULLs).
    private func backfill(table: String, column: String, value: DefaultValue) throws {
        let literal = value.isLiteral ? value.sql : "(\(value.sql))"
        guard let live = try SchemaInspector.table(db, named: table), let rowID = live.rowIDExpression else {
            throw WinnowError.refused("cannot fill NULLs of \(table).\(column): no such rowid table")
        }
        let t = "main.\(live.name.sqlIdentifier)"
        var sizer = BatchSizer(configured: max(1000, settings.size * 20), maxTransactionMilliseconds: settings.maxTransactionMilliseconds)
        var after = Int64.min
        while true {
            // Pause between batches only (never after the last one).
            if after != Int64.min, settings.pauseMilliseconds > 0 {
                Thread.sleep(forTimeInterval: Double(settings.pauseMilliseconds) / 1000)
            }
            let started = Date()
            var finished = false
            try db.writeTransaction {
                guard let upTo = try Int64.fetchOne(db, sql: """
                    SELECT max(r) FROM (SELECT \(rowID) AS r FROM \(t) WHERE \(rowID) > ? ORDER BY \(rowID) LIMIT ?)
                    """, arguments: [after, sizer.current]) else {
                    finished = true
                    return
                }
                try db.execute(sql: """
                    UPDATE \(t) SET \(column.sqlIdentifier) = \(literal)
                    WHERE \(rowID) > ? AND \(rowID) <= ? AND \(column.sqlIdentifier) IS NULL
                    """, arguments: [after, upTo])
                after = upTo
            }
            if finished { break }
            sizer.record(size: sizer.current, seconds: Date().timeIntervalSince(started))
        }
    }
}
