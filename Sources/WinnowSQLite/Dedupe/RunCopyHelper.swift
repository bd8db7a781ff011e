import Foundation
import GRDB
import WinnowCore

/// A second connection to the rule's database, read-only, that copies one share of
/// discovery's sorted runs (``RunCopy``) on a thread of its own while the run's connection
/// copies another, into its own temporary database; the merge then reads the runs of both
/// (``SortedRuns/forEachRow(db:_:)``).
///
/// Each range is still a read of its own, as short as the run's connection's, so a rollback
/// journal's writer waits for at most one range of each: both end within `max_transaction_ms`,
/// and neither starts another while the writer holds its pending lock. The helper waits for
/// locks as SQLite's usual busy timeout does (``BusyWait/defaultLimit``); whatever stops it
/// (a lock held longer, an error), the run's connection copies the rest of its share.
final class RunCopyHelper: @unchecked Sendable {
    /// Runs on the helper's thread before each of its ranges, with the ranges it copied so far
    /// (tests: another connection commits there; an error stops the helper).
    static var beforeRange: ((Int) throws -> Void)?

    /// The helper's connection: after the copy, the merge reads its runs through it.
    let queue: DatabaseQueue
    private let lock = NSLock()
    private var share: RunCopy
    private var stopped = false
    private let done = DispatchGroup()

    /// Opens the helper on the database at `path` and starts copying `share` there, its runs in
    /// a table made by `create`, its sorter given `cacheKiB`; nil where no second connection
    /// opens (a database in memory, a file gone, a lock).
    static func start(path: String, share: RunCopy, create: String, cacheKiB: Int) -> RunCopyHelper? {
        guard !path.isEmpty, path != ":memory:", FileManager.default.fileExists(atPath: path),
            let queue = try? DatabaseOpener.open(path: path, mode: .readOnly)
        else { return nil }
        let helper = RunCopyHelper(queue: queue, share: share)
        helper.done.enter()
        let thread = Thread { [helper] in
            defer { helper.done.leave() }
            helper.copy(create: create, cacheKiB: cacheKiB)
        }
        thread.name = "winnow.discovery-copy"
        thread.start()
        return helper
    }

    private init(queue: DatabaseQueue, share: RunCopy) {
        self.queue = queue
        self.share = share
    }

    /// The rows copied so far.
    var rows: Int { lock.withLock { share.rows } }

    /// Copies the share range by range until it is done, stopped or failed (what it copied
    /// stays: ``finish()`` tells where it ended).
    private func copy(create: String, cacheKiB: Int) {
        try? queue.inDatabase { db in
            try db.execute(sql: "PRAGMA main.cache_size = -\(cacheKiB)")
            try db.execute(sql: create)
            var share = lock.withLock { self.share }
            let range = try db.makeStatement(sql: share.rangeSQL)
            let copy = try db.makeStatement(sql: share.copySQL)
            var ranges = 0
            while !share.finished, !lock.withLock({ stopped }) {
                try Self.beforeRange?(ranges)
                ranges += 1
                try share.copyNext(db, range: range, copy: copy)
                let copied = share
                lock.withLock { self.share = copied }
            }
        }
    }

    /// Stops the copy at its current statement (the run's connection failed).
    func stop() {
        lock.withLock { stopped = true }
        queue.interrupt()
    }

    /// Waits for the copy to end; returns the share as it ended (``RunCopy/finished`` false:
    /// stopped, or failed, after ``RunCopy/after``).
    func finish() -> RunCopy {
        done.wait()
        return lock.withLock { share }
    }
}
