import Foundation
import WinnowBackends
import WinnowCore
import WinnowTestSupport
import XCTest

/// Both engines compute a key's hash where its rows are (SQLite in a SQL function, PostgreSQL
/// in SQL); both must give what the core's ``KeyHash`` says, value for value, or a
/// `hash_column` filled on one engine would not match the other's.
final class CrossEngineKeyHashTests: XCTestCase {
    func testBothEnginesHashKeysAsTheCoreSays() throws {
        let (url, _, data) = try PostgresServer.engines(
            "hashes.sqlite",
            sql: """
                CREATE TABLE v (id INTEGER PRIMARY KEY, i BIGINT, r REAL, t TEXT, b BLOB);
                INSERT INTO v VALUES
                    (1, 1, 1.0, 'ab', x'00ff'), (2, -5, 2.5, 'Émile 😀', x''), (3, 9223372036854775807, -0.0, '', NULL),
                    (4, NULL, 1e300, 'a''b', x'61'), (5, 0, -3.25, NULL, x'0102030405');
                """)
        // What each row holds, as the core's values (the SQLite file is the reference).
        let expected: [[SQLValue]] = [
            [.integer(1), .real(1.0), .text("ab"), .blob([0, 255])],
            [.integer(-5), .real(2.5), .text("Émile 😀"), .blob([])],
            [.integer(Int64.max), .real(-0.0), .text(""), .null],
            [.null, .real(1e300), .text("a'b"), .blob([0x61])],
            [.integer(0), .real(-3.25), .null, .blob([1, 2, 3, 4, 5])],
        ]
        let keys: [[Int]] = [[0], [1], [2], [3], [0, 2], [2, 3], [0, 1, 2, 3]]
        for engine in [data, url] {
            try BackendRouter().withSession(engine, mode: .readOnly) { session in
                let table = try XCTUnwrap(try session.inspect().table(named: "v"))
                let columns = ["i", "r", "t", "b"]
                for key in keys {
                    for nullsEqual in [true, false] {
                        let parts = key.map { (sql: columns[$0].sqlIdentifier, type: table.column(named: columns[$0])?.type as String?) }
                        let rows = try session.rows(
                            "SELECT \(session.dialect.keyHash(nullsEqual: nullsEqual, parts)) FROM \(session.dialect.table("v")) ORDER BY id"
                        )
                        let computed = rows.map { $0.values.first?.string }
                        let wanted = expected.map { row in KeyHash.digest(key.map { row[$0] }, nullsEqual: nullsEqual) }
                        XCTAssertEqual(computed, wanted, "\(engine): key \(key.map { columns[$0] }), nulls equal: \(nullsEqual)")
                    }
                }
            }
        }
    }
}
