import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// `restore` puts back exactly what a run deleted or changed; `history` lists the runs.
final class RestoreHistoryTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("RestoreHistory")
    }

    override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    /// Runs `job`, checks it changed the user tables, restores it and checks every user table
    /// (with rowids) and the user schema are back as they were.
    @discardableResult
    func assertRoundTrip(_ job: String, db path: String, file: StaticString = #filePath, line: UInt = #line) throws -> RunSummary {
        let before = try ScenarioKit.userState(path)
        let run = try ScenarioKit.run(job, db: path)
        XCTAssertTrue(run.counts.changedAnything, "the run must change something", file: file, line: line)
        XCTAssertNotEqual(try ScenarioKit.userState(path), before, file: file, line: line)
        let runID = try XCTUnwrap(run.runID, file: file, line: line)
        let restore = try Restorer.restore(database: path, runID: runID)
        XCTAssertEqual(restore.status, "restored", file: file, line: line)
        let after = try ScenarioKit.userState(path)
        XCTAssertEqual(after.schema, before.schema, file: file, line: line)
        for table in before.dump.keys.sorted() where after.dump[table] != before.dump[table] {
            let b = before.dump[table] ?? [], a = after.dump[table] ?? []
            let firstDiff = zip(b, a).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            XCTFail(
                "table \(table) differs after restore: \(b.count) rows before, \(a.count) after; first difference at \(firstDiff.map(String.init) ?? "end"): \(firstDiff.map { "\(b[$0]) vs \(a[$0])" } ?? "")",
                file: file, line: line)
        }
        XCTAssertEqual(after.dump, before.dump, file: file, line: line)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0, file: file, line: line)
        return run
    }

    func testRestoreChinookPlaylistsExactly() throws {
        let path = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        let run = try assertRoundTrip("version: 1\ndedupe:\n  - entity: Playlist\n    key: Name\n", db: path)
        XCTAssertGreaterThan(run.counts.childrenDeleted, 0)
    }

    func testRestoreChinookEmployeesWithRepointedCustomersExactly() throws {
        let path = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        let run = try assertRoundTrip(
            """
            version: 1
            dedupe:
              - entity: Employee
                key: Title
                winner:
                  - EmployeeId: desc
                merge:
                  Phone: concat
                  Fax: longest
            """, db: path)
        XCTAssertEqual(run.counts.repointed, 41)
    }

    func testRestoreCoreDataReferencedByExactly() throws {
        let path = try ScenarioKit.copyDataset("coredata-bookmigration-v1.sqlite", into: dir)
        let run = try assertRoundTrip(
            """
            version: 1
            dedupe:
              - entity: ZUSER
                key: ZUSERID
                winner:
                  - Z_PK: asc
                merge:
                  Z_OPT: sum
                referenced_by: [ZBOOK.ZUSER]
            """, db: path)
        XCTAssertEqual(run.counts.repointed, 4)
        XCTAssertEqual(run.counts.updated, 1)
    }

    func testRestoreMergesRepointsHashesAndOddValuesExactly() throws {
        let path = dir.appendingPathComponent("gen.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT, phone TEXT, visits INTEGER, score REAL, photo BLOB,
                                           anything, note TEXT, kh TEXT);
                    CREATE TABLE orders (id INTEGER PRIMARY KEY, contact_id INTEGER REFERENCES contacts(id) ON DELETE CASCADE, total REAL);
                    CREATE TABLE contact_tag (contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE, tag TEXT NOT NULL,
                                              PRIMARY KEY (contact_id, tag));
                    CREATE TABLE plain (k TEXT, v);
                    """)
            var rng = SeededGenerator(seed: 99)
            let odd: [DatabaseValue] = [
                .null, Int64.max.databaseValue, Int64.min.databaseValue, (0.1).databaseValue,
                (1e-300).databaseValue, (-2.5).databaseValue, Data().databaseValue,
                Data([0, 255, 1, 0]).databaseValue, "ünïcödé ✓".databaseValue, "".databaseValue,
                "a\u{0}b".databaseValue,
            ]
            let emails: [DatabaseValue] = [
                .null, "A@x".databaseValue, "a@x ".databaseValue, "b@x".databaseValue, "B@X".databaseValue,
                "c@x".databaseValue, "é@x".databaseValue, "É@x".databaseValue,
            ]
            func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
            for id in 1...80 {
                let phone: DatabaseValue = rng.next() % 2 == 0 ? .null : "555-\(id)".databaseValue
                let visits: DatabaseValue = rng.next() % 3 == 0 ? .null : Int(rng.next() % 10).databaseValue
                let score: DatabaseValue = rng.next() % 3 == 0 ? .null : (Double(rng.next() % 1000) / 7).databaseValue
                let photo: DatabaseValue =
                    rng.next() % 2 == 0 ? .null : Data((0..<Int(rng.next() % 6)).map { _ in UInt8(rng.next() % 256) }).databaseValue
                let note: DatabaseValue = rng.next() % 2 == 0 ? .null : "note \(rng.next() % 4)".databaseValue
                let kh: DatabaseValue = rng.next() % 4 == 0 ? "stale".databaseValue : .null
                try db.execute(
                    sql: "INSERT INTO contacts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    arguments: [id, pick(emails), phone, visits, score, photo, pick(odd), note, kh])
            }
            for id in 1...120 {
                try db.execute(sql: "INSERT INTO orders VALUES (?, ?, ?)", arguments: [id, Int(rng.next() % 80) + 1, pick(odd)])
            }
            for _ in 1...150 {
                try db.execute(
                    sql: "INSERT OR IGNORE INTO contact_tag VALUES (?, ?)", arguments: [Int(rng.next() % 80) + 1, pick(["x", "y", "z"])])
            }
            try db.execute(sql: "INSERT INTO plain VALUES ('k', 1), ('k', 2.5), ('k', X'00'), ('j', NULL)")
        }
        try queue.close()
        let run = try assertRoundTrip(
            """
            version: 1
            batch:
              size: 2
            dedupe:
              - entity: contacts
                key: email
                normalize: [trim, lowercase]
                hash: true
                hash_column: kh
                winner: most_complete
                merge:
                  phone: fill_null
                  visits: sum
                  score: max
                  photo: longest
                  anything: min
                  note: concat
              - entity: plain
                key: k
            """, db: path)
        XCTAssertGreaterThan(run.counts.updated, 0)
        XCTAssertGreaterThan(run.counts.repointed, 0)
        XCTAssertGreaterThan(run.counts.childrenDeleted, 0)
        XCTAssertGreaterThan(run.counts.hashed, 0)
        XCTAssertGreaterThan(run.counts.batches, 2)
    }

    func testRestoringTwiceIsRefused() throws {
        let path = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        let run = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: Playlist\n    key: Name\n", db: path)
        let runID = try XCTUnwrap(run.runID)
        _ = try Restorer.restore(database: path, runID: runID)
        let restored = try ScenarioKit.userState(path)
        ScenarioKit.expectExit(65) { _ = try Restorer.restore(database: path, runID: runID) }
        XCTAssertEqual(try ScenarioKit.userState(path), restored)
    }

    func testRestoringUnknownRunIsUsageError() throws {
        let path = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("db.sqlite").path,
            sql: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'a');
                """)
        // Before any run: no bookkeeping at all.
        ScenarioKit.expectExit(64) { _ = try Restorer.restore(database: path, runID: 1) }
        try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: k\n", db: path)
        let state = try ScenarioKit.userState(path)
        ScenarioKit.expectExit(64) { _ = try Restorer.restore(database: path, runID: 4242) }
        XCTAssertEqual(try ScenarioKit.userState(path), state)
        // A missing database is not a usage error.
        ScenarioKit.expectExit(66) { _ = try Restorer.restore(database: self.dir.appendingPathComponent("nope.sqlite").path, runID: 1) }
    }

    func testRunWithoutArchiveCannotBeRestored() throws {
        let path = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("db.sqlite").path,
            sql: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, n INTEGER); INSERT INTO t VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 3);
                """)
        let run = try ScenarioKit.run(
            "version: 1\ndedupe:\n  - entity: t\n    key: k\n    archive: false\n    merge:\n      n: sum\n", db: path)
        XCTAssertEqual(run.counts.deleted, 1)
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM winnow_journal"), 0, "archive: false journals nothing")
        let state = try ScenarioKit.userState(path)
        ScenarioKit.expectExit(65) { _ = try Restorer.restore(database: path, runID: try XCTUnwrap(run.runID)) }
        XCTAssertEqual(try ScenarioKit.userState(path), state)
    }

    func testHistoryListsRunsNewestFirstWithCountsAndRestoreLink() throws {
        let path = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        XCTAssertEqual(try SQLiteBackend.history(database: path).count, 0, "no runs before the first")
        let first = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: Playlist\n    key: Name\n", db: path)
        let second = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: Customer\n    key: State\n", db: path)
        let restore = try Restorer.restore(database: path, runID: try XCTUnwrap(first.runID))
        let entries = try SQLiteBackend.history(database: path)
        XCTAssertEqual(entries.map(\.runID), [restore.runID!, second.runID!, first.runID!])
        XCTAssertEqual(entries.map(\.command), ["restore", "run", "run"])
        XCTAssertEqual(entries.map(\.status), ["completed", "completed", "completed"])
        XCTAssertEqual(entries[2].counts.groups, first.counts.groups)
        XCTAssertEqual(entries[2].counts.deleted, 4)
        XCTAssertEqual(entries[2].counts, first.counts)
        XCTAssertEqual(entries[1].counts, second.counts)
        XCTAssertEqual(entries[2].restoredBy, restore.runID)
        XCTAssertNil(entries[1].restoredBy)
        XCTAssertEqual(entries[0].restoresRun, first.runID)
        XCTAssertNotNil(entries[2].finishedAt)
        XCTAssertTrue(entries[2].archive)
        XCTAssertEqual(try SQLiteBackend.history(database: path, limit: 1).map(\.runID), [restore.runID!])
    }

    func testHistoryRecordsARefusedRun() throws {
        let path = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("db.sqlite").path,
            sql: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'a');
                """)
        try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: k\n", db: path)
        try ScenarioKit.execute(path, "INSERT INTO t VALUES (3, 'b'), (4, 'b'), (5, 'b')")
        ScenarioKit.expectExit(65) {
            try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: k\n    max_delete_percent: 10\n", db: path)
        }
        let entries = try SQLiteBackend.history(database: path)
        XCTAssertEqual(entries.count, 2)
        XCTAssertEqual(entries.first?.status, "refused")
        XCTAssertEqual(entries.first?.counts.deleted, 0)
        XCTAssertEqual(entries.last?.status, "completed")
        XCTAssertEqual(entries.last?.counts.deleted, 1)
    }
}
