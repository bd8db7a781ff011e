import Foundation
import GRDB
import GRDBSQLite
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// The page caches a rule's statements work in (``DedupeExecutor/sizeWorkingMemory(rows:)``),
/// the temporary database's freed pages, and the record of taken losers emptied at the end of a
/// rule, which must leave the SQLite build's `secure_delete` in force for the user's rows.
final class WorkingMemoryTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    /// Tables of `rows` rows: sizes grow with the rows, and stay at SQLite's default below the
    /// default and above the limit.
    func testTheCacheGrowsWithTheRowsBetweenTheDefaultAndTheLimit() {
        XCTAssertNil(DedupeExecutor.workingMemoryKiB(rows: 0))
        XCTAssertNil(DedupeExecutor.workingMemoryKiB(rows: 20_000), "80 B a row: under SQLite's 2,000 KiB")
        XCTAssertEqual(DedupeExecutor.workingMemoryKiB(rows: 200_000), 15_625)
        XCTAssertEqual(DedupeExecutor.workingMemoryKiB(rows: 300_000), 23_437)
        XCTAssertNil(DedupeExecutor.workingMemoryKiB(rows: 320_000), "above 24 MiB: the default")
        XCTAssertNil(DedupeExecutor.workingMemoryKiB(rows: .max), "no overflow")
    }

    /// Each rule's discovery sets the caches for its own table: a small table's raised caches
    /// (no sorter thread, the temporary journal in memory, stretches ahead within 256 times
    /// `batch.size`) do not carry over to the next rule's large table.
    func testEachRuleSizesTheCachesForItsOwnTable() throws {
        let saved = DedupeExecutor.workingMemoryLimitKiB
        DedupeExecutor.workingMemoryLimitKiB = 4000
        defer { DedupeExecutor.workingMemoryLimitKiB = saved }
        let path = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("two.sqlite").path,
            sql: """
                CREATE TABLE small (id INTEGER PRIMARY KEY, email TEXT, created INTEGER);
                CREATE TABLE large (id INTEGER PRIMARY KEY, email TEXT, created INTEGER);
                WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 30000)
                INSERT INTO small SELECT i, 'u' || (i % 20000), i FROM s;
                WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 60000)
                INSERT INTO large SELECT i, 'u' || (i % 50000), i FROM s;
                """)
        let job = try ScenarioKit.job(
            """
            version: 1
            dedupe:
              - {entity: small, key: email, winner: [{created: asc}]}
              - {entity: large, key: email, winner: [{created: asc}]}
            """)
        try DatabaseOpener.open(path: path, mode: .readOnly).inDatabase { db in
            let rules = try JobRunner.compile(job, db)
            func caches() throws -> [Int] {
                try ["PRAGMA main.cache_size", "PRAGMA temp.cache_size", "PRAGMA threads"].map { try Int.fetchOne(db, sql: $0) ?? 0 }
            }
            func journal() throws -> String? { try String.fetchOne(db, sql: "PRAGMA temp.journal_mode") }
            let small = DedupeExecutor(db: db, rule: rules[0], writer: DryRunWriter(), settings: job.batch)
            XCTAssertEqual(try small.discover().losers, 10_000)
            XCTAssertEqual(try caches(), [-(30_000 * 80 / 1024), -(30_000 * 80 / 1024), 0])
            XCTAssertEqual(try journal(), "memory", "the small table's temporary journal is kept in memory")
            XCTAssertEqual(
                try small.aheadSizer().configured, 256_000,
                "stretches ahead emptied into a journal in memory stay within 256 times batch.size")
            let large = DedupeExecutor(db: db, rule: rules[1], writer: DryRunWriter(), settings: job.batch)
            XCTAssertEqual(try large.discover().losers, 10_000)
            XCTAssertEqual(try caches(), [-2000, -2000, DatabaseOpener.sorterThreads])
            XCTAssertEqual(try journal(), "delete", "the large table's is a file again")
            XCTAssertEqual(try large.aheadSizer().configured, BatchSizer.uncapped, "only max_transaction_ms bounds them")
        }
    }

    /// While children are re-pointed ahead, the temporary database's cache is raised to hold
    /// the map of losers where SQLite's default would not and the map fits the limit; a cache
    /// already raised for a small table, a small map and a map over the limit leave it as it is.
    func testTheTemporaryCacheHoldsTheMapOfLosersOnlyWhereItFits() throws {
        let path = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("map.sqlite").path,
            sql: "CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, created INTEGER);")
        let job = try ScenarioKit.job("version: 1\ndedupe:\n  - {entity: customers, key: email, winner: [{created: asc}]}\n")
        try DatabaseOpener.open(path: path, mode: .readOnly).inDatabase { db in
            let rules = try JobRunner.compile(job, db)
            let executor = DedupeExecutor(db: db, rule: rules[0], writer: DryRunWriter(), settings: job.batch)
            func cache() throws -> Int? { try Int.fetchOne(db, sql: "PRAGMA temp.cache_size") }
            try db.execute(sql: "PRAGMA temp.cache_size = -\(DedupeExecutor.defaultCacheKiB)")
            XCTAssertNil(try executor.raiseTemporaryCacheForMap(losers: 100_000), "1.9 MiB with room: the default holds it")
            XCTAssertEqual(try cache(), -2000)
            XCTAssertEqual(try executor.raiseTemporaryCacheForMap(losers: 1_000_000), -2000, "returns what to restore")
            XCTAssertEqual(try cache(), -(1_000_000 * 16 / 1024 * 5 / 4), "15.3 MiB of map and a quarter more")
            try db.execute(sql: "PRAGMA temp.cache_size = -2000")
            XCTAssertNil(try executor.raiseTemporaryCacheForMap(losers: 1_300_000), "over 24 MiB: left as it is")
            XCTAssertNil(try executor.raiseTemporaryCacheForMap(losers: .max), "no overflow")
            XCTAssertEqual(try cache(), -2000)
            try db.execute(sql: "PRAGMA temp.cache_size = -15000")
            XCTAssertNil(try executor.raiseTemporaryCacheForMap(losers: 1_000_000), "a small table's raised cache stays")
            XCTAssertEqual(try cache(), -15000)
        }
    }

    /// The temporary database's freed pages are not zeroed: its file is this connection's and
    /// is deleted when it closes.
    func testTheTemporaryDatabaseDoesNotZeroFreedPages() throws {
        try DatabaseQueue().inDatabase { db in
            try DedupeExecutor.prepareTemporaryTables(db)
            XCTAssertEqual(try Int.fetchOne(db, sql: "PRAGMA temp.secure_delete"), 0)
        }
    }

    /// On a build of SQLite that zeroes deleted content, a rule that runs after a merging rule
    /// (whose record of taken losers is emptied without zeroing) still deletes with zeroing:
    /// the deleted rows' text is nowhere in the file.
    func testRowsDeletedAfterTheRecordIsEmptiedAreStillZeroed() throws {
        let zeroes = try DatabaseQueue().inDatabase { db in try Int.fetchOne(db, sql: "PRAGMA secure_delete") ?? 0 }
        try XCTSkipIf(zeroes != 1, "this build of SQLite keeps deleted content (secure_delete = \(zeroes))")
        var customers: [String] = []
        for id in 1...3000 { customers.append("(\(id), 'u\(id % 1000)@x', \(id), 1)") }
        var notes: [String] = []
        // Ids 201-400 are the losers, in whole pages of their own once deleted (each body is
        // about 300 bytes): pages a build that only zeroes what it rewrites anyway would free as
        // they are.
        let padding = String(repeating: "x", count: 280)
        for id in 1...400 {
            notes.append("(\(id), 'k\(id % 200)', 'secret-\(String(format: "%04d", id))-\(id <= 200 ? "kept" : "gone")\(padding)')")
        }
        let path = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("zeroed.sqlite").path,
            sql: """
                CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, created_at INTEGER NOT NULL, visits INTEGER NOT NULL);
                CREATE TABLE notes (id INTEGER PRIMARY KEY, k TEXT, body TEXT);
                INSERT INTO customers VALUES \(customers.joined(separator: ", "));
                INSERT INTO notes VALUES \(notes.joined(separator: ", "));
                """)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - {entity: customers, key: email, winner: [{created_at: asc}], merge: {visits: sum}, archive: false}
              - {entity: notes, key: k, winner: [{id: asc}], archive: false}
            batch:
              size: 50
            """, db: path)
        XCTAssertEqual(summary.counts.deleted, 2000 + 200)
        XCTAssertEqual(try ScenarioKit.takenInt(path, "SELECT count(*) FROM temp.taken"), 0)
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT sum(visits) FROM customers"), 3000)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        XCTAssertNotNil(bytes.range(of: Data("secret-0001-kept".utf8)), "a kept row is in the file")
        XCTAssertNil(bytes.range(of: Data("secret-0201-gone".utf8)), "a deleted row is zeroed")
        XCTAssertNil(bytes.range(of: Data("-gone".utf8)), "every deleted row is zeroed")
    }

    /// Before many batches the temporary database's changed pages are written out once (so
    /// that a batch's commit does not walk them all); before fewer, or in SQLite's default
    /// cache, they stay in the cache. The rows read back the same either way, and the user's
    /// database is not written.
    func testTheTemporaryPagesAreWrittenOutOnlyBeforeManyBatches() throws {
        let path = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("flush.sqlite").path,
            sql: "CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, created INTEGER);")
        let job = try ScenarioKit.job("version: 1\ndedupe:\n  - {entity: customers, key: email, winner: [{created: asc}]}\n")
        try DatabaseOpener.open(path: path, mode: .readWrite(create: false)).inDatabase { db in
            let rules = try JobRunner.compile(job, db)
            try DedupeExecutor.prepareTemporaryTables(db)
            let executor = DedupeExecutor(db: db, rule: rules[0], writer: DryRunWriter(), settings: job.batch)
            let sql = BatchStatements(rules[0], pinsTaken: false)
            let many = DedupeExecutor.flushTemporaryFromBatches
            func fill(_ table: String, rows: Int) throws {
                try db.execute(
                    sql: """
                        CREATE TEMP TABLE \(table) (i INTEGER PRIMARY KEY, body TEXT);
                        WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < \(rows))
                        INSERT INTO temp.\(table) SELECT i, printf('%0100d', i) FROM s;
                        """)
            }
            func pagesWritten() -> Int32 {
                var current: Int32 = 0
                var highest: Int32 = 0
                sqlite3_db_status(db.sqliteConnection, SQLITE_DBSTATUS_CACHE_WRITE, &current, &highest, 1)
                return current
            }
            let file = try Data(contentsOf: URL(fileURLWithPath: path))
            // About 1.1 MB of rows: they fit SQLite's default cache, unwritten.
            try db.execute(sql: "PRAGMA temp.cache_size = -\(DedupeExecutor.defaultCacheKiB)")
            try fill("small", rows: 10000)
            _ = pagesWritten()
            try executor.flushTemporaryPages(expectedBatches: many, sql: sql)
            XCTAssertEqual(pagesWritten(), 0, "SQLite's default cache: the pages stay in it")
            // About 2.2 MB more in a raised cache, unwritten too.
            try db.execute(sql: "PRAGMA temp.cache_size = -16000")
            try fill("large", rows: 20000)
            XCTAssertEqual(pagesWritten(), 0)
            try executor.flushTemporaryPages(expectedBatches: many - 1, sql: sql)
            XCTAssertEqual(pagesWritten(), 0, "fewer batches: the pages stay in the cache")
            try executor.flushTemporaryPages(expectedBatches: many, sql: sql)
            XCTAssertGreaterThan(pagesWritten(), 750, "3.3 MB of rows: every page written out")
            for (table, rows) in [("small", 10000), ("large", 20000)] {
                XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM temp.\(table) WHERE body = printf('%0100d', i)"), rows)
            }
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), file, "the user's database is as it was")
        }
    }

    /// A batch that fails on a table in the raised caches (the temporary journal in memory, the
    /// temporary database written out before the batches) leaves the database as it was before
    /// that batch: the batches before it stay committed, its own losers are all still there,
    /// and the next run finishes the job with the same survivors.
    func testAFailedBatchInTheRaisedCachesKeepsTheBatchesBeforeIt() throws {
        let path = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("failed.sqlite").path,
            sql: """
                CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL);
                WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 30000)
                INSERT INTO customers SELECT i, 'u' || (i % 10000) || '@x', i FROM s;
                CREATE TRIGGER refuse BEFORE DELETE ON customers WHEN old.id = 25000
                BEGIN SELECT RAISE(ABORT, 'refused'); END;
                """)
        // 30,000 rows: caches raised (80 B a row is over SQLite's 2,000 KiB); 10,000 groups in
        // batches of 10: 1,000 batches, over the flush's threshold.
        XCTAssertNotNil(DedupeExecutor.workingMemoryKiB(rows: 30000))
        XCTAssertGreaterThanOrEqual(10000 / 10, DedupeExecutor.flushTemporaryFromBatches)
        let yaml = """
            version: 1
            dedupe:
              - {entity: customers, key: email, winner: [{created: asc}]}
            batch:
              size: 10
            """
        XCTAssertThrowsError(try ScenarioKit.run(yaml, db: path)) { error in
            XCTAssertTrue("\(error)".contains("refused"), "\(error)")
        }
        // Losers are ids 10,001-30,000, deleted in batches by position: a stretch from the
        // first loser on is gone, and the rest, 25,000 among them, is there.
        let first = try ScenarioKit.int(path, "SELECT min(id) FROM customers WHERE id > 10000")
        XCTAssertGreaterThan(first, 10001, "batches before the failed one stay committed")
        XCTAssertLessThanOrEqual(first, 25000, "the failed batch's losers are all there")
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM customers WHERE id > 10000"), 30000 - first + 1)
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM customers WHERE id <= 10000"), 10000)
        try ScenarioKit.execute(path, "DROP TRIGGER refuse")
        try ScenarioKit.run(yaml, db: path)
        XCTAssertEqual(
            try ScenarioKit.rows(path, "SELECT count(*), min(id), max(id) FROM customers"),
            [[10000.databaseValue, 1.databaseValue, 10000.databaseValue]])
    }
}
