import Foundation
import WinnowCore
import GRDB

/// The pause between two write transactions of a long loop (a rebuild's copy, its replay,
/// emptying a retired table; a rule's batches, which take only the gap while another connection
/// commits, ``QueueBatches/betweenBatches()``), so that other writers get the lock.
///
/// SQLite has no queue for its write lock: a connection that finds it taken sleeps and tries
/// again (1, 2, 5, 10, ... 100 ms apart with the default busy handler), and succeeds only if
/// its try falls between two of winnow's transactions. Back to back, winnow would leave gaps of
/// microseconds and such a writer would wait for the whole loop. So with `pause_ms: 0` the gap
/// follows what is seen: while another connection has committed in the last seconds
/// (`PRAGMA data_version`), winnow waits as long as its own transaction took (half the time is
/// the other writers'); otherwise a tenth of it, enough for a waiting writer to get in soon and
/// be seen. A `pause_ms` set in the job is used as it is.
struct WriteGap {
    let fixed: TimeInterval?
    private var version: Int64?
    private var seenOther: Date?
    /// How long after another connection's last commit the gap stays wide.
    static let memory: TimeInterval = 2
    static let sharedShare = 1.0
    static let idleShare = 0.1

    /// `version`: `PRAGMA data_version` as the caller last knew the database (e.g. when its
    /// work was found), so that a commit of another connection since then counts as seen.
    init(settings: BatchSettings, version: Int64? = nil) {
        fixed = settings.pauseMilliseconds > 0 ? Double(settings.pauseMilliseconds) / 1000 : nil
        self.version = version
    }

    private var checkpointShared = false

    /// Whether another connection has committed in the last ``memory`` seconds. While one does,
    /// the connection also checkpoints at SQLite's usual 1,000 pages (its own WAL pages, in its
    /// own time, not inside the other writer's commit).
    /// `version`: `PRAGMA data_version` if the caller has just read it (else it is read here).
    mutating func observe(_ db: Database, version known: Int64? = nil) -> Bool {
        let now = Date()
        if let current = known ?? (try? Int64.fetchOne(db, sql: "PRAGMA main.data_version")) {
            if let version, version != current { seenOther = now }
            version = current
        }
        let shared = seenOther.map { now.timeIntervalSince($0) < Self.memory } ?? false
        if shared != checkpointShared {
            checkpointShared = shared
            DatabaseOpener.setCheckpoint(db, shared: shared)
        }
        return shared
    }

    /// The gap after a transaction that held the lock for `seconds`.
    mutating func gap(after seconds: TimeInterval, db: Database) -> TimeInterval {
        let shared = observe(db)
        if let fixed { return fixed }
        return seconds * (shared ? Self.sharedShare : Self.idleShare)
    }

    /// Sleeps for ``gap(after:db:)``.
    mutating func wait(after seconds: TimeInterval, db: Database) {
        let pause = gap(after: seconds, db: db)
        if pause > 0 { Thread.sleep(forTimeInterval: pause) }
    }
}
