import Foundation

/// Journal retention: `winnow prune` and a job's `journal: {keep_days: N}`.
///
/// A run's journal goes whole, never in part: the run is first marked pruned
/// (`winnow_runs.pruned_at`, in the transaction that chooses it), so that `restore` refuses it
/// from then on, then its entries and group records are deleted a few thousand per short
/// transaction. A prune killed half way leaves the run marked, and the next prune (or run
/// with `keep_days`) deletes the rest. Runs and restores themselves stay in `history`.
public enum JournalPruner {
    /// Which runs' journals go.
    public enum Selection: Sendable, Equatable {
        /// Runs that finished (or, interrupted, started) more than this many days ago.
        case olderThan(days: Int)
        /// One run.
        case run(Int64)
    }

    /// What a prune did.
    public struct Report: Sendable, Equatable {
        public var database: String
        /// The runs whose journal this prune marked (oldest first).
        public var runs: [Int64] = []
        /// Journal entries deleted (including those of runs an interrupted prune had marked).
        public var entries = 0
        /// Why nothing was pruned, when nothing was.
        public var message: String?
        public var seconds: Double = 0

        public init(database: String) { self.database = database }
    }

    /// Entries deleted per transaction.
    public static let batchSize = 2000

    /// `winnow prune`: takes the run lock (a run or restore in progress exits 75, or is waited
    /// for up to `wait` seconds), marks the runs `selection` names, deletes their entries in
    /// short transactions, and releases the lock.
    public static func prune(
        database location: String, selection: Selection, wait: TimeInterval? = nil, backend: any DatabaseBackend
    ) throws -> Report {
        let started = Date()
        return try backend.withSession(location, mode: .readWrite(create: false)) { session in
            var report = Report(database: DatabaseURL.redacted(location))
            guard try Bookkeeping.isInstalled(session) else {
                if case let .run(id) = selection {
                    throw WinnowError.usage("\(location): no winnow run was ever recorded in this database, so there is no run \(id)")
                }
                report.message = "no winnow run was ever recorded in this database; nothing to prune"
                return report
            }
            if case let .run(id) = selection, let reason = try nothingToPrune(session, runID: id) {
                report.message = reason
                return report
            }
            let me = ProcessIdentity.current
            try RunLock.withRetry(wait: wait) {
                try session.writeTransaction {
                    try Bookkeeping.install(session)
                    try RunLock.take(session, runID: nil, me: me)
                    report.runs = try mark(session, selection, except: nil)
                }
            }
            do {
                report.entries = try deleteMarked(session)
                try session.writeTransaction { try RunLock.release(session, me: me) }
            } catch {
                let mapped = session.mapError(error)
                session.rollbackIfNeeded()
                try? session.writeTransaction { try RunLock.release(session, me: me) }
                throw mapped
            }
            if report.runs.isEmpty, report.entries == 0 {
                switch selection {
                case let .olderThan(days):
                    report.message = "no run older than \(Renderer.plural(days, "day")) has a journal; nothing to prune"
                case let .run(id): report.message = "run \(id) has no journal entries; nothing to prune"
                }
            }
            report.seconds = Date().timeIntervalSince(started)
            return report
        }
    }

    /// `run` with `journal: {keep_days: N}`, under the run's lock: prunes the runs (other than
    /// `current`) that finished more than `days` days ago. Returns a note for the run's summary,
    /// nil when nothing was pruned.
    package static func retain(_ session: any DatabaseSession, days: Int, current: Int64) throws -> String? {
        var runs: [Int64] = []
        try session.writeTransaction { runs = try mark(session, .olderThan(days: days), except: current) }
        let entries = try deleteMarked(session)
        guard !runs.isEmpty || entries > 0 else { return nil }
        let list = runs.isEmpty ? "" : " of \(Renderer.plural(runs.count, "run")) (\(runs.map(String.init).joined(separator: ", ")))"
        return
            "journal: keep_days \(days): pruned \(Renderer.plural(entries, "entry", "entries"))\(list); those runs can no longer be restored"
    }

    /// Why a prune of `runID` has nothing to do (nil: it has), or a usage error for a run that
    /// is not one.
    static func nothingToPrune(_ session: any DatabaseSession, runID: Int64) throws -> String? {
        guard let entry = try History.entry(session, runID: runID) else {
            throw WinnowError.usage("\(session.location): no run \(runID) in this database; see winnow history")
        }
        guard entry.command == .run else {
            throw WinnowError.usage("run \(runID) is a \(entry.command.rawValue), not a run; only runs have a journal")
        }
        if let at = entry.prunedAt, try journalEntries(session, runID: runID) == 0 {
            return "the journal of run \(runID) was already pruned at \(at); nothing to prune"
        }
        if entry.prunedAt == nil, try journalEntries(session, runID: runID) == 0, try groupRecords(session, runID: runID) == 0 {
            return "run \(runID) journaled nothing (archive: false, or it changed no rows); nothing to prune"
        }
        return nil
    }

    static func journalEntries(_ session: any DatabaseSession, runID: Int64) throws -> Int {
        let typed = try session.typedJournalEntries(runID: runID)
        guard try session.tableExists("winnow_journal") else { return typed }
        let entries = try session.value(
            "SELECT count(*) FROM \(session.dialect.bookkeeping("winnow_journal")) WHERE run_id = ?", [SQLValue(runID)]
        ).int
        return (entries ?? 0) + typed
    }

    static func groupRecords(_ session: any DatabaseSession, runID: Int64) throws -> Int {
        guard try session.tableExists("winnow_run_groups") else { return 0 }
        return try session.value(
            "SELECT count(*) FROM \(session.dialect.bookkeeping("winnow_run_groups")) WHERE run_id = ?", [SQLValue(runID)]
        ).int ?? 0
    }

    /// Marks the runs `selection` names as pruned, inside the caller's write transaction, and
    /// returns them: runs (not restores) not yet pruned that have journal entries or group
    /// records, other than `except`.
    static func mark(_ session: any DatabaseSession, _ selection: Selection, except: Int64?) throws -> [Int64] {
        let runs = session.dialect.bookkeeping("winnow_runs")
        let journal = session.dialect.bookkeeping("winnow_journal")
        let groups = session.dialect.bookkeeping("winnow_run_groups")
        var conditions = ["r.command = 'run'", "r.pruned_at IS NULL"]
        var arguments: [SQLValue] = []
        switch selection {
        case let .olderThan(days):
            conditions.append("coalesce(r.finished_at, r.started_at) < ?")
            arguments.append(SQLValue(Bookkeeping.timestamp(Date().addingTimeInterval(-Double(days) * 86_400))))
        case let .run(id):
            conditions.append("r.id = ?")
            arguments.append(SQLValue(id))
        }
        if let except {
            conditions.append("r.id <> ?")
            arguments.append(SQLValue(except))
        }
        let typed = try session.typedJournalRuns().sorted()
        let typedRuns = typed.isEmpty ? "" : " OR r.id IN (\(typed.map(String.init).joined(separator: ", ")))"
        conditions.append(
            "(EXISTS (SELECT 1 FROM \(journal) AS j WHERE j.run_id = r.id) OR EXISTS (SELECT 1 FROM \(groups) AS g WHERE g.run_id = r.id)\(typedRuns))"
        )
        let ids = try session.rows(
            "SELECT r.id FROM \(runs) AS r WHERE \(conditions.joined(separator: " AND ")) ORDER BY r.id", arguments
        ).map { try $0.int64(0) }
        let now = Bookkeeping.timestamp()
        for id in ids {
            try session.execute("UPDATE \(runs) SET pruned_at = ? WHERE id = ?", [SQLValue(now), SQLValue(id)])
        }
        return ids
    }

    /// Deletes the entries and group records of every run marked pruned, ``batchSize`` per
    /// transaction; returns the journal entries deleted.
    static func deleteMarked(_ session: any DatabaseSession) throws -> Int {
        let runs = session.dialect.bookkeeping("winnow_runs")
        var deleted = 0
        for table in ["winnow_journal", "winnow_run_groups"] {
            guard try session.tableExists(table) else { continue }
            let qualified = session.dialect.bookkeeping(table)
            let marked = try session.rows(
                """
                SELECT DISTINCT x.run_id FROM \(qualified) AS x WHERE x.run_id IN (SELECT id FROM \(runs) WHERE pruned_at IS NOT NULL)
                ORDER BY x.run_id
                """
            ).map { try $0.int64(0) }
            for run in marked {
                while true {
                    var count = 0
                    try session.writeTransaction {
                        count = try session.rows(
                            """
                            DELETE FROM \(qualified) WHERE id IN (
                                SELECT id FROM \(qualified) WHERE run_id = ? ORDER BY id LIMIT \(batchSize)) RETURNING 1
                            """, [SQLValue(run)]
                        ).count
                    }
                    if table == "winnow_journal" { deleted += count }
                    if count < batchSize { break }
                }
            }
        }
        let pruned = Set(
            try session.rows("SELECT id FROM \(runs) WHERE pruned_at IS NOT NULL").map { try $0.int64(0) })
        for run in try session.typedJournalRuns().intersection(pruned).sorted() {
            while true {
                var count = 0
                try session.writeTransaction { count = try session.deleteTypedJournal(runID: run) }
                deleted += count
                if count == 0 { break }
            }
        }
        return deleted
    }
}
