import Foundation
import WinnowBackends
import WinnowCore
import WinnowTestSupport
import XCTest

/// Merges on PostgreSQL are exact in each column's own type, through the executable: each
/// merged value equals the same merge done by hand in SQL (`sum`, `min`, `max` as the server's
/// aggregates compute them, `fill_null` as the first non-NULL value in winner order), compared
/// as the server's text; a value that does not fit its column, and a merge that has no meaning
/// for a type, are refused with exit 65 and changing nothing; `restore` brings every row back
/// as it was.
final class PostgresExactMergeTests: CLITestCase {
    var url: String!

    override func setUpWithError() throws {
        try super.setUpWithError()
        url = try PostgresServer.require()
        try PostgresServer.reset(url)
    }

    /// Runs statements on the test database, one at a time.
    func execute(_ statements: [String]) throws {
        try BackendRouter().withSession(url, mode: .readWrite(create: false)) { session in
            for sql in statements { try session.execute(sql) }
        }
    }

    /// One row of text values (every expression is cast to text by the caller).
    func texts(_ sql: String) throws -> [String] {
        try BackendRouter().withSession(url, mode: .readOnly) { session in
            try session.rows(sql).first?.values.map { $0.string ?? "NULL" } ?? []
        }
    }

    /// Every row of `acct` as the server prints it, in key order.
    func table() throws -> [String] {
        try BackendRouter().withSession(url, mode: .readOnly) { session in
            try session.rows("SELECT a::text FROM public.acct AS a ORDER BY id").map { $0.values.first?.string ?? "" }
        }
    }

    /// The rows: one group ('a', ids 1-3, kept: id 1) whose values Double rounding and text
    /// comparison get wrong, and a row without duplicates. The database's time zone is one with
    /// summer time, so that a text comparison of two instants of the same night disagrees with
    /// their order (02:30+02 is before 02:10+01).
    func makeAccounts() throws {
        let database = try texts("SELECT current_database()::text").first ?? "postgres"
        try execute([
            "ALTER DATABASE \(database.sqlIdentifier) SET timezone TO 'Europe/Berlin'",
            """
            CREATE TABLE public.acct (
                id bigint PRIMARY KEY, email text NOT NULL, balance numeric(30,10), price numeric, big bigint,
                seen timestamptz, last_seen timestamptz, born date, doc jsonb)
            """,
            """
            INSERT INTO public.acct VALUES
            (1, 'a', 12345678901234567.1234567891, 0.3, 9223372036854775000,
             '2024-10-27 02:30:00+02', '2024-10-27 02:30:00+02', '0010-01-01 BC', NULL),
            (2, 'a', 0.0000000001, 0.30000000000000000001, 800,
             '2024-10-27 02:10:00+01', '2024-10-27 02:10:00+01', '0044-03-15 BC', '{"b": 1.10, "a": [1, 2]}'),
            (3, 'a', 99999999999999.9999999999, 0.1, 7, NULL, '2024-10-27 01:50:00+02', NULL, '{"c": 3}'),
            (4, 'b', 5, 5, 5, '2024-01-01 00:00:00+00', '2024-01-01 00:00:00+00', '2024-01-01', '{}')
            """,
        ])
        addTeardownBlock { [url] in
            try? BackendRouter().withSession(url!, mode: .readWrite(create: false)) { session in
                try session.execute("ALTER DATABASE \(database.sqlIdentifier) RESET timezone")
            }
        }
    }

    func testMergesAreExactInTheColumnsOwnTypes() throws {
        try makeAccounts()
        let job = try write(
            "job.yaml",
            """
            version: 1
            dedupe:
              - entity: acct
                key: email
                winner: [{id: asc}]
                merge:
                  balance: sum
                  price: max
                  big: sum
                  seen: min
                  last_seen: max
                  born: min
                  doc: fill_null
                archive: true
            """)
        // The same merges by hand, in SQL, on the group's rows.
        let expected = try texts(
            """
            SELECT sum(balance)::text, max(price)::text, sum(big)::text, min(seen)::text, max(last_seen)::text, min(born)::text,
                   (SELECT doc::text FROM public.acct WHERE email = 'a' AND doc IS NOT NULL ORDER BY id LIMIT 1)
            FROM public.acct WHERE email = 'a'
            """)
        XCTAssertEqual(expected[0], "12445678901234567.1234567891")
        XCTAssertEqual(expected[2], "9223372036854775807")
        let before = try table()

        let plan = try winnow(["plan", job, "--database", url], expect: 0)
        XCTAssertTrue(
            plan.stdout.contains("merge: balance 12345678901234567.1234567891 -> 12445678901234567.1234567891"), plan.stdout)

        try winnow(["run", job, "--database", url], expect: 0)
        let merged = try texts(
            """
            SELECT balance::text, price::text, big::text, seen::text, last_seen::text, born::text, doc::text
            FROM public.acct WHERE id = 1
            """)
        XCTAssertEqual(merged, expected)
        XCTAssertEqual(try texts("SELECT count(*)::text FROM public.acct"), ["2"])
        XCTAssertEqual(try table().last, before.last, "the row without duplicates changed")

        // The journal brings every row back exactly.
        let runID = try texts("SELECT max(id)::text FROM winnow.winnow_runs").first ?? ""
        try winnow(["restore", "--run", runID, "--database", url], expect: 0)
        XCTAssertEqual(try table(), before)
    }

    /// A merged value that its column cannot hold (a sum past the type's range or precision,
    /// a joined text longer than a `varchar(n)`) is refused, naming the column; nothing changes,
    /// in `plan` and in `run` alike. (An explicit cast would cut the text without a word.)
    func testMergedValueThatDoesNotFitItsColumnIsRefused() throws {
        try execute([
            """
            CREATE TABLE public.acct (
                id bigint PRIMARY KEY, email text NOT NULL, big bigint, balance numeric(12,2), note character varying(5))
            """,
            """
            INSERT INTO public.acct VALUES (1, 'a', 9223372036854775000, 1, 'abc'), (2, 'a', 800, 2, 'de'), (3, 'a', 8, 3, NULL),
            (4, 'b', 1, 9999999999.99, 'x'), (5, 'b', 1, 0.02, NULL)
            """,
        ])
        let before = try table()
        for (merge, message) in [
            ("big: sum", "makes 9223372036854775808 for the group that keeps id = 1, which does not fit big's type bigint"),
            ("balance: sum", "makes 10000000000.01 for the group that keeps id = 4, which does not fit balance's type numeric(12,2)"),
            ("note: concat", "makes 'abc, de' for the group that keeps id = 1, which does not fit note's type character varying(5)"),
        ] {
            let job = try write(
                "job.yaml",
                """
                version: 1
                dedupe:
                  - entity: acct
                    key: email
                    winner: [{id: asc}]
                    merge: {\(merge)}
                """)
            for command in ["plan", "run"] {
                let result = try winnow([command, job, "--database", url], expect: 65)
                XCTAssertTrue(result.stderr.contains("merge: {\(merge)} \(message)"), "\(command): \(result.stderr)")
                XCTAssertEqual(try table(), before, "\(command) changed rows")
            }
        }
    }

    /// A merge that means nothing for a column's type is refused before anything runs, at the
    /// job file's line (exit 65): `min`/`max` of `jsonb`, `sum` of a date, `concat` of a number.
    func testMergeWithoutMeaningForTheTypeIsRefused() throws {
        try execute([
            "CREATE TABLE public.acct (id bigint PRIMARY KEY, email text NOT NULL, doc jsonb, born date, n integer)",
            "INSERT INTO public.acct VALUES (1, 'a', '{}', '2020-01-01', 1), (2, 'a', '[]', '2021-01-01', 2)",
        ])
        let before = try table()
        for (merge, message) in [
            ("doc: max", "'doc' is jsonb: max keeps the largest value, and this type has no order"),
            ("doc: min", "'doc' is jsonb: min keeps the smallest value"),
            ("born: sum", "'born' is date: sum adds numbers, and this is not a number type"),
            ("n: concat", "'n' is integer: concat joins texts, and this is not a text type"),
        ] {
            let job = try write(
                "job.yaml",
                """
                version: 1
                dedupe:
                  - entity: acct
                    key: email
                    merge: {\(merge)}
                """)
            for command in ["plan", "run"] {
                let result = try winnow([command, job, "--database", url], expect: 65)
                XCTAssertTrue(result.stderr.contains("job.yaml:5:"), "\(merge): no file:line: \(result.stderr)")
                XCTAssertTrue(result.stderr.contains(message), "\(merge): \(result.stderr)")
            }
        }
        XCTAssertEqual(try table(), before)
    }
}
