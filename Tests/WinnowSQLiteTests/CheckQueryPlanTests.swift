import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// `check` counts duplicates with one grouped query. With an index on the key SQLite must walk
/// the index in key order (no sort, no temporary B-tree), which is what keeps `check` of a clean
/// 10,000,000-row table within seconds and its memory flat; these tests read SQLite's plan.
final class CheckQueryPlanTests: XCTestCase {
    func plan(schema: String, rule yaml: String) throws -> String {
        let queue = try DatabaseQueue()
        return try queue.write { db in
            try db.execute(sql: schema)
            let job = try ScenarioKit.job("version: 1\ndedupe:\n  - entity: t\n\(yaml)")
            let rule = try SQLiteBackend.compile(job.dedupe[0], schema: try SchemaInspector.inspect(db))
            return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + JobRunner.duplicateCountSQL(rule))
                .map { $0["detail"] as String }.joined(separator: "\n")
        }
    }

    func testIndexedKeyIsCountedWithoutASort() throws {
        let detail = try plan(
            schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v TEXT); CREATE INDEX t_k ON t (k);",
            rule: "    key: k\n")
        XCTAssertTrue(detail.contains("COVERING INDEX t_k"), detail)
        XCTAssertFalse(detail.contains("TEMP B-TREE"), detail)
    }

    func testIndexedCompositeKeyIsCountedWithoutASort() throws {
        let detail = try plan(
            schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b INTEGER, v TEXT); CREATE INDEX t_ab ON t (a, b);",
            rule: "    key: [a, b]\n")
        XCTAssertTrue(detail.contains("COVERING INDEX t_ab"), detail)
        XCTAssertFalse(detail.contains("TEMP B-TREE"), detail)
    }

    func testUnindexedKeyNeedsASort() throws {
        // Without an index the same query has to sort: the assertion above is not vacuous.
        let detail = try plan(schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v TEXT);", rule: "    key: k\n")
        XCTAssertTrue(detail.contains("TEMP B-TREE FOR GROUP BY"), detail)
    }
}
