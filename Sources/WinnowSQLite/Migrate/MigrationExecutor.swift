import Foundation
import WinnowCore
import GRDB

/// Applies migration steps, each in its own short transaction (a rebuild in many).
struct MigrationExecutor {
    let db: Database
    let settings: BatchSettings
    /// Rows copied so far and rows to copy, for a rebuild's progress.
    var progress: (Int, Int) -> Void = { _, _ in }

    /// Applies one step; returns a remark worth reporting, if any.
    @discardableResult
    func apply(_ step: MigrationStep) throws -> String? {
        switch step {
        case let .rebuild(rebuild):
            var rebuilder = TableRebuilder(db: db, rebuild: rebuild, settings: settings)
            rebuilder.progress = progress
            let outcome = try rebuilder.run()
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
                throw JobRunner.uniqueIndexFailure(table: table, index: index, detail: error.message ?? "")
            }
            throw WinnowError.refused("\(step.summary): \(error.message ?? "constraint failed")")
        }
    }
}
