import Foundation

/// `winnow history` and `winnow show`: the runs recorded in a database.
public enum History {
    /// `winnow_runs` as ``entry(_:liveRun:)`` reads it: the counts from column 7.
    static let columns =
        (["id", "command", "job", "started_at", "finished_at", "status", "archive"] + Counts.columns
        + ["migration_steps", "seconds", "restores_run", "restored_by", "message"]).joined(separator: ", ")

    /// The runs, newest first.
    public static func entries(database location: String, limit: Int? = nil, backend: any DatabaseBackend) throws -> [HistoryEntry] {
        try backend.withSession(location, mode: .readOnly) { session in
            guard try Bookkeeping.isInstalled(session) else { return [] }
            let liveRun = try liveRunID(session)
            return try session.rows(
                "SELECT \(columns) FROM \(session.dialect.bookkeeping("winnow_runs")) ORDER BY id DESC\(session.dialect.limit(limit))"
            ).map { try entry($0, liveRun: liveRun) }
        }
    }

    /// What one run changed: its record, what each rule did, and (with `archive: true`) the
    /// journal's rows per table.
    public static func show(database location: String, runID: Int64, backend: any DatabaseBackend) throws -> RunReport {
        try backend.withSession(location, mode: .readOnly) { session in
            let runs = session.dialect.bookkeeping("winnow_runs")
            guard try Bookkeeping.isInstalled(session),
                let row = try session.row("SELECT \(columns) FROM \(runs) WHERE id = ?", [SQLValue(runID)])
            else {
                throw WinnowError.usage("\(location): no run \(runID) in this database; see winnow history")
            }
            var report = RunReport(run: try entry(row, liveRun: try liveRunID(session)))
            if try session.tableExists("winnow_run_rules") {
                report.rules = try session.rows(
                    """
                    SELECT rule, tbl, key, \(Counts.columns.joined(separator: ", "))
                    FROM \(session.dialect.bookkeeping("winnow_run_rules")) WHERE run_id = ? ORDER BY rule
                    """, [SQLValue(runID)]
                ).map { row in
                    RunReport.Rule(
                        index: try row.int(0), table: try row.string(1), key: try row.string(2), counts: try Counts(row, from: 3))
                }
            }
            if try session.tableExists("winnow_journal") {
                var tables: [String: RunReport.Journaled] = [:]
                var order: [String] = []
                for row in try session.rows(
                    """
                    SELECT s.tbl, j.op, count(*) FROM \(session.dialect.bookkeeping("winnow_journal")) AS j
                    JOIN \(session.dialect.bookkeeping("winnow_journal_shapes")) AS s ON s.id = j.shape_id
                    WHERE j.run_id = ? GROUP BY s.tbl, j.op ORDER BY min(j.id)
                    """, [SQLValue(runID)])
                {
                    let table = try row.string(0)
                    if tables[table] == nil {
                        tables[table] = RunReport.Journaled(table: table)
                        order.append(table)
                    }
                    if try row.string(1) == "delete" {
                        tables[table]!.deleted += try row.int(2)
                    } else {
                        tables[table]!.updated += try row.int(2)
                    }
                }
                report.journal = order.compactMap { tables[$0] }
            }
            return report
        }
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
        return HistoryEntry(
            runID: id, command: RunCommand(rawValue: try row.string(1)), job: row[2].string,
            startedAt: try row.string(3), finishedAt: row[4].string, status: status,
            archive: row[6].bool ?? false, counts: counts, migrationSteps: try row.int(15),
            seconds: try row.double(16), restoresRun: row[17].int64, restoredBy: row[18].int64,
            message: row[19].string)
    }
}

/// `winnow show`: what one run changed.
public struct RunReport: Sendable, Equatable {
    /// What one rule of the run did.
    public struct Rule: Sendable, Equatable {
        public var index: Int
        public var table: String
        public var key: String
        public var counts: Counts
    }

    /// The journal's rows of one table: deleted rows and before-images of changed rows (merges
    /// on a rule's table, re-pointed children on a child table).
    public struct Journaled: Sendable, Equatable {
        public var table: String
        public var deleted = 0
        public var updated = 0
    }

    public var run: HistoryEntry
    /// Per rule (runs recorded by winnow before `show` existed have none).
    public var rules: [Rule] = []
    /// Per table, from the journal (empty when the run did not archive).
    public var journal: [Journaled] = []
}
