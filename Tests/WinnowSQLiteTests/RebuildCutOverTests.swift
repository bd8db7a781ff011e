import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// The cut-over of an online rebuild renames the old table aside instead of dropping it (a DROP
/// frees every page under the write lock); the old rows are then dropped at once when that fits
/// in `max_transaction_ms`, or emptied in short transactions first. Whatever is left by a killed
/// run is finished by the next one.
final class RebuildCutOverTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    func makeItems(rows: Int) throws -> String {
        let path = dir.appendingPathComponent("items.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE items (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, note TEXT);
                CREATE INDEX items_k ON items (k);
                CREATE TABLE tags (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
                INSERT INTO items (id, k, note) SELECT i, i % 97, CASE WHEN i % 3 = 0 THEN NULL ELSE 'n' || i END FROM n;
                INSERT INTO tags (item_id) SELECT id FROM items WHERE id % 10 = 0;
                """)
        return path
    }

    func job(maxTransactionMilliseconds: Int) throws -> Job {
        try TestSupport.writeFile(
            """
            version: 2
            tables:
              items:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: k, type: integer, nullable: false}
                  - {name: note, type: text, nullable: false, default: "-"}
                indexes:
                  - {name: items_k, columns: [k]}
              tags:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: item_id, type: integer, nullable: false, references: {table: items, column: id}}
            """, to: dir.appendingPathComponent("schema.yaml").path)
        return try ScenarioKit.job(
            """
            version: 1
            schema: schema.yaml
            batch: {size: 100, max_transaction_ms: \(maxTransactionMilliseconds)}
            """, dir: dir)
    }

    func winnowObjects(_ path: String) throws -> [String] {
        try ScenarioKit.column(
            path,
            """
            SELECT type || ' ' || name FROM sqlite_master
            WHERE name LIKE 'winnow\\_retired%' ESCAPE '\\' OR name LIKE 'winnow\\_rebuild%' ESCAPE '\\'
            """, as: String.self
        ).compactMap { $0 }
    }

    func assertRebuilt(_ path: String, rows: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try winnowObjects(path), [], file: file, line: line)
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM items"), rows, file: file, line: line)
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM items WHERE note = '-'"), rows / 3, file: file, line: line)
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM tags"), rows / 10, "nothing cascaded", file: file, line: line)
        XCTAssertEqual(
            try ScenarioKit.column(path, "SELECT tbl_name FROM sqlite_master WHERE name = 'items_k'", as: String.self), ["items"],
            file: file, line: line)
        XCTAssertEqual(try ScenarioKit.column(path, "PRAGMA integrity_check", as: String.self), ["ok"], file: file, line: line)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0, file: file, line: line)
        XCTAssertTrue(
            try ScenarioKit.column(path, "SELECT sql FROM sqlite_master WHERE name = 'items'", as: String.self)
                .first??.contains("NOT NULL DEFAULT") ?? false, file: file, line: line)
    }

    /// A tight `max_transaction_ms`: the old rows are emptied in several batches, then dropped.
    func testOldRowsAreEmptiedInBatchesWhenADropWouldNotFit() throws {
        let path = try makeItems(rows: 30_000)
        let summary = try SQLiteBackend.run(try job(maxTransactionMilliseconds: 5), options: RunOptions(database: path))
        XCTAssertEqual(summary.migrationSteps, 1)
        try assertRebuilt(path, rows: 30_000)
    }

    /// A generous one: the old table is dropped in one transaction right after the cut-over.
    func testOldTableIsDroppedAtOnceWhenThatFits() throws {
        let path = try makeItems(rows: 3_000)
        try SQLiteBackend.run(try job(maxTransactionMilliseconds: 5_000), options: RunOptions(database: path))
        try assertRebuilt(path, rows: 3_000)
    }

    /// A run killed after its cut-over leaves the old table (and its renamed index) aside; the
    /// next run empties and drops it, in batches, before anything else.
    func testRetiredTableLeftByAKilledRunIsFinishedByTheNextRun() throws {
        let path = try makeItems(rows: 3_000)
        try SQLiteBackend.run(try job(maxTransactionMilliseconds: 5_000), options: RunOptions(database: path))
        try ScenarioKit.execute(
            path,
            """
            CREATE TABLE winnow_retired_items (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, note TEXT);
            CREATE INDEX winnow_retired_ix0_items ON winnow_retired_items (k);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
            INSERT INTO winnow_retired_items (id, k, note) SELECT i, i % 97, 'old' FROM n;
            """)
        XCTAssertEqual(try winnowObjects(path).count, 2)
        let summary = try SQLiteBackend.run(try job(maxTransactionMilliseconds: 5), options: RunOptions(database: path))
        XCTAssertEqual(summary.migrationSteps, 0)
        try assertRebuilt(path, rows: 3_000)
    }

    /// The emptying itself: short transactions (more than one for a tight budget), then the DROP.
    func testDrainTakesSeveralShortTransactions() throws {
        let path = dir.appendingPathComponent("drain.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE winnow_retired_t (id INTEGER PRIMARY KEY, v TEXT);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
                INSERT INTO winnow_retired_t SELECT i, 'v' || i FROM n;
                """)
        let queue = try DatabaseQueue(path: path)
        let settings = BatchSettings(size: 100, maxTransactionMilliseconds: 10)
        let batches = try queue.inDatabase { db in
            var gap = WriteGap(settings: settings, db: db)
            return try TableRebuilder.drain(db, table: "winnow_retired_t", settings: settings, gap: &gap)
        }
        try queue.close()
        XCTAssertGreaterThan(batches, 5)
        XCTAssertEqual(try winnowObjects(path), [])
    }
}

extension RebuildCutOverTests {
    /// 1,000,000 rows copied in 1.1 s drop in about 0.55 s: at once under a 1,000 ms budget,
    /// emptied in batches under 50 ms; a small table drops at once under any budget.
    func testDropAtOnceOnlyWhenTheEstimateFitsTheBudget() {
        XCTAssertTrue(TableRebuilder.dropsAtOnce(copySeconds: 1.1, copied: 1_000_000, rows: 1_000_000, maxTransactionMilliseconds: 1000))
        XCTAssertFalse(TableRebuilder.dropsAtOnce(copySeconds: 1.1, copied: 1_000_000, rows: 1_000_000, maxTransactionMilliseconds: 50))
        XCTAssertTrue(TableRebuilder.dropsAtOnce(copySeconds: 0.011, copied: 10_000, rows: 10_000, maxTransactionMilliseconds: 50))
        XCTAssertFalse(
            TableRebuilder.dropsAtOnce(copySeconds: 0.011, copied: 10_000, rows: 200_000, maxTransactionMilliseconds: 50),
            "rows replayed after the copy count too")
    }
}

/// The pause between a loop's write transactions: wide while another connection commits.
final class WriteGapTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory() }
    override func tearDownWithError() throws { if let dir { try? FileManager.default.removeItem(at: dir) } }

    /// Two connections to one file with a table `t (x)`: winnow's and another's.
    func twoConnections() throws -> (mine: DatabaseQueue, other: DatabaseQueue) {
        let path = dir.appendingPathComponent("gap.sqlite").path
        try TestSupport.makeDatabase(at: path, sql: "CREATE TABLE t (x)")
        return (try DatabaseQueue(path: path), try DatabaseQueue(path: path))
    }

    func testPauseFromTheJobIsUsedAsItIs() throws {
        let queue = try DatabaseQueue()
        var gap = WriteGap(settings: BatchSettings(size: 10, maxTransactionMilliseconds: 50, pauseMilliseconds: 7))
        try queue.inDatabase { db in XCTAssertEqual(gap.gap(after: 1, db: db), 0.007, accuracy: 1e-9) }
    }

    func testGapWidensAfterAnotherConnectionCommits() throws {
        let (mine, other) = try twoConnections()
        var gap = WriteGap(settings: BatchSettings(size: 10, maxTransactionMilliseconds: 50))
        try mine.inDatabase { db in
            XCTAssertEqual(gap.gap(after: 0.02, db: db), 0.02 * WriteGap.idleShare, accuracy: 1e-9)
            try db.execute(sql: "INSERT INTO t VALUES (1)")  // its own commits do not count
            XCTAssertEqual(gap.gap(after: 0.02, db: db), 0.02 * WriteGap.idleShare, accuracy: 1e-9)
        }
        try other.write { db in try db.execute(sql: "INSERT INTO t VALUES (2)") }
        try mine.inDatabase { db in
            XCTAssertEqual(gap.gap(after: 0.02, db: db), 0.02 * WriteGap.sharedShare, accuracy: 1e-9)
            XCTAssertEqual(gap.gap(after: 0.01, db: db), 0.01 * WriteGap.sharedShare, accuracy: 1e-9, "stays wide for a while")
        }
    }

    /// The gap stays wide for ``WriteGap/memory`` after another connection's commit, and for
    /// twice the longest time seen between two of its commits where that is longer (a writer
    /// committing every few seconds), up to ``WriteGap/longestInterval``.
    func testGapStaysWideForTwiceTheLongestTimeBetweenAnotherConnectionsCommits() throws {
        let (mine, other) = try twoConnections()
        var gap = WriteGap(settings: BatchSettings(size: 10, maxTransactionMilliseconds: 50))
        let start = Date()
        func commit() throws { try other.write { db in try db.execute(sql: "INSERT INTO t VALUES (1)") } }
        func shared(at seconds: TimeInterval) throws -> Bool {
            try mine.inDatabase { db in gap.observe(db, now: start.addingTimeInterval(seconds)) }
        }
        XCTAssertFalse(try shared(at: 0))
        try commit()
        XCTAssertTrue(try shared(at: 1))
        XCTAssertTrue(try shared(at: 2.9))
        XCTAssertFalse(try shared(at: 3.1), "narrow again after 2 s")
        try commit()
        XCTAssertTrue(try shared(at: 5))  // 4 s after the first
        XCTAssertTrue(try shared(at: 12.9))
        XCTAssertFalse(try shared(at: 13.1), "twice the 4 s between the two commits")
        try commit()
        XCTAssertTrue(try shared(at: 60))  // 55 s after the last: longer than the longest counted
        XCTAssertTrue(try shared(at: 67.9))
        XCTAssertFalse(try shared(at: 68.1), "a commit after a long quiet does not widen it more")
    }

    /// A gap created from the connection before a loop's first transaction counts a commit made
    /// before that transaction: a writer that got in while the loop was getting ready is seen
    /// from the first gap, not only after it manages to get in between two batches.
    func testGapCreatedBeforeTheLoopSeesACommitBeforeItsFirstTransaction() throws {
        let (mine, other) = try twoConnections()
        let settings = BatchSettings(size: 10, maxTransactionMilliseconds: 50)
        var early = try mine.inDatabase { db in WriteGap(settings: settings, db: db) }
        var late = WriteGap(settings: settings)
        try other.write { db in try db.execute(sql: "INSERT INTO t VALUES (1)") }
        try mine.inDatabase { db in
            XCTAssertEqual(early.gap(after: 0.02, db: db), 0.02 * WriteGap.sharedShare, accuracy: 1e-9)
            XCTAssertEqual(late.gap(after: 0.02, db: db), 0.02 * WriteGap.idleShare, accuracy: 1e-9, "one that starts at the loop does not")
        }
    }
}
