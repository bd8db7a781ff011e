import Foundation
import GRDB
import WinnowCore

/// ``ChangeTracking``'s triggers and log, as the core's ``ChangeTracker``.
struct SQLiteChangeTracker: ChangeTracker {
    let db: Database

    func isTracking(_ rule: CompiledRule) throws -> Bool { try ChangeTracking.isTracking(db, rule: rule) }
    func start(_ rule: CompiledRule) throws { try ChangeTracking.start(db, rule: rule) }
    func isInstalled(table: String) throws -> Bool { try ChangeTracking.isInstalled(db, table: table) }
    func stop(table: String) throws { try db.writeTransaction { try ChangeTracking.stop(db, table: table) } }
    func lastChange(table: String) throws -> Int64 { try ChangeTracking.lastChange(db, table: table) }

    func finish(table: String, upTo: Int64, runID: Int64) throws {
        try db.writeTransaction {
            try ChangeTracking.forget(db, table: table, upTo: upTo)
            try ChangeTracking.completed(db, table: table, runID: runID)
        }
    }
}
