import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// Stretches of merges ahead with another connection that, once they have begun, keeps moving
/// customers from one group to another (changing their keys) and adding orders to them. It
/// never changes a `visits`, so whatever it does in between, every serial order of its writes
/// and of the groups' merges keeps the sum of `visits` over the table: a loser merged and
/// deleted, merged and kept, or kept unmerged, each counted once.
final class MergeAheadKeyWriterTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    /// Changes keys and adds orders, one change a transaction, until stopped.
    final class KeyWriter: @unchecked Sendable {
        let queue: DatabaseQueue
        let customers: Int
        let seed: UInt64
        let done = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var stopRequested = false
        private var _commits = 0
        var commits: Int { lock.withLock { _commits } }

        init(path: String, customers: Int, seed: UInt64) throws {
            var config = Configuration()
            config.busyMode = .timeout(30)
            queue = try DatabaseQueue(path: path, configuration: config)
            self.customers = customers
            self.seed = seed
        }

        func stop() {
            lock.withLock { stopRequested = true }
            done.wait()
        }

        func start() {
            Thread.detachNewThread { [self] in
                var rng = SplitMix64(seed: seed)
                var step = 0
                while !lock.withLock({ stopRequested }) {
                    step += 1
                    let id = Int.random(in: 1...customers, using: &rng)
                    let what = Int.random(in: 0..<4, using: &rng)
                    let key = Int.random(in: 0..<(customers / 3), using: &rng)
                    let upper = Bool.random(using: &rng)
                    do {
                        try queue.write { db in
                            switch what {
                            case 0, 1:
                                // Into another group (or a group of its own where the key is new).
                                try db.execute(
                                    sql: "UPDATE customers SET email = ? WHERE id = ?", arguments: ["\(upper ? "U" : "u")\(key)@x.org", id])
                            case 2:
                                try db.execute(
                                    sql: "UPDATE customers SET email = ? WHERE id = ?", arguments: ["w\(seed)-\(step)@y.org", id])
                            default:
                                // (Fails where the customer is gone: foreign keys are enforced here.)
                                try db.execute(sql: "INSERT INTO orders (customer_id, amount) VALUES (?, ?)", arguments: [id, step])
                            }
                        }
                        lock.withLock { _commits += 1 }
                    } catch {}
                    Thread.sleep(forTimeInterval: 0.0005)
                }
                done.signal()
            }
        }
    }

    /// Three stores whose writer begins after the first stretch of merges, and one whose writer
    /// is there from the start. After the run and after the next one (alone): the sum of
    /// `visits` is the store's, no order points at a customer that is gone, and the next run
    /// leaves no duplicate.
    func testKeysChangedAmidTheStretchesOfMergesCountEveryVisitOnce() throws {
        // (Seed 6: the other connection writes from before the run: no stretch of merges goes ahead.)
        for (seed, archive, before) in [(UInt64(3), true, false), (4, false, false), (5, true, false), (6, true, true)] {
            let path = dir.appendingPathComponent("store-\(seed).sqlite").path
            try TestSupport.makeDatabase(
                at: path, sql: ScenarioKit.scatteredCustomersSQL(customers: 6000, orders: 6000, seed: seed, createdAt: 0..<40))
            let visits = try ScenarioKit.int(path, "SELECT sum(visits) FROM customers")
            let writer = try KeyWriter(path: path, customers: 6000, seed: seed)
            let start = DedupeExecutor.aheadStart
            DedupeExecutor.aheadStart = 100
            defer { DedupeExecutor.aheadStart = start }
            var started = before
            if before { writer.start() }
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20, archive: archive), db: path) { event in
                guard case .batch(let report) = event, !started, report.counts.updated > 0 else { return }
                // After the first stretch of merges: its losers outside its rowids are taken, not yet deleted.
                writer.start()
                started = true
                Thread.sleep(forTimeInterval: 0.05)
            }
            XCTAssertTrue(started)
            writer.stop()
            XCTAssertGreaterThan(writer.commits, 10, "seed \(seed): the other connection wrote during the run")
            XCTAssertEqual(try ScenarioKit.int(path, "SELECT sum(visits) FROM customers"), visits, "seed \(seed): every visit counted once")
            XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0, "seed \(seed)")
            // The next run, alone, leaves no duplicate and still every visit once.
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20, archive: archive), db: path)
            XCTAssertEqual(try ScenarioKit.int(path, "SELECT sum(visits) FROM customers"), visits, "seed \(seed): after the next run")
            XCTAssertEqual(
                try ScenarioKit.int(path, "SELECT count(*) FROM (SELECT 1 FROM customers GROUP BY lower(email) HAVING count(*) > 1)"), 0)
            XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM winnow_merged_losers"), 0)
            XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0, "seed \(seed)")
        }
    }
}
