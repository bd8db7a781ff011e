import Foundation

/// `winnow history` and `winnow show`: the runs recorded in a database.
public enum History {
    /// `winnow_runs` as ``entry(_:liveRun:)`` reads it: the counts from column 7; the columns an
    /// earlier winnow's table lacks as NULL.
    static func columns(_ session: any DatabaseSession) throws -> String {
        let present = try Bookkeeping.columns(of: "winnow_runs", session)
        return
            (["id", "command", "job", "started_at", "finished_at", "status", "archive"] + Counts.columns
            + ["migration_steps", "seconds", "restores_run", "restored_by", "message"]
            + ["reinserted", "reverted", "pruned_at"].map { Bookkeeping.column($0, in: present) }).joined(separator: ", ")
    }

    /// The runs, newest first.
    public static func entries(database location: String, limit: Int? = nil, backend: any DatabaseBackend) throws -> [HistoryEntry] {
        try backend.withSession(location, mode: .readOnly) { session in
            guard try Bookkeeping.isInstalled(session) else { return [] }
            let liveRun = try liveRunID(session)
            return try session.rows(
                "SELECT \(try columns(session)) FROM \(session.dialect.bookkeeping("winnow_runs")) ORDER BY id DESC\(session.dialect.limit(limit))"
            ).map { try entry($0, liveRun: liveRun) }
        }
    }

    /// One run's record (nil when there is no such run).
    static func entry(_ session: any DatabaseSession, runID: Int64) throws -> HistoryEntry? {
        guard try Bookkeeping.isInstalled(session),
            let row = try session.row(
                "SELECT \(try columns(session)) FROM \(session.dialect.bookkeeping("winnow_runs")) WHERE id = ?", [SQLValue(runID)])
        else { return nil }
        return try entry(row, liveRun: try liveRunID(session))
    }

    /// The run holding the lock, if its process is alive (a `running` row of a dead process was interrupted).
    static func liveRunID(_ session: any DatabaseSession) throws -> Int64? {
        try RunLock.holder(session).flatMap { $0.identity.isAlive ? $0.runID : nil }
    }

    static func entry(_ row: SQLRow, liveRun: Int64?) throws -> HistoryEntry {
        let counts = try Counts(row, from: 7)
        let id = try row.int64(0)
        var status = RunStatus(rawValue: try row.string(5))
        // A run marked running whose process is gone was interrupted.
        if status == .running, liveRun != id { status = .interrupted }
        var entry = HistoryEntry(
            runID: id, command: RunCommand(rawValue: try row.string(1)), job: row[2].string,
            startedAt: try row.string(3), finishedAt: row[4].string, status: status,
            archive: row[6].bool ?? false, counts: counts, migrationSteps: try row.int(15),
            seconds: try row.double(16), restoresRun: row[17].int64, restoredBy: row[18].int64,
            message: row[19].string)
        entry.reinserted = row[20].int
        entry.reverted = row[21].int
        entry.prunedAt = row[22].string
        return entry
    }
}
