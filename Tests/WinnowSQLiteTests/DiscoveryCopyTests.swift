import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// Discovery read from a copy made in short reads (``DedupeExecutor/copyForDiscovery(rows:)``):
/// the same groups, winners and ties as the one-statement read, every other connection's commit
/// let in between the reads, and no copy where nothing waits for a read.
final class DiscoveryCopyTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("DiscoveryCopy")
    }

    override func tearDownWithError() throws {
        DedupeExecutor.copiesDiscoveryAlways = false
        DedupeExecutor.copiesSortedRuns = true
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    /// A table `t` of `count` groups of `size` rows each, ids in group order (`k0`, `k0`, ...).
    func groups(_ count: Int, of size: Int, name: String) throws -> String {
        var values: [String] = []
        for g in 0..<count { for r in 0..<size { values.append("(\(g * size + r + 1), 'k\(g)', \(r))") } }
        return try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("\(name).sqlite").path,
            sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v INTEGER); INSERT INTO t VALUES \(values.joined(separator: ", "));")
    }

    /// Fails with the first row where two outcomes differ (not with every row of both).
    func assertSameRows(_ a: [String], _ b: [String], _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        guard a != b else { return }
        let first = zip(a, b).first { $0 != $1 }.map { "\($0) / \($1)" } ?? "\(a.count) rows / \(b.count) rows"
        XCTFail("\(message): the rows left differ, first: \(first)", file: file, line: line)
    }

    /// Runs `job` on a fresh database made by `setup`, reading discovery from a copy or not;
    /// returns the rows left (every column, quoted), the deletions and how many pieces of
    /// discovery's read were reported.
    func outcome(
        _ setup: String, _ job: String, table: String, copied: Bool, name: String, batchSize: Int = 37
    )
        throws -> (rows: [String], deleted: Int, pieces: Int)
    {
        let path = try TestSupport.makeDatabase(at: dir.appendingPathComponent("\(name)-\(copied).sqlite").path, sql: setup)
        DedupeExecutor.copiesDiscoveryAlways = copied
        defer { DedupeExecutor.copiesDiscoveryAlways = false }
        var pieces = 0
        let summary = try ScenarioKit.run(job, db: path, batchSize: batchSize) { event in
            if case let .phaseProgress(name, _, _) = event, name.hasPrefix("discovery of ") { pieces += 1 }
        }
        let columns = try ScenarioKit.column(path, "SELECT name FROM pragma_table_info('\(table)') ORDER BY cid", as: String.self)
        let rows = try ScenarioKit.column(
            path,
            "SELECT rowid || ':' || \(columns.map { "quote(\"\($0!)\")" }.joined(separator: " || ',' || ")) FROM \(table) ORDER BY rowid",
            as: String.self)
        return (rows.map { $0 ?? "NULL" }, summary.counts.deleted, pieces)
    }

    /// 6,000 rows in scattered groups, with a NOCASE key column, a NOCASE winner column whose
    /// values tie under it but not in bytes, NULL keys, and several types in one column.
    static let peopleSetup: String = {
        var values: [String] = []
        let spellings = ["a", "A", "b", "B"]
        for id in 1...6000 {
            let key = (id * 7919) % 2500
            let email = id % 211 == 0 ? "NULL" : "'\((id / 7) % 2 == 0 ? "User" : "USER")\(key)@X' || '\(id % 3 == 0 ? "" : " ")'"
            let name = "'\(spellings[(id * 31) % 4])'"
            let created = (id * 104_729) % 50
            let score = id % 5 == 0 ? "NULL" : id % 7 == 0 ? "'\(id % 9)'" : "\(Double(id % 9))"
            values.append("(\(id), \(email), \(name), \(created), \(score), \(id % 4 == 0 ? "NULL" : "'n\(id % 13)'"))")
        }
        return """
            CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT COLLATE NOCASE, name VARCHAR(20) COLLATE NOCASE,
                                 created BIGINT, score, note TEXT);
            INSERT INTO people VALUES \(values.joined(separator: ", "));
            """
    }()

    func testDiscoveryFromACopyKeepsTheSameRowsAsFromTheTable() throws {
        let jobs: [(String, String)] = [
            ("nocase-key", "key: email\n    winner:\n      - name: asc\n      - created: desc"),
            ("lowercase-trim", "key: email\n    normalize: [trim, lowercase]\n    winner:\n      - created: asc"),
            ("hash", "key: [email, name]\n    hash: true\n    normalize: {email: [trim]}\n    winner:\n      - score: desc"),
            ("most-complete", "key: [name, created]\n    winner: most_complete"),
            ("nulls-equal", "key: [note]\n    nulls: equal\n    winner: {latest: score}"),
            ("lowercase-complete", "key: email\n    normalize: [lowercase]\n    winner: most_complete"),
        ]
        // Which rules copy sorted runs where they may (every group and winner term under
        // BINARY), and the number of runs merged.
        var merged: [Int] = []
        DedupeExecutor.mergingSortedRuns = { merged.append($0) }
        defer { DedupeExecutor.mergingSortedRuns = nil }
        for (name, rule) in jobs {
            let job = "version: 1\ndedupe:\n  - entity: people\n    \(rule)\n    archive: true\n"
            let direct = try outcome(Self.peopleSetup, job, table: "people", copied: false, name: name)
            for runs in [true, false] {
                DedupeExecutor.copiesSortedRuns = runs
                merged = []
                let copy = try outcome(Self.peopleSetup, job, table: "people", copied: true, name: "\(name)-\(runs)")
                XCTAssertEqual(direct.pieces, 0, "\(name): a small table is read in one statement")
                XCTAssertGreaterThan(copy.pieces, 0, "\(name): the copy was made in pieces")
                XCTAssertGreaterThan(direct.deleted, 100, name)
                XCTAssertEqual(copy.deleted, direct.deleted, name)
                assertSameRows(copy.rows, direct.rows, "\(name), sorted runs: \(runs)")
                let mergeable = runs && ["lowercase-trim", "hash", "nulls-equal", "lowercase-complete"].contains(name)
                XCTAssertEqual(merged.count, mergeable ? 1 : 0, "\(name), sorted runs: \(runs)")
                XCTAssertGreaterThan(merged.first ?? 2, 1, "\(name): several runs merged")
            }
        }
    }

    /// The estimate before the grouped count reads the copy too (tables of `estimateFromRows`
    /// rows and more, lowered here; discovery by the window, which has the count), and so does
    /// the sorted read, on a table whose rowid has no alias column and whose key column has no
    /// type: 1 and 1.0 are one key, '1' another.
    func testHiddenRowidAndUntypedKeyFromACopy() throws {
        let saved = DedupeExecutor.estimateFromRows
        DedupeExecutor.estimateFromRows = 100
        defer {
            DedupeExecutor.estimateFromRows = saved
            DedupeExecutor.discoversSorted = true
        }
        var values: [String] = []
        for i in 1...5000 {
            let k = (i * 7919) % 1800
            let code = i % 3 == 0 ? "\(k)" : i % 3 == 1 ? "\(k).0" : "'\(k)'"
            values.append("(\(code), 'l\((i * 13) % 97)', \(i % 11))")
        }
        let setup = "CREATE TABLE u (code, label TEXT, rank INT); INSERT INTO u VALUES \(values.joined(separator: ", "));"
        let job = "version: 1\ndedupe:\n  - entity: u\n    key: code\n    winner:\n      - rank: desc\n      - label: asc\n"
        var outcomes: [[String]] = []
        for sorted in [false, true] {
            DedupeExecutor.discoversSorted = sorted
            let direct = try outcome(setup, job, table: "u", copied: false, name: "hidden-\(sorted)")
            let copy = try outcome(setup, job, table: "u", copied: true, name: "hidden-\(sorted)")
            XCTAssertGreaterThan(copy.pieces, 0)
            XCTAssertGreaterThan(direct.deleted, 1000)
            XCTAssertEqual(copy.deleted, direct.deleted)
            assertSameRows(copy.rows, direct.rows, "hidden rowid, sorted: \(sorted)")
            outcomes.append(direct.rows)
        }
        assertSameRows(outcomes[1], outcomes[0], "hidden rowid, sorted against the window")
    }

    /// Between two reads of the copy another connection commits at once (it would wait out a
    /// read in a rollback journal): it moves a row of an already copied range out of its group
    /// and deletes a winner. The batches then find their groups changed since discovery and
    /// decide on the rows as they are: the moved row stays, its group loses only its other loser,
    /// and the losers of the deleted winner are skipped, as after a commit between a
    /// one-statement discovery and the batches.
    func testAnotherConnectionCommitsBetweenTheReads() throws {
        let path = try groups(1500, of: 3, name: "writer")
        DedupeExecutor.copiesDiscoveryAlways = true
        var wrote: Result<Void, Error>?
        let summary = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: k\n", db: path, batchSize: 100) { event in
            guard case let .phaseProgress(name, _, _) = event, name.hasPrefix("discovery of "), wrote == nil else { return }
            wrote = Result {
                let queue = try DatabaseQueue(path: path)
                defer { try? queue.close() }
                // No busy timeout: a shared lock still held would fail the commit.
                try queue.write { db in
                    try db.execute(sql: "UPDATE t SET k = 'moved' WHERE id = 5; DELETE FROM t WHERE id = 7")
                }
            }
        }
        XCTAssertNoThrow(try XCTUnwrap(wrote).get(), "the other connection committed between two reads")
        // Group k1 (4, 5, 6) lost 5; group k2 (7, 8, 9) lost its winner 7.
        XCTAssertEqual(try ScenarioKit.column(path, "SELECT id FROM t WHERE id BETWEEN 4 AND 9 ORDER BY id", as: Int.self), [4, 5, 8, 9])
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM t"), 1500 + 2)
        XCTAssertEqual(summary.counts.deleted, 2 * 1500 - 3)
    }

    /// `max_delete_percent` is a share of the table's rows, with the copy too (which holds only
    /// the rows that can be in a group): 1,000 losers of 3,000 rows, 1,000 of them with a NULL
    /// key, are 33.3%, not the 50% of the copied rows. And `plan` reading from the copy changes
    /// no byte of the file.
    func testDeleteShareAndPlanFromACopy() throws {
        var values: [String] = []
        for id in 1...3000 { values.append("(\(id), \(id <= 1000 ? "NULL" : "'k\((id * 7919) % 1000)'"))") }
        let path = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("share.sqlite").path,
            sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT); INSERT INTO t VALUES \(values.joined(separator: ", "));")
        DedupeExecutor.copiesDiscoveryAlways = true
        func job(_ percent: Double) -> String { "version: 1\ndedupe:\n  - entity: t\n    key: k\n    max_delete_percent: \(percent)\n" }
        let bytes = try TestSupport.fileBytes(path)
        var pieces = 0
        let plan = try SQLiteBackend.plan(try ScenarioKit.job(job(40)), options: RunOptions(database: path, sampleLimit: nil)) { event in
            if case let .phaseProgress(name, _, _) = event, name.hasPrefix("discovery of ") { pieces += 1 }
        }
        XCTAssertGreaterThan(pieces, 0, "plan read a copy")
        XCTAssertEqual(plan.counts.deleted, 1000)
        XCTAssertEqual(try TestSupport.fileBytes(path), bytes, "plan wrote to the database")
        let before = try ScenarioKit.userState(path)
        ScenarioKit.expectExit(65) { try ScenarioKit.run(job(33), db: path) }
        XCTAssertEqual(try ScenarioKit.userState(path), before, "a refused run changed the table")
        XCTAssertEqual(try ScenarioKit.run(job(34), db: path).counts.deleted, 1000)
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM t"), 2000)
    }

    /// `check`'s grouped count from the copy: the same groups, surplus rows and table rows as the
    /// one statement over the table, under the key's collation (NOCASE), a normalised key, a
    /// hashed key and NULL keys; the copy is dropped afterwards, and `check` itself (a read-only
    /// connection) reports the same counts either way and writes nothing.
    func testCheckCountsFromACopyAsFromTheTable() throws {
        let path = try TestSupport.makeDatabase(at: dir.appendingPathComponent("check.sqlite").path, sql: Self.peopleSetup)
        let bytes = try TestSupport.fileBytes(path)
        let keys = [
            "key: email", "key: email\n    normalize: [lowercase]", "key: [email, name]\n    hash: true",
            "key: [email, score]\n    nulls: equal",
        ]
        for key in keys {
            let job = try ScenarioKit.job("version: 1\ndedupe:\n  - entity: people\n    \(key)\n")
            let queue = try DatabaseOpener.open(path: path, mode: .readOnly)
            try queue.inDatabase { db in
                let rule = try XCTUnwrap(JobRunner.compile(job, SQLiteSession(db)).first)
                DedupeExecutor.copiesDiscoveryAlways = true
                defer { DedupeExecutor.copiesDiscoveryAlways = false }
                let executor = DedupeExecutor(
                    db: db, rule: rule, writer: DryRunWriter(), settings: BatchSettings(size: 100, maxTransactionMilliseconds: 1000))
                let copied = try XCTUnwrap(executor.countDuplicates(), "\(key): counted from a copy")
                let table = try XCTUnwrap(Row.fetchOne(db, sql: JobRunner.duplicateCountSQL(rule)))
                XCTAssertGreaterThan(copied.groups, 10, key)
                XCTAssertEqual(copied.groups, table[0], key)
                XCTAssertEqual(copied.losers, table[1], key)
                XCTAssertEqual(copied.tableRows, 6000, key)
                XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM temp.sqlite_master WHERE name = 'winnow_rows'"), 0, key)
            }
            try queue.close()
            DedupeExecutor.copiesDiscoveryAlways = true
            let fromCopy = try SQLiteBackend.check(job, options: RunOptions(database: path))
            DedupeExecutor.copiesDiscoveryAlways = false
            let fromTable = try SQLiteBackend.check(job, options: RunOptions(database: path))
            XCTAssertEqual(fromCopy.status, .duplicates, key)
            XCTAssertEqual(fromCopy.rules.map(\.counts), fromTable.rules.map(\.counts), key)
            XCTAssertEqual(fromCopy.rules.map(\.discovery), fromTable.rules.map(\.discovery), key)
        }
        XCTAssertEqual(try TestSupport.fileBytes(path), bytes, "check wrote to the database")
        // A clean table: check's summary is the count itself (no plan after it).
        let clean = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("clean.sqlite").path,
            sql: """
                CREATE TABLE u (id INTEGER PRIMARY KEY, k TEXT COLLATE NOCASE);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) INSERT INTO u SELECT i, 'k' || i FROM n;
                """)
        DedupeExecutor.copiesDiscoveryAlways = true
        let summary = try SQLiteBackend.check(
            try ScenarioKit.job("version: 1\ndedupe:\n  - entity: u\n    key: k\n"), options: RunOptions(database: clean))
        XCTAssertEqual(summary.status, .clean)
        XCTAssertEqual(summary.rules.map(\.discovery), [Discovery(groups: 0, losers: 0, tableRows: 3000)])
    }

    /// In WAL (readers never hold a writer back) discovery reads the table itself whatever the
    /// estimate.
    func testNoCopyInWAL() throws {
        let path = try groups(1500, of: 2, name: "wal")
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
        try queue.close()
        DedupeExecutor.copiesDiscoveryAlways = true
        var pieces = 0
        let summary = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: k\n", db: path) { event in
            if case let .phaseProgress(name, _, _) = event, name.hasPrefix("discovery of ") { pieces += 1 }
        }
        XCTAssertEqual(try ScenarioKit.column(path, "PRAGMA journal_mode", as: String.self), ["wal"])
        XCTAssertEqual(pieces, 0)
        XCTAssertEqual(summary.counts.deleted, 1500)
    }

    /// In a rollback journal the first range's time decides: under a limit of 1 ms any read of
    /// 6,000 rows is estimated too long and discovery reads a copy in pieces; under an hour it
    /// reads the table in one statement. The same rows are left either way.
    func testTheEstimateDecidesBetweenACopyAndOneRead() throws {
        var outcomes: [(rows: [String], pieces: Int)] = []
        for limit in [1, 3_600_000] {
            let path = try TestSupport.makeDatabase(
                at: dir.appendingPathComponent("estimate-\(limit).sqlite").path, sql: Self.peopleSetup)
            var pieces = 0
            _ = try ScenarioKit.run(
                "version: 1\ndedupe:\n  - entity: people\n    key: note\n    winner:\n      - created: asc\nbatch:\n  max_transaction_ms: \(limit)\n",
                db: path
            ) { event in
                if case let .phaseProgress(name, _, _) = event, name.hasPrefix("discovery of ") { pieces += 1 }
            }
            outcomes.append((try ScenarioKit.column(path, "SELECT id FROM people ORDER BY id", as: Int.self).map { "\($0 ?? 0)" }, pieces))
        }
        XCTAssertGreaterThan(outcomes[0].pieces, 1, "a copy in pieces under 1 ms")
        XCTAssertEqual(outcomes[1].pieces, 0, "one read under an hour")
        assertSameRows(outcomes[0].rows, outcomes[1].rows, "copy or one read")
    }

    /// The factor the estimate takes: the sorted read's where it computes at most a lowercase
    /// per key, the window's for a hash key, other normalizers and the window itself.
    func testTheEstimateTakesTheReadsOwnFactor() throws {
        let path = try groups(10, of: 2, name: "factor")
        let connection = try DatabaseOpener.open(path: path, mode: .readOnly)
        defer { try? connection.close() }
        let cases: [(String, sorted: Bool, Double)] = [
            ("key: k", true, DedupeExecutor.sortedPerCopy),
            ("key: k\n    normalize: [lowercase]", true, DedupeExecutor.sortedPerCopy),
            ("key: k\n    normalize: [nfkc, lowercase]", true, DedupeExecutor.windowPerCopy),
            ("key: [k, v]\n    hash: true", true, DedupeExecutor.windowPerCopy),
            ("key: k", false, DedupeExecutor.windowPerCopy),
        ]
        try connection.inDatabase { db in
            for (rule, sorted, factor) in cases {
                let job = try ScenarioKit.job("version: 1\ndedupe:\n  - entity: t\n    \(rule)\n")
                let compiled = try XCTUnwrap(JobRunner.compile(job, SQLiteSession(db)).first)
                let executor = DedupeExecutor(db: db, rule: compiled, writer: DryRunWriter(), settings: job.batch)
                XCTAssertEqual(executor.discoveryPerCopy(sorted: sorted), factor, rule)
            }
        }
        XCTAssertLessThan(DedupeExecutor.sortedPerCopy, DedupeExecutor.windowPerCopy)
    }

    /// The copy numbers its own rows where a name for its rowid is left (`rowid`, `_rowid_` or
    /// `oid`, whichever the columns it copies do not take) and reads the rowid copied last by
    /// it; where they take all three, the table's rowid is the copy's. Either way discovery
    /// from a copy in pieces leaves the rows a read of the table does.
    func testTheCopyKeepsTheRowidWhateverItsColumnsAreNamed() throws {
        let cases: [(columns: [String], key: String, winner: String, ownRowid: Bool)] = [
            (["k", "w", "x"], "k", "w", true),
            (["rowid", "oid", "x"], "rowid", "oid", true),
            (["rowid", "_rowid_", "oid"], "rowid", "[_rowid_, oid]", false),
        ]
        for (index, testCase) in cases.enumerated() {
            var values: [String] = []
            for id in 1...4000 { values.append("(\(id), 'k\((id * 7919) % 1300)', \((id * 31) % 17), \(id % 5))") }
            let quoted = testCase.columns.map { "\"\($0)\"" }
            let setup = """
                CREATE TABLE r (id INTEGER PRIMARY KEY, \(quoted[0]) TEXT, \(quoted[1]) INTEGER, \(quoted[2]) INTEGER);
                INSERT INTO r VALUES \(values.joined(separator: ", "));
                """
            let winner = testCase.winner.hasPrefix("[") ? "most_complete" : "\n      - \(testCase.winner): desc"
            let job = "version: 1\ndedupe:\n  - entity: r\n    key: \(testCase.key)\n    winner: \(winner)\n"
            let direct = try outcome(setup, job, table: "r", copied: false, name: "names-\(index)")
            let copy = try outcome(setup, job, table: "r", copied: true, name: "names-\(index)")
            XCTAssertGreaterThan(copy.pieces, 0, "\(testCase.columns): the copy was made in pieces")
            XCTAssertGreaterThan(direct.deleted, 2000, "\(testCase.columns)")
            XCTAssertEqual(copy.deleted, direct.deleted, "\(testCase.columns)")
            assertSameRows(copy.rows, direct.rows, "\(testCase.columns)")
            let path = try TestSupport.makeDatabase(at: dir.appendingPathComponent("names-shape-\(index).sqlite").path, sql: setup)
            let connection = try DatabaseOpener.open(path: path, mode: .readOnly)
            defer { try? connection.close() }
            try connection.inDatabase { db in
                let compiled = try XCTUnwrap(JobRunner.compile(try ScenarioKit.job(job), SQLiteSession(db)).first)
                let executor = DedupeExecutor(db: db, rule: compiled, writer: DryRunWriter(), settings: BatchSettings(size: 100))
                let shape = try XCTUnwrap(executor.discoveryCopyShape())
                XCTAssertEqual(!shape.create.contains("PRIMARY KEY"), testCase.ownRowid, "\(testCase.columns): \(shape.create)")
            }
        }
    }

    /// The rows the estimate goes by: the span's rowids as densely filled as the first range's.
    func testEstimatedRowsFollowTheDensityOfTheFirstRange() {
        XCTAssertEqual(DedupeExecutor.estimatedRows(span: 1_600_000, sampled: 16_000, sampledWidth: 48_000), 533_333.33, accuracy: 0.01)
        XCTAssertEqual(DedupeExecutor.estimatedRows(span: 200_000, sampled: 2_000, sampledWidth: 2_000), 200_000)
        XCTAssertEqual(DedupeExecutor.estimatedRows(span: 200_000, sampled: 700, sampledWidth: nil), 700, "the whole table in the range")
    }

    func testAffinityOfDeclaredTypes() {
        let cases = [
            ("INTEGER", " INTEGER"), ("bigint", " INTEGER"), ("VARCHAR(20)", " TEXT"), ("CLOB", " TEXT"), ("", ""), ("BLOB", ""),
            ("double precision", " REAL"), ("FLOAT", " REAL"), ("DECIMAL(10,5)", " NUMERIC"), ("BOOLEAN", " NUMERIC"),
            ("CHARINT", " INTEGER"), ("POINT", " INTEGER"), ("STRING", " NUMERIC"),
        ]
        for (declared, expected) in cases { XCTAssertEqual(DedupeExecutor.affinityType(declared), expected, declared) }
    }
}
