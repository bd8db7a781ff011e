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
            let record = try RunRecord.begin(session, command: .restore, job: nil, restores: runID, wait: wait)
            session.prepareForBatchWrites()
            let (reinserted, reverted) = try record.guarding(totals: { nil }, started: started) {
                try session.undo(runID: runID, restoreID: record.id)
            }
            let seconds = Date().timeIntervalSince(started)
            try record.guarding(totals: { nil }, started: started) {
                try record.finish(
                    .completed, totals: nil, seconds: seconds,
                    message: "restored run \(runID): \(reinserted) rows re-inserted, \(reverted) rows reverted")
            }
            var summary = RunSummary(
                command: .restore, runID: record.id, status: .restored, job: nil, database: location,
                seconds: seconds, message: "run \(runID) restored")
            summary.reinserted = reinserted
            summary.reverted = reverted
            return summary
        }
    }
}
