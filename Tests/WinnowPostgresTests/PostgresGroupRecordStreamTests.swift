import Foundation
import WinnowBackends
import WinnowCore
import WinnowTestSupport
import XCTest

@testable import WinnowPostgres

/// `show` reads a run's group records one at a time (``DatabaseSession/forEachGroupRecord``):
/// through a cursor, a page at a time, where they are in one table (the typed journal of one
/// table, or `winnow_run_groups`), and whole where they are in several. Either way they are
/// the records ``DatabaseSession/groupRecords(runID:)`` gives, in its order.
final class PostgresGroupRecordStreamTests: XCTestCase {
    var savedPage = PostgresSession.cursorPage
    override func setUp() { savedPage = PostgresSession.cursorPage }
    override func tearDown() { PostgresSession.cursorPage = savedPage }

    /// `people` is journaled in its own column types; `pets` has a column named like winnow's
    /// own, so its rows go to the `jsonb` journal and its groups to `winnow_run_groups`. Each
    /// table: 30 keys, key k with k % 4 + 1 rows (43 losers), at rowids spread by a stride.
    func load() throws -> String {
        let url = try PostgresServer.require()
        try PostgresServer.reset(url)
        try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in
            for table in ["people", "pets"] {
                let extra = table == "pets" ? ", winnow_mark integer" : ""
                try session.execute(
                    "CREATE TABLE public.\(table) (id integer PRIMARY KEY, email text, created integer NOT NULL\(extra))")
                try session.execute(
                    """
                    INSERT INTO public.\(table) (id, email, created)
                    SELECT (k * 37 + c * 11) % 1000, 'k' || k, c FROM generate_series(0, 29) AS k, generate_series(0, 3) AS c
                    WHERE c <= k % 4
                    """)
            }
        }
        return url
    }

    func job(_ tables: [String]) -> String {
        "version: 1\ndedupe:\n"
            + tables.map { "  - entity: \($0)\n    key: email\n    winner:\n      - created: asc\n    archive: true\n" }.joined()
            + "batch:\n  size: 3\n"
    }

    func run(_ url: String, _ tables: [String]) throws {
        let dir = try TestSupport.scratchDirectory()
        let file = try TestSupport.writeFile(job(tables), to: dir.appendingPathComponent("job.yaml").path)
        let result = try TestSupport.winnow(["run", file, "--database", url])
        XCTAssertEqual(result.status, 0, result.stderr)
    }

    /// The records streamed with `page` rows a fetch, and the records read whole.
    func records(_ url: String, page: Int) throws -> (streamed: [GroupRecord], whole: [GroupRecord]) {
        PostgresSession.cursorPage = page
        return try PostgresBackend().withSession(url, mode: .readOnly) { session in
            var streamed: [GroupRecord] = []
            try session.forEachGroupRecord(runID: 1) { streamed.append($0) }
            return (streamed, try session.groupRecords(runID: 1))
        }
    }

    func assertSame(_ url: String, losers: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        // Pages that divide the records, that do not, of one row, and larger than all of them.
        for page in [1, 7, 15, 1_000] {
            let (streamed, whole) = try records(url, page: page)
            XCTAssertEqual(whole.count, losers, "page \(page)", file: file, line: line)
            XCTAssertEqual(streamed, whole, "page \(page)", file: file, line: line)
        }
    }

    func testTheTypedJournalsRecordsComeThroughTheCursorInOrder() throws {
        let url = try load()
        try run(url, ["people"])
        XCTAssertEqual(try count(url, "SELECT count(*) FROM winnow.winnow_run_groups"), 0, "typed: no group rows")
        try assertSame(url, losers: 43)
    }

    func testWinnowRunGroupsRecordsComeThroughTheCursorInOrder() throws {
        let url = try load()
        try run(url, ["pets"])
        XCTAssertEqual(try count(url, "SELECT count(*) FROM winnow.winnow_run_groups"), 43)
        try assertSame(url, losers: 43)
    }

    /// Records in both places: the stream gives them rule by rule, as read whole.
    func testRecordsInTwoPlacesComeInTheOrderOfTheWholeRead() throws {
        let url = try load()
        try run(url, ["pets", "people"])
        try assertSame(url, losers: 86)
        let (streamed, _) = try records(url, page: 7)
        XCTAssertEqual(streamed.map(\.rule), Array(repeating: 0, count: 43) + Array(repeating: 1, count: 43))
    }

    /// In a transaction of the caller's, the cursor reads in it and leaves it open; a reader
    /// that stops it with an error of its own (as `show` does, to read again when records come
    /// out of order) can read again, there and outside it.
    func testTheCursorReadsInsideTheCallersTransaction() throws {
        struct Enough: Error {}
        let url = try load()
        try run(url, ["people"])
        PostgresSession.cursorPage = 4
        try PostgresBackend().withSession(url, mode: .readOnly) { session in
            var streamed = 0
            try session.scratch {
                try session.execute("CREATE TEMP TABLE seen (n integer)")
                XCTAssertThrowsError(try session.forEachGroupRecord(runID: 1) { _ in throw Enough() }) { XCTAssertTrue($0 is Enough) }
                try session.forEachGroupRecord(runID: 1) { _ in streamed += 1 }
                try session.execute("INSERT INTO seen VALUES (1)")
            }
            XCTAssertEqual(streamed, 43)
            XCTAssertEqual(try session.value("SELECT count(*) FROM seen").int, 1)
            XCTAssertThrowsError(try session.forEachGroupRecord(runID: 1) { _ in throw Enough() }) { XCTAssertTrue($0 is Enough) }
            var again = 0
            try session.forEachGroupRecord(runID: 1) { _ in again += 1 }
            XCTAssertEqual(again, 43)
        }
    }

    /// Values of many types (quotes, backslashes, NaN, arrays, JSON, NULL) get the same
    /// literals one by one as through a `jsonb` array of them.
    func testLiteralsOfValuesEqualLiteralsOfTheirArray() throws {
        let url = try PostgresServer.require()
        let values = [
            "1", "(-9223372036854775808)::int8", "12345678.1234::numeric", "'NaN'::float8", "1e-300::float8", "-0.0::float8",
            "'it''s'::text", #"'back\slash'::text"#, "'ü\t'::varchar", "true", "NULL::int", "'{1,NULL,3}'::int[]",
            #"'{"b": 1, "a": [1.50, null]}'::jsonb"#, "'2026-01-02 03:04:05.123456+00'::timestamptz", "'\\x00ff'::bytea",
            "'00000000-0000-0000-0000-000000000001'::uuid",
        ]
        try PostgresBackend().withSession(url, mode: .readOnly) { session in
            for value in values {
                let one = try session.value("SELECT \(PostgresJournalReader.literals(ofValues: [value, "7"]))").string
                let array = try session.value("SELECT \(PostgresJournalReader.literals(ofArray: "jsonb_build_array(\(value), 7)"))").string
                XCTAssertNotNil(one, value)
                XCTAssertEqual(one, array, value)
            }
        }
    }

    /// A row's columns get the same literals one by one as through `to_jsonb` of the row, over
    /// more columns than one `jsonb_build_object` takes and names that need quoting; a column
    /// not asked for is left out.
    func testLiteralsOfColumnsEqualLiteralsOfTheirRow() throws {
        let url = try PostgresServer.require()
        let typed = [
            ("it's", "'it''s'::text"), (#"back\slash"#, #"'back\slash'::text"#), ("nan", "'NaN'::float8"), ("n", "NULL::int"),
            ("j", #"'{"b": 1, "a": [1.50, null]}'::jsonb"#), ("arr", "'{1,NULL,3}'::int[]"), ("flag", "false"),
            ("at", "'2026-01-02 03:04:05.123456+00'::timestamptz"), ("big", "(-9223372036854775808)::int8"),
        ]
        let columns = typed + (1...60).map { ("c\($0)", "\($0 * 7)::numeric(9,2)") }
        let row = "(SELECT \(columns.map { "\($0.1) AS \($0.0.sqlIdentifier)" }.joined(separator: ", ")), 1 AS skipped) AS r"
        try PostgresBackend().withSession(url, mode: .readOnly) { session in
            let postgres = try XCTUnwrap(session as? PostgresSession)
            let reader = PostgresJournalReader(session: postgres)
            let byColumn = try session.value(
                "SELECT \(reader.literals(ofColumns: columns.map { ($0.0, "r.\($0.0.sqlIdentifier)") })) FROM \(row)"
            ).string
            let byRow = try session.value("SELECT \(PostgresJournalReader.literals(ofObject: "to_jsonb(r)")) FROM \(row)").string
            let one = try XCTUnwrap(PostgresJournalReader.decode(byColumn, as: [String: String].self))
            var all = try XCTUnwrap(PostgresJournalReader.decode(byRow, as: [String: String].self))
            XCTAssertEqual(all.removeValue(forKey: "skipped"), "1")
            XCTAssertEqual(one.count, 69)
            XCTAssertEqual(one, all)
            XCTAssertEqual(one["n"], "NULL")
            XCTAssertEqual(one["it's"], "'it''s'")
        }
    }

    func count(_ url: String, _ sql: String) throws -> Int {
        try PostgresBackend().withSession(url, mode: .readOnly) { try $0.value(sql).int ?? -1 }
    }
}
