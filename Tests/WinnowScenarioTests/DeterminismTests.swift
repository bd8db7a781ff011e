import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// Property-style: the same logical rows, inserted in different orders (so rowids and primary
/// keys differ), give the same surviving content under the same job, on every "peer".
final class DeterminismTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("Determinism")
    }

    override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    /// One logical row: every column but the primary key.
    typealias LogicalRow = [DatabaseValue]

    static let columns = ["email", "name", "created_at", "visits", "score", "note", "tag", "kh"]

    /// Logical rows with many duplicates, ties, NULLs and Unicode case variants.
    func generateRows(seed: UInt64) -> [LogicalRow] {
        var rng = SeededGenerator(seed: seed)
        func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
        let emails = [
            "ÉMILE@x.org", "émile@x.org", " Émile@X.org ", "emile@x.org", "zoë@x.org", "ZOË@X.ORG", "a@x", "A@X",
            " a@x", "b@x", "İstanbul@x", "istanbul@x", "ß@x", "SS@x",
        ]
        let names: [DatabaseValue] = [
            .null, "Émile".databaseValue, "émile".databaseValue, "Zoë".databaseValue, "".databaseValue,
            "a long name".databaseValue, "ab".databaseValue, "cd".databaseValue,
        ]
        let times: [DatabaseValue] = [.null, 1.databaseValue, 2.databaseValue, 2.databaseValue, 3.databaseValue]
        let visits: [DatabaseValue] = [.null, 0.databaseValue, 1.databaseValue, 5.databaseValue]
        let scores: [DatabaseValue] = [.null, (0.5).databaseValue, (0.25).databaseValue, (1.0).databaseValue]
        let notes: [DatabaseValue] = [.null, "x".databaseValue, "y".databaseValue, "".databaseValue, "x y".databaseValue]
        let tags: [DatabaseValue] = [.null, 1.databaseValue, "1".databaseValue, Data([1, 2]).databaseValue, "t".databaseValue]
        let count = 30 + Int(rng.next() % 30)
        var rows: [LogicalRow] = []
        for _ in 0..<count {
            let email: DatabaseValue = rng.next() % 12 == 0 ? .null : pick(emails).databaseValue
            rows.append([email, pick(names), pick(times), pick(visits), pick(scores), pick(notes), pick(tags)])
        }
        // Exact copies (same content, different primary keys) make ties only the key can break.
        for _ in 0..<(count / 5) { rows.append(pick(rows)) }
        return rows
    }

    /// A database holding `rows` in the given order, primary keys assigned by insertion order
    /// plus an offset, so that no two peers share their rowids.
    func makePeer(_ rows: [LogicalRow], order: [Int], name: String, idOffset: Int, children: Bool = true) throws -> String {
        let path = dir.appendingPathComponent(name).path
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, name TEXT, created_at INTEGER, visits INTEGER,
                                         score REAL, note TEXT, tag, kh TEXT);
                    CREATE TABLE visits_log (id INTEGER PRIMARY KEY, person_id INTEGER, what TEXT);
                    """)
            if children {
                try db.execute(
                    sql: """
                        DROP TABLE visits_log;
                        CREATE TABLE visits_log (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES people(id) ON DELETE CASCADE, what TEXT);
                        """)
            }
            for (position, index) in order.enumerated() {
                let id = idOffset + position * 7 + 1
                try db.execute(
                    sql: "INSERT INTO people VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                    arguments: StatementArguments([id.databaseValue] + rows[index]))
                // A child row per person, tagged with the logical row, to follow re-pointing.
                if children {
                    try db.execute(sql: "INSERT INTO visits_log (person_id, what) VALUES (?, ?)", arguments: [id, "row \(index)"])
                }
            }
        }
        try queue.close()
        return path
    }

    /// Surviving content without primary keys, sorted; children as (parent content, what).
    func survivors(_ path: String) throws -> [String] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            let people = try Row.fetchAll(
                db, sql: "SELECT \(Self.columns.joined(separator: ", ")), typeof(score), typeof(visits) FROM people"
            )
            .map { row in row.databaseValues.map { "\($0)" }.joined(separator: " | ") }
            let children = try Row.fetchAll(
                db,
                sql: """
                    SELECT p.email, p.name, p.created_at, p.visits, p.score, p.note, p.tag, v.what
                    FROM visits_log v LEFT JOIN people p ON p.id = v.person_id
                    """
            ).map { row in "child: " + row.databaseValues.map { "\($0)" }.joined(separator: " | ") }
            return (people + children).sorted()
        }
    }

    func assertSameSurvivors(
        job: String, seeds: ClosedRange<UInt64>, peers: Int = 4, children: Bool = true,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        var totalGroups = 0
        for seed in seeds {
            let rows = generateRows(seed: seed)
            var rng = SeededGenerator(seed: seed &* 31 &+ 7)
            var results: [[String]] = []
            var counts: [Counts] = []
            for peer in 0..<peers {
                var order = Array(rows.indices)
                if peer == 1 { order.reverse() } else if peer > 1 { order.shuffle(using: &rng) }
                let path = try makePeer(
                    rows, order: order, name: "seed\(seed)-peer\(peer).sqlite", idOffset: peer * 1000, children: children)
                // Peers 2 and 3 take their groups in batches of 1 and 3: how groups are filed
                // into batches, and settled inside each, must not change what survives.
                let batchSize: Int? = peer == 2 ? 1 : peer == 3 ? 3 : nil
                let summary = try SQLiteBackend.run(try ScenarioKit.job(job), options: RunOptions(database: path, batchSize: batchSize))
                var c = summary.counts
                c.batches = 0
                counts.append(c)
                results.append(try survivors(path))
            }
            totalGroups += counts[0].groups
            for peer in 1..<peers {
                XCTAssertEqual(counts[peer], counts[0], "seed \(seed): peer \(peer) did different work", file: file, line: line)
                if results[peer] != results[0] {
                    let onlyHere = Set(results[peer]).subtracting(results[0]).sorted()
                    let onlyThere = Set(results[0]).subtracting(results[peer]).sorted()
                    XCTFail(
                        "seed \(seed): peer \(peer) kept different content.\nonly in peer \(peer): \(onlyHere)\nonly in peer 0: \(onlyThere)",
                        file: file, line: line)
                }
            }
        }
        XCTAssertGreaterThan(totalGroups, seeds.count, "the generator must produce duplicates", file: file, line: line)
    }

    func testOrderedWinnerGivesSameSurvivorsOnEveryPeer() throws {
        try assertSameSurvivors(
            job: """
                version: 1
                dedupe:
                  - entity: people
                    key: email
                    normalize: [trim, lowercase]
                    winner:
                      - created_at: asc
                    merge:
                      name: longest
                      visits: sum
                      score: max
                      note: concat
                      tag: fill_null
                """, seeds: 1...20)
    }

    func testWinnerlessRuleGivesSameSurvivorsOnEveryPeer() throws {
        try assertSameSurvivors(
            job: """
                version: 1
                dedupe:
                  - entity: people
                    key: email
                    normalize: [trim, lowercase]
                    merge:
                      visits: sum
                      note: concat
                """, seeds: 101...120)
    }

    func testShorthandsAndCompositeHashedKeyGiveSameSurvivorsOnEveryPeer() throws {
        try assertSameSurvivors(
            job: """
                version: 1
                dedupe:
                  - entity: people
                    key: [email, name]
                    normalize: [trim, lowercase]
                    hash: true
                    hash_column: kh
                    nulls: equal
                    winner: {latest: created_at}
                    merge:
                      score: sum
                      tag: min
                """, seeds: 201...210, peers: 3)
        try assertSameSurvivors(
            job: """
                version: 1
                dedupe:
                  - entity: people
                    key: email
                    normalize: [lowercase]
                    winner: most_complete
                """, seeds: 301...310, peers: 3)
    }

    /// A rule that only deletes takes its losers by position, not by group: batches of 1 and 3
    /// split groups across batches, and winners tied on the winner terms (equal times, NULLs,
    /// exact copies) are settled before the batches. The survivors stay the same on every peer.
    func testRulesThatOnlyDeleteGiveSameSurvivorsWhateverTheBatches() throws {
        try assertSameSurvivors(
            job: """
                version: 1
                dedupe:
                  - entity: people
                    key: email
                    normalize: [trim, lowercase]
                    winner:
                      - created_at: asc
                """, seeds: 401...420, children: false)
        try assertSameSurvivors(
            job: """
                version: 1
                dedupe:
                  - entity: people
                    key: email
                    normalize: [lowercase]
                    archive: false
                """, seeds: 421...430, children: false)
        try assertSameSurvivors(
            job: """
                version: 1
                dedupe:
                  - entity: people
                    key: [email, name]
                    nulls: equal
                    winner: most_complete
                """, seeds: 431...440, children: false)
    }

    /// A second run on a deduplicated database finds nothing and changes nothing.
    func testSecondRunIsANoOp() throws {
        let rows = generateRows(seed: 42)
        let path = try makePeer(rows, order: Array(rows.indices), name: "noop.sqlite", idOffset: 0)
        let job = try ScenarioKit.job(
            """
            version: 1
            dedupe:
              - entity: people
                key: email
                normalize: [trim, lowercase]
                merge:
                  visits: sum
                  note: concat
            """)
        let first = try SQLiteBackend.run(job, options: RunOptions(database: path))
        XCTAssertGreaterThan(first.counts.groups, 0)
        let dump = try TestSupport.contentDump(path)
        let second = try SQLiteBackend.run(job, options: RunOptions(database: path))
        XCTAssertEqual(second.counts.groups, 0)
        XCTAssertFalse(second.counts.changedAnything)
        XCTAssertEqual(try TestSupport.contentDump(path), dump)
    }
}
