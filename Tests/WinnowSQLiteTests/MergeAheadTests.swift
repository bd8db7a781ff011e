import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// A rule that merges applies its merges ahead of its deletions, in stretches of the winners'
/// rowids, each deleting the losers in its rowids that the merges have taken, and then deletes
/// the other losers in stretches of theirs. These tests hold it to what the
/// batches by group give: the same survivors and merged values, every loser counted once (also
/// when another connection commits between two stretches, or deletes a merged winner), and an
/// exact `restore`.
final class MergeAheadTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory() }
    override func tearDownWithError() throws {
        DedupeExecutor.holdsSettledWinners = true
        DedupeExecutor.holdingSettledWinners = nil
        try? FileManager.default.removeItem(at: dir)
    }

    /// `customers` with keys drawn at random (groups of varying size, scattered over the
    /// table), NULLs in `phone`, ties on `created_at`; `orders` (indexed) pointing at them; and
    /// a `notes` table the tests write to as another connection.
    func makeStore(_ name: String, customers: Int = 3000, seed: UInt64 = 7, orders: Bool = true) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try TestSupport.makeDatabase(
            at: path,
            sql: ScenarioKit.scatteredCustomersSQL(
                customers: customers, orders: orders ? customers : 0, seed: seed, createdAt: 0..<40,
                alsoCreate: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"))
        return path
    }

    /// ``makeStore(_:customers:seed:orders:)``'s 3,000 customers with `manyOrders` orders
    /// spread evenly over them, in an order unrelated to their customers.
    func makeStore(_ name: String, manyOrders: Int) throws -> String {
        let path = try makeStore(name, orders: false)
        try ScenarioKit.execute(
            path,
            """
            WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(manyOrders - 1))
            INSERT INTO orders (customer_id, amount) SELECT 1 + (i * 48271) % 3000, i FROM s
            """)
        return path
    }

    /// The same job in one batch: every group settled whole, the merges with their deletions.
    func byGroup(_ path: String, job: String = ScenarioKit.customersJob(size: 100_000)) throws -> String {
        let reference = dir.appendingPathComponent("reference-\(UUID().uuidString).sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: reference)
        var events: [Counts] = []
        try ScenarioKit.run(job, db: reference) { event in
            if case .batch(let report) = event { events.append(report.counts) }
        }
        XCTAssertEqual(events.count, 1, "the reference settles every group in one batch")
        return reference
    }

    func takenRows(_ path: String) throws -> Int {
        try ScenarioKit.takenInt(path, "SELECT count(*) FROM temp.taken")
    }

    /// The losers recorded as taken that are still in `customers` (a merge took them, their
    /// deletion has not come yet).
    func takenLeft(_ path: String) throws -> Int {
        try ScenarioKit.takenInt(path, "SELECT count(*) FROM temp.taken AS m JOIN customers AS c ON c.id = m.loser")
    }

    /// A commit by another connection that changes no row the job reads.
    static let note = "INSERT INTO notes (body) VALUES ('written meanwhile')"

    static func writeNote(_ other: DatabaseQueue) { try? other.write { db in try db.execute(sql: Self.note) } }

    /// A store of 6,000 customers, another connection to it (which the caller closes) that the
    /// test writes ``note`` through, and the end batches by group give with that note.
    func storeBesideANote() throws -> (path: String, other: DatabaseQueue, reference: String) {
        let path = try makeStore("store.sqlite", customers: 6000)
        let reference = try byGroup(path)
        try ScenarioKit.execute(reference, Self.note)
        return (path, try DatabaseQueue(path: path), reference)
    }

    /// A copy of the store as a run killed right after its first stretch of merges leaves it
    /// (merged winners, their losers recorded as taken: those in the stretch's rowids deleted,
    /// the others still there): the job runs on `path` in batches of 20, its stretches ahead
    /// starting at 100 rows or winners, and the file is copied once that stretch has committed.
    /// The lock in the copy is this live process's; as a killed run's would be, it is gone.
    func stoppedAfterFirstMergeStretch(_ path: String) throws -> String {
        let stopped = dir.appendingPathComponent("after-merges.sqlite").path
        let start = DedupeExecutor.aheadStart
        DedupeExecutor.aheadStart = 100
        defer { DedupeExecutor.aheadStart = start }
        var copied = false
        var first: Counts?
        try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
            guard case .batch(let report) = event, !copied, report.counts.updated > 0 else { return }
            first = report.counts
            try? FileManager.default.copyItem(atPath: path, toPath: stopped)
            try? ScenarioKit.execute(stopped, "DELETE FROM winnow_lock")
            copied = true
        }
        XCTAssertTrue(copied)
        XCTAssertGreaterThan(first?.deleted ?? 0, 0, "the stretch deleted the losers it took in its rowids")
        XCTAssertGreaterThan(try takenLeft(stopped), 0, "and left the others it took")
        return stopped
    }

    /// Runs the customers job in batches of 20 on `path`, its stretches ahead starting at 300
    /// rows or winners; returns the run's summary, the stretches of children (batches that
    /// re-pointed and deleted nothing) and the children they re-pointed.
    func runChildrenAhead(_ path: String) throws -> (summary: RunSummary, stretches: Int, repointed: Int) {
        var (stretches, repointed) = (0, 0)
        let summary = try withAheadStart(300) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
                guard case .batch(let report) = event, report.counts.repointed > 0, report.counts.deleted == 0 else { return }
                (stretches, repointed) = (stretches + 1, repointed + report.counts.repointed)
            }
        }
        return (summary, stretches, repointed)
    }

    /// Runs `body` with the stretches ahead starting at `start` rows or winners.
    func withAheadStart<T>(_ start: Int, _ body: () throws -> T) rethrows -> T {
        let before = DedupeExecutor.aheadStart
        DedupeExecutor.aheadStart = start
        defer { DedupeExecutor.aheadStart = before }
        return try body()
    }

    func testMergesGoAheadByWinnerThenBatchesOnlyDeleteAndTheEndIsTheSameAsByGroup() throws {
        let path = try makeStore("store.sqlite")
        let original = try ScenarioKit.userState(path)
        let reference = try byGroup(path)
        var batches: [Counts] = []
        var progress: [(done: Int, total: Int)] = []
        let summary = try withAheadStart(300) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
                guard case .batch(let report) = event else { return }
                batches.append(report.counts)
                progress.append((report.done, report.total))
            }
        }
        // First the children, in stretches of the child table; then the merges, in stretches of
        // the winners, each deleting the losers in its rowids whose winners are merged; then
        // the losers whose winners came later, in stretches of theirs.
        let repointing = batches.prefix { $0.repointed > 0 && $0.updated == 0 && $0.deleted == 0 }
        XCTAssertFalse(repointing.isEmpty, "the run starts with the children")
        XCTAssertEqual(repointing.reduce(0) { $0 + $1.repointed }, summary.counts.repointed)
        let merging = batches.dropFirst(repointing.count).prefix { $0.updated > 0 }
        XCTAssertGreaterThan(merging.count, 1, "then the merges, in stretches")
        XCTAssertTrue(merging.allSatisfy { $0.repointed == 0 })
        XCTAssertEqual(merging.reduce(0) { $0 + $1.updated }, summary.counts.updated)
        let deletedByMerges = merging.reduce(0) { $0 + $1.deleted }
        XCTAssertGreaterThan(deletedByMerges, summary.counts.deleted / 2, "the stretches deleted most losers")
        let rest = batches.dropFirst(repointing.count + merging.count)
        XCTAssertTrue(rest.allSatisfy { $0.updated == 0 && $0.repointed == 0 && $0.deleted > 0 }, "then the rest only delete")
        let deletedAfter = rest.reduce(0) { $0 + $1.deleted }
        XCTAssertGreaterThan(deletedAfter, 0, "the losers whose winners a later stretch merged")
        // In stretches of their rowids that grow with the time limit, not in batches of 20
        // groups' losers (at most 3 times as many losers as groups).
        let perGroup = Double(summary.counts.deleted) / Double(summary.counts.groups)
        XCTAssertGreaterThan(Double(deletedAfter) / Double(rest.count), 3 * 20 * perGroup, "stretches, not batches of 20 groups")
        XCTAssertEqual(deletedByMerges + deletedAfter, summary.counts.deleted)
        // Progress counts toward one total, from the stretches on through the batches.
        XCTAssertEqual(Set(progress.map(\.total)), [summary.counts.deleted + summary.counts.skipped])
        XCTAssertEqual(progress.map(\.done), progress.map(\.done).sorted(), "progress never goes back")
        XCTAssertEqual(progress.last?.done, summary.counts.deleted + summary.counts.skipped)
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try takenRows(path), 0, "the record of taken losers is emptied once the rule is done")
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        XCTAssertEqual(try ScenarioKit.userState(path), original)
    }

    /// Merges that rank the rows by another column (`latest`, `prefer`) and a merge that follows
    /// the losers' order (`concat`) decide from the losers' values as the copy
    /// of the queue carries them (each merge column and its ranking column): the end is the one
    /// batches by group give, and `restore` is exact.
    func testRankedAndOrderedMergesAheadEndAsByGroup() throws {
        let path = try makeStore("ranked.sqlite")
        let original = try ScenarioKit.userState(path)
        let job = { (size: Int) in
            ScenarioKit.customersJob(
                size: size, merge: "{visits: {prefer: {column: phone, order: [p7, p3]}}, phone: concat, created_at: {latest: visits}}")
        }
        let reference = try byGroup(path, job: job(100_000))
        var merging = 0
        let summary = try withAheadStart(300) {
            try ScenarioKit.run(job(20), db: path) { event in
                if case .batch(let report) = event, report.counts.updated > 0 { merging += 1 }
            }
        }
        XCTAssertGreaterThan(merging, 1, "the merges went ahead in stretches")
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        XCTAssertEqual(try ScenarioKit.userState(path), original)
    }

    /// A merge column without a declared type holding integers, reals, text and blobs: the
    /// losers' values go through the copy of the queue (whose columns have no type either) and
    /// reach their winners with their exact type, as batches by group leave them.
    func testMergedValuesAheadKeepTheirExactType() throws {
        let path = try makeStore("typed.sqlite")
        try ScenarioKit.execute(
            path,
            """
            ALTER TABLE customers ADD COLUMN extra;
            UPDATE customers SET extra = CASE id % 5 WHEN 0 THEN 5 WHEN 1 THEN 5.0 WHEN 2 THEN '5' WHEN 3 THEN x'05' END
            """)
        let reference = try byGroup(path, job: ScenarioKit.customersJob(size: 100_000, merge: "{visits: sum, extra: fill_null}"))
        var merging = 0
        try withAheadStart(300) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20, merge: "{visits: sum, extra: fill_null}"), db: path) { event in
                if case .batch(let report) = event, report.counts.updated > 0 { merging += 1 }
            }
        }
        XCTAssertGreaterThan(merging, 1, "the merges went ahead in stretches")
        let typed = "SELECT id, typeof(extra), quote(extra) FROM customers ORDER BY id"
        let types = try ScenarioKit.rows(path, typed)
        XCTAssertEqual(types, try ScenarioKit.rows(reference, typed))
        XCTAssertEqual(
            Set(types.compactMap { String.fromDatabaseValue($0[1]) }), ["integer", "real", "text", "blob", "null"],
            "every kind of value is among the survivors")
        XCTAssertGreaterThan(
            try ScenarioKit.int(path, "SELECT count(*) FROM customers WHERE id % 5 = 4 AND extra IS NOT NULL"), 0,
            "winners that held NULL took a loser's value")
    }

    /// With the map of losers held in a raised temporary cache while the children go ahead
    /// (here because each loser is taken to need 4 KiB of it, and its settled winners are not
    /// held in memory), the end is the one batches by group give, and `restore` is exact.
    func testChildrenAheadWithTheMapInARaisedTemporaryCacheEndAsByGroup() throws {
        let path = try makeStore("held.sqlite")
        let original = try ScenarioKit.userState(path)
        let reference = try byGroup(path)
        let perLoser = DedupeExecutor.mappedBytesPerLoser
        DedupeExecutor.mappedBytesPerLoser = 4096
        DedupeExecutor.holdsSettledWinners = false
        defer { DedupeExecutor.mappedBytesPerLoser = perLoser }
        let (summary, stretches, _) = try runChildrenAhead(path)
        XCTAssertGreaterThan(stretches, 1, "the children went ahead in stretches")
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        XCTAssertEqual(try ScenarioKit.userState(path), original)
    }

    /// The settled winners looked up in memory (``SettledWinners``) find the same moves ahead as
    /// the map's table: three child tables, whose references hold integers (INTEGER), integral
    /// reals (REAL) and numeric text (no type: the comparison with a rowid converts it, so that
    /// path keeps the join), each have every child re-pointed in the stretches ahead, and the
    /// end is the one batches by group give, with the settled winners in memory or not.
    func testChildrenAheadThroughTheSettledWinnersInMemoryEndAsByGroup() throws {
        let children = """
            CREATE TABLE scores (id INTEGER PRIMARY KEY, customer REAL REFERENCES customers(id));
            CREATE TABLE tags (id INTEGER PRIMARY KEY, customer REFERENCES customers(id));
            WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 2999)
            INSERT INTO scores (customer) SELECT 1 + (i * 7919) % 3000 FROM s;
            WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 2999)
            INSERT INTO tags (customer) SELECT CAST(1 + (i * 104729) % 3000 AS TEXT) FROM s;
            """
        var ends: [[String: [[DatabaseValue]]]] = []
        for inMemory in [true, false] {
            let path = try makeStore("settled-\(inMemory).sqlite")
            // (Without enforcement: SQLite's own check finds no parent for a real, though the
            // comparison with the rowid finds one.)
            var configuration = Configuration()
            configuration.foreignKeysEnabled = false
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.write { try $0.execute(sql: children) }
            try queue.close()
            XCTAssertEqual(try ScenarioKit.column(path, "SELECT DISTINCT typeof(customer) FROM scores", as: String.self), ["real"])
            XCTAssertEqual(try ScenarioKit.column(path, "SELECT DISTINCT typeof(customer) FROM tags", as: String.self), ["text"])
            let reference = try byGroup(path)
            DedupeExecutor.holdsSettledWinners = inMemory
            var held: [Int] = []
            DedupeExecutor.holdingSettledWinners = { held.append($0) }
            let (summary, _, ahead) = try runChildrenAhead(path)
            XCTAssertEqual(held, inMemory ? [2] : [], "orders and scores in memory, tags through the join")
            XCTAssertGreaterThan(summary.counts.repointed, 3 * 1500, "in memory: \(inMemory)")
            XCTAssertEqual(ahead, summary.counts.repointed, "every child re-pointed ahead (in memory: \(inMemory))")
            XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference), "in memory: \(inMemory)")
            ends.append(try TestSupport.contentDump(path))
        }
        XCTAssertEqual(ends[0], ends[1])
    }

    /// The settled winners in memory: each loser's winner, or nothing; as the function, an
    /// integer or an integral real names a loser, text and blobs none. Nothing is held where the
    /// losers' rowids span more slots than the limit holds, or a winner lies beyond a 32-bit
    /// offset from the lowest loser.
    func testTheSettledWinnersInMemory() throws {
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            try db.execute(sql: "CREATE TEMP TABLE winnow_mapped (rid INTEGER PRIMARY KEY, winner INTEGER)")
            try db.execute(sql: "INSERT INTO temp.winnow_mapped VALUES (3, 10), (7, NULL), (1000, -5), (500, 3)")
            XCTAssertNil(try SettledWinners.load(db, limitKiB: 1), "998 slots of 4 bytes in 1 KiB")
            let map = try XCTUnwrap(SettledWinners.load(db, limitKiB: 4))
            XCTAssertEqual(
                [2, 3, 4, 7, 500, 1000, 1001, .min, .max].map { map.winner(of: $0) }, [nil, 10, nil, nil, 3, -5, nil, nil, nil])
            try map.register(on: db)
            let function = SettledWinners.function
            let row = try XCTUnwrap(
                Row.fetchOne(
                    db,
                    sql:
                        "SELECT \(function)(3), \(function)(3.0), \(function)('3'), \(function)(x'03'), \(function)(NULL), \(function)(3.5), \(function)(7)"
                ))
            XCTAssertEqual(row[0] as Int64?, 10)
            XCTAssertEqual(row[1] as Int64?, 10)
            for index in 2..<7 { XCTAssertTrue(row.hasNull(atIndex: index), "column \(index)") }
            SettledWinners.unregister(from: db)
            XCTAssertThrowsError(try db.execute(sql: "SELECT \(function)(3)"))
            try db.execute(sql: "INSERT INTO temp.winnow_mapped VALUES (4, 3 + 2147483648)")
            XCTAssertNil(try SettledWinners.load(db, limitKiB: 4), "a winner beyond 2^31 rowids of the lowest loser")
        }
    }

    /// A job that allows long transactions re-points the children ahead in stretches that grow
    /// past 256 times `batch.size` where the temporary database's journal is a file (a table too
    /// small for raised caches, here 3,000 customers): 290,000 orders go in a first stretch of
    /// 1,000, then the 289,000 left in one (16,000 as sized, the rest taken within its time,
    /// ``StretchFill``), where a cap of 256,000 rows would have taken four. Each child moves
    /// once, and the end is the one batches by group give.
    func testALongLimitTakesTheChildrenAheadInStretchesPastTheCap() throws {
        let path = try makeStore("long-limit.sqlite", manyOrders: 290_000)
        let yaml = ScenarioKit.customersJob(size: 20).replacingOccurrences(of: "archive: true", with: "archive: false")
            .replacingOccurrences(of: "size: 20", with: "size: 20\n  max_transaction_ms: 3600000")
        // The same job in one batch: every group settled whole.
        let reference = try byGroup(path, job: yaml.replacingOccurrences(of: "size: 20", with: "size: 100000"))
        var stretches: [Counts] = []
        let summary = try ScenarioKit.run(yaml, db: path) { event in
            guard case .batch(let report) = event, report.counts.repointed > 0, report.counts.deleted == 0 else { return }
            stretches.append(report.counts)
        }
        XCTAssertEqual(stretches.count, 2, "1,000 and the rest: \(stretches.map(\.repointed))")
        XCTAssertGreaterThan(stretches.last?.repointed ?? 0, 256_000 / 2, "the last stretch holds most of the children")
        XCTAssertEqual(stretches.reduce(0) { $0 + $1.repointed }, summary.counts.repointed, "each child moved once")
        XCTAssertEqual(
            try ScenarioKit.int(path, "SELECT count(*) FROM orders WHERE customer_id NOT IN (SELECT id FROM customers)"), 0)
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
    }

    /// From their second stretch on, the children ahead and the losers the merges left take
    /// more rows than the sizer gave while their time allows (``StretchFill``): under a 60 s
    /// limit, 30,000 orders go in a first stretch of 100 rows and one more for the rest, and
    /// the losers left in at most two, where the sizer alone takes the children in three
    /// (100, 1,600 and the rest). Each child moves once, every loser is deleted once,
    /// the end is the one batches by group give, and `restore` undoes it exactly.
    func testStretchesAheadTakeMoreRowsWithinTheirTime() throws {
        let path = try makeStore("fill.sqlite", manyOrders: 30_000)
        let original = try ScenarioKit.userState(path)
        let reference = try byGroup(path)
        let job = ScenarioKit.customersJob(size: 20).replacingOccurrences(of: "size: 20", with: "size: 20\n  max_transaction_ms: 60000")
        XCTAssertTrue(job.contains("archive: true"))
        var batches: [Counts] = []
        let summary = try withAheadStart(100) {
            try ScenarioKit.run(job, db: path) { event in
                if case .batch(let report) = event { batches.append(report.counts) }
            }
        }
        let children = batches.prefix { $0.repointed > 0 && $0.updated == 0 && $0.deleted == 0 }
        XCTAssertEqual(children.count, 2, "\(children.map(\.repointed))")
        XCTAssertEqual(children.reduce(0) { $0 + $1.repointed }, summary.counts.repointed, "each child moved once")
        let merging = batches.dropFirst(children.count).prefix { $0.updated > 0 }
        XCTAssertFalse(merging.isEmpty)
        let left = batches.dropFirst(children.count + merging.count)
        XCTAssertTrue(left.allSatisfy { $0.updated == 0 && $0.repointed == 0 && $0.deleted > 0 })
        XCTAssertFalse(left.isEmpty, "the losers whose winners a later stretch merged")
        XCTAssertLessThanOrEqual(left.count, 2, "\(left.map(\.deleted))")
        XCTAssertEqual(merging.reduce(0) { $0 + $1.deleted } + left.reduce(0) { $0 + $1.deleted }, summary.counts.deleted)
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        XCTAssertEqual(try ScenarioKit.userState(path), original)
    }

    /// Each stretch of children finds its moves before its write transaction
    /// (``AheadBatches``), for half as many more child rows than it or the stretch before took,
    /// and from the second stretch on further while the finding's time allows
    /// (``StretchFill/findMore(units:elapsed:)``); what a stretch does not take stays found for
    /// the next. Under a 60 s limit the first stretch (the first 100 orders) finds the moves of
    /// 150 and re-points exactly those of its 100; the second finds the rest past those, to
    /// the last order, and fills with all of it. Each child moves once, the end is the one
    /// batches by group give, and `restore` undoes it.
    func testEachStretchOfChildrenTakesTheMovesFoundBeforeIt() throws {
        for archive in [true, false] { try eachStretchTakesTheMovesFoundBeforeIt(archive: archive) }
    }

    /// ``testEachStretchOfChildrenTakesTheMovesFoundBeforeIt`` where the rule archives (the
    /// moves applied from a copy the journal reads) or not (applied from the record of the
    /// moves ahead, ``BatchStatements/applyAhead``).
    func eachStretchTakesTheMovesFoundBeforeIt(archive: Bool) throws {
        let path = try makeStore("found-\(archive).sqlite", manyOrders: 30_000)
        let original = try ScenarioKit.userState(path)
        let job = ScenarioKit.customersJob(size: 20, maxTransactionMilliseconds: 60000, archive: archive)
        let reference = try byGroup(path, job: ScenarioKit.customersJob(size: 100_000, archive: archive))
        var found: [(upTo100: Int, last: Int64, lastMoving: Int64)] = []
        AheadBatches.afterFindingMoves = { db in
            let row = try XCTUnwrap(
                Row.fetchOne(
                    db,
                    sql: """
                        SELECT count(*) FILTER (WHERE child <= 100), max(child),
                            (SELECT max(c.id) FROM orders AS c JOIN temp.winnow_mapped AS m ON m.rid = c.customer_id AND m.winner IS NOT NULL)
                        FROM temp.winnow_ahead
                        """))
            found.append((row[0], row[1], row[2]))
        }
        defer { AheadBatches.afterFindingMoves = nil }
        var batches: [Counts] = []
        let summary = try withAheadStart(100) {
            try ScenarioKit.run(job, db: path) { event in
                if case .batch(let report) = event { batches.append(report.counts) }
            }
        }
        let children = batches.prefix { $0.repointed > 0 && $0.updated == 0 && $0.deleted == 0 }
        XCTAssertEqual(children.count, 2, "\(children.map(\.repointed))")
        XCTAssertEqual(found.count, 2, "found before each stretch")
        XCTAssertGreaterThan(found[0].last, 100, "the moves of 150 orders found before the first stretch of 100")
        XCTAssertLessThanOrEqual(found[0].last, 150)
        XCTAssertEqual(children[0].repointed, found[0].upTo100, "the first stretch re-pointed those of its 100 orders")
        XCTAssertEqual(found[1].upTo100, found[0].upTo100, "which stay recorded")
        XCTAssertEqual(
            found[1].last, found[1].lastMoving,
            "the next stretch's are found past those kept, to the last order that moves: far within half of 60 s")
        XCTAssertGreaterThan(found[1].last, 29_000)
        XCTAssertEqual(children.reduce(0) { $0 + $1.repointed }, summary.counts.repointed, "each child moved once")
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        guard archive else { return }
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        XCTAssertEqual(try ScenarioKit.userState(path), original)
    }

    /// Runs the customers job (batches of 20 groups, a 60 s limit, the stretches ahead from 100
    /// rows) on a store of 30,000 orders while another connection commits the statements
    /// `changes` gives (from the run's connection, which can read the moves found) right after
    /// the second stretch's moves are found, before its transaction. Returns the store, a copy
    /// of it as it was with the same statements committed, the run's summary and batches, and
    /// how many times moves were found.
    func runWithACommitAfterTheSecondFinding(
        _ name: String, archive: Bool, changes: @escaping (Database) throws -> [String],
        onBatch: @escaping (Counts, String) throws -> Void = { _, _ in }
    ) throws -> (path: String, changed: String, summary: RunSummary, batches: [Counts], findings: Int) {
        let path = try makeStore("\(name)-\(archive).sqlite", manyOrders: 30_000)
        let changed = dir.appendingPathComponent("\(name)-\(archive)-changed.sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: changed)
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        var findings = 0
        var committed: [String] = []
        AheadBatches.afterFindingMoves = { db in
            findings += 1
            guard findings == 2 else { return }
            committed = try changes(db)
            try other.write { db in for change in committed { try db.execute(sql: change) } }
        }
        defer { AheadBatches.afterFindingMoves = nil }
        var batches: [Counts] = []
        let summary = try withAheadStart(100) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20, maxTransactionMilliseconds: 60000, archive: archive), db: path) {
                event in
                guard case .batch(let report) = event else { return }
                batches.append(report.counts)
                try? onBatch(report.counts, path)
            }
        }
        XCTAssertFalse(committed.isEmpty, "the other connection committed")
        for change in committed { try ScenarioKit.execute(changed, change) }
        return (path, changed, summary, batches, findings)
    }

    /// Another connection deletes an order between the finding of the second stretch's moves,
    /// which include that order's, and the stretch's write transaction: the stretch goes on
    /// after the commit, forgets that order's move (the child is gone) and re-points every other
    /// order found, so the batches re-point none. The end and the count of children re-pointed
    /// are those of batches by group on the store without that order; `restore` gives back that
    /// store.
    func testACommitBetweenFindingAStretchsMovesAndItsTransactionForgetsTheMovesThatNoLongerHold() throws {
        for archive in [true, false] { try aCommitBetweenFindingAndTheTransactionForgetsMoves(archive: archive) }
    }

    func aCommitBetweenFindingAndTheTransactionForgetsMoves(archive: Bool) throws {
        let run = try runWithACommitAfterTheSecondFinding("deleted", archive: archive) { db in
            let child = try XCTUnwrap(Int64.fetchOne(db, sql: "SELECT max(child) FROM temp.winnow_ahead"))
            return ["DELETE FROM orders WHERE id = \(child)"]
        }
        XCTAssertGreaterThanOrEqual(run.findings, 2)
        let children = run.batches.prefix { $0.repointed > 0 && $0.updated == 0 && $0.deleted == 0 }
        // (Beside the other connection, the stretch after its commit takes its bounds alone, and
        // more stretches follow: ``AheadBatches``.)
        XCTAssertGreaterThanOrEqual(children.count, 2, "the stretches re-pointed children ahead after the commit too")
        XCTAssertFalse(run.batches.dropFirst(children.count).contains { $0.repointed > 0 }, "nothing left for the batches")
        let original = try ScenarioKit.userState(run.changed)
        let reference = dir.appendingPathComponent("reference-\(archive).sqlite").path
        try FileManager.default.copyItem(atPath: run.changed, toPath: reference)
        let byGroup = try ScenarioKit.run(ScenarioKit.customersJob(size: 100_000, archive: archive), db: reference)
        XCTAssertEqual(run.summary.counts.repointed, byGroup.counts.repointed, "each child still there re-pointed once")
        XCTAssertEqual(try TestSupport.contentDump(run.path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try ScenarioKit.rows(run.path, "PRAGMA foreign_key_check").count, 0)
        guard archive else { return }
        _ = try Restorer.restore(database: run.path, runID: try XCTUnwrap(run.summary.runID))
        XCTAssertEqual(try ScenarioKit.userState(run.path), original)
    }

    /// Another connection deletes a winner (and its own orders) between the finding of the
    /// second stretch's moves, which include orders of that winner's losers, and the stretch's
    /// transaction: the stretch re-points none of them to the row that is gone (no reference
    /// dangles), and the batch of that group leaves its losers as they are (skipped), with their
    /// orders; `restore` gives back the store with the change. The next run settles them: the
    /// end is then the one batches by group give on the store with the change.
    func testAStretchAfterACommitMovesNoChildToAWinnerThatIsGone() throws {
        for archive in [true, false] { try aStretchAfterACommitMovesNoChildToAWinnerThatIsGone(archive: archive) }
    }

    func aStretchAfterACommitMovesNoChildToAWinnerThatIsGone(archive: Bool) throws {
        var losers: [Int64] = []
        var dangling: [Int] = []
        let run = try runWithACommitAfterTheSecondFinding("winner-gone", archive: archive) { db in
            let winner = try XCTUnwrap(
                Int64.fetchOne(db, sql: "SELECT winner FROM temp.winnow_ahead WHERE child > 150 ORDER BY child LIMIT 1"))
            losers = try Int64.fetchAll(
                db, sql: "SELECT DISTINCT loser FROM temp.winnow_ahead WHERE winner = ? AND child > 150", arguments: [winner])
            return ["DELETE FROM orders WHERE customer_id = \(winner)", "DELETE FROM customers WHERE id = \(winner)"]
        } onBatch: { counts, path in
            // (As each stretch committed it: what a run killed there leaves.)
            guard counts.repointed > 0, counts.deleted == 0 else { return }
            dangling.append(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count)
        }
        XCTAssertGreaterThanOrEqual(dangling.count, 2)
        XCTAssertEqual(dangling, Array(repeating: 0, count: dangling.count), "no reference dangles after any stretch")
        XCTAssertFalse(losers.isEmpty, "orders of that winner's losers were found to move")
        let children = run.batches.prefix { $0.repointed > 0 && $0.updated == 0 && $0.deleted == 0 }
        XCTAssertGreaterThanOrEqual(children.count, 2, "the stretches re-pointed children ahead after the commit too")
        XCTAssertEqual(try ScenarioKit.rows(run.path, "PRAGMA foreign_key_check").count, 0)
        let list = losers.map(String.init).joined(separator: ", ")
        XCTAssertEqual(
            try ScenarioKit.int(run.path, "SELECT count(*) FROM customers WHERE id IN (\(list))"), losers.count, "the losers stay")
        XCTAssertEqual(
            try ScenarioKit.int(run.path, "SELECT count(*) FROM orders WHERE customer_id IN (\(list))"),
            try ScenarioKit.int(run.changed, "SELECT count(*) FROM orders WHERE customer_id IN (\(list))"), "with all their orders")
        XCTAssertGreaterThanOrEqual(run.summary.counts.skipped, losers.count)
        if archive {
            let restored = dir.appendingPathComponent("winner-gone-restored.sqlite").path
            try FileManager.default.copyItem(atPath: run.path, toPath: restored)
            _ = try Restorer.restore(database: restored, runID: try XCTUnwrap(run.summary.runID))
            XCTAssertEqual(try ScenarioKit.userState(restored), try ScenarioKit.userState(run.changed))
        }
        let job = ScenarioKit.customersJob(size: 100_000, archive: archive)
        let reference = try byGroup(run.changed, job: job)
        let next = try ScenarioKit.run(job, db: run.path)
        XCTAssertGreaterThan(next.counts.deleted, 0, "the next run settles the losers left")
        XCTAssertEqual(try TestSupport.contentDump(run.path), try TestSupport.contentDump(reference))
    }

    /// The record of the moves ahead holds only those applied. Between the finding of the
    /// second stretch's moves and its transaction, another connection takes a loser out of its
    /// group and itself points one of that loser's orders, whose move to the winner was found,
    /// at the winner: the stretch forgets the loser's moves (it no longer shares its winner's
    /// key, and that order no longer points at it). The batch of that group, which no longer
    /// deletes the loser, moves back to it only children re-pointed ahead (none here): the order
    /// the application moved stays where it put it, as batches by group leave it on the store
    /// with the same two changes.
    func testMovesFoundForRowsNoStretchTookAreForgotten() throws {
        for archive in [true, false] { try movesFoundForRowsNoStretchTookAreForgotten(archive: archive) }
    }

    func movesFoundForRowsNoStretchTookAreForgotten(archive: Bool) throws {
        let run = try runWithACommitAfterTheSecondFinding("forgotten", archive: archive) { db in
            let row = try XCTUnwrap(
                Row.fetchOne(db, sql: "SELECT child, winner, loser FROM temp.winnow_ahead WHERE child > 150 ORDER BY child LIMIT 1"))
            let (child, winner, loser): (Int64, Int64, Int64) = (row[0], row[1], row[2])
            return [
                "UPDATE customers SET email = 'left-its-group@example.com' WHERE id = \(loser)",
                "UPDATE orders SET customer_id = \(winner) WHERE id = \(child)",
            ]
        }
        XCTAssertGreaterThanOrEqual(run.findings, 2)
        let reference = try byGroup(run.changed, job: ScenarioKit.customersJob(size: 100_000, archive: archive))
        XCTAssertEqual(try TestSupport.contentDump(run.path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try ScenarioKit.rows(run.path, "PRAGMA foreign_key_check").count, 0)
    }

    /// The stretches ahead take a rest of at most a quarter of a stretch with them: 150 orders
    /// are re-pointed in one stretch (the first stretch's 128 rows,
    /// ``DedupeExecutor/childrenAheadStart``, and the 22 left), 170 in two.
    /// Either way each child moves once, one batch event per stretch, and the end is the one
    /// batches by group give, which `restore` undoes exactly.
    func testAShortRestOfTheChildrenGoesWithTheStretchBeforeIt() throws {
        for (customers, stretches) in [(150, 1), (170, 2)] {
            let path = try makeStore("rest-\(customers).sqlite", customers: customers)
            let original = try ScenarioKit.userState(path)
            let reference = try byGroup(path)
            var children: [Counts] = []
            let summary = try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
                guard case .batch(let report) = event, report.counts.repointed > 0, report.counts.deleted == 0 else { return }
                children.append(report.counts)
            }
            XCTAssertEqual(children.count, stretches, "\(customers) orders")
            XCTAssertGreaterThan(summary.counts.repointed, 0)
            XCTAssertEqual(children.reduce(0) { $0 + $1.repointed }, summary.counts.repointed, "\(customers) orders")
            XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference), "\(customers) orders")
            _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
            XCTAssertEqual(try ScenarioKit.userState(path), original, "\(customers) orders")
        }
    }

    /// A run that re-pointed a child table ahead in ``PlanAdvice/manyStretches`` stretches or
    /// more says so in its rule's summary (here with the threshold lowered to 2: 170 orders go
    /// in two stretches, 150 in one); `plan`, whose dry stretches are not the run's, does not.
    func testARunThatTookManyStretchesOfChildrenSaysSo() throws {
        let threshold = PlanAdvice.manyStretches
        PlanAdvice.manyStretches = 2
        defer { PlanAdvice.manyStretches = threshold }
        for (customers, stretches) in [(150, 1), (170, 2)] {
            let path = try makeStore("told-\(customers).sqlite", customers: customers)
            let planned = try ScenarioKit.plan(ScenarioKit.customersJob(size: 20), db: path)
            XCTAssertFalse(planned.rules[0].warnings.contains { $0.contains("stretches") }, "\(planned.rules[0].warnings)")
            var children = 0
            let summary = try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
                guard case .batch(let report) = event, report.counts.repointed > 0, report.counts.deleted == 0 else { return }
                children += 1
            }
            XCTAssertEqual(children, stretches, "\(customers) orders")
            let told = summary.rules[0].warnings.filter { $0.contains("stretches") }
            if stretches >= 2 {
                XCTAssertEqual(told.count, 1, "\(summary.rules[0].warnings)")
                XCTAssertTrue(told[0].hasPrefix("orders.customer_id was re-pointed in 2 stretches"), told[0])
                XCTAssertTrue(told[0].contains("batch.max_transaction_ms (250)"), told[0])
            } else {
                XCTAssertEqual(told, [], "\(customers) orders")
            }
        }
    }

    /// `show` of a run whose merges went ahead and whose losers were deleted by position (a
    /// group's losers in several batches): every group once, with all its deleted rows and its
    /// merged winner, as `show` gives them for the same job settled group by group; the merged
    /// winners are not listed as re-pointed child rows.
    func testShowListsEachGroupOnceWithItsMergeWhenItsLosersSpanBatches() throws {
        let path = try makeStore("show.sqlite")
        let reference = try byGroup(path)
        let summary = try withAheadStart(100) { try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) }
        XCTAssertGreaterThan(summary.counts.batches, 5)
        func listing(_ file: String) throws -> (groups: [String], updated: Int, repointedTables: Set<String>) {
            let rule = try XCTUnwrap(try SQLiteBackend.show(database: file, runID: 1).rules.first)
            XCTAssertEqual(rule.groups.count, rule.counts.groups, file)
            XCTAssertEqual(rule.groups.flatMap(\.deleted).count, rule.counts.deleted, file)
            XCTAssertFalse(rule.groups.flatMap(\.deleted).contains { $0.values.isEmpty }, "every deleted row's values, \(file)")
            let groups = rule.groups.map { group in
                group.kept.stored + " <- " + group.deleted.map(\.key.stored).sorted().joined(separator: ", ")
                    + " | " + (group.updated?.changes.map { "\($0.column): \($0.before) -> \($0.now)" }.joined(separator: "; ") ?? "")
            }
            return (groups.sorted(), rule.groups.filter { $0.updated != nil }.count, Set(rule.repointed.map { $0.table.lowercased() }))
        }
        let ahead = try listing(path)
        let settled = try listing(reference)
        XCTAssertEqual(ahead.groups, settled.groups)
        XCTAssertEqual(Set(ahead.groups).count, ahead.groups.count, "each group once")
        XCTAssertEqual(ahead.updated, summary.counts.updated)
        XCTAssertGreaterThan(ahead.updated, 0)
        XCTAssertFalse(ahead.repointedTables.contains("customers"), "\(ahead.repointedTables)")
    }

    /// Property: the batch size never changes the end. Each variant runs in batches of 3 (merges
    /// and children ahead in stretches, each stretch of merges in pieces of 3 winners, losers by
    /// position, or by group where a link table decides collisions) and in one batch (every
    /// group whole), on the same scattered data; both end with the same rows, and `restore`
    /// brings back the same original.
    func testTheEndIsTheSameWhateverTheBatchSize() throws {
        let winners = ["winner: [{created_at: asc}]", "winner: most_complete", "winner: [{visits: desc}]", ""]
        for (index, winner) in winners.enumerated() {
            for link in [false, true] {
                let label = "\(winner.isEmpty ? "no winner" : winner), link table \(link)"
                let path = try makeStore("v\(index)-\(link).sqlite", customers: 900, seed: UInt64(index + 11))
                if link {
                    try ScenarioKit.execute(
                        path,
                        """
                        CREATE TABLE tags (customer_id INTEGER NOT NULL REFERENCES customers(id), tag TEXT NOT NULL, UNIQUE (customer_id, tag));
                        INSERT INTO tags SELECT id, 't' || (id % 4) FROM customers;
                        INSERT INTO tags SELECT id, 't' || (id % 3) FROM customers WHERE id % 3 <> id % 4;
                        """)
                }
                let original = try ScenarioKit.userState(path)
                let whole = dir.appendingPathComponent("whole-\(index)-\(link).sqlite").path
                try FileManager.default.copyItem(atPath: path, toPath: whole)
                let job = """
                    version: 1
                    dedupe:
                      - entity: customers
                        key: email
                        normalize: [lowercase]
                        \(winner)
                        merge: {visits: sum, phone: fill_null}
                        archive: true
                    batch:
                      size: SIZE
                    """
                // (Stretches ahead from 10 rows or winners: several of each on this small table,
                // each stretch of merges in pieces of 3 winners.)
                let pieces = MergeAheadBatches.pieceWinners
                MergeAheadBatches.pieceWinners = 1
                defer { MergeAheadBatches.pieceWinners = pieces }
                let small = try withAheadStart(10) { try ScenarioKit.run(job.replacingOccurrences(of: "SIZE", with: "3"), db: path) }
                let one = try ScenarioKit.run(job.replacingOccurrences(of: "SIZE", with: "100000"), db: whole)
                XCTAssertEqual(one.counts.batches, 1, label)
                XCTAssertGreaterThan(small.counts.batches, 5, label)
                XCTAssertEqual(small.counts.deleted, one.counts.deleted, label)
                XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(whole), label)
                _ = try Restorer.restore(database: path, runID: try XCTUnwrap(small.runID))
                XCTAssertEqual(try ScenarioKit.userState(path), original, label)
            }
        }
    }

    /// A stretch of merges is cut to the rows that the time per row of the stretches before puts
    /// at half the limit, its winners and the losers it deletes counted before it: here each row
    /// is taken to cost a 300th of the limit, so beside the first stretch's time (10 winners, the
    /// shortest, taken as what any stretch costs) no stretch from the third on (the second is
    /// the first measured) writes more than 150 rows, where the sizer alone, sizing by winners,
    /// grows them past 150 winners. The end is the one batches by group give, and `restore` is
    /// exact.
    func testAStretchOfMergesTakesNoMoreRowsThanTheLimitHolds() throws {
        let path = try makeStore("store.sqlite", customers: 12_000)
        let original = try ScenarioKit.userState(path)
        let reference = try byGroup(path)
        let job = ScenarioKit.customersJob(size: 20, maxTransactionMilliseconds: 1000)
        MergeAheadBatches.secondsPerRow = 0.5 / 150
        defer { MergeAheadBatches.secondsPerRow = nil }
        var merging: [Counts] = []
        let summary = try withAheadStart(10) {
            try ScenarioKit.run(job, db: path) { event in
                if case .batch(let report) = event, report.counts.updated > 0 { merging.append(report.counts) }
            }
        }
        XCTAssertGreaterThan(merging.count, 5, "stretches of merges")
        for (index, stretch) in merging.enumerated().dropFirst(2) {
            XCTAssertLessThanOrEqual(stretch.updated + stretch.deleted, 150, "stretch \(index + 1): \(stretch)")
        }
        XCTAssertGreaterThan(merging.dropFirst(2).map { $0.updated + $0.deleted }.max() ?? 0, 100, "stretches fill their room")
        XCTAssertEqual(merging.reduce(0) { $0 + $1.updated }, summary.counts.updated)
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        XCTAssertEqual(try ScenarioKit.userState(path), original)
    }

    /// Another connection commits after the first stretch of merges: the rest of the groups are
    /// settled whole, as they are then. A group merged ahead keeps its merge, and its losers
    /// (recorded as taken) are never counted again.
    func testACommitAfterTheFirstMergeStretchNeverCountsALoserTwice() throws {
        let (path, other, reference) = try storeBesideANote()
        defer { try? other.close() }
        var wrote = false
        var first: Counts?
        let summary = try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
            guard case .batch(let report) = event, !wrote, report.counts.updated > 0 else { return }
            first = report.counts
            Self.writeNote(other)
            wrote = true
        }
        let firstStretch = try XCTUnwrap(first)
        XCTAssertGreaterThan(firstStretch.updated, 0)
        XCTAssertLessThan(firstStretch.updated, summary.counts.updated, "some merges were left to the batches by group")
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try takenRows(path), 0)
    }

    /// Another connection commits after the first stretch of merges, which left losers it took
    /// outside its rowids. Those go next, in stretches of their rowids, before any batch by group
    /// merges another group: the time in which another connection can change a loser whose
    /// values are already in its winner ends there, not at the end of the run. The end is the
    /// one batches by group give.
    func testAfterACommitTheLosersTheMergesTookGoBeforeAnyOtherGroup() throws {
        let (path, other, reference) = try storeBesideANote()
        defer { try? other.close() }
        var wrote = false
        var takenLeft: Int?
        var takenAtMerges: [Int] = []
        try withAheadStart(100) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
                guard case .batch(let report) = event else { return }
                let left = (try? self.takenLeft(path)) ?? -1
                if wrote {
                    if report.counts.updated > 0 { takenAtMerges.append(left) }
                } else if report.counts.updated > 0 {
                    takenLeft = left
                    Self.writeNote(other)
                    wrote = true
                }
            }
        }
        XCTAssertGreaterThan(try XCTUnwrap(takenLeft), 0, "the first stretch left losers it took")
        XCTAssertFalse(takenAtMerges.isEmpty, "batches by group merged the other groups")
        XCTAssertEqual(takenAtMerges.filter { $0 != 0 }, [], "no taken loser was left when they did")
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try takenRows(path), 0)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
    }

    /// The merge decisions are read in pieces of whole groups, each its own transaction (the
    /// first of ``DedupeExecutor/aheadStart`` losers): every group decided once, and the end is
    /// the one batches by group give.
    func testMergesAreDecidedInPiecesOfWholeGroups() throws {
        let path = try makeStore("store.sqlite")
        let reference = try byGroup(path)
        var pieces: [(winners: Int, losers: Int)] = []
        var seen = Set<Int64>()
        DedupeExecutor.afterDecidingMerges = { db in
            XCTAssertFalse(db.isInsideTransaction, "each piece commits")
            let decided = try Int64.fetchAll(db, sql: "SELECT winner FROM temp.winnow_decided").filter { !seen.contains($0) }
            seen.formUnion(decided)
            let losers = try Int.fetchOne(
                db, sql: "SELECT count(*) FROM temp.winnow_takeable WHERE winner IN (\(decided.map(String.init).joined(separator: ",")))")
            pieces.append((decided.count, losers ?? 0))
        }
        defer { DedupeExecutor.afterDecidingMerges = nil }
        let summary = try withAheadStart(100) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path)
        }
        XCTAssertGreaterThan(pieces.count, 1, "the decisions took more than one read")
        // (A piece ends after the 100th loser's whole group: at most a group's losers past it.)
        XCTAssertGreaterThanOrEqual(pieces[0].losers, 100)
        XCTAssertLessThan(pieces[0].losers, 110)
        XCTAssertEqual(pieces.reduce(0) { $0 + $1.winners }, summary.counts.updated, "each merged winner decided once")
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
    }

    /// Another connection changes a loser copied with its values in the first piece of the
    /// queue's copy before the next piece is read: the copy stops there, no stretch of merges
    /// applies a decision, and the batches settle every group as the rows are then (as batches
    /// by group give on the store with the same change).
    func testACommitBetweenTwoPiecesOfTheCopyOfTheLosersLeavesTheMergesToTheBatches() throws {
        let path = try makeStore("store.sqlite")
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        let changed = dir.appendingPathComponent("changed.sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: changed)
        var change: String?
        var pieces = 0
        DedupeExecutor.afterCopyingMergeRows = { db in
            pieces += 1
            guard change == nil else { return }
            let loser = try XCTUnwrap(Int64.fetchOne(db, sql: "SELECT rid FROM temp.winnow_copied ORDER BY rid LIMIT 1"))
            change = "UPDATE customers SET visits = visits + 1000 WHERE id = \(loser)"
            try other.write { db in try db.execute(sql: change!) }
        }
        defer { DedupeExecutor.afterCopyingMergeRows = nil }
        var decided = 0
        DedupeExecutor.afterDecidingMerges = { _ in decided += 1 }
        defer { DedupeExecutor.afterDecidingMerges = nil }
        var batches: [Counts] = []
        let summary = try withAheadStart(100) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
                if case .batch(let report) = event { batches.append(report.counts) }
            }
        }
        try ScenarioKit.execute(changed, try XCTUnwrap(change))
        let reference = try byGroup(changed)
        XCTAssertEqual(pieces, 1, "no piece was copied after the commit")
        XCTAssertEqual(decided, 0, "nor decided")
        XCTAssertGreaterThan(summary.counts.updated, 20)
        XCTAssertTrue(batches.allSatisfy { $0.updated <= 20 }, "batches of 20 groups merged, no stretch")
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
    }

    /// Another connection changes a loser of a group decided in the first piece of the merge
    /// decisions before the next piece is read: the pieces stop there, no stretch of merges
    /// applies a decision, and the batches settle every group as the rows are then, so the
    /// group's merged value counts the loser's new value (as batches by group give on the store
    /// with the same change).
    func testACommitBetweenTwoPiecesOfTheMergeDecisionsLeavesTheMergesToTheBatches() throws {
        let path = try makeStore("store.sqlite")
        let original = try ScenarioKit.userState(path)
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        let changed = dir.appendingPathComponent("changed.sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: changed)
        var change: String?
        var pieces = 0
        DedupeExecutor.afterDecidingMerges = { db in
            pieces += 1
            guard change == nil else { return }
            let loser = try XCTUnwrap(Int64.fetchOne(db, sql: "SELECT rid FROM temp.winnow_takeable ORDER BY winner, rn LIMIT 1"))
            change = "UPDATE customers SET visits = visits + 1000 WHERE id = \(loser)"
            try other.write { db in try db.execute(sql: change!) }
        }
        defer { DedupeExecutor.afterDecidingMerges = nil }
        var batches: [Counts] = []
        let summary = try withAheadStart(100) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
                if case .batch(let report) = event { batches.append(report.counts) }
            }
        }
        try ScenarioKit.execute(changed, try XCTUnwrap(change))
        let reference = try byGroup(changed)
        XCTAssertEqual(pieces, 1, "no piece was read after the commit")
        XCTAssertGreaterThan(summary.counts.updated, 20)
        XCTAssertTrue(batches.allSatisfy { $0.updated <= 20 }, "batches of 20 groups merged, no stretch")
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        try ScenarioKit.execute(path, try XCTUnwrap(change).replacingOccurrences(of: "+ 1000", with: "- 1000"))
        XCTAssertEqual(try ScenarioKit.userState(path), original)
    }

    /// Another connection takes a loser that a stretch of merges has taken, but not yet deleted,
    /// out of its group (changes its key). Its values are in its winner already: the run still
    /// deletes it (as if the other connection had changed it after a batch by group deleted it),
    /// so that no value is counted twice: the sum of `visits` over the table is kept.
    func testALoserTakenByAMergeThatAnotherConnectionMovesOutOfItsGroupIsNotCountedTwice() throws {
        let path = try makeStore("store.sqlite", customers: 6000)
        let total = try ScenarioKit.int(path, "SELECT sum(visits) FROM customers")
        let before = dir.appendingPathComponent("before.sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: before)
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        var moved: Int64?
        let summary = try withAheadStart(100) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
                guard case .batch(let report) = event, moved == nil, report.counts.updated > 0 else { return }
                moved = try? other.write { db in
                    let taken = try TakenLosersRecord.all(db).map { String($0.pair.loser) }.joined(separator: ", ")
                    let loser = try Int64.fetchOne(
                        db, sql: "SELECT id FROM customers WHERE id IN (\(taken)) AND visits > 0 ORDER BY id LIMIT 1")
                    if let loser {
                        try db.execute(sql: "UPDATE customers SET email = 'moved@elsewhere.org' WHERE id = ?", arguments: [loser])
                    }
                    return loser
                }
            }
        }
        let loser = try XCTUnwrap(moved, "a taken loser was still there after the first stretch of merges")
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT sum(visits) FROM customers"), total, "no loser's visits counted twice")
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM customers WHERE id = \(loser)"), 0, "the loser went")
        XCTAssertEqual(try takenRows(path), 0)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        // `restore` gives back the store as the other connection left it, the loser with its new key.
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        try ScenarioKit.execute(before, "UPDATE customers SET email = 'moved@elsewhere.org' WHERE id = \(loser)")
        XCTAssertEqual(try ScenarioKit.userState(path), try ScenarioKit.userState(before))
    }

    /// The same between a run killed after its first stretch of merges and the next run: the
    /// next run still deletes the taken loser that another connection moved out of its group,
    /// with its winner's group, whether its new key is its own, another group's where it sorts
    /// last, or another group's where it would win. The end is the one of a run on the same
    /// store where that loser had been deleted by hand, its orders first moved to its winner.
    func testALoserTakenByAKilledRunsMergeThatIsMovedOutOfItsGroupIsNotCountedTwice() throws {
        let path = try makeStore("store.sqlite", customers: 6000)
        let total = try ScenarioKit.int(path, "SELECT sum(visits) FROM customers")
        let stopped = try stoppedAfterFirstMergeStretch(path)
        let taken = try ScenarioKit.takenRows(
            stopped,
            """
            SELECT c.id, m.winner FROM temp.taken AS m JOIN customers AS c ON c.id = m.loser
            WHERE c.visits > 0 ORDER BY c.id LIMIT 1
            """)
        let loser = try XCTUnwrap(taken.first.flatMap { Int64.fromDatabaseValue($0[0]) })
        let winner = try XCTUnwrap(taken.first.flatMap { Int64.fromDatabaseValue($0[1]) })
        // A group of three customers or more that the first stretch did not reach.
        let other = try ScenarioKit.takenRows(
            stopped,
            """
            SELECT lower(email) FROM customers WHERE id NOT IN (SELECT winner FROM temp.taken)
            AND lower(email) <> (SELECT lower(email) FROM customers WHERE id = \(winner))
            GROUP BY lower(email) HAVING count(*) >= 3 ORDER BY min(id) LIMIT 1
            """)
        let otherKey = try XCTUnwrap(other.first.flatMap { String.fromDatabaseValue($0[0]) })
        for (label, change) in [
            ("a key of its own", "email = 'moved@elsewhere.org'"),
            ("another group's key, last in it", "email = '\(otherKey)', created_at = 1000"),
            ("another group's key, first in it", "email = '\(otherKey)', created_at = -1"),
        ] {
            let changed = dir.appendingPathComponent("changed-\(UUID().uuidString).sqlite").path
            try FileManager.default.copyItem(atPath: stopped, toPath: changed)
            try ScenarioKit.execute(changed, "UPDATE customers SET \(change) WHERE id = \(loser)")
            let expected = dir.appendingPathComponent("expected-\(UUID().uuidString).sqlite").path
            try FileManager.default.copyItem(atPath: changed, toPath: expected)
            try ScenarioKit.execute(
                expected,
                "UPDATE orders SET customer_id = \(winner) WHERE customer_id = \(loser); DELETE FROM customers WHERE id = \(loser)")
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: expected)
            // A run with a deadline files its losers by group (no merge goes ahead), so the
            // loser is filed under its taking winner's group there.
            let grouped = dir.appendingPathComponent("grouped-\(UUID().uuidString).sqlite").path
            try FileManager.default.copyItem(atPath: changed, toPath: grouped)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: changed))
            let planned = try ScenarioKit.plan(ScenarioKit.customersJob(size: 20), db: changed)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: changed)), bytes, "\(label): plan writes nothing")
            let done = try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: changed)
            XCTAssertEqual(planned.counts.deleted, done.counts.deleted, "\(label): plan counts the loser too")
            XCTAssertEqual(planned.counts.groups, done.counts.groups, label)
            XCTAssertEqual(try ScenarioKit.int(changed, "SELECT sum(visits) FROM customers"), total, "\(label): no visit counted twice")
            XCTAssertEqual(
                try ScenarioKit.int(changed, "SELECT count(*) FROM customers WHERE id = \(loser)"), 0, "\(label): the loser went")
            XCTAssertEqual(try TestSupport.contentDump(changed), try TestSupport.contentDump(expected), label)
            XCTAssertEqual(try takenRows(changed), 0)
            XCTAssertEqual(try ScenarioKit.rows(changed, "PRAGMA foreign_key_check").count, 0)
            let byGroup = try SQLiteBackend.run(
                try ScenarioKit.job(ScenarioKit.customersJob(size: 20)), options: RunOptions(database: grouped, maxDuration: 3600))
            XCTAssertEqual(byGroup.counts.deleted, done.counts.deleted, "\(label): by group")
            XCTAssertEqual(byGroup.counts.groups, done.counts.groups, "\(label): by group")
            XCTAssertEqual(try TestSupport.contentDump(grouped), try TestSupport.contentDump(expected), "\(label): by group")
            XCTAssertEqual(try takenRows(grouped), 0, "\(label): by group")
        }
    }

    /// Another connection commits after the first stretch of the losers left by the merges: the
    /// stretches go on with the losers recorded as taken, and the batches settle what is left,
    /// each loser once, and the end is the one batches by group give (the other connection's
    /// row aside).
    func testACommitBetweenTheStretchesOfLosersLeavesTheRestToTheBatches() throws {
        let (path, other, reference) = try storeBesideANote()
        defer { try? other.close() }
        let original = try ScenarioKit.userState(path)
        var wrote = false
        var merged = false
        var after: [Counts] = []
        let summary = try withAheadStart(50) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
                guard case .batch(let report) = event else { return }
                if report.counts.updated > 0 { merged = true }
                guard merged, report.counts.updated == 0 else { return }
                after.append(report.counts)
                guard !wrote else { return }
                Self.writeNote(other)
                wrote = true
            }
        }
        XCTAssertTrue(wrote)
        let first = try XCTUnwrap(after.first)
        XCTAssertEqual(first.deleted, 50, "a first stretch of the losers left")
        XCTAssertGreaterThan(after.count, 1, "then more stretches")
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try takenRows(path), 0)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        try ScenarioKit.execute(path, "DELETE FROM notes")
        XCTAssertEqual(try ScenarioKit.userState(path), original)
    }

    /// Another connection deletes a winner merged ahead: the values it took went with it, and
    /// so did the losers its stretch deleted (as when it deletes a winner whose whole group a
    /// batch has settled). The group's other losers are left to the next run (skipped, as for
    /// any group whose winner another connection deletes), which merges them into the group's
    /// new winner as if the deleted rows had never been there: a loser recorded as taken by a
    /// winner that is gone is merged again.
    func testLosersOfAMergedWinnerThatIsDeletedAreMergedIntoTheNewWinnerByTheNextRun() throws {
        // (No orders: a winner's children may be re-pointed ahead of its merge, and this
        // connection deletes the winner alone.)
        let path = try makeStore("store.sqlite", customers: 6000, orders: false)
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        // The first stretch merges the first 100 winners (by rowid) and deletes their losers
        // up to the last of them; the group deleted is one of those with a loser on each side.
        let order = "created_at, email, visits, phone, id"
        let ranked = """
            SELECT id, lower(email) AS k, row_number() OVER (PARTITION BY lower(email) ORDER BY \(order)) AS rn,
                   count(*) OVER (PARTITION BY lower(email)) AS n FROM customers
            """
        let lastOfFirst = try ScenarioKit.int(
            path, "SELECT max(id) FROM (SELECT id FROM (\(ranked)) WHERE rn = 1 AND n > 1 ORDER BY id LIMIT 100)")
        let winner = try ScenarioKit.int(
            path,
            """
            SELECT w.id FROM (\(ranked)) AS w JOIN (\(ranked)) AS l ON l.k = w.k AND l.rn > 1
            WHERE w.rn = 1 AND w.id <= \(lastOfFirst) GROUP BY w.id
            HAVING min(l.id) <= \(lastOfFirst) AND max(l.id) > \(lastOfFirst) AND count(*) >= 3 ORDER BY w.id LIMIT 1
            """)
        let key = try XCTUnwrap(
            try ScenarioKit.column(path, "SELECT lower(email) FROM customers WHERE id = \(winner)", as: String.self).first ?? nil)
        let group = "SELECT id FROM customers WHERE lower(email) = '\(key)'"
        let members = try ScenarioKit.column(path, group, as: Int64.self).compactMap { $0 }
        let gone = "DELETE FROM customers WHERE id = \(winner)"
        var deleted = false
        let first = try withAheadStart(100) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
                guard case .batch(let report) = event, !deleted, report.counts.updated > 0 else { return }
                try? other.write { db in try db.execute(sql: gone) }
                deleted = true
            }
        }
        XCTAssertTrue(deleted)
        let left = try ScenarioKit.column(path, group, as: Int64.self).compactMap { $0 }
        let takenAway = members.filter { $0 != winner && !left.contains($0) }
        XCTAssertFalse(takenAway.isEmpty, "the first stretch deleted some of the group's losers")
        XCTAssertGreaterThanOrEqual(left.count, 2, "and left others")
        XCTAssertEqual(first.counts.skipped, left.count, "the rest of the group of the deleted winner is left as it is")
        XCTAssertEqual(try takenRows(path), 0)
        // The reference: the winner and the losers that went with it deleted before the run.
        let reference = try makeStore("reference.sqlite", customers: 6000, orders: false)
        try ScenarioKit.execute(
            reference,
            "DELETE FROM customers WHERE id IN (\(([winner] + takenAway.map(Int.init)).map(String.init).joined(separator: ", ")))")
        try ScenarioKit.run(ScenarioKit.customersJob(size: 100_000), db: reference)
        let second = try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path)
        XCTAssertEqual(second.counts.groups, 1)
        XCTAssertEqual(second.counts.deleted, left.count - 1)
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
    }

    /// A run killed after its merges and before its deletions (simulated: the merges applied
    /// and recorded, the losers still there) is finished by the next run exactly as an
    /// uninterrupted run would have: each group keeps the winner that took its losers, although
    /// the merged values now sort it elsewhere, and no loser is counted twice.
    func testARunAfterMergesWithoutTheirDeletionsFinishesLikeAnUninterruptedRun() throws {
        let path = try makeStore("store.sqlite")
        let reference = try byGroup(path)
        // The merges of an interrupted run, as its stretches left them (`sum` moves winners to
        // the end of a content order; `created_at: desc` would too).
        let job = ScenarioKit.customersJob(size: 20).replacingOccurrences(of: "- created_at: asc", with: "- visits: asc")
        let referenceByVisits = dir.appendingPathComponent("by-visits.sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: referenceByVisits)
        try ScenarioKit.run(job.replacingOccurrences(of: "size: 20", with: "size: 100000"), db: referenceByVisits)
        var seen = 0
        var stopped: String?
        // Copy the file as it is right after the last merge stretch committed.
        try ScenarioKit.run(job, db: path) { event in
            guard case .batch(let report) = event else { return }
            seen += 1
            if report.counts.updated > 0 {
                stopped = self.dir.appendingPathComponent("after-merges-\(seen).sqlite").path
                try? FileManager.default.removeItem(atPath: stopped!)
                try? FileManager.default.copyItem(atPath: path, toPath: stopped!)
                // (The lock in the copy is this live process's: as a killed run's would be, it is gone.)
                try? ScenarioKit.execute(stopped!, "DELETE FROM winnow_lock")
            }
        }
        let interrupted = try XCTUnwrap(stopped)
        XCTAssertGreaterThan(try takenRows(interrupted), 0, "the copy holds merged winners and their losers")
        try ScenarioKit.run(job, db: interrupted)
        XCTAssertEqual(try TestSupport.contentDump(interrupted), try TestSupport.contentDump(referenceByVisits))
        XCTAssertEqual(try takenRows(interrupted), 0)
        _ = reference
    }

    /// A run killed between two stretches of the losers its merges left (copied right after
    /// the first committed): the next run deletes the losers still there without merging them
    /// again, and the two runs end as one uninterrupted run, each loser counted once.
    func testARunKilledAmidTheStretchesOfLosersLeftFinishesLikeAnUninterruptedRun() throws {
        let path = try makeStore("store.sqlite", customers: 6000)
        let reference = try byGroup(path)
        let stopped = dir.appendingPathComponent("amid-losers-left.sqlite").path
        var merged = false
        var copied: Counts?
        let first = try withAheadStart(50) {
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
                guard case .batch(let report) = event else { return }
                if report.counts.updated > 0 { merged = true }
                guard merged, report.counts.updated == 0, copied == nil else { return }
                try? FileManager.default.copyItem(atPath: path, toPath: stopped)
                // (The lock in the copy is this live process's: as a killed run's would be, it is gone.)
                try? ScenarioKit.execute(stopped, "DELETE FROM winnow_lock")
                copied = report.counts
            }
        }
        XCTAssertEqual(copied?.deleted, 50, "the copy is taken after the first stretch of the losers left")
        let leftInCopy = try takenLeft(stopped)
        XCTAssertGreaterThan(leftInCopy, 0, "the copy still holds losers the merges took")
        let updatedBefore = try ScenarioKit.int(stopped, "SELECT sum(updated) FROM winnow_runs")
        let deletedBefore = try ScenarioKit.int(stopped, "SELECT sum(deleted) FROM winnow_runs")
        let second = try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: stopped)
        XCTAssertEqual(second.counts.updated, 0, "no loser is merged again")
        XCTAssertEqual(deletedBefore + second.counts.deleted, first.counts.deleted, "each loser is counted once")
        XCTAssertEqual(updatedBefore, first.counts.updated)
        XCTAssertEqual(try TestSupport.contentDump(stopped), try TestSupport.contentDump(reference))
        XCTAssertEqual(try takenRows(stopped), 0)
        XCTAssertEqual(try ScenarioKit.rows(stopped, "PRAGMA foreign_key_check").count, 0)
    }

    /// docs/reference.md section 5: `restore` of a run killed between its merges and its
    /// deletions undoes exactly what it changed (the merged winners) and forgets the losers
    /// that run's merges took, so a later run merges them again, like an uninterrupted run.
    func testRestoreOfARunStoppedAfterItsMergesForgetsTheLosersTheyTook() throws {
        let path = try makeStore("store.sqlite")
        let original = try ScenarioKit.userState(path)
        let reference = try byGroup(path)
        let stopped = try stoppedAfterFirstMergeStretch(path)
        let runID = try XCTUnwrap(try ScenarioKit.column(stopped, "SELECT max(id) FROM winnow_runs", as: Int64.self).first ?? nil)
        XCTAssertGreaterThan(try takenRows(stopped), 0)
        _ = try Restorer.restore(database: stopped, runID: runID)
        XCTAssertEqual(try ScenarioKit.userState(stopped), original, "restore undoes the merges")
        XCTAssertEqual(try takenRows(stopped), 0, "and forgets the losers they took")
        try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: stopped)
        XCTAssertEqual(try TestSupport.contentDump(stopped), try TestSupport.contentDump(reference))
    }

    /// Earlier releases kept a row per taken loser in `winnow_merged_losers` (appended, or
    /// keyed by loser `WITHOUT ROWID`). With a killed run's records in such a table, the next
    /// run reads them and finishes like an uninterrupted run; the old record, emptied, is then
    /// dropped (docs/reference.md section 4).
    func testARecordOfAnEarlierReleaseIsReadThenDropped() throws {
        for keyed in [false, true] {
            let path = try makeStore("store-\(keyed).sqlite")
            let reference = try byGroup(path)
            let stopped = try stoppedAfterFirstMergeStretch(path)
            let recorded = try DatabaseQueue(path: stopped).write { db -> Int in
                let all = try TakenLosersRecord.all(db)
                try db.execute(
                    sql: """
                        CREATE TABLE winnow_merged_losers (
                            tbl TEXT NOT NULL, loser INTEGER NOT NULL, winner INTEGER NOT NULL, run_id INTEGER NOT NULL
                            \(keyed ? ", PRIMARY KEY (tbl, loser)) WITHOUT ROWID" : ")")
                        """)
                for (table, runID, pair) in all {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO winnow_merged_losers VALUES (?, ?, ?, ?)",
                        arguments: [table, pair.loser, pair.winner, runID])
                }
                try db.execute(sql: "DELETE FROM winnow_taken_losers")
                return all.count
            }
            XCTAssertGreaterThan(recorded, 0)
            XCTAssertEqual(try takenRows(stopped), 0)
            try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: stopped)
            XCTAssertEqual(try TestSupport.contentDump(stopped), try TestSupport.contentDump(reference), "keyed: \(keyed)")
            XCTAssertEqual(try ScenarioKit.int(stopped, "SELECT count(*) FROM sqlite_master WHERE name = 'winnow_merged_losers'"), 0)
            XCTAssertEqual(try takenRows(stopped), 0)
            XCTAssertEqual(try ScenarioKit.rows(stopped, "PRAGMA integrity_check").count, 1)
            try FileManager.default.removeItem(atPath: stopped)
        }
    }

    /// The record is emptied whole at the end of a rule only where it holds no other table's
    /// losers: a killed run's losers of another table stay recorded for that table's next run,
    /// in today's record and in an earlier release's (which then stays too).
    func testTheEndOfARuleKeepsAnotherTablesRecordedLosers() throws {
        let path = try makeStore("store.sqlite")
        let reference = try byGroup(path)
        var other = TakenLosersRecord()
        other.append(loser: 5, winner: 4)
        other.append(loser: 7, winner: 4)
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: SQLiteDialect.takenLosersTable)
            try db.execute(sql: "INSERT INTO winnow_taken_losers VALUES ('other', 99, ?)", arguments: [Data(other.packed)])
            try db.execute(
                sql: """
                    CREATE TABLE winnow_merged_losers (tbl TEXT NOT NULL, loser INTEGER NOT NULL, winner INTEGER NOT NULL, run_id INTEGER NOT NULL);
                    INSERT INTO winnow_merged_losers VALUES ('other', 9, 8, 98);
                    """)
        }
        try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path)
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(
            try ScenarioKit.takenColumn(
                path, "SELECT tbl || ' ' || loser || ' ' || winner || ' ' || run_id FROM temp.taken", as: String.self),
            ["other 5 4 99", "other 7 4 99"])
        XCTAssertEqual(
            try ScenarioKit.column(
                path, "SELECT tbl || ' ' || loser || ' ' || winner || ' ' || run_id FROM winnow_merged_losers", as: String.self),
            ["other 9 8 98"])
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA integrity_check").count, 1)
    }

    /// A loser recorded twice (taken again by a new winner once its first was deleted) is
    /// still taken once: the record of the winner that is gone is ignored. A killed run's
    /// records name winners that another connection then deletes; the next run merges their
    /// losers into the groups' new winners and counts each loser once.
    func testALoserRecordedForAWinnerThatIsGoneAndForItsNewWinnerCountsOnce() throws {
        let path = try makeStore("store.sqlite", orders: false)
        let stopped = try stoppedAfterFirstMergeStretch(path)
        // Five merged winners of the killed run with 2 or more of their taken losers still there
        // are deleted (by another connection); the reference is the same deletion from the
        // original rows, with the losers of those groups that the killed run's stretch deleted
        // (their values went with their winner).
        let winners = try ScenarioKit.takenColumn(
            stopped,
            """
            SELECT m.winner FROM temp.taken AS m JOIN customers AS c ON c.id = m.loser
            GROUP BY m.winner HAVING count(*) >= 2 ORDER BY m.winner LIMIT 5
            """, as: Int64.self
        ).compactMap { $0 }
        XCTAssertEqual(winners.count, 5)
        let list = winners.map(String.init).joined(separator: ", ")
        let stretchDeleted = try ScenarioKit.takenColumn(
            stopped, "SELECT loser FROM temp.taken WHERE winner IN (\(list)) AND loser NOT IN (SELECT id FROM customers)",
            as: Int64.self
        ).compactMap { $0 }
        try ScenarioKit.execute(stopped, "DELETE FROM customers WHERE id IN (\(list))")
        let reference = try makeStore("reference.sqlite", orders: false)
        try ScenarioKit.execute(
            reference, "DELETE FROM customers WHERE id IN (\((winners + stretchDeleted).map(String.init).joined(separator: ", ")))")
        try ScenarioKit.run(ScenarioKit.customersJob(size: 100_000), db: reference)
        // The next run takes the losers of those groups again, into their new winners: each is
        // then recorded twice, once for a winner that is gone.
        var doubled = 0
        try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: stopped) { event in
            guard case .batch(let report) = event, report.counts.updated > 0 else { return }
            doubled = max(
                doubled,
                (try? ScenarioKit.takenInt(
                    stopped, "SELECT count(*) FROM (SELECT loser FROM temp.taken GROUP BY tbl, loser HAVING count(*) > 1)"))
                    ?? 0)
        }
        XCTAssertGreaterThan(doubled, 0, "some losers were recorded for two winners")
        XCTAssertEqual(try TestSupport.contentDump(stopped), try TestSupport.contentDump(reference))
        XCTAssertEqual(try takenRows(stopped), 0)
    }

    /// A run that finishes a killed one looks losers up from its first decision on; its own
    /// stretches then record more. When another connection commits after one of them, the
    /// batches that settle the rest by group skip the losers of both runs' stretches.
    func testAResumedRunInterruptedByACommitSkipsTheLosersOfBothRunsStretches() throws {
        let path = try makeStore("store.sqlite", customers: 9000)
        let reference = try byGroup(path)
        let stopped = try stoppedAfterFirstMergeStretch(path)
        let takenBefore = try takenRows(stopped)
        XCTAssertGreaterThan(takenBefore, 0)
        try ScenarioKit.execute(reference, Self.note)
        let other = try DatabaseQueue(path: stopped)
        defer { try? other.close() }
        var wrote = false
        var takenByBoth = 0
        let summary = try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: stopped) { event in
            guard case .batch(let report) = event, !wrote, report.counts.updated > 0 else { return }
            takenByBoth = (try? self.takenRows(stopped)) ?? 0
            Self.writeNote(other)
            wrote = true
        }
        XCTAssertTrue(wrote)
        XCTAssertGreaterThan(takenByBoth, takenBefore, "the resumed run's first stretch recorded losers of its own")
        XCTAssertGreaterThan(summary.counts.updated, 0)
        XCTAssertEqual(try TestSupport.contentDump(stopped), try TestSupport.contentDump(reference))
        XCTAssertEqual(try takenRows(stopped), 0)
    }

    /// `plan` of a killed run's file (losers recorded as taken) reads the record through its
    /// copy on a read-only connection: it changes nothing and plans what the run that finishes
    /// the job then does.
    func testPlanOfARunStoppedAfterItsMergesCountsWhatTheNextRunDoes() throws {
        let path = try makeStore("store.sqlite")
        let stopped = try stoppedAfterFirstMergeStretch(path)
        XCTAssertGreaterThan(try takenRows(stopped), 0)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: stopped))
        let planned = try ScenarioKit.plan(ScenarioKit.customersJob(size: 20), db: stopped)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: stopped)), bytes, "plan writes nothing")
        let done = try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: stopped)
        XCTAssertGreaterThan(done.counts.deleted, 0)
        XCTAssertEqual(planned.counts.groups, done.counts.groups)
        XCTAssertEqual(planned.counts.deleted, done.counts.deleted)
        XCTAssertEqual(planned.counts.updated, done.counts.updated)
    }

    /// Where the losers' children lie after many child rows that move nothing (older orders of
    /// customers without duplicates), the stretches that found nothing to move say nothing of
    /// those that do: each stretch of children applies at most ``BatchSizer/rowRangeMaxGrowth``
    /// times the moves of the last one that applied any (the first at most
    /// ``DedupeExecutor/childrenAheadStart``), and the end is the one batches by group give.
    /// Another connection commits before each stretch, so that each takes its bounds alone.
    func testStretchesOfChildrenGrowByTheirMovesNotByTheRowsBeforeThem() throws {
        let path = try makeStore("store.sqlite", customers: 6000)
        // 20,000 orders of customers whose e-mail no other customer shares, before all others.
        try ScenarioKit.execute(
            path,
            """
            CREATE TEMP TABLE single AS SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM customers
              WHERE lower(email) IN (SELECT lower(email) FROM customers GROUP BY 1 HAVING count(*) = 1);
            CREATE TEMP TABLE kept AS SELECT customer_id, amount FROM orders ORDER BY id;
            DELETE FROM orders;
            WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 19999)
            INSERT INTO orders (customer_id, amount)
              SELECT (SELECT id FROM single WHERE n = i % (SELECT count(*) FROM single)), i FROM s;
            INSERT INTO orders (customer_id, amount) SELECT customer_id, amount FROM kept ORDER BY rowid;
            """)
        let reference = try byGroup(path)
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        AheadBatches.afterFindingMoves = { _ in Self.writeNote(other) }
        defer { AheadBatches.afterFindingMoves = nil }
        var stretches: [Int] = []
        try ScenarioKit.run(ScenarioKit.customersJob(size: 20), db: path) { event in
            guard case .batch(let report) = event, report.counts.repointed > 0, report.counts.deleted == 0,
                report.counts.updated == 0
            else { return }
            stretches.append(report.counts.repointed)
        }
        XCTAssertGreaterThan(stretches.count, 2, "the children went ahead in stretches: \(stretches)")
        XCTAssertLessThanOrEqual(stretches[0], DedupeExecutor.childrenAheadStart, "\(stretches)")
        for (before, stretch) in zip(stretches, stretches.dropFirst()) {
            XCTAssertLessThanOrEqual(Double(stretch), Double(before) * BatchSizer.rowRangeMaxGrowth, "\(stretches)")
        }
        let (done, expected) = (try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(done["customers"], expected["customers"])
        XCTAssertEqual(done["orders"], expected["orders"])
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
    }
}
