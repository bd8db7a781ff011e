import Foundation

/// `winnow uninstall`: removes everything winnow keeps in a database (its tables with the
/// history and the journal, the change-tracking triggers of incremental rules, on PostgreSQL
/// its functions and schema) in one transaction, under the run lock. User tables, their rows
/// and their own triggers, indexes and views stay as they are.
public enum Uninstaller {
    /// What an uninstall removed (or, with `dryRun`, would remove).
    public struct Report: Sendable, Equatable {
        public var database: String
        public var objects: [WinnowObject] = []
        public var dryRun: Bool
        public var seconds: Double = 0

        public init(database: String, dryRun: Bool) {
            self.database = database
            self.dryRun = dryRun
        }
    }

    /// Lists winnow's objects (`dryRun`: on a read-only connection, nothing removed), or takes
    /// the run lock and removes them in one write transaction: a run or restore in progress
    /// exits 75 (or is waited for up to `wait` seconds), and anything that fails rolls the
    /// whole removal back.
    public static func uninstall(
        database location: String, dryRun: Bool, wait: TimeInterval? = nil, backend: any DatabaseBackend
    ) throws -> Report {
        let started = Date()
        var report = Report(database: DatabaseURL.redacted(location), dryRun: dryRun)
        if dryRun {
            report.objects = try backend.withSession(location, mode: .readOnly) { try $0.winnowObjects() }
        } else {
            report.objects = try backend.withSession(location, mode: .readWrite(create: false)) { session in
                try RunLock.withRetry(wait: wait) {
                    var objects: [WinnowObject] = []
                    try session.writeTransaction {
                        objects = try session.winnowObjects()
                        guard !objects.isEmpty else { return }
                        if try session.tableExists("winnow_lock") {
                            try RunLock.take(session, runID: nil)
                        } else if try session.claimRunLock() == false {
                            throw WinnowError.locked(
                                "another winnow run holds the lock of this database; retry later or pass --wait SECONDS")
                        }
                        try session.remove(objects)
                    }
                    return objects
                }
            }
        }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }
}
