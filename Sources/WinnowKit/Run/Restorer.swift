import Foundation
import GRDB

/// `winnow restore`: undoes one run's deletes and updates from its journal, newest change
/// first, in one transaction, so the database is either fully restored or untouched.
public enum Restorer {
    public static func restore(database path: String, runID: Int64, wait: TimeInterval? = nil) throws -> RunSummary {
        let started = Date()
        let queue = try DatabaseOpener.open(path: path, mode: .readWrite(create: false))
        let me = ProcessIdentity.current
        do {
            return try queue.inDatabase { db in
                guard try Bookkeeping.isInstalled(db) else {
                    throw WinnowError.usage("\(path): no winnow run was ever recorded in this database, so there is no run \(runID)")
                }
                var restoreID: Int64 = 0
                try RunLock.withRetry(wait: wait) {
                    try db.writeTransaction {
                        try RunLock.take(db, runID: nil, me: me)
                        try db.execute(sql: "UPDATE winnow_runs SET status = 'interrupted' WHERE status = 'running'")
                        try db.execute(sql: """
                            INSERT INTO winnow_runs (command, job, started_at, status, restores_run) VALUES ('restore', NULL, ?, 'running', ?)
                            """, arguments: [Bookkeeping.timestamp(), runID])
                        restoreID = db.lastInsertedRowID
                        try db.execute(sql: "UPDATE winnow_lock SET run_id = ? WHERE id = 1", arguments: [restoreID])
                        return
                    }
                }
                DatabaseOpener.prepareForBatchWrites(db)
                do {
                    let (reinserted, reverted) = try undo(db, runID: runID, restoreID: restoreID)
                    let seconds = Date().timeIntervalSince(started)
                    try db.writeTransaction {
                        try db.execute(sql: "UPDATE winnow_runs SET status = 'completed', finished_at = ?, seconds = ?, message = ? WHERE id = ?",
                                       arguments: [Bookkeeping.timestamp(), seconds,
                                                   "restored run \(runID): \(reinserted) rows re-inserted, \(reverted) rows reverted", restoreID])
                        try RunLock.release(db, me: me)
                        return
                    }
                    var summary = RunSummary(command: "restore", runID: restoreID, status: "restored", job: nil, database: path,
                                             seconds: seconds, message: "run \(runID) restored")
                    summary.reinserted = reinserted
                    summary.reverted = reverted
                    return summary
                } catch {
                    let mapped = DatabaseOpener.map(error, path: path)
                    if db.isInsideTransaction { try? db.rollback() }
                    try? db.writeTransaction {
                        try db.execute(sql: "UPDATE winnow_runs SET status = ?, finished_at = ?, message = ? WHERE id = ?",
                                       arguments: [mapped.exitCode == 65 || mapped.exitCode == 64 ? "refused" : "failed",
                                                   Bookkeeping.timestamp(), mapped.description, restoreID])
                        try RunLock.release(db, me: me)
                        return
                    }
                    throw mapped
                }
            }
        } catch {
            throw DatabaseOpener.map(error, path: path)
        }
    }

    struct Shape {
        var table: String
        var columns: [String]
        var rowID: String
        /// Whether the rowid is one of `columns` (an INTEGER PRIMARY KEY alias).
        var rowIDInColumns: Bool
    }

    static func undo(_ db: Database, runID: Int64, restoreID: Int64) throws -> (Int, Int) {
        guard let run = try Row.fetchOne(db, sql: "SELECT command, status, archive, restored_by, deleted + updated + repointed + children_deleted + hashed FROM winnow_runs WHERE id = ?",
                                         arguments: [runID]) else {
            throw WinnowError.usage("no run \(runID) in this database; see winnow history")
        }
        guard (run[0] as String) == "run" else { throw WinnowError.usage("run \(runID) is a \(run[0] as String), not a run; only runs can be restored") }
        if let by: Int64 = run[3] { throw WinnowError.refused("run \(runID) was already restored by run \(by)") }
        let entries = try Int.fetchOne(db, sql: "SELECT count(*) FROM winnow_journal WHERE run_id = ?", arguments: [runID]) ?? 0
        let changes: Int = run[4]
        if entries == 0 && changes > 0 {
            throw WinnowError.refused("run \(runID) changed \(changes) rows without a journal (archive: false); it cannot be restored")
        }
        var shapes: [Int64: Shape] = [:]
        func shape(_ id: Int64) throws -> Shape {
            if let shape = shapes[id] { return shape }
            guard let row = try Row.fetchOne(db, sql: "SELECT tbl, columns FROM winnow_journal_shapes WHERE id = ?", arguments: [id]) else {
                throw WinnowError.io("journal shape \(id) is missing")
            }
            let table: String = row[0]
            let columns = try JSONDecoder().decode([String].self, from: Data((row[1] as String).utf8))
            guard let live = try SchemaInspector.table(db, named: table) else {
                throw WinnowError.refused("cannot restore run \(runID): table '\(table)' no longer exists")
            }
            for column in columns where live.column(named: column) == nil {
                throw WinnowError.refused("cannot restore run \(runID): table '\(table)' no longer has column '\(column)'")
            }
            guard let rowID = live.rowIDExpression else { throw WinnowError.refused("cannot restore run \(runID): '\(table)' has no rowid") }
            let result = Shape(table: live.name, columns: columns, rowID: rowID,
                               rowIDInColumns: live.rowIDAlias.map { alias in columns.contains(alias) } ?? false)
            shapes[id] = result
            return result
        }
        var reinserted = 0
        var reverted = 0
        try db.writeTransaction {
            var before = Int64.max
            while true {
                let page = try Row.fetchAll(db, sql: """
                    SELECT id, op, shape_id, rid, image FROM winnow_journal WHERE run_id = ? AND id < ? ORDER BY id DESC LIMIT 1000
                    """, arguments: [runID, before])
                guard let last = page.last else { break }
                before = last[0]
                for entry in page {
                    let op: String = entry[1]
                    let shape = try shape(entry[2])
                    let rid: Int64 = entry[3]
                    let image: Data = entry[4]
                    let values = try ValueCodec.decode([UInt8](image))
                    guard values.count == shape.columns.count else { throw WinnowError.io("journal entry \(entry[0] as Int64) is corrupt") }
                    let table = "main.\(shape.table.sqlIdentifier)"
                    if op == "delete" {
                        var names = shape.columns.map(\.sqlIdentifier)
                        var arguments = values
                        if !shape.rowIDInColumns {
                            names.insert(shape.rowID, at: 0)
                            arguments.insert(rid.databaseValue, at: 0)
                        }
                        if try Bool.fetchOne(db, sql: "SELECT 1 FROM \(table) WHERE \(shape.rowID) = ?", arguments: [rid]) == true {
                            throw WinnowError.refused("cannot restore run \(runID): \(shape.table) rowid \(rid) was deleted by that run but exists again")
                        }
                        let placeholders = Array(repeating: "?", count: names.count).joined(separator: ", ")
                        try db.cachedStatement(sql: "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(placeholders))")
                            .execute(arguments: StatementArguments(arguments))
                        reinserted += 1
                    } else {
                        let sets = shape.columns.map { "\($0.sqlIdentifier) = ?" }.joined(separator: ", ")
                        try db.cachedStatement(sql: "UPDATE \(table) SET \(sets) WHERE \(shape.rowID) = ?")
                            .execute(arguments: StatementArguments(values + [rid.databaseValue]))
                        guard db.changesCount == 1 else {
                            throw WinnowError.refused("cannot restore run \(runID): \(shape.table) rowid \(rid), changed by that run, no longer exists")
                        }
                        reverted += 1
                    }
                }
            }
            try db.execute(sql: "UPDATE winnow_runs SET restored_by = ? WHERE id = ?", arguments: [restoreID, runID])
            return
        }
        return (reinserted, reverted)
    }
}
