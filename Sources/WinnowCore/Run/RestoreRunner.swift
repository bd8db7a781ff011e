import Foundation

/// `winnow restore`: undoes one run's deletes and updates from its journal, newest change
/// first, in one transaction, so the database is either fully restored or untouched. The run
/// record and the lock are the same as a run's (``RunRecord``); the backend puts the rows back.
public enum RestoreRunner {
    public static func restore(
        database location: String, runID: Int64, wait: TimeInterval? = nil,
        backend: any DatabaseBackend
    ) throws -> RunSummary {
        let started = Date()
        return try backend.withSession(location, mode: .readWrite(create: false)) { session in
            guard try Bookkeeping.isInstalled(session) else {
                throw WinnowError.usage("\(location): no winnow run was ever recorded in this database, so there is no run \(runID)")
            }
            // A restore refused before it starts (no such run, not a run, already restored,
            // pruned, nothing journaled) records nothing: checked before the lock for a prompt
            // answer, and again under it, where the restore's row would be inserted. A refusal
            // still clears the lock of a run whose process is gone (often the very run asked
            // for, killed before it changed a row), as a started restore would have.
            do {
                try checkRestorable(session, runID: runID)
            } catch {
                // The refusal is the answer; a lock that cannot be cleared now is taken over
                // by the next run anyway.
                try? RunRecord.endAbandoned(session)
                throw error
            }
            let record = try RunRecord.begin(
                session, command: .restore, job: nil, restores: runID, wait: wait,
                check: {
                    try checkRestorable(session, runID: runID)
                })
            session.prepareForBatchWrites()
            let (reinserted, reverted) = try record.guarding(totals: { nil }, started: started) {
                try session.undo(runID: runID, restoreID: record.id)
            }
            let seconds = Date().timeIntervalSince(started)
            try record.guarding(totals: { nil }, started: started) {
                try record.finish(
                    .completed, totals: nil, seconds: seconds,
                    message: "restored run \(runID): \(reinserted) rows re-inserted, \(reverted) rows reverted",
                    restored: (reinserted, reverted))
            }
            var summary = RunSummary(
                command: .restore, runID: record.id, status: .restored, job: nil, database: DatabaseURL.redacted(location),
                seconds: seconds, message: "run \(runID) restored")
            summary.reinserted = reinserted
            summary.reverted = reverted
            return summary
        }
    }
}

extension RestoreRunner {
    /// Refuses a restore of `runID` that cannot be done: no such run, not a `run`, restored
    /// already, its journal pruned, or nothing journaled (archive off, or only schema changes).
    public static func checkRestorable(_ session: any DatabaseSession, runID: Int64) throws {
        let runs = session.dialect.bookkeeping("winnow_runs")
        let pruned = Bookkeeping.column("pruned_at", in: try Bookkeeping.columns(of: "winnow_runs", session))
        guard
            let run = try session.row(
                """
                SELECT command, status, archive, restored_by, deleted + updated + repointed + children_deleted + hashed, migration_steps,
                    \(pruned)
                FROM \(runs) WHERE id = ?
                """, [SQLValue(runID)])
        else {
            throw WinnowError.usage("no run \(runID) in this database; see winnow history")
        }
        let command = try run.string(0)
        guard command == "run" else {
            throw WinnowError.usage("run \(runID) is a \(command), not a run; only runs can be restored")
        }
        if let by = run[3].int64 { throw WinnowError.refused("run \(runID) was already restored by run \(by)") }
        if let at = run[6].string {
            throw WinnowError.refused(
                "run \(runID) cannot be restored: its journal was pruned at \(at) (winnow prune, or the job's journal: keep_days)")
        }
        let journaled =
            try session.value("SELECT count(*) FROM \(session.dialect.bookkeeping("winnow_journal")) WHERE run_id = ?", [SQLValue(runID)])
            .int ?? 0
        let entries = try journaled + session.typedJournalEntries(runID: runID)
        let changes = try run.int(4)
        if entries == 0 && changes > 0 {
            throw WinnowError.refused("run \(runID) changed \(changes) rows without a journal (archive: false); it cannot be restored")
        }
        if entries == 0 {
            let steps = try run.int(5)
            let migrated = steps > 0 ? "it only changed the schema (\(steps) migration step\(steps == 1 ? "" : "s")), and " : ""
            throw WinnowError.refused(
                """
                run \(runID) changed no rows: \(migrated)schema changes are never undone (a database is never downgraded); \
                there is nothing to restore
                """)
        }
        if let (later, table) = try laterRun(session, changingRowsOf: runID) {
            throw WinnowError.refused(
                "cannot restore run \(runID): run \(later) changed rows of \(table) that this run changed: restore run \(later) first")
        }
    }

    /// The newest later run, not restored, that journaled a change to a row that `runID` also
    /// changed (same table, same row identity), with that table: restoring `runID` first would
    /// put back images older than that run's changes, or fail on a row it deleted.
    static func laterRun(_ session: any DatabaseSession, changingRowsOf runID: Int64) throws -> (Int64, String)? {
        let journal = session.dialect.bookkeeping("winnow_journal")
        let shapes = session.dialect.bookkeeping("winnow_journal_shapes")
        let runs = session.dialect.bookkeeping("winnow_runs")
        let query: String
        if let typed = try session.typedJournalIdentities() {
            // Both journals' identities, compared as one.
            query = """
                WITH ids AS (
                    SELECT j.run_id, s.tbl, j.rid FROM \(journal) AS j JOIN \(shapes) AS s ON s.id = j.shape_id
                    UNION ALL \(typed))
                SELECT i.run_id, i.tbl FROM ids AS i JOIN \(runs) AS r ON r.id = i.run_id
                WHERE i.run_id > ? AND r.restored_by IS NULL
                AND (lower(i.tbl), i.rid) IN (SELECT lower(m.tbl), m.rid FROM ids AS m WHERE m.run_id = ?)
                ORDER BY i.run_id DESC LIMIT 1
                """
        } else {
            query = """
                SELECT j.run_id, s.tbl FROM \(journal) AS j JOIN \(shapes) AS s ON s.id = j.shape_id JOIN \(runs) AS r ON r.id = j.run_id
                WHERE j.run_id > ? AND r.restored_by IS NULL
                AND (lower(s.tbl), j.rid) IN (
                    SELECT lower(ms.tbl), m.rid FROM \(journal) AS m JOIN \(shapes) AS ms ON ms.id = m.shape_id WHERE m.run_id = ?)
                ORDER BY j.run_id DESC LIMIT 1
                """
        }
        guard let row = try session.row(query, [SQLValue(runID), SQLValue(runID)]) else { return nil }
        return (try row.int64(0), try row.string(1))
    }
}
