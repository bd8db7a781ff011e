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

    /// Four stores whose writer begins after the first stretch of merges (one of them without
    /// an index on `orders.customer_id`), and one whose writer is there from the start. After the run and after the next one (alone): the sum of
    /// `visits` is the store's, no order points at a customer that is gone, and the next run
    /// leaves no duplicate.
    func testKeysChangedAmidTheStretchesOfMergesCountEveryVisitOnce() throws {
        // (Seed 6: the other connection writes from before the run: no stretch of merges goes
        // ahead. Seed 7: `orders` without its index, so that the batches map the children.)
        let cases = [
            (UInt64(3), true, false, true), (4, false, false, true), (5, true, false, true), (6, true, true, true), (7, true, false, false),
        ]
        for (seed, archive, before, indexed) in cases {
            let path = dir.appendingPathComponent("store-\(seed).sqlite").path
            try TestSupport.makeDatabase(
                at: path, sql: ScenarioKit.scatteredCustomersSQL(customers: 6000, orders: 6000, seed: seed, createdAt: 0..<40))
            if !indexed { try ScenarioKit.execute(path, "DROP INDEX orders_customer") }
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
            XCTAssertEqual(try ScenarioKit.takenInt(path, "SELECT count(*) FROM temp.taken"), 0)
            XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0, "seed \(seed)")
        }
    }
}

extension MergeAheadKeyWriterTests {
    /// Runs stopped after their 3rd to 5th stretch, among the first stretches of merges (the
    /// file copied as a killed run leaves it), then keys changed by another connection, about half of them of losers the stopped run's
    /// merges took and had not deleted yet (into a group of their own, into another group, as
    /// that group's first row or not), then the next run: every visit counted once, no order
    /// pointing at a customer that is gone, no duplicate left, the record of taken losers empty.
    func testKeysChangedBetweenAStoppedRunAndTheNextCountEveryVisitOnce() throws {
        for seed in UInt64(11)...UInt64(16) {
            var rng = SplitMix64(seed: seed)
            let path = dir.appendingPathComponent("store-\(seed).sqlite").path
            try TestSupport.makeDatabase(
                at: path, sql: ScenarioKit.scatteredCustomersSQL(customers: 3000, orders: 3000, seed: seed, createdAt: 0..<40))
            let visits = try ScenarioKit.int(path, "SELECT sum(visits) FROM customers")
            let stopped = dir.appendingPathComponent("stopped-\(seed).sqlite").path
            let stopAfter = Int.random(in: 3...5, using: &rng)
            let start = DedupeExecutor.aheadStart
            DedupeExecutor.aheadStart = 50
            defer { DedupeExecutor.aheadStart = start }
            var seen = 0
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20, archive: seed % 2 == 0), db: path) { event in
                guard case .batch = event else { return }
                seen += 1
                guard seen == stopAfter else { return }
                try? FileManager.default.copyItem(atPath: path, toPath: stopped)
                try? ScenarioKit.execute(stopped, "DELETE FROM winnow_lock")
            }
            XCTAssertTrue(FileManager.default.fileExists(atPath: stopped), "seed \(seed)")
            let taken = try ScenarioKit.takenRows(
                stopped, "SELECT m.loser FROM temp.taken AS m JOIN customers AS c ON c.id = m.loser ORDER BY m.loser"
            ).compactMap { Int64.fromDatabaseValue($0[0]) }
            XCTAssertFalse(taken.isEmpty, "seed \(seed): the stopped run left losers its merges took")
            var changes: [String] = []
            for step in 0..<40 {
                let id =
                    step % 2 == 0 && !taken.isEmpty
                    ? taken[Int.random(in: 0..<taken.count, using: &rng)] : Int64.random(in: 1...3000, using: &rng)
                let key = Int.random(in: 0..<1000, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: changes.append("UPDATE customers SET email = 'w\(step)@y.org' WHERE id = \(id)")
                case 1: changes.append("UPDATE customers SET email = 'U\(key)@x.org', created_at = -\(step + 1) WHERE id = \(id)")
                default: changes.append("UPDATE customers SET email = 'u\(key)@x.org', created_at = \(100 + step) WHERE id = \(id)")
                }
            }
            try ScenarioKit.execute(stopped, changes.joined(separator: ";\n"))
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20, archive: seed % 2 == 0), db: stopped)
            XCTAssertEqual(try ScenarioKit.int(stopped, "SELECT sum(visits) FROM customers"), visits, "seed \(seed): every visit once")
            XCTAssertEqual(try ScenarioKit.rows(stopped, "PRAGMA foreign_key_check").count, 0, "seed \(seed)")
            XCTAssertEqual(
                try ScenarioKit.int(stopped, "SELECT count(*) FROM (SELECT 1 FROM customers GROUP BY lower(email) HAVING count(*) > 1)"), 0,
                "seed \(seed)")
            XCTAssertEqual(try ScenarioKit.takenInt(stopped, "SELECT count(*) FROM temp.taken"), 0, "seed \(seed)")
        }
    }
}
