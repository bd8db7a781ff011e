import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// `incremental: true`: after the first (full) run, a run looks only at keys of rows inserted or
/// changed since the last run, and must find exactly what a full run finds.
final class IncrementalTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory("Incremental") }
    override func tearDownWithError() throws { if let dir { try? FileManager.default.removeItem(at: dir) } }

    func makeDatabase(_ name: String, seed: UInt64) throws -> String {
        var g = SplitMix64(state: seed)
        let path = dir.appendingPathComponent(name).path
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, last TEXT, created INTEGER, kh TEXT);
                    CREATE INDEX people_email ON people (email);
                    CREATE INDEX people_kh ON people (kh);
                    CREATE TABLE orders (id INTEGER PRIMARY KEY, person INTEGER REFERENCES people(id));
                    """)
            for i in 0..<600 {
                let email = g.below(10) == 0 ? nil : "p\(g.below(400))@x"
                try db.execute(
                    sql: "INSERT INTO people (email, last, created) VALUES (?, ?, ?)",
                    arguments: [email, ["a", "B", " b"][g.below(3)], g.below(50)])
                if i % 3 == 0 { try db.execute(sql: "INSERT INTO orders (person) VALUES (?)", arguments: [i + 1]) }
            }
        }
        try queue.close()
        return path
    }

    /// Inserts, key updates (into and out of groups), non-key updates and deletes, seeded.
    func change(_ path: String, seed: UInt64) throws {
        var g = SplitMix64(state: seed)
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            let ids = try Int64.fetchAll(db, sql: "SELECT id FROM people")
            for _ in 0..<60 {
                switch g.below(5) {
                case 0, 1:
                    try db.execute(
                        sql: "INSERT INTO people (email, last, created) VALUES (?, ?, ?)",
                        arguments: ["p\(g.below(400))@x", ["a", "B", " b"][g.below(3)], g.below(50)])
                case 2:
                    try db.execute(
                        sql: "UPDATE people SET email = ? WHERE id = ?", arguments: ["p\(g.below(400))@x", ids[g.below(ids.count)]])
                case 3:
                    try db.execute(sql: "UPDATE people SET created = ? WHERE id = ?", arguments: [g.below(50), ids[g.below(ids.count)]])
                default:
                    let id = ids[g.below(ids.count)]
                    try db.execute(sql: "DELETE FROM orders WHERE person = ?; DELETE FROM people WHERE id = ?", arguments: [id, id])
                }
            }
        }
        try queue.close()
    }

    func job(_ path: String, rule: String, incremental: Bool) throws -> Job {
        try JobLoader.decode(
            yaml: """
                version: 1
                database: \(path)
                dedupe:
                  - entity: people
                \(rule)
                    winner:
                      - created: asc
                    incremental: \(incremental)
                """, file: "job.yaml")
    }

    static let plainRule = "    key: email"
    static let hashedRule = """
            key: [email, last]
            normalize: [trim, lowercase]
            hash: true
            hash_column: kh
        """

    func assertIncrementalMatchesFull(rule: String, seeds: Range<UInt64>) throws {
        for seed in seeds {
            let a = try makeDatabase("a\(seed).sqlite", seed: seed)
            let b = dir.appendingPathComponent("b\(seed).sqlite").path
            let first = try SQLiteBackend.run(try job(a, rule: rule, incremental: true))
            XCTAssertEqual(first.rules[0].incremental, false, "the first run is a full one")
            for round in 0..<3 {
                try change(a, seed: seed &* 31 &+ UInt64(round))
                try? FileManager.default.removeItem(atPath: b)
                let copy = try DatabaseQueue(path: a)
                try copy.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [b]) }
                try copy.close()
                let incremental = try SQLiteBackend.run(try job(a, rule: rule, incremental: true))
                XCTAssertEqual(incremental.rules[0].incremental, true, "seed \(seed) round \(round)")
                let full = try SQLiteBackend.run(try job(b, rule: rule, incremental: false))
                XCTAssertEqual(incremental.counts.deleted, full.counts.deleted, "seed \(seed) round \(round)")
                XCTAssertEqual(try TestSupport.contentDump(a), try TestSupport.contentDump(b), "seed \(seed) round \(round)")
                let check = try SQLiteBackend.check(try job(a, rule: rule, incremental: false))
                XCTAssertEqual(check.counts.groups, 0)
            }
        }
    }

    func testPlainIndexedKeyMatchesFullRuns() throws {
        try assertIncrementalMatchesFull(rule: Self.plainRule, seeds: 1..<6)
    }

    func testHashedKeyWithIndexedHashColumnMatchesFullRuns() throws {
        try assertIncrementalMatchesFull(rule: Self.hashedRule, seeds: 1..<6)
    }

    func testNoChangesMeansNoWork() throws {
        let path = try makeDatabase("quiet.sqlite", seed: 9)
        _ = try SQLiteBackend.run(try job(path, rule: Self.plainRule, incremental: true))
        let second = try SQLiteBackend.run(try job(path, rule: Self.plainRule, incremental: true))
        XCTAssertEqual(second.rules[0].incremental, true)
        XCTAssertEqual(second.rules[0].discovery.losers, 0)
        XCTAssertEqual(second.counts.batches, 0)
    }

    func testKeyWithoutIndexIsRefused() throws {
        let path = try makeDatabase("noindex.sqlite", seed: 3)
        let rule = "    key: last"
        XCTAssertThrowsError(try SQLiteBackend.run(try job(path, rule: rule, incremental: true))) { error in
            XCTAssertEqual((error as? WinnowError)?.exitCode, 65)
            XCTAssertTrue("\(error)".contains("index"), "\(error)")
        }
        let normalised = "    key: email\n        normalize: [lowercase]"
        XCTAssertThrowsError(try SQLiteBackend.run(try job(path, rule: normalised, incremental: true))) { error in
            XCTAssertEqual((error as? WinnowError)?.exitCode, 65)
        }
    }

    func testTrackingIsRemovedWhenTheRuleStopsBeingIncremental() throws {
        let path = try makeDatabase("stop.sqlite", seed: 4)
        _ = try SQLiteBackend.run(try job(path, rule: Self.plainRule, incremental: true))
        let queue = try DatabaseQueue(path: path)
        let triggers = {
            try queue.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'winnow_track_%'")
            }
        }
        XCTAssertEqual(try triggers(), 2)
        _ = try SQLiteBackend.run(try job(path, rule: Self.plainRule, incremental: false))
        XCTAssertEqual(try triggers(), 0)
        try queue.close()
    }
}
