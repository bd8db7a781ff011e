import Foundation
import GRDB

/// `winnow history`: the runs recorded in a database, newest first.
public enum History {
    public static func entries(database path: String, limit: Int? = nil) throws -> [HistoryEntry] {
        let queue = try DatabaseOpener.open(path: path, mode: .readOnly)
        do {
            return try queue.inDatabase { db in
                guard try Bookkeeping.isInstalled(db) else { return [] }
                let holder = try RunLock.holder(db)
                let liveRun = holder.flatMap { $0.identity.isAlive ? $0.runID : nil }
                return try Row.fetchAll(db, sql: """
                    SELECT id, command, job, started_at, finished_at, status, archive, groups, deleted, updated, repointed,
                           children_deleted, hashed, skipped, batches, migration_steps, seconds, restores_run, restored_by, message
                    FROM winnow_runs ORDER BY id DESC LIMIT ?
                    """, arguments: [limit ?? -1]).map { row in
                    var counts = Counts()
                    counts.groups = row[7]
                    counts.deleted = row[8]
                    counts.updated = row[9]
                    counts.repointed = row[10]
                    counts.childrenDeleted = row[11]
                    counts.hashed = row[12]
                    counts.skipped = row[13]
                    counts.batches = row[14]
                    let id: Int64 = row[0]
                    var status: String = row[5]
                    // A run marked running whose process is gone was interrupted.
                    if status == "running", liveRun != id { status = "interrupted" }
                    return HistoryEntry(runID: id, command: row[1], job: row[2], startedAt: row[3], finishedAt: row[4], status: status,
                                        archive: row[6], counts: counts, migrationSteps: row[15], seconds: row[16],
                                        restoresRun: row[17], restoredBy: row[18], message: row[19])
                }
            }
        } catch {
            throw DatabaseOpener.map(error, path: path)
        }
    }
}
