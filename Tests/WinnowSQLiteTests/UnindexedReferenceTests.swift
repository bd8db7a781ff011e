import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// Re-pointing and deleting with foreign keys declared, with and without an index on the
/// referencing column. Batches run with SQLite's enforcement off where the rule allows it and
/// check the references they touch themselves; these tests hold them to what enforcement
/// guaranteed: no dangling reference, nothing cascaded away, `restore` exact.
final class UnindexedReferenceTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    /// `customers` in groups of three (emails differing in case), `orders` pointing at every
    /// customer row; `cascade` adds ON DELETE CASCADE, `indexed` an index on the reference.
    func makeStore(customers: Int, indexed: Bool, cascade: Bool = false) throws -> String {
        let path = dir.appendingPathComponent("store-\(indexed)-\(cascade).sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, created_at INTEGER NOT NULL, visits INTEGER NOT NULL);
                CREATE TABLE orders (id INTEGER PRIMARY KEY,
                    customer_id INTEGER REFERENCES customers(id)\(cascade ? " ON DELETE CASCADE" : ""), amount INTEGER);
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(customers) - 1)
                INSERT INTO customers (email, created_at, visits)
                SELECT CASE i % 3 WHEN 0 THEN 'u' || (i / 3) || '@x.org' WHEN 1 THEN 'U' || (i / 3) || '@x.org' ELSE 'u' || (i / 3) || '@X.ORG' END,
                       1000 + (i * 7919) % 100003, i % 5
                FROM s ORDER BY (i * 2654435761) % 4294967311;
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(customers) - 1)
                INSERT INTO orders (customer_id, amount) SELECT 1 + (i * 48271) % \(customers), i FROM s;
                \(indexed ? "CREATE INDEX orders_customer ON orders (customer_id);" : "")
                """)
        return path
    }

    static let job = ScenarioKit.customersJob(size: 7, merge: "{visits: sum}")

    /// Every order points at a surviving customer, and at the one its old customer lost to.
    func assertRepointed(_ path: String, before: [Int64: String], file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0, file: file, line: line)
        XCTAssertEqual(
            try ScenarioKit.int(path, "SELECT count(*) FROM orders"), before.count, "no order cascaded away", file: file, line: line)
        let now = try ScenarioKit.rows(path, "SELECT o.id, lower(c.email) FROM orders o JOIN customers c ON c.id = o.customer_id")
        XCTAssertEqual(now.count, before.count, file: file, line: line)
        for row in now {
            XCTAssertEqual(String.fromDatabaseValue(row[1]), before[Int64.fromDatabaseValue(row[0])!], file: file, line: line)
        }
        XCTAssertEqual(
            try ScenarioKit.int(path, "SELECT count(*) FROM customers"),
            try ScenarioKit.int(path, "SELECT count(DISTINCT lower(email)) FROM customers"), file: file, line: line)
    }

    func ordersByEmail(_ path: String) throws -> [Int64: String] {
        var map: [Int64: String] = [:]
        for row in try ScenarioKit.rows(path, "SELECT o.id, lower(c.email) FROM orders o JOIN customers c ON c.id = o.customer_id") {
            map[Int64.fromDatabaseValue(row[0])!] = String.fromDatabaseValue(row[1])
        }
        return map
    }

    func testUnindexedChildIsRepointedAndRestoredExactly() throws {
        for cascade in [false, true] {
            let path = try makeStore(customers: 600, indexed: false, cascade: cascade)
            let original = try ScenarioKit.userState(path)
            let before = try ordersByEmail(path)
            let ofLosers = try ScenarioKit.int(
                path,
                """
                SELECT count(*) FROM orders o JOIN customers c ON c.id = o.customer_id
                WHERE c.created_at > (SELECT min(created_at) FROM customers d WHERE lower(d.email) = lower(c.email))
                """)
            XCTAssertGreaterThan(ofLosers, 100)
            let summary = try ScenarioKit.run(Self.job, db: path)
            XCTAssertEqual(summary.counts.deleted, 400)
            XCTAssertEqual(summary.counts.groups, 200)
            XCTAssertEqual(summary.counts.repointed, ofLosers)
            try assertRepointed(path, before: before)
            _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
            XCTAssertEqual(try ScenarioKit.userState(path), original, "cascade: \(cascade)")
        }
    }

    /// The same data with and without the index ends in the same state (only the path differs).
    func testIndexedAndUnindexedChildrenEndAlike() throws {
        let unindexed = try makeStore(customers: 300, indexed: false)
        let indexed = try makeStore(customers: 300, indexed: true)
        try ScenarioKit.run(Self.job, db: unindexed)
        try ScenarioKit.run(Self.job, db: indexed)
        XCTAssertEqual(try TestSupport.contentDump(unindexed), try TestSupport.contentDump(indexed))
    }

    /// Another connection adds an order pointing at a loser of a later batch between two
    /// batches: the map of children is no longer exact, is mapped again, and the new order is
    /// re-pointed too, never left dangling.
    func testChildAddedByAnotherWriterMidRunIsRepointed() throws {
        let path = try makeStore(customers: 300, indexed: false)
        // The loser of the group found last (highest first-loser rowid): its batch comes last.
        let lateLoser = try XCTUnwrap(
            ScenarioKit.column(
                path,
                """
                SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY lower(email) ORDER BY created_at) AS n,
                                       min(id) FILTER (WHERE 1) OVER (PARTITION BY lower(email)) AS g FROM customers)
                WHERE n > 1 ORDER BY id DESC LIMIT 1
                """, as: Int64.self
            ).first ?? nil)
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        var inserted = false
        let summary = try ScenarioKit.run(Self.job, db: path) { event in
            guard case .batch = event, !inserted else { return }
            inserted = true
            try? other.write { db in
                try db.execute(sql: "INSERT INTO orders (id, customer_id, amount) VALUES (100000, ?, -1)", arguments: [lateLoser])
            }
        }
        XCTAssertTrue(inserted)
        XCTAssertGreaterThan(summary.counts.batches, 2)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        let target = try ScenarioKit.int(path, "SELECT customer_id FROM orders WHERE id = 100000")
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM customers WHERE id = \(target)"), 1, "points at a survivor")
    }

    /// The children of losers whose winner is settled by the winner terms go ahead of the
    /// batches, in stretches of the child table: the first batches only re-point, the stretches
    /// that merge (and delete the losers they took) and the batches that delete the rest find
    /// nothing left to re-point, and the end is the same as through an index.
    func testChildrenOfSettledGroupsAreRepointedAheadOfTheirBatches() throws {
        let path = try makeStore(customers: 600, indexed: false)
        var batches: [Counts] = []
        let summary = try ScenarioKit.run(Self.job, db: path) { event in
            if case .batch(let report) = event { batches.append(report.counts) }
        }
        let repointing = batches.prefix { $0.repointed > 0 && $0.deleted == 0 }
        XCTAssertFalse(repointing.isEmpty, "the run starts by re-pointing children")
        XCTAssertTrue(repointing.allSatisfy { $0.updated == 0 && $0.groups == 0 })
        XCTAssertEqual(repointing.reduce(0) { $0 + $1.repointed }, summary.counts.repointed, "every child went ahead (no group ties)")
        // Then the merges, in stretches of the winners (each deleting the losers it took in
        // its rowids), and the batches only delete.
        let merging = batches.dropFirst(repointing.count).prefix { $0.updated > 0 }
        XCTAssertFalse(merging.isEmpty, "then the winners are merged")
        XCTAssertTrue(merging.allSatisfy { $0.repointed == 0 })
        XCTAssertEqual(merging.reduce(0) { $0 + $1.updated }, summary.counts.updated, "every merge went ahead")
        XCTAssertTrue(
            batches.dropFirst(repointing.count + merging.count).allSatisfy { $0.deleted > 0 && $0.repointed == 0 && $0.updated == 0 })
        XCTAssertEqual(summary.counts.batches, batches.count)
        let indexed = try makeStore(customers: 600, indexed: true)
        try ScenarioKit.run(Self.job, db: indexed)
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(indexed))
    }

    /// docs/reference.md section 1: `plan` reports the counts a run would have. A run that re-points
    /// children ahead of its batches counts each moved child once, in the stretch that moved
    /// it, so it ends with the counts its plan gave (only its batches differ: `plan` counts the
    /// batches by group, the run its stretches ahead and the batches after them).
    func testPlanCountsWhatARunThatRepointsAheadDoes() throws {
        let path = try makeStore(customers: 600, indexed: false)
        let plan = try ScenarioKit.plan(Self.job, db: path)
        var ahead = 0
        let run = try ScenarioKit.run(Self.job, db: path) { event in
            if case .batch(let report) = event, report.counts.deleted == 0 { ahead += 1 }
        }
        XCTAssertGreaterThan(ahead, 0, "the run re-pointed ahead")
        XCTAssertEqual(run.counts.groups, plan.counts.groups)
        XCTAssertEqual(run.counts.deleted, plan.counts.deleted)
        XCTAssertEqual(run.counts.updated, plan.counts.updated)
        XCTAssertEqual(run.counts.repointed, plan.counts.repointed)
    }

    /// Groups that fit in one batch are re-pointed by that batch alone (it writes each child
    /// page once anyway): no stretch ahead of it.
    func testGroupsOfOneBatchAreNotRepointedAhead() throws {
        let path = try makeStore(customers: 300, indexed: false)
        var batches: [Counts] = []
        let summary = try ScenarioKit.run(Self.job.replacingOccurrences(of: "size: 7", with: "size: 100"), db: path) { event in
            if case .batch(let report) = event { batches.append(report.counts) }
        }
        XCTAssertEqual(batches.count, 1)
        XCTAssertEqual(summary.counts.batches, 1)
        XCTAssertEqual(batches.first?.deleted, 200)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
    }

    /// After the children went ahead, another connection takes a loser out of its group (a new
    /// e-mail) and deletes the winner of another group (with enforcement off, after its own
    /// order): their batches no longer delete those losers, and the orders that went ahead to
    /// their winners come back to them. Nothing dangles, and `restore` undoes exactly what the
    /// run did.
    func testChildrenThatWentAheadComeBackToALoserItsBatchKeeps() throws {
        let path = try makeStore(customers: 300, indexed: false)
        // Two groups and their rows in winner order.
        let groups = try ScenarioKit.rows(
            path,
            """
            SELECT lower(email), group_concat(id) FROM (SELECT id, email FROM customers ORDER BY created_at)
            GROUP BY lower(email) ORDER BY lower(email) LIMIT 2
            """
        ).map { String.fromDatabaseValue($0[1])!.split(separator: ",").map { Int64($0)! } }
        XCTAssertEqual(groups.map(\.count), [3, 3])
        let (leaving, gone) = (groups[0][1], groups[1][0])
        let goneLosers = Array(groups[1].dropFirst())
        func orders(of customer: Int64) throws -> [Int64] {
            try ScenarioKit.column(path, "SELECT id FROM orders WHERE customer_id = \(customer) ORDER BY id", as: Int64.self).map { $0! }
        }
        let leavingOrders = try orders(of: leaving)
        let goneOrders = try orders(of: gone)
        let goneLoserOrders = try goneLosers.map { try orders(of: $0) }
        XCTAssertFalse(leavingOrders.isEmpty)
        let change = """
            UPDATE customers SET email = 'left@x.org' WHERE id = \(leaving);
            DELETE FROM orders WHERE id IN (\(goneOrders.map(String.init).joined(separator: ", ")));
            DELETE FROM customers WHERE id = \(gone);
            """
        // What restore must bring back: the rows as they were, with the other connection's change.
        let expected = dir.appendingPathComponent("expected.sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: expected)
        XCTAssertNoThrow(try ScenarioKit.execute(expected, change), "expected")
        var changed = false
        var afterFirst: [Int64] = []
        let summary = try ScenarioKit.run(Self.job, db: path) { event in
            guard case .batch(let report) = event, !changed else { return }
            XCTAssertEqual(report.counts.deleted, 0, "the first batch re-points ahead")
            afterFirst = (try? self.orders(path, pointingAt: groups[0][0])) ?? []
            var config = Configuration()
            config.foreignKeysEnabled = false
            do {
                let other = try DatabaseQueue(path: path, configuration: config)
                try other.write { db in try db.execute(sql: change) }
                try other.close()
                changed = true
            } catch {
                XCTFail("\(error)")
            }
        }
        XCTAssertTrue(changed)
        XCTAssertTrue(Set(leavingOrders).isSubset(of: afterFirst), "the leaving loser's orders had gone ahead to its winner")
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0, "nothing dangles")
        XCTAssertEqual(try orders(of: leaving), leavingOrders, "back with the loser that left its group")
        for (loser, itsOrders) in zip(goneLosers, goneLoserOrders) {
            XCTAssertEqual(try orders(of: loser), itsOrders, "back with a loser whose winner is gone")
        }
        XCTAssertEqual(
            try ScenarioKit.int(path, "SELECT count(*) FROM customers WHERE id IN (\(leaving), \(goneLosers[0]), \(goneLosers[1]))"), 3)
        XCTAssertEqual(
            try ScenarioKit.int(path, "SELECT count(*) FROM customers WHERE id = \(groups[0][2])"), 0, "the group's other loser went")
        XCTAssertNoThrow(try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID)), "restore")
        XCTAssertEqual(try ScenarioKit.userState(path), try ScenarioKit.userState(expected))
    }

    func orders(_ path: String, pointingAt customer: Int64) throws -> [Int64] {
        try ScenarioKit.column(path, "SELECT id FROM orders WHERE customer_id = \(customer) ORDER BY id", as: Int64.self).map { $0! }
    }

    /// Another connection adds an order pointing at a current loser after every batch: each
    /// batch then maps only its own groups' children again (the whole map would be stale again
    /// by the next batch), and every added order still ends on the survivor of its loser's key.
    func testOrdersAddedAfterEveryBatchAreRepointed() throws {
        let path = try makeStore(customers: 300, indexed: false)
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        var added: [Int64: String] = [:]
        var failure: String?
        let summary = try ScenarioKit.run(Self.job, db: path) { event in
            guard case .batch = event else { return }
            do {
                try other.write { db in
                    guard
                        let row = try Row.fetchOne(
                            db,
                            sql: """
                                SELECT c.id, lower(c.email) FROM customers c WHERE EXISTS (
                                    SELECT 1 FROM customers d WHERE lower(d.email) = lower(c.email) AND d.created_at < c.created_at)
                                ORDER BY c.id LIMIT 1 OFFSET ?
                                """, arguments: [added.count % 7])
                    else { return }
                    let id = 100_000 + Int64(added.count)
                    try db.execute(sql: "INSERT INTO orders (id, customer_id, amount) VALUES (?, ?, -1)", arguments: [id, row[0] as Int64])
                    added[id] = row[1]
                }
            } catch {
                failure = "\(error)"
            }
        }
        XCTAssertNil(failure)
        XCTAssertGreaterThan(added.count, 10, "an order was added after every batch")
        XCTAssertEqual(summary.counts.deleted, 200)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        for (order, email) in added {
            let owner = try ScenarioKit.rows(
                path, "SELECT lower(c.email) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id = \(order)")
            XCTAssertEqual(owner.first.flatMap { String.fromDatabaseValue($0[0]) }, email, "order \(order)")
        }
    }

    /// After about one batch in three another connection points orders at losers drawn at random
    /// from the whole table (new orders, and existing ones moved): a loser whose batch is still to come
    /// may gain children at any time, and the batches must find them however they file the
    /// losers (by position for a rule that only deletes; by group again for one that merges,
    /// whose groups then reach past the stretch the batch maps). Each such order ends on the
    /// survivor of its loser's key, and nothing points at a deleted row. Several seeds.
    func testOrdersPointedAtRandomLosersBetweenBatchesEndOnTheirSurvivors() throws {
        let deleteOnly = ScenarioKit.customersJob(size: 7, merge: nil)
        // `start`: the batches before the first change. The first commit comes before the
        // stretches that re-point children ahead, after the first of them, or once the batches
        // of a rule that only deletes have begun by position.
        let cases: [(seed: UInt64, job: String, start: Int)] = [
            (0x61, Self.job, 0), (0x62, deleteOnly, 0), (0x63, Self.job, 1), (0x64, deleteOnly, 12), (0x65, deleteOnly, 25),
        ]
        for (seed, job, start) in cases {
            let path = try makeStore(customers: 900, indexed: false)
            defer { try? FileManager.default.removeItem(atPath: path) }
            var expected = try ordersByEmail(path)
            let other = try DatabaseQueue(path: path)
            defer { try? other.close() }
            var random = SplitMix64(seed: seed)
            var touched = 0, batches = 0
            var failure: String?
            let summary = try ScenarioKit.run(job, db: path, batchSize: 7) { event in
                guard case .batch = event else { return }
                batches += 1
                // (Then after about one batch in three: the batches between two commits map
                // their children once, for several batches at a time.)
                guard batches > start, batches == start + 1 || Int.random(in: 0..<3, using: &random) == 0 else { return }
                do {
                    try other.write { db in
                        let losers = try Row.fetchAll(
                            db,
                            sql: """
                                SELECT c.id, lower(c.email) FROM customers c WHERE EXISTS (
                                    SELECT 1 FROM customers d WHERE lower(d.email) = lower(c.email) AND d.created_at < c.created_at)
                                """)
                        guard !losers.isEmpty else { return }
                        for _ in 0..<3 {
                            let loser = losers[Int.random(in: 0..<losers.count, using: &random)]
                            let id = 100_000 + Int64(touched)
                            try db.execute(
                                sql: "INSERT INTO orders (id, customer_id, amount) VALUES (?, ?, -1)", arguments: [id, loser[0] as Int64])
                            expected[id] = loser[1]
                            touched += 1
                        }
                        let moved = Int64(1 + Int.random(in: 0..<900, using: &random))
                        let loser = losers[Int.random(in: 0..<losers.count, using: &random)]
                        try db.execute(sql: "UPDATE orders SET customer_id = ? WHERE id = ?", arguments: [loser[0] as Int64, moved])
                        expected[moved] = loser[1]
                        touched += 1
                    }
                } catch {
                    failure = "\(error)"
                }
            }
            XCTAssertNil(failure, "seed \(seed)")
            XCTAssertGreaterThan(touched, 3, "seed \(seed): orders were pointed at losers between batches")
            XCTAssertEqual(summary.counts.deleted, 600, "seed \(seed)")
            try assertRepointed(path, before: expected)
        }
    }

    /// After the first batch of a rule that merges, another connection makes the winners of
    /// groups all over the table later than their losers, and after later batches points orders
    /// at winners of groups still to come: once the batches settle whole groups again, such a
    /// winner goes in its group's batch, and its children (its own and those the other
    /// connection added) end on the loser that now comes first.
    func testWinnerThatAnotherCommitMakesALoserHasItsChildrenRepointed() throws {
        let path = try makeStore(customers: 900, indexed: false)
        var expected = try ordersByEmail(path)
        let winners = try ScenarioKit.column(
            path,
            """
            SELECT id FROM customers c WHERE NOT EXISTS (
                SELECT 1 FROM customers d WHERE lower(d.email) = lower(c.email) AND d.created_at < c.created_at) ORDER BY id
            """, as: Int64.self
        ).map { $0! }
        XCTAssertEqual(winners.count, 300)
        var random = SplitMix64(seed: 0x71)
        let demoted = Set((0..<40).map { _ in winners[Int.random(in: 0..<winners.count, using: &random)] })
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        var batches = 0, added = 0
        var failure: String?
        let summary = try ScenarioKit.run(Self.job, db: path, batchSize: 7) { event in
            guard case .batch = event else { return }
            batches += 1
            do {
                try other.write { db in
                    if batches == 1 {
                        for (n, id) in demoted.enumerated() {
                            try db.execute(sql: "UPDATE customers SET created_at = ? WHERE id = ?", arguments: [10_000_000 + n, id])
                        }
                    } else if batches % 3 == 0 {
                        let still = try Int64.fetchAll(
                            db, sql: "SELECT id FROM customers WHERE id IN (\(demoted.map(String.init).joined(separator: ", ")))")
                        guard let id = still.randomElement(using: &random) else { return }
                        let order = 200_000 + Int64(added)
                        try db.execute(sql: "INSERT INTO orders (id, customer_id, amount) VALUES (?, ?, -1)", arguments: [order, id])
                        expected[order] = try String.fetchOne(db, sql: "SELECT lower(email) FROM customers WHERE id = ?", arguments: [id])
                        added += 1
                    }
                }
            } catch {
                failure = "\(error)"
            }
        }
        XCTAssertNil(failure)
        XCTAssertEqual(summary.counts.deleted, 600)
        XCTAssertGreaterThan(added, 3)
        // Every demoted winner went, and its orders with their key's survivor.
        XCTAssertEqual(
            try ScenarioKit.int(path, "SELECT count(*) FROM customers WHERE id IN (\(demoted.map(String.init).joined(separator: ", ")))"), 0
        )
        XCTAssertGreaterThan(try ScenarioKit.int(path, "SELECT count(*) FROM orders WHERE amount >= 0"), 0)
        try assertRepointed(path, before: expected)
    }

    /// Another connection commits right after the first stretch that re-points orders without an
    /// index ahead of the batches: the stretches go on (each first forgets the moves that no
    /// longer hold as the rows are then), and the batches after them map their own rows'
    /// children as they go. The orders end on their key's survivor, as by group.
    func testStretchesAheadGoOnAfterAnotherConnectionsCommit() throws {
        let path = try makeStore(customers: 3000, indexed: false)
        let expected = try ordersByEmail(path)
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        let start = DedupeExecutor.aheadStart
        DedupeExecutor.aheadStart = 16
        defer { DedupeExecutor.aheadStart = start }
        var events: [Counts] = []
        var failure: String?
        let job = ScenarioKit.customersJob(size: 7, merge: "{visits: sum}", maxTransactionMilliseconds: 2)
        let summary = try ScenarioKit.run(job, db: path) { event in
            guard case .batch(let report) = event else { return }
            events.append(report.counts)
            guard events.count == 1 else { return }
            do {
                try other.write { try $0.execute(sql: "CREATE TABLE beat (t INTEGER); INSERT INTO beat VALUES (1)") }
            } catch {
                failure = "\(error)"
            }
        }
        XCTAssertNil(failure)
        XCTAssertEqual(events.first?.deleted, 0)
        XCTAssertGreaterThan(events.first?.repointed ?? 0, 0, "the first batch is a stretch of orders ahead")
        let stretchesAfter = events.dropFirst().prefix { $0.deleted == 0 }.filter { $0.repointed > 0 }
        XCTAssertGreaterThan(stretchesAfter.count, 0, "stretches of orders after the commit")
        XCTAssertEqual(summary.counts.deleted, 2000)
        try assertRepointed(path, before: expected)
    }

    /// Without winner terms every row of a group ties the first, and settling the group by
    /// content can make the discovery's candidate winner a loser: its children must be mapped
    /// too, or they would be left pointing at a deleted row.
    func testCandidateWinnerThatSettlingMakesALoserHasItsChildrenRepointed() throws {
        let path = dir.appendingPathComponent("swap.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE c (id INTEGER PRIMARY KEY, email TEXT, visits INTEGER);
                CREATE TABLE o (id INTEGER PRIMARY KEY, cid INTEGER REFERENCES c(id));
                INSERT INTO c VALUES (1, 'A', 1), (2, 'a', 2), (3, 'b', 1), (4, 'B ', 1), (6, 'c', 1);
                INSERT INTO o VALUES (1, 2), (2, 3), (3, 3), (4, 6), (5, 1), (6, 4);
                """)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: c
                key: email
                normalize: [trim, lowercase]
                merge: {visits: sum}
            """, db: path)
        XCTAssertEqual(summary.counts.deleted, 2)
        XCTAssertEqual(summary.counts.repointed, 3)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        XCTAssertEqual(try ScenarioKit.column(path, "SELECT cid FROM o ORDER BY id", as: Int64.self), [1, 4, 4, 6, 1, 4])
    }

    /// `plan` names the unindexed reference with the index that fixes it, and stops once it exists.
    func testPlanWarnsAboutTheUnindexedReferenceUntilItIsIndexed() throws {
        let path = try makeStore(customers: 60, indexed: false)
        let warnings = try ScenarioKit.plan(Self.job, db: path).rules[0].warnings.filter { $0.contains("no index") }
        XCTAssertEqual(warnings.count, 1, "\(warnings)")
        XCTAssertTrue(warnings[0].contains(#"fix: CREATE INDEX "orders_customer_id" ON "orders" ("customer_id");"#), warnings[0])
        try ScenarioKit.execute(path, #"CREATE INDEX "orders_customer_id" ON "orders" ("customer_id");"#)
        XCTAssertEqual(try ScenarioKit.plan(Self.job, db: path).rules[0].warnings.filter { $0.contains("no index") }, [])
    }

    /// docs/reference.md section 5: a restricted reference that appears mid-run (another connection adds
    /// a child of a loser a later batch would delete) refuses that batch with 65; the batches
    /// before it stay committed, the batch in flight is rolled back, no reference dangles.
    func testRestrictRefusesTheBatchWhoseLoserGainedAChildMidRun() throws {
        for indexed in [false, true] {
            let path = try makeStore(customers: 300, indexed: indexed)
            try ScenarioKit.execute(path, "DELETE FROM orders")
            let lateLoser = try XCTUnwrap(
                ScenarioKit.column(
                    path,
                    """
                    SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY lower(email) ORDER BY created_at) AS n FROM customers)
                    WHERE n > 1 ORDER BY id DESC LIMIT 1
                    """, as: Int64.self
                ).first ?? nil)
            let other = try DatabaseQueue(path: path)
            var inserted = false
            let job = Self.job.replacingOccurrences(of: "    archive: true", with: "    archive: true\n    references: restrict")
            // (The merges go ahead in stretches from 10 winners: the insert follows the first.)
            let start = DedupeExecutor.aheadStart
            DedupeExecutor.aheadStart = 10
            defer { DedupeExecutor.aheadStart = start }
            XCTAssertThrowsError(
                try ScenarioKit.run(job, db: path) { event in
                    guard case .batch = event, !inserted else { return }
                    inserted = true
                    try? other.write { db in
                        try db.execute(sql: "INSERT INTO orders (id, customer_id, amount) VALUES (1, ?, 1)", arguments: [lateLoser])
                    }
                }
            ) { error in
                XCTAssertEqual((error as? WinnowError)?.exitCode, 65, "\(error)")
            }
            try other.close()
            XCTAssertTrue(inserted)
            let remaining = try ScenarioKit.int(path, "SELECT count(*) FROM customers")
            XCTAssertLessThan(remaining, 300, "the batches before the refusal stay committed (indexed: \(indexed))")
            XCTAssertGreaterThan(remaining, 100, "the refused batch and the ones after it changed nothing")
            XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM customers WHERE id = \(lateLoser)"), 1)
            XCTAssertEqual(try ScenarioKit.int(path, "SELECT customer_id FROM orders WHERE id = 1"), Int(lateLoser))
            XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        }
    }

    /// A trigger on the child table that puts every re-pointed reference back: the losers'
    /// children would dangle. Through an index the batch finds them before its losers go and
    /// is rolled back; without one the check after the rule finds them (its batches are
    /// committed and journaled) and the run fails instead of reporting success.
    func testChildrenLeftPointingAtLosersFailTheRun() throws {
        for (indexed, archive) in [(true, true), (false, true), (false, false)] {
            try? FileManager.default.removeItem(at: dir)
            dir = try TestSupport.scratchDirectory()
            let path = try makeStore(customers: 60, indexed: indexed)
            try ScenarioKit.execute(
                path,
                """
                CREATE TRIGGER orders_keep AFTER UPDATE OF customer_id ON orders
                BEGIN UPDATE orders SET customer_id = OLD.customer_id WHERE id = NEW.id; END
                """)
            let original = try ScenarioKit.userState(path)
            let job = Self.job.replacingOccurrences(of: "archive: true", with: "archive: \(archive)")
            XCTAssertThrowsError(try ScenarioKit.run(job, db: path)) { error in
                XCTAssertEqual((error as? WinnowError)?.exitCode, 70, "\(error)")
                XCTAssertTrue("\(error)".contains("orders"), "names the child table: \(error)")
                if !indexed {
                    XCTAssertTrue("\(error)".contains(archive ? "winnow restore --run" : "does not archive"), "\(error)")
                }
            }
            let dangling = try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count
            if indexed {
                XCTAssertEqual(dangling, 0, "the first batch was rolled back")
                XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM customers"), 60)
            } else {
                XCTAssertGreaterThan(dangling, 0, "what the failed run left")
            }
            if !indexed && archive {
                let run = try ScenarioKit.int(path, "SELECT max(id) FROM winnow_runs")
                _ = try Restorer.restore(database: path, runID: Int64(run))
                XCTAssertEqual(try ScenarioKit.userState(path), original, "restore undoes the failed run's committed batches")
            }
        }
    }

    /// A table that references itself without an index (managers): losers managing losers and
    /// winners, all re-pointed with enforcement off; `restore` brings every row back exactly.
    func testSelfReferenceWithoutAnIndexIsRepointedAndRestored() throws {
        let path = dir.appendingPathComponent("staff.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE staff (id INTEGER PRIMARY KEY, email TEXT, hired INTEGER NOT NULL, manager_id INTEGER REFERENCES staff(id));
                WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 240)
                INSERT INTO staff (id, email, hired, manager_id)
                SELECT i, 'p' || (i % 80) || '@x.org', (i * 7919) % 1009, CASE WHEN i > 3 THEN 1 + (i * 31) % (i - 1) END FROM s;
                """)
        let original = try ScenarioKit.userState(path)
        let rule = try DatabaseQueue(path: path).read { db in
            try JobRunner.compile(try ScenarioKit.job("version: 1\ndedupe:\n  - entity: staff\n    key: email\n"), db)
        }[0]
        XCTAssertTrue(rule.foreignKeysSuspendable)
        XCTAssertFalse(rule.references[0].indexed)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: staff
                key: email
                winner:
                  - hired: asc
                archive: true
            batch:
              size: 9
            """, db: path)
        XCTAssertEqual(summary.counts.deleted, 160)
        XCTAssertGreaterThan(summary.counts.repointed, 50)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        XCTAssertEqual(
            try ScenarioKit.int(
                path, "SELECT count(*) FROM staff WHERE manager_id IS NOT NULL AND manager_id NOT IN (SELECT id FROM staff)"), 0)
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        XCTAssertEqual(try ScenarioKit.userState(path), original)
    }

    /// Enforcement comes back on after the batches: the connection's setting is not left off.
    func testForeignKeysAreEnforcedAgainAfterTheRule() throws {
        let path = try makeStore(customers: 60, indexed: false)
        let job = try ScenarioKit.job(Self.job)
        let rule = try DatabaseQueue(path: path).read { db in try JobRunner.compile(job, db) }[0]
        XCTAssertTrue(rule.foreignKeysSuspendable)
        XCTAssertFalse(rule.references[0].indexed)
        let queue = try DatabaseOpener.open(path: path, mode: .readWrite(create: false))
        try queue.inDatabase { db in
            try db.writeTransaction { try Bookkeeping.install(db) }
            XCTAssertEqual(try Bool.fetchOne(db, sql: "PRAGMA foreign_keys"), true)
            let writer = SQLiteBatchWriter(runID: 0)
            let executor = DedupeExecutor(db: db, rule: rule, writer: writer, settings: job.batch)
            let discovery = try executor.discover()
            var batch = 1, totals = Counts(), samples = SampleList()
            try writer.prepare(rule, db: db)
            _ = try executor.execute(discovery, batchNumber: &batch, totals: &totals, samples: &samples)
            XCTAssertEqual(totals.deleted, 40)
            XCTAssertEqual(try Bool.fetchOne(db, sql: "PRAGMA foreign_keys"), true)
        }
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
    }

    /// When the rule writes a column that a foreign key involves, or may delete a child row
    /// that is itself referenced, SQLite keeps enforcing (and cascading) as usual.
    func testEnforcementStaysOnWhereTheRuleCannotCheckEverything() throws {
        func suspendable(_ sql: String, _ yaml: String) throws -> Bool {
            let path = dir.appendingPathComponent("s\(UUID().uuidString.prefix(6)).sqlite").path
            try TestSupport.makeDatabase(at: path, sql: sql)
            let job = try ScenarioKit.job(yaml)
            return try DatabaseQueue(path: path).read { db in try JobRunner.compile(job, db) }[0].foreignKeysSuspendable
        }
        let parent = "CREATE TABLE p (id INTEGER PRIMARY KEY, code TEXT UNIQUE, k TEXT, n INTEGER);"
        let rule = "version: 1\ndedupe:\n  - entity: p\n    key: k\n"
        XCTAssertTrue(try suspendable(parent + "CREATE TABLE c (id INTEGER PRIMARY KEY, pid REFERENCES p(id));", rule))
        XCTAssertFalse(try suspendable(parent, rule), "nothing references the table: nothing to gain")
        XCTAssertFalse(
            try suspendable(
                parent + "CREATE TABLE c (id INTEGER PRIMARY KEY, pcode REFERENCES p(code));",
                rule + "    merge: {code: fill_null}\n"), "merging a referenced column")
        XCTAssertTrue(
            try suspendable(
                parent + "CREATE TABLE c (id INTEGER PRIMARY KEY, pcode REFERENCES p(code));",
                rule + "    merge: {n: sum}\n"))
        XCTAssertFalse(
            try suspendable(
                parent + """
                    CREATE TABLE link (id INTEGER PRIMARY KEY, pid REFERENCES p(id), tag TEXT, UNIQUE (pid, tag));
                    CREATE TABLE note (id INTEGER PRIMARY KEY, link_id REFERENCES link(id));
                    """, rule), "a link row that may be deleted is referenced itself")
    }

    /// `customers` in groups of one to four case variants, each row with a unique `code`;
    /// `orders` reference the rowid and `notes` the code, zero to three of each per customer,
    /// with an index on both references or on neither.
    func makeReferencedTwice(customers: Int, indexed: Bool) throws -> String {
        let path = dir.appendingPathComponent("twice-\(indexed).sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, code TEXT UNIQUE, created_at INTEGER NOT NULL, visits INTEGER NOT NULL);
                CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), amount INTEGER);
                CREATE TABLE notes (id INTEGER PRIMARY KEY, customer_code TEXT REFERENCES customers(code), body TEXT);
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(customers) - 1)
                INSERT INTO customers (email, code, created_at, visits)
                SELECT CASE i % 2 WHEN 0 THEN 'u' ELSE 'U' END || ((i * 7) % (\(customers) / 2 + 1) / 2) || '@x.org',
                       'c' || i, 1000 + (i * 7919) % 100003, i % 5
                FROM s ORDER BY (i * 2654435761) % 4294967311;
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(customers) * 3 / 2)
                INSERT INTO orders (customer_id, amount) SELECT 1 + (i * 48271) % \(customers), i FROM s;
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(customers) * 3 / 2)
                INSERT INTO notes (customer_code, body) SELECT 'c' || ((i * 69621) % \(customers)), 'n' || i FROM s;
                \(indexed ? "CREATE INDEX orders_customer ON orders (customer_id); CREATE INDEX notes_code ON notes (customer_code);" : "")
                """)
        return path
    }

    /// Each loser's children in a verbose plan's groups, by reference, and what the tables hold.
    func listedAndHeldChildren(_ path: String, plan: RunSummary) throws -> (listed: [String: Int], held: [String: Int], losers: Int) {
        var listed: [String: Int] = [:], losers: [String] = []
        for sample in plan.rules[0].samples {
            losers += sample.losers.map(\.stored)
            for children in sample.children {
                XCTAssertNil(listed["\(children.reference) \(children.loser.stored)"], "one entry per loser and reference")
                listed["\(children.reference) \(children.loser.stored)"] = children.rows
            }
        }
        var held: [String: Int] = [:]
        for loser in losers {
            let orders = try ScenarioKit.int(path, "SELECT count(*) FROM orders WHERE customer_id = \(loser)")
            let notes = try ScenarioKit.int(
                path, "SELECT count(*) FROM notes WHERE customer_code = (SELECT code FROM customers WHERE id = \(loser))")
            if orders > 0 { held["orders.customer_id \(loser)"] = orders }
            if notes > 0 { held["notes.customer_code \(loser)"] = notes }
        }
        return (listed, held, losers.count)
    }

    /// A verbose plan lists each loser's children by reference, without an index as with one:
    /// through the map (a plan of 160,000 customers with an unindexed reference listed them by
    /// a scan of the child table per sampled row and did not finish in 5 minutes).
    func testVerbosePlanListsEveryLosersChildrenWithoutAnIndex() throws {
        let job = ScenarioKit.customersJob(size: 7, merge: "{visits: sum}")
        var listed: [[String: Int]] = []
        for indexed in [false, true] {
            let path = try makeReferencedTwice(customers: 400, indexed: indexed)
            let plan = try ScenarioKit.plan(job, db: path)
            XCTAssertGreaterThan(plan.counts.batches, 5)
            let children = try listedAndHeldChildren(path, plan: plan)
            XCTAssertEqual(children.losers, plan.counts.deleted, "every group listed")
            XCTAssertEqual(children.listed, children.held)
            XCTAssertEqual(
                children.listed.values.reduce(0, +), plan.counts.repointed, "the listed children are the ones re-pointed")
            XCTAssertTrue(
                children.listed.keys.contains { $0.hasPrefix("notes.") } && children.listed.keys.contains { $0.hasPrefix("orders.") })
            listed.append(children.listed)
        }
        XCTAssertEqual(listed[0], listed[1])
    }

    /// After another connection's commit between a verbose plan's batches, the children it added
    /// to a loser are listed (the map is no longer exact: the child tables are read as they are).
    func testVerbosePlanListsChildrenAnotherConnectionAddedMidPlan() throws {
        let job = ScenarioKit.customersJob(size: 7, merge: "{visits: sum}")
        let path = try makeReferencedTwice(customers: 400, indexed: false)
        let first = try ScenarioKit.plan(job, db: path)
        // A loser listed in the last group.
        let late = try XCTUnwrap(Array(first.rules[0].samples).last?.losers.first?.stored)
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        var batches = 0
        var options = RunOptions(database: path, sampleLimit: nil)
        options.dryRun = true
        let plan = try SQLiteBackend.plan(try ScenarioKit.job(job), options: options) { event in
            guard case .batch = event else { return }
            batches += 1
            guard batches == 2 else { return }
            try? other.write { db in
                try db.execute(sql: "INSERT INTO orders (customer_id, amount) VALUES (?, -1), (?, -2)", arguments: [late, late])
                try db.execute(
                    sql: "INSERT INTO notes (customer_code, body) SELECT code, 'late' FROM customers WHERE id = ?", arguments: [late])
            }
        }
        XCTAssertGreaterThan(batches, 2)
        let children = try listedAndHeldChildren(path, plan: plan)
        XCTAssertEqual(children.listed, children.held)
        XCTAssertGreaterThanOrEqual(children.listed["orders.customer_id \(late)"] ?? 0, 2)
        XCTAssertGreaterThanOrEqual(children.listed["notes.customer_code \(late)"] ?? 0, 1)
    }
}
