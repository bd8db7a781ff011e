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

    /// Filling a `hash_column` goes in slices of rows on both engines, sized alike, each slice
    /// that changed something a batch of its own (PostgreSQL had counted one batch for the whole
    /// fill, and left it out of the run's total): the same hashes, the same count of rows
    /// hashed, and more than one batch for 5,000 rows.
    func testHashFillIsBatchedAlikeOnBothEngines() throws {
        var values: [String] = []
        for i in 1...5000 { values.append("(\(i), 'k\(i % 4000)', NULL)") }
        let (url, dir, data) = try PostgresServer.engines(
            "fill.sqlite",
            sql: """
                CREATE TABLE items (id INTEGER PRIMARY KEY, code TEXT, key_hash TEXT);
                CREATE INDEX items_hash ON items (key_hash);
                INSERT INTO items VALUES \(values.joined(separator: ", "));
                """)
        let job = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: items, key: code, hash: true, hash_column: key_hash}\n",
            to: dir.appendingPathComponent("job.yaml").path)
        var summaries: [[String: Any]] = []
        for engine in [data, url] {
            let result = try TestSupport.winnow(["run", job, "--database", engine, "--format", "json"])
            XCTAssertEqual(result.status, 0, "\(engine): \(result.stderr)")
            let summary = try XCTUnwrap(
                result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                    .first { $0["event"] as? String == "summary" }, result.stdout)
            summaries.append(summary)
            XCTAssertEqual(summary["deleted"] as? Int, 1000, engine)
            XCTAssertEqual(summary["hashed"] as? Int, 4000, engine)
            XCTAssertGreaterThan(summary["batches"] as? Int ?? 0, 2, "\(engine): the dedupe batch and more than one slice of hashes")
        }
        XCTAssertEqual(
            try PostgresServer.rows(url, tables: ["items"]), try PostgresServer.rows(data, tables: ["items"]), "the same hashes")
    }
}
