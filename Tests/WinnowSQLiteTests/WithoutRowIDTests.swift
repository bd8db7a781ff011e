import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// A `WITHOUT ROWID` table is deduplicated like any other: rows named by primary key in plans,
/// the journal and `show`; the same survivors as the same rows in a rowid table; merges,
/// re-pointed children and `restore` exact to the value's storage class.
final class WithoutRowIDTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory("WithoutRowID") }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    /// `units` keyed by (auth, code), `withoutRowID` or not, with `count` rows whose names repeat
    /// in scattered groups of varying size, values of every storage class, and `uses`, a rowid
    /// table whose unindexed foreign key names the composite key.
    func makeUnits(_ name: String, withoutRowID: Bool, count: Int = 600, shuffle: Int = 40503) throws -> String {
        let path = dir.appendingPathComponent("\(name).sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE units (
                    auth TEXT NOT NULL COLLATE NOCASE, code INTEGER NOT NULL, name TEXT, factor REAL, visits, note BLOB,
                    PRIMARY KEY (auth, code))\(withoutRowID ? " WITHOUT ROWID" : "");
                CREATE TABLE uses (id INTEGER PRIMARY KEY, auth TEXT, code INTEGER, FOREIGN KEY (auth, code) REFERENCES units (auth, code));
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(count) - 1)
                INSERT INTO units
                SELECT char(65 + (i * 7) % 5), (i * 2654435761) % 1000003,
                       'unit ' || ((i * 48271) % (\(count) / 3 + (i % 4))),
                       CASE i % 3 WHEN 0 THEN 1.0 WHEN 1 THEN NULL ELSE i / 7.0 END,
                       CASE i % 4 WHEN 0 THEN i WHEN 1 THEN i * 0.5 WHEN 2 THEN 'v' || i ELSE NULL END,
                       CASE WHEN i % 5 = 0 THEN CAST('n' || i AS BLOB) ELSE NULL END
                FROM s ORDER BY (i * \(shuffle)) % 65537;
                INSERT INTO uses (auth, code) SELECT auth, code FROM units ORDER BY (code * 31) % 997, auth, code LIMIT \(count) / 2;
                """)
        return path
    }

    func expectRefusal(_ code: Int32, contains text: String, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void)
    {
        do {
            try body()
            XCTFail("expected exit \(code)", file: file, line: line)
        } catch let error as WinnowError {
            XCTAssertEqual(error.exitCode, code, "\(error)", file: file, line: line)
            XCTAssertTrue("\(error)".contains(text), "\(error) should say: \(text)", file: file, line: line)
        } catch {
            XCTFail("expected a WinnowError, got \(error)", file: file, line: line)
        }
    }

    /// Every row of `table` with each value's storage class, in key order.
    func typed(_ path: String, _ table: String, orderBy: String = "auth, code") throws -> [String] {
        try ScenarioKit.rows(path, "SELECT * FROM \(table) ORDER BY \(orderBy)").map { row in
            row.map { "\($0.storage)" }.joined(separator: " | ")
        }
    }

    static let mergeJob = """
        version: 1
        dedupe:
          - entity: units
            key: name
            normalize: [trim, lowercase]
            winner:
              - factor: desc
            merge: {visits: sum, note: fill_null}
            archive: true
        batch:
          size: 7
        """

    /// The Done-when of a table without rowids: deduplicated (merge, re-pointed children, many
    /// batches) to the same survivors as the same rows in a rowid table, then restored exactly.
    func testDeduplicatedLikeARowidTableAndRestoredExactly() throws {
        let path = try makeUnits("wr", withoutRowID: true)
        let twin = try makeUnits("rowid", withoutRowID: false)
        XCTAssertEqual(try typed(path, "units"), try typed(twin, "units"))
        let before = try typed(path, "units")
        let usesBefore = try typed(path, "uses", orderBy: "id")

        let run = try ScenarioKit.run(Self.mergeJob, db: path)
        let twinRun = try ScenarioKit.run(Self.mergeJob, db: twin)
        XCTAssertGreaterThan(run.counts.deleted, 100)
        XCTAssertGreaterThan(run.counts.repointed, 10)
        XCTAssertGreaterThan(run.counts.batches, 10)
        XCTAssertEqual(run.counts.deleted, twinRun.counts.deleted)
        XCTAssertEqual(run.counts.updated, twinRun.counts.updated)
        XCTAssertEqual(run.counts.repointed, twinRun.counts.repointed)
        XCTAssertEqual(try typed(path, "units"), try typed(twin, "units"), "the same survivors with the same merged values")
        XCTAssertEqual(try typed(path, "uses", orderBy: "id"), try typed(twin, "uses", orderBy: "id"), "re-pointed alike")
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        XCTAssertEqual(
            try ScenarioKit.int(path, "SELECT count(*) FROM (SELECT lower(trim(name)) FROM units GROUP BY 1 HAVING count(*) > 1)"), 0)

        let restore = try Restorer.restore(database: path, runID: try XCTUnwrap(run.runID))
        XCTAssertEqual(restore.status, "restored")
        XCTAssertEqual(try typed(path, "units"), before, "every row back with its values' storage classes")
        XCTAssertEqual(try typed(path, "uses", orderBy: "id"), usesBefore)
        XCTAssertEqual(try ScenarioKit.column(path, "PRAGMA integrity_check", as: String.self), ["ok"])
    }

    /// `plan` and `show` name rows by the primary key's columns and values, as PostgreSQL does.
    func testPlanAndShowNameRowsByPrimaryKey() throws {
        let path = dir.appendingPathComponent("named.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE units (auth TEXT NOT NULL, code TEXT NOT NULL, name TEXT, PRIMARY KEY (auth, code)) WITHOUT ROWID;
                INSERT INTO units VALUES ('EPSG', '9001', 'metre'), ('ESRI', '9001', 'metre'), ('EPSG', '9002', 'foot');
                """)
        let job = """
            version: 1
            dedupe:
              - entity: units
                key: name
                winner:
                  - auth: desc
                archive: true
            """
        let plan = try ScenarioKit.plan(job, db: path)
        let sample = try XCTUnwrap(plan.rules.first?.samples.first)
        XCTAssertEqual(sample.winner.description, "(auth, code) = ('ESRI', '9001')")
        XCTAssertEqual(sample.losers.map(\.description), ["(auth, code) = ('EPSG', '9001')"])
        let run = try ScenarioKit.run(job, db: path)
        let report = try SQLiteBackend.show(database: path, runID: try XCTUnwrap(run.runID))
        let groups = try XCTUnwrap(report.rules.first?.groups)
        XCTAssertEqual(groups.map(\.kept.description), ["(auth, code) = ('ESRI', '9001')"])
        XCTAssertEqual(groups.flatMap(\.deleted).map(\.key.description), ["(auth, code) = ('EPSG', '9001')"])
        XCTAssertEqual(groups.flatMap(\.deleted).first?.values.map(\.literal), ["'EPSG'", "'9001'", "'metre'"])
    }

    /// Batch sizes and the order rows were written in do not change the survivors of a rule
    /// that only deletes (batches are stretches of the key order), ties on the winner terms
    /// included; `plan`'s deletion digest agrees across batch sizes.
    func testSurvivorsDoNotDependOnBatchSizeOrInsertionOrder() throws {
        let job = """
            version: 1
            dedupe:
              - entity: units
                key: name
                winner:
                  - visits: desc
            """
        var survivors: [[String]] = []
        var digests: [String?] = []
        for (index, size) in [1, 5, 64, 5000].enumerated() {
            // The same rows, written in another order each time.
            let path = try makeUnits("size\(size)", withoutRowID: true, count: 400, shuffle: [40503, 7, 30011, 1][index])
            var options = RunOptions(database: path, batchSize: size, sampleLimit: nil)
            options.fingerprints = true
            digests.append(
                try SQLiteBackend.plan(try ScenarioKit.job(job), options: options).rules.first?.deletionDigest)
            _ = try ScenarioKit.run(job, db: path, batchSize: size)
            survivors.append(try typed(path, "units"))
        }
        XCTAssertEqual(Set(survivors.map { $0.joined(separator: "\n") }).count, 1)
        XCTAssertNotNil(digests[0])
        XCTAssertEqual(Set(digests.compactMap { $0 }).count, 1, "\(digests)")
    }

    /// A restore that would put back a key someone has since used again is refused, naming the
    /// row by its primary key, and changes nothing.
    func testRestoreRefusedWhenADeletedKeyIsTakenAgain() throws {
        let path = dir.appendingPathComponent("taken.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT, at INTEGER) WITHOUT ROWID;
                INSERT INTO kv VALUES ('a', 'x', 1), ('b', 'x', 2), ('c', 'y', 3);
                """)
        let run = try ScenarioKit.run(
            "version: 1\ndedupe:\n  - entity: kv\n    key: v\n    winner:\n      - at: asc\n    archive: true\n", db: path)
        XCTAssertEqual(try ScenarioKit.column(path, "SELECT k FROM kv ORDER BY k", as: String.self), ["a", "c"])
        try ScenarioKit.execute(path, "INSERT INTO kv VALUES ('b', 'new', 9)")
        let state = try typed(path, "kv", orderBy: "k")
        expectRefusal(65, contains: "kv k 'b' was deleted by that run but exists again") {
            _ = try Restorer.restore(database: path, runID: try XCTUnwrap(run.runID))
        }
        XCTAssertEqual(try typed(path, "kv", orderBy: "k"), state)
    }

    /// `references: restrict` names the first row it protects by the parent's primary key.
    func testRestrictRefusalNamesTheRowByPrimaryKey() throws {
        let path = dir.appendingPathComponent("restrict.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;
                CREATE TABLE refs (id INTEGER PRIMARY KEY, k TEXT REFERENCES kv (k));
                INSERT INTO kv VALUES ('a', 'x'), ('b', 'x');
                INSERT INTO refs (k) VALUES ('b');
                """)
        expectRefusal(65, contains: "(first: k 'b')") {
            _ = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: kv\n    key: v\n    references: restrict\n", db: path)
        }
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM kv"), 2)
    }

    /// Children without rowids, of a parent without rowids and of a rowid parent, through an
    /// index and without one, one of them a link table whose key re-pointing collides: the
    /// same survivors and children as the same tables with rowids, and restored exactly.
    func testChildrenWithoutRowIDsAreRepointedLikeRowidChildrenAndRestored() throws {
        func make(_ name: String, withoutRowID: Bool) throws -> String {
            let clause = withoutRowID ? " WITHOUT ROWID" : ""
            let path = dir.appendingPathComponent("\(name).sqlite").path
            try TestSupport.makeDatabase(
                at: path,
                sql: """
                    CREATE TABLE units (auth TEXT NOT NULL, code INTEGER NOT NULL, name TEXT, made INTEGER, PRIMARY KEY (auth, code))\(clause);
                    CREATE TABLE usage (auth TEXT NOT NULL, code INTEGER NOT NULL, unit_auth TEXT, unit_code INTEGER,
                        PRIMARY KEY (auth, code), FOREIGN KEY (unit_auth, unit_code) REFERENCES units (auth, code))\(clause);
                    CREATE INDEX usage_unit ON usage (unit_auth, unit_code);
                    CREATE TABLE notes (id TEXT PRIMARY KEY, unit_auth TEXT, unit_code INTEGER, body TEXT,
                        FOREIGN KEY (unit_auth, unit_code) REFERENCES units (auth, code))\(clause);
                    CREATE TABLE unit_tags (unit_auth TEXT NOT NULL, unit_code INTEGER NOT NULL, tag TEXT NOT NULL,
                        PRIMARY KEY (unit_auth, unit_code, tag), FOREIGN KEY (unit_auth, unit_code) REFERENCES units (auth, code))\(clause);
                    CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, made INTEGER);
                    CREATE TABLE visits (vid TEXT PRIMARY KEY, person_id INTEGER REFERENCES people (id), at INTEGER)\(clause);
                    WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 299)
                    INSERT INTO units SELECT char(65 + i % 3), (i * 7919) % 10007, 'u' || ((i * 48271) % 97), (i * 31) % 11 FROM s;
                    WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 399)
                    INSERT INTO usage SELECT 'U', i, u.auth, u.code FROM s JOIN units AS u ON u.code = ((i * 37) % 300 * 7919) % 10007;
                    WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 199)
                    INSERT INTO notes SELECT 'n' || i, u.auth, u.code, 'note ' || i FROM s JOIN units AS u ON u.code = ((i * 53) % 300 * 7919) % 10007;
                    WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 599)
                    INSERT OR IGNORE INTO unit_tags SELECT u.auth, u.code, 't' || (i % 3) FROM s JOIN units AS u ON u.code = ((i * 11) % 300 * 7919) % 10007;
                    WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 199)
                    INSERT INTO people SELECT i + 1, 'p' || ((i * 13) % 70) || '@x', (i * 17) % 23 FROM s;
                    WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 299)
                    INSERT INTO visits SELECT 'v' || i, 1 + (i * 29) % 200, i FROM s;
                    """)
            return path
        }
        let job = """
            version: 1
            dedupe:
              - {entity: units, key: name, winner: [{made: asc}], references: repoint, archive: true}
              - {entity: people, key: email, winner: [{made: asc}], references: repoint, archive: true}
            batch:
              size: 5
            """
        let tables = ["units", "usage", "notes", "unit_tags", "people", "visits"]
        func state(_ path: String) throws -> [String: [String]] {
            var result: [String: [String]] = [:]
            for table in tables { result[table] = try typed(path, table, orderBy: "1, 2, 3") }
            return result
        }
        let path = try make("children-wr", withoutRowID: true)
        let twin = try make("children-rowid", withoutRowID: false)
        let before = try state(path)
        XCTAssertEqual(before, try state(twin))
        let run = try ScenarioKit.run(job, db: path)
        let twinRun = try ScenarioKit.run(job, db: twin)
        XCTAssertGreaterThan(run.counts.repointed, 100)
        XCTAssertGreaterThan(run.counts.childrenDeleted, 5, "link rows the winner already had")
        // (The batches' count follows their timing: batch sizes adapt to the time they take.)
        XCTAssertEqual(run.counts.deleted, twinRun.counts.deleted)
        XCTAssertEqual(run.counts.repointed, twinRun.counts.repointed)
        XCTAssertEqual(run.counts.childrenDeleted, twinRun.counts.childrenDeleted)
        XCTAssertEqual(try state(path), try state(twin))
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        let restore = try Restorer.restore(database: path, runID: try XCTUnwrap(run.runID))
        XCTAssertEqual(restore.status, "restored")
        XCTAssertEqual(try state(path), before)
    }

    /// A stored key hash is kept on a table without rowids (in ranges of its numbered keys), and
    /// its rows that survive get it; the run is restored exactly, hashes included.
    func testHashColumnIsKeptOnATableWithoutRowIDs() throws {
        let path = try makeUnits("hashed", withoutRowID: true, count: 300)
        try ScenarioKit.execute(path, "ALTER TABLE units ADD COLUMN key_hash BLOB")
        let twin = try makeUnits("hashed-rowid", withoutRowID: false, count: 300)
        try ScenarioKit.execute(twin, "ALTER TABLE units ADD COLUMN key_hash BLOB")
        let before = try typed(path, "units")
        let job = """
            version: 1
            dedupe:
              - {entity: units, key: [name, auth], hash: true, hash_column: key_hash, normalize: {name: [lowercase]}, archive: true}
            batch:
              size: 3
            """
        let run = try ScenarioKit.run(job, db: path)
        _ = try ScenarioKit.run(job, db: twin)
        XCTAssertGreaterThan(run.counts.hashed, 100)
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM units WHERE key_hash IS NULL"), 0)
        XCTAssertEqual(try typed(path, "units"), try typed(twin, "units"))
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(run.runID))
        XCTAssertEqual(try typed(path, "units"), before)
    }

    /// Another connection adds a child without rowids pointing at a loser of the last batch
    /// while the run is between batches: the child is numbered, re-pointed to the winner, never
    /// left dangling, and a restore takes it back to the loser.
    func testChildWrittenByAnotherConnectionMidRunIsNumberedAndRepointed() throws {
        let path = dir.appendingPathComponent("live.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE units (auth TEXT NOT NULL, code INTEGER NOT NULL, name TEXT, made INTEGER, PRIMARY KEY (auth, code)) WITHOUT ROWID;
                CREATE TABLE notes (id TEXT PRIMARY KEY, unit_auth TEXT, unit_code INTEGER,
                    FOREIGN KEY (unit_auth, unit_code) REFERENCES units (auth, code)) WITHOUT ROWID;
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 299)
                INSERT INTO units SELECT char(65 + i % 3), (i * 7919) % 10007, 'u' || (i % 100), i FROM s;
                INSERT INTO notes SELECT 'n' || code, auth, code FROM units WHERE code % 4 = 0;
                """)
        // The last batch holds the group whose winner comes last in key order.
        let late = try XCTUnwrap(
            ScenarioKit.rows(
                path,
                """
                SELECT l.auth, l.code FROM units AS l JOIN units AS w ON w.name = l.name AND w.made < l.made
                WHERE w.made = (SELECT min(made) FROM units WHERE name = l.name)
                ORDER BY w.auth DESC, w.code DESC LIMIT 1
                """
            ).first)
        let job = """
            version: 1
            dedupe:
              - {entity: units, key: name, winner: [{made: asc}], references: repoint, archive: true}
            batch:
              size: 3
            """
        let before = try typed(path, "notes", orderBy: "id")
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        var inserted = false
        let run = try ScenarioKit.run(job, db: path) { event in
            guard case .batch = event, !inserted else { return }
            inserted = true
            try? other.write { db in
                try db.execute(sql: "INSERT INTO notes VALUES ('late', ?, ?)", arguments: [late[0], late[1]])
            }
        }
        XCTAssertTrue(inserted)
        XCTAssertGreaterThan(run.counts.batches, 2)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        XCTAssertEqual(
            try ScenarioKit.int(
                path, "SELECT count(*) FROM notes AS n JOIN units AS u ON u.auth = n.unit_auth AND u.code = n.unit_code WHERE n.id = 'late'"
            ),
            1, "points at a survivor")
        XCTAssertNotEqual(try ScenarioKit.rows(path, "SELECT unit_auth, unit_code FROM notes WHERE id = 'late'").first, late)
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(run.runID))
        XCTAssertEqual(try ScenarioKit.rows(path, "SELECT unit_auth, unit_code FROM notes WHERE id = 'late'").first, late)
        XCTAssertEqual(try typed(path, "notes", orderBy: "id").filter { !$0.contains("late") }, before)
    }
}
