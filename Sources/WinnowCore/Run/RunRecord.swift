import Foundation

/// One row of `winnow_runs` and the lock that goes with it: the single place where a run or a
/// restore is begun, advanced and finished, so both record themselves the same way.
public struct RunRecord {
    public let session: any DatabaseSession
    public let id: Int64
    public let me: ProcessIdentity

    /// Installs the bookkeeping tables, takes the lock (waiting up to `wait` seconds for
    /// another run's; `onEvent` hears of the wait), marks whatever was still running as
    /// interrupted (it lost its lock) and records the new run, in one transaction. `check` runs
    /// under the lock before the run is recorded: what it throws rolls everything back, so a
    /// command refused there leaves no row in `winnow_runs` and takes no run id.
    public static func begin(
        _ session: any DatabaseSession, command: RunCommand, job: String?, archive: Bool = false,
        restores: Int64? = nil, wait: TimeInterval?, me: ProcessIdentity = .current, onEvent: (RunEvent) -> Void = { _ in },
        check: () throws -> Void = {}
    ) throws -> RunRecord {
        let runs = session.dialect.bookkeeping("winnow_runs")
        let waiting = { (why: String, seconds: TimeInterval) in onEvent(.waiting(why, seconds: seconds)) }
        let id = try RunLock.withRetry(wait: wait, waiting: waiting) { () -> Int64 in
            var id: Int64 = 0
            try session.writeTransaction {
                try Bookkeeping.install(session)
                try RunLock.take(session, runID: nil, me: me)
                try check()
                try markInterrupted(session)
                let row = try session.row(
                    """
                    INSERT INTO \(runs) (command, job, started_at, status, archive, restores_run) VALUES (?, ?, ?, ?, ?, ?) RETURNING id
                    """,
                    [
                        SQLValue(command.rawValue), SQLValue(job), SQLValue(Bookkeeping.timestamp()),
                        SQLValue(RunStatus.running.rawValue), SQLValue(archive), SQLValue(restores),
                    ])
                guard let row else { throw WinnowError.internal("the new run's id was not returned") }
                id = try row.int64(0)
                try RunLock.assign(session, runID: id)
            }
            return id
        }
        return RunRecord(session: session, id: id, me: me)
    }

    /// Marks every run still `running` as `interrupted`: called with the lock held, when no
    /// run of this database can be alive any more.
    private static func markInterrupted(_ session: any DatabaseSession) throws {
        try session.execute(
            "UPDATE \(session.dialect.bookkeeping("winnow_runs")) SET status = ? WHERE status = ?",
            [SQLValue(RunStatus.interrupted.rawValue), SQLValue(RunStatus.running.rawValue)])
    }

    /// Ends what a run whose process is gone left behind, in one short write transaction: its
    /// lock is taken over as ``RunLock/take(_:runID:me:)`` would, runs still marked running are
    /// marked interrupted (as ``begin(_:command:job:archive:restores:wait:me:onEvent:check:)``
    /// would), and the lock is released. Nothing changes when the lock is free or its holder
    /// alive. For a command that ends without a run of its own (a refused `restore`), so that
    /// it leaves no dead run's lock behind.
    public static func endAbandoned(_ session: any DatabaseSession, me: ProcessIdentity = .current) throws {
        guard let found = try RunLock.holder(session), found.identity != me, !found.identity.isAlive else { return }
        try session.writeTransaction {
            guard let held = try RunLock.holder(session), held.identity == found.identity else { return }
            try RunLock.take(session, runID: nil, me: me)
            try markInterrupted(session)
            try RunLock.release(session, me: me)
        }
    }

    /// The run's counts, as committed so far. Called inside the batch's transaction.
    public func record(_ totals: Counts) throws {
        try session.execute(Self.progressSQL(session.dialect), Self.progressArguments(totals, runID: id))
    }

    /// The statement that stores a run's counts (a backend's batch writer may keep it prepared).
    public static func progressSQL(_ dialect: any SQLDialect) -> String {
        "UPDATE \(dialect.bookkeeping("winnow_runs")) SET \(Counts.columns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?"
    }

    public static func progressArguments(_ totals: Counts, runID: Int64) -> [SQLValue] {
        totals.columnValues + [SQLValue(runID)]
    }

    /// What one rule of the run did (`winnow show`), in its own short transaction after the
    /// rule's batches; a rule stopped by `--max-duration` records what it did so far.
    public func record(rule summary: RuleSummary) throws {
        let columns = ["run_id", "rule", "tbl", "key", "key_columns"] + Counts.columns
        let sql = """
            INSERT INTO \(session.dialect.bookkeeping("winnow_run_rules")) (\(columns.joined(separator: ", ")))
            VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))
            ON CONFLICT (run_id, rule) DO UPDATE SET \(Counts.columns.map { "\($0) = excluded.\($0)" }.joined(separator: ", "))
            """
        let keyColumns = String(decoding: (try? JSONEncoder().encode(summary.keyColumns)) ?? Data("[]".utf8), as: UTF8.self)
        let key = [
            SQLValue(id), SQLValue(summary.index), SQLValue(summary.table), SQLValue(summary.key.joined(separator: " + ")),
            SQLValue(keyColumns),
        ]
        try session.writeTransaction { try session.execute(sql, key + summary.counts.columnValues) }
    }

    /// The migration steps applied so far.
    public func record(migrationSteps: Int) throws {
        try session.execute(
            "UPDATE \(session.dialect.bookkeeping("winnow_runs")) SET migration_steps = ? WHERE id = ?",
            [SQLValue(migrationSteps), SQLValue(id)])
    }

    /// Records how the run ended and releases the lock, in one transaction (after rolling back
    /// whatever a failure left open). `totals` nil leaves the counts as they are; `restored`
    /// is what a restore put back.
    public func finish(
        _ status: RunStatus, totals: Counts?, seconds: Double?, message: String?, restored: (reinserted: Int, reverted: Int)? = nil
    ) throws {
        session.rollbackIfNeeded()
        try session.writeTransaction {
            if let totals { try record(totals) }
            if let restored {
                try session.execute(
                    "UPDATE \(session.dialect.bookkeeping("winnow_runs")) SET reinserted = ?, reverted = ? WHERE id = ?",
                    [SQLValue(restored.reinserted), SQLValue(restored.reverted), SQLValue(id)])
            }
            try session.execute(
                """
                UPDATE \(session.dialect.bookkeeping("winnow_runs")) SET status = ?, finished_at = ?, seconds = coalesce(?, seconds),
                    message = ? WHERE id = ?
                """,
                [
                    SQLValue(status.rawValue), SQLValue(Bookkeeping.timestamp()), seconds.map(SQLValue.init) ?? .null,
                    SQLValue(message), SQLValue(id),
                ])
            try RunLock.release(session, me: me)
        }
    }

    /// Runs `body`; a failure is recorded (refused or failed, with its message) before it is
    /// rethrown, mapped to a ``WinnowError``.
    public func guarding<T>(totals: () -> Counts?, started: Date, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            let mapped = session.mapError(error)
            try? finish(.failure(mapped), totals: totals(), seconds: Date().timeIntervalSince(started), message: mapped.description)
            throw mapped
        }
    }
}
