import GRDB
import XCTest
@testable import WinnowSQLite
import WinnowTestFiles

/// ``RangeBound``: the end of the next range read by stepping over its rows is the one the
/// `max` of a limited subquery gives, for every start and size, over values with gaps and
/// repeats, counted by row or by distinct value.
final class RangeBoundTests: XCTestCase {
    func testTheBoundIsTheMaxOfTheLimitedRange() throws {
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            try db.execute(sql: "CREATE TABLE t (v INTEGER NOT NULL); CREATE INDEX t_v ON t (v)")
            var generator = SplitMix64(seed: 26)
            var value: Int64 = -50
            for _ in 0..<400 {
                value += Int64.random(in: 0...4, using: &generator)
                try db.execute(sql: "INSERT INTO t (v) VALUES (?)", arguments: [value])
            }
            let values = try Int64.fetchAll(db, sql: "SELECT v FROM t ORDER BY v")
            for distinct in [false, true] {
                let bound = RangeBound("v", in: "t", distinct: distinct)
                let limited = "SELECT max(v) FROM (SELECT \(distinct ? "DISTINCT " : "")v FROM t WHERE v > ? ORDER BY v LIMIT ?)"
                for after in [Int64.min, -51, -50, values[17], values[200], values[398], values[399], values[399] + 1] {
                    for size in [-1, 0, 1, 2, 3, 7, 50, 399, 400, 1_000] {
                        let expected = try Int64.fetchOne(db, sql: limited, arguments: [after, size])
                        XCTAssertEqual(
                            try bound.next(db, after: after, size: size), expected, "after \(after), \(size), distinct: \(distinct)")
                    }
                }
            }
            // Repeats matter: by row the bound comes sooner than by distinct value.
            let first = values[0] - 1
            XCTAssertLessThan(
                try RangeBound("v", in: "t").next(db, after: first, size: 100)!,
                try RangeBound("v", in: "t", distinct: true).next(db, after: first, size: 100)!)
        }
    }
}
