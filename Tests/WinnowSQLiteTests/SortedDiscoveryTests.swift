import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// Discovery numbered over one sorted read (``DedupeExecutor/discoverSorted(_:duplicateKeys:pinsTaken:from:)``)
/// against the window it stands in for (``DedupeExecutor/discoverySQL(duplicateKeys:pinsTaken:from:)``):
/// the same queue where no row ties another, the same rows left where some do, the window kept
/// where only SQLite's comparison under a collation tells the groups apart, and the losers
/// written out in runs when more are found than are held in memory.
final class SortedDiscoveryTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("SortedDiscovery")
    }

    override func tearDownWithError() throws {
        DedupeExecutor.discoversSorted = true
        DedupeExecutor.sortedLosersInMemory = 1 << 19
        DedupeExecutor.atFiling = nil
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    /// 4,000 rows in scattered groups. `k` has no type and holds 1, 1.0 (one key), '1', x'31'
    /// (two more), text differing only in case or a trailing space (distinct under BINARY),
    /// and NULLs; `note` follows the key but for its NULLs; `e` is NOCASE; `created` is unique; `score` ties often and mixes reals,
    /// integers and NULLs; `name` is NOCASE with values equal under it but not in bytes.
    static let setup: String = {
        var values: [String] = []
        let spellings = ["'ab'", "'AB'", "'ab '", "'Ab'"]
        for id in 1...4000 {
            let g = (id * 7919) % 1300
            let k: String
            switch id % 9 {
            case 0: k = "\(g)"
            case 1: k = "\(g).0"
            case 2: k = "'\(g)'"
            case 3: k = "CAST('\(g)' AS BLOB)"
            case 4: k = id % 4 == 0 ? "NULL" : "'x\(g)'"
            case 5: k = "'X\(g)'"
            case 6: k = "'x\(g) '"
            default: k = "\(g)"
            }
            let e = "'\(id % 2 == 0 ? "Mail" : "MAIL")\(g % 700)'"
            let score = id % 5 == 0 ? "NULL" : id % 3 == 0 ? "\(id % 4).0" : "\(id % 4)"
            let note = id % 6 == 0 ? "NULL" : "'n\(g % 3)'"
            values.append("(\(id), \(k), \(e), \((id * 104_729) % 1_000_003), \(score), \(spellings[(id * 31) % 4]), \(note))")
        }
        return """
            CREATE TABLE t (id INTEGER PRIMARY KEY, k, e TEXT COLLATE NOCASE, created INTEGER, score, name TEXT COLLATE NOCASE,
                            note TEXT, visits INTEGER DEFAULT 1);
            INSERT INTO t (id, k, e, created, score, name, note) VALUES \(values.joined(separator: ", "));
            """
    }()

    func database(_ name: String, sql: String = setup) throws -> String {
        try TestSupport.makeDatabase(at: dir.appendingPathComponent("\(name)-\(UUID().uuidString).sqlite").path, sql: sql)
    }

    /// Discovers `rule` (`plan`'s writer) on a fresh database, sorted or by the window; returns
    /// the queue in its order, whether the sorted read was possible, and the discovery.
    func queue(
        _ rule: String, sorted: Bool, sql: String = setup, path given: String? = nil
    ) throws -> (
        rows: [[Int64]], sortable: Bool, found: Discovery, temporaryTables: Int
    ) {
        let path = try given ?? database("queue", sql: sql)
        let job = try ScenarioKit.job("version: 1\ndedupe:\n  - entity: t\n    \(rule)\n")
        DedupeExecutor.discoversSorted = sorted
        defer { DedupeExecutor.discoversSorted = true }
        let connection = try DatabaseOpener.open(path: path, mode: .readOnly)
        defer { try? connection.close() }
        return try connection.inDatabase { db in
            let compiled = try XCTUnwrap(JobRunner.compile(job, SQLiteSession(db)).first)
            let executor = DedupeExecutor(db: db, rule: compiled, writer: DryRunWriter(), settings: job.batch)
            let found = try executor.discover()
            let rows = try Row.fetchAll(db, sql: "SELECT first, winner, rn, rid, tied FROM temp.winnow_queue ORDER BY first, winner, rn")
            // What discovery counted (as it filed, after a sorted read) is what the queue holds.
            let counted = try XCTUnwrap(
                Row.fetchOne(
                    db,
                    sql: """
                        SELECT count(*), count(*) FILTER (WHERE rn = 2), count(*) FILTER (WHERE tied),
                               count(*) FILTER (WHERE rn = 2 AND tied) FROM temp.winnow_queue
                        """))
            let recorded = try XCTUnwrap(Row.fetchOne(db, sql: "SELECT tied_rows, tied_groups FROM temp.winnow_found"))
            XCTAssertEqual([found.losers, found.groups], [counted[0], counted[1]] as [Int], rule)
            XCTAssertEqual([recorded[0], recorded[1]] as [Int], [counted[2], counted[3]] as [Int], rule)
            let temporary = try Int.fetchOne(db, sql: "SELECT count(*) FROM temp.sqlite_master WHERE type = 'table'") ?? 0
            return (rows.map { row in (0..<5).map { row[$0] as Int64 } }, try executor.sortedComparisons() != nil, found, temporary)
        }
    }

    /// Runs `rule` on a fresh database, sorted or by the window; returns every row left, quoted.
    func outcome(_ rule: String, sorted: Bool, sql: String = setup, batchSize: Int = 29) throws -> [String] {
        let path = try database("run", sql: sql)
        DedupeExecutor.discoversSorted = sorted
        defer { DedupeExecutor.discoversSorted = true }
        _ = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    \(rule)\n", db: path, batchSize: batchSize)
        let columns = try ScenarioKit.column(path, "SELECT name FROM pragma_table_info('t') ORDER BY cid", as: String.self)
        let rows = try ScenarioKit.column(
            path, "SELECT \(columns.map { "quote(\"\($0!)\")" }.joined(separator: " || ',' || ")) FROM t", as: String.self)
        return rows.map { $0 ?? "NULL" }.sorted()
    }

    /// The losers are filed after the read's transaction has ended: in a rollback journal,
    /// another connection commits while they are filed without waiting (its busy timeout is
    /// zero), and the queue is the one filed without it.
    func testAnotherConnectionCommitsWhileTheLosersAreFiled() throws {
        let rule = "key: k\n    winner:\n      - created: asc"
        let alone = try queue(rule, sorted: true)
        let path = try database("filing")
        var committed = 0
        DedupeExecutor.atFiling = {
            var configuration = Configuration()
            configuration.busyMode = .immediateError
            let other = try DatabaseQueue(path: path, configuration: configuration)
            try other.write { try $0.execute(sql: "UPDATE t SET visits = visits + 1 WHERE id = 1") }
            committed += 1
        }
        XCTAssertEqual(try ScenarioKit.column(path, "PRAGMA journal_mode", as: String.self), ["delete"], "a rollback journal")
        let filed = try queue(rule, sorted: true, path: path)
        XCTAssertEqual(filed.found, alone.found)
        XCTAssertEqual(filed.rows, alone.rows)
        XCTAssertEqual(committed, 1)
        XCTAssertEqual(try ScenarioKit.column(path, "SELECT visits FROM t WHERE id = 1", as: Int.self), [2])
    }

    /// Where every row of a group has its own place in the winner order, the sorted read files
    /// exactly the window's queue: the same losers under the same rowids, numbered alike, none
    /// tied; filed by position (a rule that only deletes) and by winner (one that merges).
    func testWithoutTiesTheQueueIsTheWindows() throws {
        let rules = [
            "key: k\n    winner:\n      - created: asc",
            "key: k\n    winner:\n      - created: desc\n    merge:\n      visits: sum",
            "key: [k, note]\n    nulls: equal\n    winner:\n      - created: asc",
            "key: [k, score]\n    winner:\n      - created: desc",
            "key: [k, note]\n    hash: true\n    winner:\n      - created: asc",
        ]
        for rule in rules {
            let sorted = try queue(rule, sorted: true)
            let window = try queue(rule, sorted: false)
            XCTAssertTrue(sorted.sortable, rule)
            XCTAssertGreaterThan(window.rows.count, 300, "\(rule): many losers")
            XCTAssertEqual(sorted.found, window.found, rule)
            XCTAssertEqual(sorted.rows, window.rows, rule)
            XCTAssertFalse(sorted.rows.contains { $0[4] != 0 }, "\(rule): no row ties another")
        }
    }

    /// 1 and 1.0 are one key, '1' and x'31' two others, and text that differs in case or in a
    /// trailing space is another key under BINARY, as SQLite's own grouping says.
    func testKeysGroupAsSQLiteComparesThem() throws {
        let sql = """
            CREATE TABLE t (id INTEGER PRIMARY KEY, k, created INTEGER);
            INSERT INTO t VALUES (1, 1, 10), (2, 1.0, 20), (3, '1', 30), (4, CAST('1' AS BLOB), 40), (5, '1', 50),
                                 (6, 'a', 60), (7, 'A', 70), (8, 'a ', 80), (9, 'a', 90), (10, NULL, 100), (11, NULL, 110),
                                 (12, 9007199254740993, 120), (13, 9007199254740992.0, 130), (14, CAST('1' AS BLOB), 140);
            """
        let found = try queue("key: k\n    winner:\n      - created: asc", sorted: true, sql: sql)
        XCTAssertTrue(found.sortable)
        // Losers (rowid, winner): 1.0 under 1, '1' under '1', the blob under the blob, 'a' under
        // 'a'; the NULLs are no key, and 2^53 + 1 is not 2^53 as a real.
        XCTAssertEqual(found.rows.map { [$0[3], $0[1]] }, [[2, 1], [5, 3], [9, 6], [14, 4]])
        XCTAssertEqual(try queue("key: k\n    winner:\n      - created: asc", sorted: false, sql: sql).rows, found.rows)
    }

    /// Where rows tie on the winner terms (a column with many equal values; a NOCASE column,
    /// whose ties the sorted read cannot tell by value and takes as ties), the queue may name
    /// tied rows in another order, and the batches settle them by content: the same rows are
    /// left either way.
    func testTiesLeaveTheSameRows() throws {
        let rules = [
            "key: k\n    winner:\n      - score: desc",
            "key: k\n    winner:\n      - name: asc\n      - score: asc",
            "key: k\n    winner: most_complete",
            "key: k",
            "key: [k, note]\n    nulls: equal\n    winner: {latest: score}\n    merge:\n      visits: sum",
            "key: {any: [k, [e, note]]}\n    winner:\n      - created: asc",
        ]
        for rule in rules {
            let sorted = try outcome(rule, sorted: true)
            let window = try outcome(rule, sorted: false)
            XCTAssertLessThan(sorted.count, 3900, "\(rule): rows were deleted")
            XCTAssertEqual(sorted, window, rule)
        }
        // The NOCASE winner column's ties are all flagged: never fewer than the window's.
        let nocase = "key: k\n    winner:\n      - name: asc"
        let sortedTies = try queue(nocase, sorted: true).rows.filter { $0[4] != 0 }.count
        let windowTies = try queue(nocase, sorted: false).rows.filter { $0[4] != 0 }.count
        XCTAssertGreaterThan(windowTies, 0)
        XCTAssertGreaterThanOrEqual(sortedTies, windowTies)
    }

    /// A key column under NOCASE groups 'Mail1' with 'MAIL1': only SQLite's comparison tells,
    /// so the window numbers such a rule, and the rows left are the window's.
    func testAKeyUnderAnotherCollationKeepsTheWindow() throws {
        let rule = "key: e\n    winner:\n      - created: asc"
        let found = try queue(rule, sorted: true)
        XCTAssertFalse(found.sortable)
        XCTAssertEqual(found.found.groups, 700, "every spelling of one address in one group")
        XCTAssertEqual(found.rows, try queue(rule, sorted: false).rows)
        // A normalised key is a function's result, compared under BINARY: sorted.
        XCTAssertTrue(try queue("key: e\n    normalize: [lowercase]\n    winner:\n      - created: asc", sorted: true).sortable)
    }

    /// Sets `SQLITE_TMPDIR` (where SQLite and the runs of losers put their temporary files);
    /// returns what puts the variable back as it was.
    func settingSQLiteTemporaryDirectory(_ path: String) -> () -> Void {
        let saved = ProcessInfo.processInfo.environment["SQLITE_TMPDIR"]
        setenv("SQLITE_TMPDIR", path, 1)
        return {
            if let saved { setenv("SQLITE_TMPDIR", saved, 1) } else { unsetenv("SQLITE_TMPDIR") }
        }
    }

    /// More losers than are held in memory are written out in sorted runs and merged as they
    /// are filed: the same queue (runs of 7 and of 50, the held rest shorter), no table more in
    /// the temporary database, and no file left where the runs were written.
    func testLosersWrittenOutInRunsFileTheSameQueue() throws {
        let spillDirectory = dir.appendingPathComponent("spill")
        try FileManager.default.createDirectory(at: spillDirectory, withIntermediateDirectories: true)
        let restore = settingSQLiteTemporaryDirectory(spillDirectory.path)
        defer { restore() }
        let rules = [
            "key: k\n    winner:\n      - created: asc", "key: k\n    winner:\n      - created: desc\n    merge:\n      visits: sum",
        ]
        for rule in rules {
            let held = try queue(rule, sorted: true)
            XCTAssertGreaterThan(held.rows.count, 300)
            for limit in [7, 50, held.rows.count] {
                DedupeExecutor.sortedLosersInMemory = limit
                let written = try queue(rule, sorted: true)
                XCTAssertEqual(written.rows, held.rows, "\(rule), runs of \(limit)")
                XCTAssertEqual(written.temporaryTables, held.temporaryTables, "\(rule), runs of \(limit)")
            }
            DedupeExecutor.sortedLosersInMemory = 1 << 19
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: spillDirectory.path), [])
        DedupeExecutor.sortedLosersInMemory = 7
        let rule = "key: k\n    winner:\n      - score: desc"
        XCTAssertEqual(try outcome(rule, sorted: true), try outcome(rule, sorted: false))
    }

    /// The runs go to the first of SQLite's own temporary folders that is a folder: one named
    /// by a variable but a file, or gone, is passed over (as SQLite passes it over), not a run
    /// that fails at discovery.
    func testLosersWrittenOutPassOverAVariableNamingNoFolder() throws {
        let folder = dir.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("not-a-folder")
        try Data("x".utf8).write(to: file)
        let gone = dir.appendingPathComponent("gone").path
        XCTAssertEqual(SpillFile.directory(environment: ["SQLITE_TMPDIR": file.path, "TMPDIR": folder.path]), folder.path)
        XCTAssertEqual(SpillFile.directory(environment: ["SQLITE_TMPDIR": gone, "TMPDIR": folder.path]), folder.path)
        XCTAssertEqual(SpillFile.directory(environment: ["SQLITE_TMPDIR": folder.path, "TMPDIR": file.path]), folder.path)
        XCTAssertEqual(SpillFile.directory(environment: ["SQLITE_TMPDIR": "", "TMPDIR": folder.path]), folder.path)

        let rule = "key: k\n    winner:\n      - created: asc"
        let held = try queue(rule, sorted: true)
        let restore = settingSQLiteTemporaryDirectory(file.path)
        defer { restore() }
        DedupeExecutor.sortedLosersInMemory = 7
        XCTAssertEqual(try queue(rule, sorted: true).rows, held.rows, "runs written out with SQLITE_TMPDIR naming a file")
    }

    /// A file system that fills up while the losers are written out ends the run with an I/O
    /// error (exit 74) that names what it was doing and why, before any batch: the database is
    /// left as it was, and the next run with room files the same queue. The runs go to a
    /// `tmpfs` of 8 KiB mounted for the test (skipped where mounting is not allowed); the
    /// losers of runs of 7 fill about 90 KiB.
    func testLosersWrittenOutToAFullFileSystemEndTheRunWithAnIOErrorAndChangeNothing() throws {
        let full = dir.appendingPathComponent("full")
        try FileManager.default.createDirectory(at: full, withIntermediateDirectories: true)
        func command(_ arguments: [String]) throws -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
        guard (try? command(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", full.path])) == 0 else {
            throw XCTSkip("mounting a tmpfs is not allowed here")
        }
        defer { _ = try? command(["umount", full.path]) }
        let restore = settingSQLiteTemporaryDirectory(full.path)
        defer { restore() }
        DedupeExecutor.sortedLosersInMemory = 7

        let path = try database("full")
        let before = try TestSupport.contentDump(path)
        let rule = "key: k\n    winner:\n      - created: asc"
        XCTAssertThrowsError(try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    \(rule)\n", db: path, batchSize: 29)) { error in
            guard case let .io(message) = error as? WinnowError else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("writing losers to a temporary file"), message)
            XCTAssertTrue(message.contains("No space left on device"), message)
            XCTAssertEqual(WinnowError.io(message).exitCode, 74)
        }
        XCTAssertEqual(try TestSupport.contentDump(path, includeRowIDs: true).filter { !$0.key.hasPrefix("winnow_") }, before)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: full.path), [], "a file was left behind")

        restore()
        XCTAssertEqual(try queue(rule, sorted: true, path: path).rows, try queue(rule, sorted: false, path: path).rows)
    }

    /// A `WITHOUT ROWID` table's rows are numbered first; the sorted read reads their numbers.
    func testWithoutRowidTable() throws {
        let sql = """
            CREATE TABLE t (code TEXT, part INTEGER, k TEXT, created INTEGER, PRIMARY KEY (code, part)) WITHOUT ROWID;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 900)
            INSERT INTO t SELECT 'c' || (i % 37), i, 'k' || ((i * 7919) % 300), (i * 104729) % 100003 FROM n;
            """
        let rule = "key: k\n    winner:\n      - created: asc"
        let sorted = try queue(rule, sorted: true, sql: sql)
        XCTAssertTrue(sorted.sortable)
        XCTAssertEqual(sorted.rows.count, 600)
        XCTAssertEqual(sorted.rows, try queue(rule, sorted: false, sql: sql).rows)
        XCTAssertEqual(try outcome(rule, sorted: true, sql: sql), try outcome(rule, sorted: false, sql: sql))
    }
}
