import Foundation
import GRDB
import GRDBSQLite
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestFiles
import WinnowTestSupport

/// Discovery's sorted runs (``SortedRuns``): runs sorted by SQLite, merged outside it in the
/// very order SQLite's `ORDER BY` gives the same rows, and each run no larger than the sorter
/// keeps in memory.
final class SortedRunsTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("SortedRuns")
    }

    override func tearDownWithError() throws {
        DedupeExecutor.copiesDiscoveryAlways = false
        DedupeExecutor.sortedRunKiB = 8192
        DedupeExecutor.mergingSortedRuns = nil
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    /// Runs `job` on a fresh database made by `setup`, discovery copied in short reads or not;
    /// returns the database's path and the ids of table `t` left.
    func keptIDs(_ setup: String, _ job: String, name: String, copied: Bool, batchSize: Int) throws -> (path: String, ids: [Int]) {
        let path = try TestSupport.makeDatabase(at: dir.appendingPathComponent("\(name).sqlite").path, sql: setup)
        DedupeExecutor.copiesDiscoveryAlways = copied
        defer { DedupeExecutor.copiesDiscoveryAlways = false }
        _ = try ScenarioKit.run(job, db: path, batchSize: batchSize)
        return (path, try ScenarioKit.column(path, "SELECT id FROM t ORDER BY id", as: Int.self).compactMap { $0 })
    }

    /// Values of every storage class, with the cases SQLite's comparison decides by rules of its
    /// own: integers and reals of the same value (one value), integers beyond a double's
    /// precision against the nearest reals, reals beyond any integer, text and blobs of the same
    /// bytes (text first), prefixes, the empty text and blob, and non-ASCII text (bytes, not
    /// letters).
    static let values: [String] = [
        "NULL", "-3", "0", "1", "2", "1.0", "2.0", "-2.5", "0.5", "1.5",
        "9007199254740993", "9007199254740992.0", "9223372036854775807", "9.3e18", "-9.3e18", "-9223372036854775808",
        "''", "'a'", "'ab'", "'b'", "'A'", "'é'", "'a '", "x''", "x'00'", "x'61'", "x'6162'", "x'ff'",
    ]

    /// A value by the order SQLite gives it, so that rows tied in that order read the same:
    /// numbers by their value (an integral real as its integer), text and blobs by class and bytes.
    static func canonical(_ value: SQLValue) -> String {
        switch value {
        case .null: return "null"
        case let .integer(integer): return "n\(integer)"
        case let .real(real):
            if real.rounded() == real, let integer = Int64(exactly: real) { return "n\(integer)" }
            return "n\(real)"
        case let .text(text): return "t\(Array(text.utf8))"
        case let .blob(bytes): return "b\(bytes)"
        }
    }

    /// Random rows split into random runs, each sorted by SQLite, come out of the merge in the
    /// order SQLite sorts them all in, for every direction and NULL placement of two winner terms
    /// and one or two group values.
    func testRunsMergeInSQLitesOrder() throws {
        var generator = SplitMix64(seed: 26)
        let queue = try DatabaseQueue()
        for round in 0..<60 {
            let keys = round % 2 + 1
            let terms = (0..<2).map { _ in (descending: Bool.random(using: &generator), nullsLast: Bool.random(using: &generator)) }
            let order = SortedRunOrder(keys: keys, terms: terms)
            let columns = keys + terms.count
            let names = (0..<columns).map { "v\($0)" }
            let orderBy =
                (0..<keys).map { "v\($0)" }
                + terms.enumerated().map { "v\(keys + $0) \($1.descending ? "DESC" : "ASC")\($1.nullsLast ? " NULLS LAST" : "")" }
            let rows = Int.random(in: 1...300, using: &generator)
            let (expected, merged) = try queue.inDatabase { db -> ([String], [String]) in
                try db.execute(sql: "DROP TABLE IF EXISTS temp.src; DROP TABLE IF EXISTS \(SortedRuns.table)")
                try db.execute(sql: "CREATE TEMP TABLE src (rid INTEGER PRIMARY KEY, \(names.joined(separator: ", ")))")
                try db.execute(sql: "CREATE TABLE \(SortedRuns.table) (rid, \(names.joined(separator: ", ")))")
                // Few distinct values, so that rows tie on the first terms and the later ones decide.
                for rid in 1...rows {
                    let picked = (0..<columns).map { _ in
                        Self.values[Int.random(in: 0..<(round % 3 == 0 ? 6 : Self.values.count), using: &generator)]
                    }
                    try db.execute(sql: "INSERT INTO temp.src VALUES (\(rid), \(picked.joined(separator: ", ")))")
                }
                var runs = SortedRuns(order: order)
                var after = 0
                while after < rows {
                    let upTo = min(rows, after + Int.random(in: 1...40, using: &generator))
                    try db.execute(
                        sql: """
                            INSERT INTO \(SortedRuns.table) SELECT rid, \(names.joined(separator: ", ")) FROM temp.src
                            WHERE rid > ? AND rid <= ? ORDER BY \(orderBy.joined(separator: ", "))
                            """, arguments: [after, upTo])
                    let last = db.lastInsertedRowID
                    runs.spans.append((last - Int64(db.changesCount) + 1, last))
                    after = upTo
                }
                func line(_ row: SQLiteStatement) -> String {
                    (1...columns).map { Self.canonical(RawStatement.value(row, CInt($0))) }.joined(separator: " ")
                }
                var expected: [String] = []
                try RawStatement(
                    db.makeStatement(
                        sql: "SELECT rid, \(names.joined(separator: ", ")) FROM temp.src ORDER BY \(orderBy.joined(separator: ", "))")
                ).forEachRow { expected.append(line($0)) }
                var merged: [String] = []
                try runs.forEachRow(db: db) { merged.append(line($0)) }
                return (expected, merged)
            }
            XCTAssertEqual(merged.count, rows)
            if merged != expected {
                let index = zip(merged, expected).enumerated().first { $1.0 != $1.1 }?.offset ?? 0
                XCTFail("round \(round) (ORDER BY \(orderBy.joined(separator: ", "))): row \(index): \(merged[index]) / \(expected[index])")
                return
            }
        }
    }

    /// A run's rows follow the bytes a row takes, also for a rule whose runs fill the pages an
    /// earlier rule's temporary tables left free: two tables of the same wide rows, one job, each
    /// rule's discovery in as many runs as the other's (with the pages counted as the file's
    /// size, the later discoveries took 4 runs where the first took 12).
    func testEachRuleSizesItsRunsByItsRows() throws {
        let padding = String(repeating: "x", count: 120)
        var values: [String] = []
        for id in 1...12_000 { values.append("(\(id), 'k\((id * 7919) % 5000)\(padding)', \(id % 7))") }
        let rows = values.joined(separator: ", ")
        let path = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("two.sqlite").path,
            sql: """
                CREATE TABLE a (id INTEGER PRIMARY KEY, k TEXT, v INTEGER); INSERT INTO a VALUES \(rows);
                CREATE TABLE b (id INTEGER PRIMARY KEY, k TEXT, v INTEGER); INSERT INTO b VALUES \(rows);
                """)
        var merged: [Int] = []
        DedupeExecutor.mergingSortedRuns = { merged.append($0) }
        DedupeExecutor.sortedRunKiB = 256
        DedupeExecutor.copiesDiscoveryAlways = true
        let job = """
            version: 1
            dedupe:
              - entity: a
                key: k
                winner:
                  - v: asc
              - entity: b
                key: k
                winner:
                  - v: asc
            """
        let summary = try ScenarioKit.run(job, db: path, batchSize: 500)
        XCTAssertEqual(summary.counts.deleted, 2 * 7000)
        // Every discovery of the job (each rule is discovered more than once) merged runs.
        XCTAssertGreaterThanOrEqual(merged.count, 2, "\(merged)")
        // About 170 bytes a row in the sorter: 256 KiB holds about 1,000 of them.
        XCTAssertGreaterThanOrEqual(merged.first ?? 0, 10, "runs sized by the rows' bytes")
        XCTAssertEqual(Set(merged).count, 1, "every discovery's runs as long as the first's: \(merged)")
    }

    /// In a UTF-16 database SQLite sorts text by its UTF-16 bytes, which the merge does not
    /// compare: discovery copies the columns there, and finds the groups the one read finds
    /// (keys around U+FFFF, which sort differently in UTF-8 and UTF-16).
    func testAUTF16DatabaseKeepsTheColumnCopy() throws {
        let spellings = ["a\u{FFFD}", "a\u{10000}", "a\u{E000}", "ab", "a\u{FF21}"]
        var values: [String] = []
        for id in 1...3000 { values.append("(\(id), '\(spellings[(id * 7) % 5])\((id * 7919) % 301)', \(id % 13))") }
        let setup =
            "PRAGMA encoding = 'UTF-16le'; CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v INTEGER); INSERT INTO t VALUES \(values.joined(separator: ", "));"
        let job = "version: 1\ndedupe:\n  - entity: t\n    key: k\n    winner:\n      - v: asc\n"
        var merged: [Int] = []
        DedupeExecutor.mergingSortedRuns = { merged.append($0) }
        let (path, copy) = try keptIDs(setup, job, name: "utf16-copy", copied: true, batchSize: 100)
        XCTAssertEqual(try ScenarioKit.column(path, "PRAGMA encoding", as: String.self), ["UTF-16le"])
        XCTAssertEqual(merged, [], "no sorted runs in a UTF-16 database")
        let direct = try keptIDs(setup, job, name: "utf16-direct", copied: false, batchSize: 100).ids
        XCTAssertEqual(copy, direct)
        // One row left per key: 5 spellings by 301 numbers, 1,505 keys.
        XCTAssertEqual(direct.count, 5 * 301)
    }

    /// `most_complete` through the runs: the merge takes the row with the most non-NULL columns
    /// first, as the sort of each run does (the count descending). Each group's rows lie in
    /// different runs (keys drawn at random, runs of 1,000 rows), and each group keeps its most
    /// complete row, as the one read keeps it.
    func testTheMostCompleteRowWinsAcrossRuns() throws {
        var generator = SplitMix64(seed: 26)
        var values: [String] = []
        for id in 1...12_000 {
            let key = generator.next() % 3000
            // (Each of a, b, c NULL or not at random: 0 to 3 non-NULL columns.)
            let columns = (0..<3).map { generator.next() % 2 == 0 ? "NULL" : "'x\($0)'" }
            values.append("(\(id), '\(generator.next() % 2 == 0 ? "K" : "k")\(key)', \(columns.joined(separator: ", ")))")
        }
        let setup =
            "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, a TEXT, b TEXT, c TEXT); INSERT INTO t VALUES \(values.joined(separator: ", "));"
        let job = "version: 1\ndedupe:\n  - entity: t\n    key: k\n    normalize: [lowercase]\n    winner: most_complete\n"
        var merged: [Int] = []
        DedupeExecutor.mergingSortedRuns = { merged.append($0) }
        DedupeExecutor.sortedRunKiB = 16
        let (path, copy) = try keptIDs(setup, job, name: "complete-runs", copied: true, batchSize: 200)
        XCTAssertEqual(merged, [12], "12,000 rows in runs of 1,000")
        let direct = try keptIDs(setup, job, name: "complete-direct", copied: false, batchSize: 200).ids
        XCTAssertEqual(copy, direct)
        // Every row left has as many non-NULL columns as the most complete row of its key had.
        let fresh = try TestSupport.makeDatabase(at: dir.appendingPathComponent("complete-fresh.sqlite").path, sql: setup)
        let complete = "(a IS NOT NULL) + (b IS NOT NULL) + (c IS NOT NULL)"
        let most = try ScenarioKit.column(fresh, "SELECT max(\(complete)) FROM t GROUP BY lower(k) ORDER BY lower(k)", as: Int.self)
        let kept = try ScenarioKit.column(path, "SELECT \(complete) FROM t ORDER BY lower(k)", as: Int.self)
        XCTAssertGreaterThan(most.count, 2900, "about 3,000 keys, most with several rows")
        XCTAssertEqual(kept, most)
    }

    /// One run, and no run at all, merge too.
    func testOneRunAndNoRun() throws {
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            try db.execute(sql: "CREATE TABLE \(SortedRuns.table) (rid, v0); INSERT INTO \(SortedRuns.table) VALUES (1, 'a'), (2, 'b')")
            var seen: [Int64] = []
            var runs = SortedRuns(order: SortedRunOrder(keys: 1, terms: []))
            try runs.forEachRow(db: db) { seen.append(sqlite3_column_int64($0, 0)) }
            XCTAssertEqual(seen, [])
            runs.spans = [(1, 2)]
            try runs.forEachRow(db: db) { seen.append(sqlite3_column_int64($0, 0)) }
            XCTAssertEqual(seen, [1, 2])
        }
    }

    /// A run holds no more rows than its sort keeps in memory: with a sorter of 16 KiB each run
    /// holds the least rows a range may (1,000), whatever the time limit allows, and the
    /// outcome is the one-statement read's.
    func testRunsAreSizedToSortInMemory() throws {
        var values: [String] = []
        for id in 1...20_000 { values.append("(\(id), 'k\((id * 7919) % 9000)', \((id * 31) % 17))") }
        let setup = "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v INTEGER); INSERT INTO t VALUES \(values.joined(separator: ", "));"
        let job = "version: 1\ndedupe:\n  - entity: t\n    key: k\n    winner:\n      - v: desc\n"
        func run(_ name: String, copied: Bool) throws -> [Int] {
            try keptIDs(setup, job, name: name, copied: copied, batchSize: 500).ids
        }
        var merged: [Int] = []
        DedupeExecutor.mergingSortedRuns = { merged.append($0) }
        DedupeExecutor.sortedRunKiB = 16
        let small = try run("small", copied: true)
        XCTAssertEqual(merged, [20], "20,000 rows in runs of 1,000")
        DedupeExecutor.sortedRunKiB = 8192
        merged = []
        let large = try run("large", copied: true)
        XCTAssertEqual(merged.count, 1)
        XCTAssertLessThan(merged.first ?? 20, 20, "runs as long as the limit allows")
        let direct = try run("direct", copied: false)
        XCTAssertEqual(small, direct)
        XCTAssertEqual(large, direct)
        XCTAssertEqual(direct.count, 9000)
    }

    /// Each full run ends at its 1,000th row of the table, whatever the gaps between rowids and
    /// the rows the read leaves out (no key), and the last run takes what is left: 10,010 rows
    /// make 11 runs (runs of 1,001 would make 10), and the outcome is the one-statement read's.
    func testRunsEndAtTheirLastRowWhateverTheGapsBetweenRowids() throws {
        var values: [String] = []
        var id = 0
        for row in 0..<10_010 {
            id += 1 + (row * 7) % 5
            values.append("(\(id), \(row % 7 == 3 ? "NULL" : "'k\((row * 7919) % 4000)'"), \((row * 31) % 17))")
        }
        let setup = "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v INTEGER); INSERT INTO t VALUES \(values.joined(separator: ", "));"
        let job = "version: 1\ndedupe:\n  - entity: t\n    key: k\n    winner:\n      - v: desc\n"
        var merged: [Int] = []
        DedupeExecutor.mergingSortedRuns = { merged.append($0) }
        DedupeExecutor.sortedRunKiB = 16
        let runs = try keptIDs(setup, job, name: "gaps", copied: true, batchSize: 500).ids
        XCTAssertEqual(merged, [11])
        DedupeExecutor.sortedRunKiB = 8192
        let direct = try keptIDs(setup, job, name: "gaps-direct", copied: false, batchSize: 500).ids
        XCTAssertEqual(runs, direct)
        XCTAssertEqual(direct.count, 4000 + (0..<10_010).filter { $0 % 7 == 3 }.count, "a row per key, and every row without one")
    }
}
