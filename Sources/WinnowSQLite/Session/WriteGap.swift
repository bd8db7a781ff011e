import Foundation
import WinnowCore
import GRDB

/// The pause between two write transactions of a long loop (a rebuild's copy, its replay,
/// emptying a retired table; a `hash_column` fill; a rule's batches, which take only the gap
/// while another connection commits, ``QueueBatches/betweenBatches()``), so that other writers
/// get the lock.
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
    /// How long after another connection's last commit the gap stays wide, at least: twice the
    /// longest time seen between two of its commits (up to ``longestInterval``), where longer.
    /// A writer that commits every few seconds waits for the lock before each commit, and one
    /// that tries just after the gaps have narrowed again finds winnow's transactions back to
    /// back: beside merge-500's 1,600,000 customers, a writer committing every 2 s waited
    /// 3.2-5.7 s at worst under a 1 s limit (BENCHMARKS.md, 2026-12-07).
    static let memory: TimeInterval = 2
    /// The longest time between two commits of other connections that widens ``memory``: a
    /// writer that seldom commits is not waited for longer than that.
    static let longestInterval: TimeInterval = 30
    /// The longest time seen between two commits of other connections (up to ``longestInterval``).
    private var longest: TimeInterval = 0
    static let sharedShare = 1.0
    static let idleShare = 0.1

    /// `version`: `PRAGMA data_version` as the caller last knew the database (e.g. when its
    /// work was found), so that a commit of another connection since then counts as seen.
    init(settings: BatchSettings, version: Int64? = nil) {
        fixed = settings.pauseMilliseconds > 0 ? Double(settings.pauseMilliseconds) / 1000 : nil
        self.version = version
    }

    /// A gap that counts as seen any commit of another connection from now on: create it before
    /// the reads that precede a loop's first transaction. One created only at the loop would
    /// see none while a writer waits behind its back-to-back transactions (a waiting writer
    /// commits nothing), so it would leave that writer a tenth of the time until it happened to
    /// get in: 100-830 ms beside a table rebuild in batches of 20 ms.
    init(settings: BatchSettings, db: Database) {
        self.init(settings: settings, version: try? Int64.fetchOne(db, sql: "PRAGMA main.data_version"))
    }

    private var checkpointShared = false

    /// Whether another connection has committed in the last ``memory`` seconds. While one does,
    /// the connection also checkpoints at SQLite's usual 1,000 pages (its own WAL pages, in its
    /// own time, not inside the other writer's commit).
    /// `version`: `PRAGMA data_version` if the caller has just read it (else it is read here).
    /// `now`: the time of the observation (tests).
    mutating func observe(_ db: Database, version known: Int64? = nil, now: Date = Date()) -> Bool {
        if let current = known ?? (try? Int64.fetchOne(db, sql: "PRAGMA main.data_version")) {
            if let version, version != current {
                if let last = seenOther, now.timeIntervalSince(last) <= Self.longestInterval {
                    longest = max(longest, now.timeIntervalSince(last))
                }
                seenOther = now
            }
            version = current
        }
        let shared = seenOther.map { now.timeIntervalSince($0) < max(Self.memory, 2 * longest) } ?? false
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

    /// Between a rule's batches or stretches, whose loop keeps `pause_ms` itself: sleeps as long
    /// as the last transaction held the lock (`seconds`) while another connection has committed
    /// in the last seconds and no `pause_ms` is set; otherwise not at all. `version`: as in
    /// ``observe(_:version:)``.
    mutating func waitWhileShared(after seconds: TimeInterval, db: Database, version: Int64? = nil) {
        if observe(db, version: version), fixed == nil, seconds > 0 { Thread.sleep(forTimeInterval: seconds * Self.sharedShare) }
    }

    /// Sleeps for ``gap(after:db:)``.
    mutating func wait(after seconds: TimeInterval, db: Database) {
        let pause = gap(after: seconds, db: db)
        StatementProfile.shared.note(
            String(format: "gap %.1f ms after %.1f ms", pause * 1000, seconds * 1000)
                + (seenOther.map { String(format: " (another connection committed %.2f s ago)", Date().timeIntervalSince($0)) }
                    ?? " (no commit of another connection seen)"))
        if pause > 0 { Thread.sleep(forTimeInterval: pause) }
    }
}
