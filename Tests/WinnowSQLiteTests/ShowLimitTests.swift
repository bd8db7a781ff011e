import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// `show` without `--verbose` lists the first groups of each rule and the first child rows: the
/// same, entry for entry, as the head of what `--verbose` lists, whichever way the run batched.
final class ShowLimitTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    /// `customers` in groups of one to four scattered case variants; `orders` (indexed) point at
    /// customers, and `tags` are unique per customer, so that re-pointing some collides.
    func makeStore(_ name: String, customers: Int) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, created_at INTEGER NOT NULL, visits INTEGER NOT NULL);
                CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), amount INTEGER);
                CREATE INDEX orders_customer ON orders (customer_id);
                CREATE TABLE tags (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), tag TEXT NOT NULL,
                    UNIQUE (customer_id, tag));
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(customers) - 1)
                INSERT INTO customers (email, created_at, visits)
                SELECT CASE i % 2 WHEN 0 THEN 'u' ELSE 'U' END || ((i * 7) % (\(customers) / 2 + 1) / 2) || '@x.org',
                       1000 + (i * 7919) % 100003, i % 5
                FROM s ORDER BY (i * 2654435761) % 4294967311;
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(customers) * 3 / 2)
                INSERT INTO orders (customer_id, amount) SELECT 1 + (i * 48271) % \(customers), i FROM s;
                INSERT INTO tags (customer_id, tag) SELECT id, CASE id % 3 WHEN 0 THEN 'vip' ELSE 'new' END FROM customers;
                """)
        return path
    }

    static func job(merge: Bool, size: Int) -> String {
        """
        version: 1
        dedupe:
          - entity: customers
            key: email
            normalize: [lowercase]
            winner:
              - created_at: asc\(merge ? "\n    merge: {visits: sum}" : "")
            archive: true
        batch:
          size: \(size)
        """
    }

    /// The limited listing is the head of the full one: groups, re-pointed and deleted child rows.
    func assertHeadOfVerbose(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let limit = 10
        let verbose = try History.show(database: path, runID: 1, groupLimit: nil, backend: SQLiteBackend())
        let limited = try History.show(database: path, runID: 1, groupLimit: limit, backend: SQLiteBackend())
        XCTAssertEqual(limited.rules.count, verbose.rules.count, file: file, line: line)
        for (short, long) in zip(limited.rules, verbose.rules) {
            XCTAssertGreaterThan(long.groups.count, limit, file: file, line: line)
            XCTAssertEqual(short.groups, Array(long.groups.prefix(limit)), file: file, line: line)
            XCTAssertEqual(Array(short.repointed.prefix(limit)), Array(long.repointed.prefix(limit)), file: file, line: line)
            XCTAssertEqual(Array(short.childrenDeleted.prefix(limit)), Array(long.childrenDeleted.prefix(limit)), file: file, line: line)
            XCTAssertEqual(long.repointed.count, long.counts.repointed, "every re-pointed row listed", file: file, line: line)
            XCTAssertEqual(long.childrenDeleted.count, long.counts.childrenDeleted, file: file, line: line)
        }
        XCTAssertEqual(limited.journal, verbose.journal, file: file, line: line)
    }

    /// Merges and children: batches by group (batches of a few groups).
    func testLimitedShowIsTheHeadOfTheVerboseOneWhenBatchesHoldWholeGroups() throws {
        let path = try makeStore("merge.sqlite", customers: 600)
        let summary = try ScenarioKit.run(Self.job(merge: true, size: 7), db: path)
        XCTAssertGreaterThan(summary.counts.batches, 2)
        XCTAssertGreaterThan(summary.counts.childrenDeleted, 0)
        try assertHeadOfVerbose(path)
    }

    /// Merges that go ahead of the deletions, which then take losers by position: a group's
    /// losers lie in several batches.
    func testLimitedShowIsTheHeadOfTheVerboseOneWhenBatchesGoByPosition() throws {
        let path = try makeStore("ahead.sqlite", customers: 600)
        try ScenarioKit.execute(path, "DROP TABLE tags")
        let summary = try ScenarioKit.run(Self.job(merge: true, size: 5), db: path)
        XCTAssertGreaterThan(summary.counts.batches, 2)
        try assertHeadOfVerbose(path)
    }

    /// A rule that only deletes (no merge, no children): batches by position from the start.
    func testLimitedShowIsTheHeadOfTheVerboseOneForARuleThatOnlyDeletes() throws {
        let path = try makeStore("delete.sqlite", customers: 600)
        try ScenarioKit.execute(path, "DROP TABLE tags; DROP TABLE orders")
        let summary = try ScenarioKit.run(Self.job(merge: false, size: 5), db: path)
        XCTAssertGreaterThan(summary.counts.batches, 2)
        try assertHeadOfVerbose(path)
    }

    /// Group records that do not come in batch order within their rule are read again, every
    /// group kept: the listing is the same as from records in order.
    func testRecordsOutOfBatchOrderAreReadAgainAndListTheSame() throws {
        let path = try makeStore("order.sqlite", customers: 600)
        try ScenarioKit.run(Self.job(merge: true, size: 7), db: path)
        let expected = try History.show(database: path, runID: 1, groupLimit: 10, backend: SQLiteBackend())
        try SQLiteBackend().withSession(path, mode: .readOnly) { session in
            let records = try session.groupRecords(runID: 1)
            XCTAssertGreaterThan(Set(records.map(\.batch)).count, 2)
            var report = RunReport(run: try XCTUnwrap(History.entry(session, runID: 1)))
            report.groupLimit = 10
            report.rules = try History.rules(session, runID: 1)
            report.journal = try History.journalTables(session, runID: 1)
            report.rows = .listed
            var reads = 0
            let listed = try History.list(
                { body in
                    reads += 1
                    for record in records.reversed() { try body(record) }
                }, into: &report, session: session, runID: 1)
            XCTAssertTrue(listed)
            XCTAssertEqual(reads, 2, "read again once the order broke")
            XCTAssertEqual(report, expected)
        }
    }
}
