import Foundation

/// `winnow history`: the runs recorded in a database, newest first.
public enum History {
    public static func entries(database location: String, limit: Int? = nil, backend: any DatabaseBackend) throws -> [HistoryEntry] {
        try backend.withSession(location, mode: .readOnly) { session in
            guard try Bookkeeping.isInstalled(session) else { return [] }
            let holder = try RunLock.holder(session)
            let liveRun = holder.flatMap { $0.identity.isAlive ? $0.runID : nil }
            return try session.rows(
                """
                SELECT id, command, job, started_at, finished_at, status, archive, groups, deleted, updated, repointed,
                       children_deleted, hashed, skipped, batches, migration_steps, seconds, restores_run, restored_by, message
                FROM \(session.dialect.bookkeeping("winnow_runs")) ORDER BY id DESC\(session.dialect.limit(limit))
                """
            ).map { row in
                var counts = Counts()
                counts.groups = try row.int(7)
                counts.deleted = try row.int(8)
                counts.updated = try row.int(9)
                counts.repointed = try row.int(10)
                counts.childrenDeleted = try row.int(11)
                counts.hashed = try row.int(12)
                counts.skipped = try row.int(13)
                counts.batches = try row.int(14)
                let id = try row.int64(0)
                var status = RunStatus(rawValue: try row.string(5))
                // A run marked running whose process is gone was interrupted.
                if status == .running, liveRun != id { status = .interrupted }
                return HistoryEntry(
                    runID: id, command: RunCommand(rawValue: try row.string(1)), job: row[2].string,
                    startedAt: try row.string(3), finishedAt: row[4].string, status: status,
                    archive: row[6].bool ?? false, counts: counts, migrationSteps: try row.int(15),
                    seconds: try row.double(16), restoresRun: row[17].int64, restoredBy: row[18].int64,
                    message: row[19].string)
            }
        }
    }
}
