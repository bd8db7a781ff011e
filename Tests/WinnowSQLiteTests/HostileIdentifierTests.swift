import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// Tables, columns and indexes whose names are hostile (quotes, semicolons, comments, keywords,
/// brackets, backticks, non-ASCII letters, emoji, `rowid`/`oid`/`_rowid_`, and injection
/// attempts) work everywhere a job or schema file can name them, give the right result, and
/// inject nothing (README "Guarantees": identifiers are always quoted).
/// A `canary` table must exist, unchanged, after every run.
final class HostileIdentifierTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("HostileIdentifiers")
    }

    override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    // MARK: Names

    /// The deduplicated table.
    let table = "order \"items\"; DROP TABLE canary; --"
    /// Its INTEGER PRIMARY KEY.
    let id = "id\"); DROP TABLE canary; --"
    /// Key columns: one normalised, one a keyword.
    let email = "e\"mail' /* x */ --"
    let select = "select"
    /// Winner column.
    let created = "created at; DELETE FROM canary"
    /// Merge columns.
    let group = "group"
    let kanji = "名前"
    let unicode = "Ünïcødé"
    let emoji = "emoji 😀"
    let bracket = "[br]"
    let backtick = "`bt`"
    /// Hash column: an injection attempt.
    let hash = "x\"; DROP TABLE canary; --"
    /// A child with a declared foreign key, and one without (referenced_by).
    let child = "table"
    let childColumn = "ref'\"col"
    let loose = "child; --"
    let looseColumn = "parent id /* */"

    // MARK: Helpers

    /// SQL quoting written here, independent of the library's.
    func q(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// A YAML double-quoted scalar.
    func y(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: out += String(format: "\\x%02X", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// A row of expected values.
    func v(_ items: DatabaseValueConvertible?...) -> [DatabaseValue] { items.map { $0?.databaseValue ?? .null } }

    func lit(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }

    static let canaryRows: [[DatabaseValue]] = [[1.databaseValue, "tweet".databaseValue], [2.databaseValue, "chirp".databaseValue]]
    let canarySQL = "CREATE TABLE canary (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO canary VALUES (1, 'tweet'), (2, 'chirp');"

    func rows(_ path: String, _ sql: String) throws -> [[DatabaseValue]] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in try Row.fetchAll(db, sql: sql).map { Array($0.databaseValues) } }
    }

    func assertCanary(_ path: String, _ context: String = "", file: StaticString = #filePath, line: UInt = #line) {
        do {
            let content = try rows(path, "SELECT id, note FROM canary ORDER BY id")
            let schema = try rows(path, "SELECT sql FROM sqlite_master WHERE name = 'canary'").first?.first
            XCTAssertEqual(content, Self.canaryRows, "canary rows \(context)", file: file, line: line)
            XCTAssertEqual(
                schema, "CREATE TABLE canary (id INTEGER PRIMARY KEY, note TEXT)".databaseValue, "canary schema \(context)", file: file,
                line: line)
        } catch {
            XCTFail("the canary table is gone or unreadable \(context): \(error)", file: file, line: line)
        }
    }

    func writeJob(_ text: String, _ fileName: String = "job.yaml") throws -> String {
        let path = dir.appendingPathComponent(fileName).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func run(_ job: String, db: String) throws -> RunSummary {
        try SQLiteBackend.run(try JobLoader.load(path: try writeJob(job)), options: RunOptions(database: db))
    }

    func plan(_ job: String, db: String) throws -> RunSummary {
        try SQLiteBackend.plan(try JobLoader.load(path: try writeJob(job)), options: RunOptions(database: db))
    }

    func check(_ job: String, db: String) throws -> RunSummary {
        try SQLiteBackend.check(try JobLoader.load(path: try writeJob(job)), options: RunOptions(database: db))
    }

    func expectExit(
        _ code: Int32, _ context: String, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void
    ) -> WinnowError? {
        do {
            try body()
            XCTFail("\(context): expected exit \(code), it succeeded", file: file, line: line)
        } catch let error as WinnowError {
            XCTAssertEqual(error.exitCode, code, "\(context): \(error)", file: file, line: line)
            return error
        } catch {
            XCTFail("\(context): expected WinnowError, got \(error)", file: file, line: line)
        }
        return nil
    }

    /// The database with every hostile name: the table, two children and the canary.
    func makeHostileDatabase(_ file: String = "hostile.sqlite") throws -> String {
        let path = dir.appendingPathComponent(file).path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                \(canarySQL)
                CREATE TABLE \(q(table)) (
                    \(q(id)) INTEGER PRIMARY KEY, \(q(email)) TEXT, \(q(select)) TEXT, \(q(created)) TEXT,
                    \(q(group)) INTEGER, \(q(kanji)) TEXT, \(q(unicode)) TEXT, \(q(emoji)) TEXT, \(q(bracket)) INTEGER,
                    \(q(backtick)) INTEGER, \(q(hash)) TEXT);
                CREATE INDEX \(q("idx \"k\"; DROP TABLE canary; --")) ON \(q(table)) (\(q(email)), \(q(select)));
                CREATE TABLE \(q(child)) (id INTEGER PRIMARY KEY, \(q(childColumn)) INTEGER REFERENCES \(q(table)) (\(q(id))) ON DELETE CASCADE);
                CREATE TABLE \(q(loose)) (rid INTEGER PRIMARY KEY, \(q(looseColumn)) INTEGER);
                INSERT INTO \(q(table)) (\(q(id)), \(q(email)), \(q(select)), \(q(created)), \(q(group)), \(q(kanji)), \(q(unicode)), \(q(emoji)), \(q(bracket)), \(q(backtick))) VALUES
                    (1, 'A@x.com',    's1', '2024-02', 1, 'ab',   'u1', 'n1', 5, 5),
                    (2, ' a@X.com ',  's1', '2024-01', 2, 'abcd', NULL, 'n2', 7, 3),
                    (3, 'a@x.com',    's1', '2024-03', 4, 'a',    'u3', 'n2', 1, 9),
                    (4, 'b@x.com',    's1', '2024-01', 8, 'b',    NULL, NULL, 0, 0),
                    (5, 'b@x.com',    's2', '2024-01', 16, 'c',   NULL, NULL, 0, 0),
                    (6, 'ÄÖ@x.com',   's3', '2024-05', 32, 'd',   NULL, 'n6', 0, 0),
                    (7, 'äö@X.COM',   's3', '2024-04', 64, NULL,  'u7', 'n7', 0, 0);
                INSERT INTO \(q(child)) VALUES (1, 1), (2, 3), (3, 4), (4, 6);
                INSERT INTO \(q(loose)) VALUES (1, 3), (2, 5), (3, 6);
                """)
        return path
    }

    /// One rule that names every hostile column.
    func hostileJob(hash useHash: Bool, winner: String? = nil) -> String {
        """
        version: 1
        dedupe:
          - entity: \(y(table))
            key: [\(y(email)), \(y(select))]
            normalize:
              \(y(email)): [trim, lowercase]
            hash: \(useHash)
        \(useHash ? "    hash_column: \(y(hash))\n" : "")\
            winner:
        \(winner ?? "      - \(y(created)): asc")
            merge:
              \(y(group)): sum
              \(y(kanji)): longest
              \(y(unicode)): fill_null
              \(y(emoji)): concat
              \(y(bracket)): max
              \(y(backtick)): min
            references: repoint
            referenced_by:
              - {table: \(y(loose)), column: \(y(looseColumn))}
            archive: true

        """
    }

    /// Asserts the survivors and merged values of `hostileJob` on `makeHostileDatabase`.
    func assertHostileResult(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws {
        // Groups: {1, 2, 3} (trim+lowercase e-mail, s1) won by 2 (earliest); {6, 7} (Unicode lowercase) won by 7.
        let survivors = try rows(
            path,
            """
            SELECT \(q(id)), \(q(group)), \(q(kanji)), \(q(unicode)), \(q(emoji)), \(q(bracket)), \(q(backtick))
            FROM \(q(table)) ORDER BY 1
            """)
        let expected: [[DatabaseValue]] = [
            v(2, 7, "abcd", "u1", "n2, n1", 7, 3),
            v(4, 8, "b", nil, nil, 0, 0),
            v(5, 16, "c", nil, nil, 0, 0),
            v(7, 96, "d", "u7", "n7, n6", 0, 0),
        ]
        XCTAssertEqual(survivors, expected, file: file, line: line)
        XCTAssertEqual(
            try rows(path, "SELECT * FROM \(q(child)) ORDER BY 1"),
            [v(1, 2), v(2, 2), v(3, 4), v(4, 7)], "declared children re-pointed", file: file, line: line)
        XCTAssertEqual(
            try rows(path, "SELECT * FROM \(q(loose)) ORDER BY 1"),
            [v(1, 2), v(2, 5), v(3, 7)], "referenced_by children re-pointed", file: file, line: line)
        XCTAssertEqual(try rows(path, "PRAGMA foreign_key_check").count, 0, file: file, line: line)
        assertCanary(path, "after the run", file: file, line: line)
        let tables = try rows(path, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'winnow%' ORDER BY name")
            .compactMap { $0.first.flatMap { String.fromDatabaseValue($0) } }
        XCTAssertEqual(tables, ["canary", loose, table, child].sorted(), file: file, line: line)
    }

    // MARK: Dedupe with hostile names everywhere

    func testDedupeKeyWinnerMergeReferencesWithHostileNames() throws {
        let path = try makeHostileDatabase()
        let before = try TestSupport.contentDump(path)
        let job = hostileJob(hash: false)

        let bytes = try TestSupport.fileBytes(path)
        let planned = try plan(job, db: path)
        XCTAssertEqual(try TestSupport.fileBytes(path), bytes, "plan must not change a byte")
        XCTAssertEqual(planned.counts.groups, 2)
        XCTAssertEqual(planned.counts.deleted, 3)

        let summary = try run(job, db: path)
        XCTAssertEqual(summary.status, "completed")
        XCTAssertEqual(summary.counts.groups, planned.counts.groups)
        XCTAssertEqual(summary.counts.deleted, planned.counts.deleted)
        XCTAssertEqual(summary.counts.repointed, planned.counts.repointed)
        XCTAssertEqual(summary.counts.repointed, 5)
        try assertHostileResult(path)

        let checked = try check(job, db: path)
        XCTAssertEqual(checked.status, "clean")

        // Restore puts back every row and every before-image.
        let restored = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        XCTAssertEqual(restored.status, "restored")
        XCTAssertEqual(try TestSupport.contentDump(path), before)
        assertCanary(path, "after restore")
    }

    func testHashedKeyWithHostileHashColumn() throws {
        let path = try makeHostileDatabase()
        let before = try TestSupport.contentDump(path)
        let summary = try run(hostileJob(hash: true), db: path)
        XCTAssertEqual(summary.counts.deleted, 3)
        try assertHostileResult(path)
        let hashes = try rows(path, "SELECT \(q(hash)) FROM \(q(table)) ORDER BY \(q(id))").map { $0[0] }
        XCTAssertEqual(hashes.count, 4)
        XCTAssertEqual(Set(hashes).count, 4, "every survivor has its own key hash: \(hashes)")
        for value in hashes {
            let text = String.fromDatabaseValue(value) ?? ""
            XCTAssertFalse(text.isEmpty, "the hash column is filled for every row: \(hashes)")
        }
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        XCTAssertEqual(try TestSupport.contentDump(path), before)
        assertCanary(path, "after restore")
    }

    func testWinnerShorthandsWithHostileNames() throws {
        for (number, winner) in ["    winner: {earliest: \(y(created))}", "    winner: most_complete", "    winner: {latest: \(y(id))}"]
            .enumerated()
        {
            let path = try makeHostileDatabase("winner\(number).sqlite")
            var job = hostileJob(hash: false)
            let start = try XCTUnwrap(job.range(of: "    winner:\n"))
            let end = try XCTUnwrap(job.range(of: "    merge:\n"))
            job.replaceSubrange(start.lowerBound..<end.lowerBound, with: winner + "\n")
            let summary = try run(job, db: path)
            XCTAssertEqual(summary.counts.deleted, 3, winner)
            let ids = try rows(path, "SELECT \(q(id)) FROM \(q(table)) ORDER BY 1").map { $0[0] }
            XCTAssertEqual(ids.count, 4, winner)
            if winner.contains("earliest") { XCTAssertEqual(ids, [2, 4, 5, 7].map(\.databaseValue), winner) }
            if winner.contains("latest") { XCTAssertEqual(ids, [3, 4, 5, 7].map(\.databaseValue), winner) }
            assertCanary(path, winner)
        }
    }

    /// The same job through the executable: validate, plan, run, check, history, restore.
    func testHostileNamesThroughTheExecutable() throws {
        let path = try makeHostileDatabase()
        let before = try TestSupport.contentDump(path)
        let job = try writeJob(hostileJob(hash: true), "cli.yaml")
        for (arguments, status) in [
            (["validate", job], Int32(0)), (["plan", "--database", path, job], 0),
            (["run", "--database", path, "--format", "json", job], 0), (["check", "--database", path, job], 0),
            (["history", "--database", path], 0), (["restore", "--database", path, "--run", "1"], 0),
        ] {
            let result = try TestSupport.winnow(arguments)
            XCTAssertEqual(result.status, status, "\(arguments.first!): \(result.stderr)")
            assertCanary(path, "after \(arguments.first!)")
            if arguments.first == "run" { try assertHostileResult(path) }
        }
        XCTAssertEqual(try TestSupport.contentDump(path), before, "restore through the executable")
    }

    // MARK: Injection attempts that name nothing

    func testInjectionAttemptsThatNameNothingAreRefused() throws {
        let path = try makeHostileDatabase()
        let attempts: [(String, String)] = [
            ("entity", "  - entity: \(y("canary\"; DROP TABLE canary; --"))\n    key: note\n"),
            ("entity-bracket", "  - entity: \(y("[canary]; DROP TABLE canary"))\n    key: note\n"),
            ("key", "  - entity: canary\n    key: \(y("note\" IS NULL; DROP TABLE canary; --"))\n"),
            ("key-single-quote", "  - entity: canary\n    key: \(y("note'); DROP TABLE canary; --"))\n"),
            ("winner", "  - entity: canary\n    key: note\n    winner:\n      - \(y("id; DROP TABLE canary")): asc\n"),
            ("merge", "  - entity: canary\n    key: note\n    merge:\n      \(y("note\" = 1; DROP TABLE canary; --")): sum\n"),
            ("merge-backtick", "  - entity: canary\n    key: note\n    merge:\n      \(y("`id`; DROP TABLE canary")): max\n"),
            ("hash-column", "  - entity: canary\n    key: note\n    hash: true\n    hash_column: \(y("x\"; DROP TABLE canary; --"))\n"),
            (
                "referenced-by-table",
                "  - entity: canary\n    key: note\n    referenced_by: [{table: \(y("canary; DROP TABLE canary")), column: id}]\n"
            ),
            (
                "referenced-by-column",
                "  - entity: canary\n    key: note\n    referenced_by: [{table: canary, column: \(y("id\"; DROP TABLE canary; --"))}]\n"
            ),
            ("nul-in-name", "  - entity: \(y("canary\u{0}; DROP TABLE canary"))\n    key: note\n"),
        ]
        for (name, rule) in attempts {
            let job = "version: 1\ndedupe:\n" + rule
            let bytes = try TestSupport.fileBytes(path)
            _ = expectExit(65, "plan \(name)") { _ = try plan(job, db: path) }
            XCTAssertEqual(try TestSupport.fileBytes(path), bytes, "plan \(name) changed the file")
            _ = expectExit(65, "run \(name)") { _ = try run(job, db: path) }
            assertCanary(path, name)
        }
    }

    // MARK: rowid, oid, _rowid_

    func testColumnsNamedRowidOidAndRowidAlias() throws {
        let path = dir.appendingPathComponent("rowid.sqlite").path
        // No INTEGER PRIMARY KEY: the rowid is reachable only as _rowid_ (rowid and oid are columns).
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                \(canarySQL)
                CREATE TABLE t ("rowid" TEXT, "oid" INTEGER, "value" TEXT);
                INSERT INTO t (_rowid_, "rowid", "oid", "value") VALUES
                    (10, 'k1', 3, 'a'), (20, 'k1', 1, NULL), (30, 'K1 ', 2, 'ccc'), (40, 'k2', 1, 'd');
                CREATE TABLE c (id INTEGER PRIMARY KEY, t_ref INTEGER);
                INSERT INTO c VALUES (1, 10), (2, 30);
                """)
        let before = try TestSupport.contentDump(path)
        let job = """
            version: 1
            dedupe:
              - entity: t
                key: rowid
                normalize: [trim, lowercase]
                winner:
                  - oid: asc
                merge:
                  value: longest
                archive: true

            """
        let summary = try run(job, db: path)
        XCTAssertEqual(summary.counts.deleted, 2)
        XCTAssertEqual(
            try rows(path, "SELECT _rowid_, \"rowid\", \"oid\", \"value\" FROM t ORDER BY _rowid_"),
            [v(20, "k1", 1, "ccc"), v(40, "k2", 1, "d")])
        assertCanary(path)
        _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
        XCTAssertEqual(try TestSupport.contentDump(path), before)

        // _rowid_ as a column too, but an INTEGER PRIMARY KEY aliases the rowid: it works.
        let aliased = dir.appendingPathComponent("aliased.sqlite").path
        try TestSupport.makeDatabase(
            at: aliased,
            sql: """
                \(canarySQL)
                CREATE TABLE t (id INTEGER PRIMARY KEY, "rowid" TEXT, "oid" TEXT, "_rowid_" TEXT);
                INSERT INTO t VALUES (1, 'x', 'b', 'p'), (2, 'x', 'a', 'q'), (3, 'y', 'a', 'r');
                """)
        let second = try run(
            "version: 1\ndedupe:\n  - entity: t\n    key: rowid\n    winner:\n      - oid: asc\n    merge:\n      _rowid_: concat\n",
            db: aliased)
        XCTAssertEqual(second.counts.deleted, 1)
        XCTAssertEqual(
            try rows(aliased, "SELECT * FROM t ORDER BY id"),
            [v(2, "x", "a", "q, p"), v(3, "y", "a", "r")])
        assertCanary(aliased)
    }

    func testTableShadowingEveryRowidNameIsRefusedClearly() throws {
        let path = dir.appendingPathComponent("shadow.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                \(canarySQL)
                CREATE TABLE shadow ("rowid" TEXT, "oid" TEXT, "_rowid_" TEXT, k TEXT);
                INSERT INTO shadow VALUES ('a', 'b', 'c', 'k'), ('d', 'e', 'f', 'k');
                CREATE TABLE parent (id INTEGER PRIMARY KEY, k TEXT);
                INSERT INTO parent VALUES (1, 'p'), (2, 'p');
                CREATE TABLE kids ("rowid" TEXT, "oid" TEXT, "_rowid_" TEXT, parent_id INTEGER REFERENCES parent(id));
                INSERT INTO kids VALUES ('a', 'b', 'c', 2);
                """)
        let before = try TestSupport.contentDump(path)
        let bytes = try TestSupport.fileBytes(path)
        let job = "version: 1\ndedupe:\n  - entity: shadow\n    key: k\n"
        let error = expectExit(65, "plan of a table without a usable rowid") { _ = try plan(job, db: path) }
        XCTAssertEqual(try TestSupport.fileBytes(path), bytes)
        _ = expectExit(65, "run of a table without a usable rowid") { _ = try run(job, db: path) }
        XCTAssertEqual(try TestSupport.contentDump(path), before)
        assertCanary(path)
        if let error {
            let message = error.description
            XCTAssertTrue(message.contains("shadow"), "the refusal names the table: \(message)")
            XCTAssertTrue(message.lowercased().contains("rowid"), "the refusal says why (rowid): \(message)")
            // `shadow` is an ordinary rowid table whose rowid is hidden by columns named rowid,
            // oid and _rowid_; calling it a WITHOUT ROWID table misleads the operator.
            XCTAssertFalse(
                message.contains("WITHOUT ROWID table"),
                "the refusal should say the rowid is shadowed by columns named rowid, oid and _rowid_, not that the table is WITHOUT ROWID: \(message)"
            )
        }
        // A child that shadows all three cannot be re-pointed and journaled: refused, nothing changed.
        _ = expectExit(65, "run with a shadowing child") { _ = try run("version: 1\ndedupe:\n  - entity: parent\n    key: k\n", db: path) }
        XCTAssertEqual(try TestSupport.contentDump(path), before)
        assertCanary(path)
    }

    // MARK: Schema files

    func testSchemaMigrationWithHostileNames() throws {
        let oldTable = "old \"people\"; --"
        let newTable = "new 'people' /* */"
        let oldColumn = "old col; DROP TABLE canary"
        let newColumn = "new col -- x"
        let doomed = "doomed \"col\""
        let doomedTable = "drop me; DROP TABLE canary"
        let created = "[group]"
        let createdKey = "id\""
        let index = "idx \"a\"; DROP TABLE canary; --"
        let hostileDefault = "'; DROP TABLE canary; --"
        let path = dir.appendingPathComponent("migrate.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                \(canarySQL)
                CREATE TABLE \(q(oldTable)) (id INTEGER PRIMARY KEY, \(q(email)) TEXT, \(q(oldColumn)) TEXT, \(q(doomed)) TEXT, \(q(select)) TEXT);
                INSERT INTO \(q(oldTable)) VALUES (1, 'a', 'x', 'gone', NULL), (2, 'b', 'y', 'gone', 'kept');
                CREATE TABLE \(q(doomedTable)) (id INTEGER PRIMARY KEY);
                """)
        let schemaPath = dir.appendingPathComponent("schema.yaml").path
        try """
        version: 2
        tables:
          canary:
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: note, type: text}
          \(y(created)):
            columns:
              - {name: \(y(createdKey)), type: integer, primary_key: true}
              - {name: \(y(backtick)), type: text, default: \(y("it's \"quoted\""))}
            indexes:
              - {name: \(y("[ix] `bt`")), columns: [\(y(backtick))]}
          \(y(newTable)):
            renamed_from: \(y(oldTable))
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: \(y(email)), type: text}
              - {name: \(y(newColumn)), type: text, renamed_from: [\(y("nope")), \(y(oldColumn))]}
              - {name: \(y(select)), type: text, nullable: false, default: \(y(hostileDefault))}
              - {name: \(y(kanji + " " + emoji)), type: text, default: \(y("x\"y"))}
              - {name: \(y("order")), type: integer, references: {table: \(y(created)), column: \(y(createdKey))}}
            indexes:
              - {name: \(y(index)), columns: [\(y(email)), \(y(select))], unique: true}
            dropped: [\(y(doomed))]
        dropped_tables: [\(y(doomedTable))]

        """.write(toFile: schemaPath, atomically: true, encoding: .utf8)
        let job = "version: 1\nschema: schema.yaml\nallow_data_loss: true\n"
        XCTAssertNoThrow(try Validator.validate(path: schemaPath))

        let bytes = try TestSupport.fileBytes(path)
        let planned = try plan(job, db: path)
        XCTAssertEqual(try TestSupport.fileBytes(path), bytes, "plan must not change a byte")
        XCTAssertGreaterThan(planned.migration.count, 0)
        assertCanary(path, "after plan")

        let summary = try run(job, db: path)
        XCTAssertEqual(summary.status, "completed")
        assertCanary(path, "after the migration")

        func columns(_ table: String) throws -> [String] {
            try rows(path, "SELECT name FROM pragma_table_info(\(lit(table))) ORDER BY cid").compactMap { String.fromDatabaseValue($0[0]) }
        }
        let tables = try rows(path, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'winnow%' ORDER BY name")
            .compactMap { String.fromDatabaseValue($0[0]) }
        XCTAssertEqual(tables, ["canary", created, newTable].sorted())
        XCTAssertEqual(try columns(newTable), ["id", email, newColumn, select, kanji + " " + emoji, "order"])
        XCTAssertEqual(try columns(created), [createdKey, backtick])
        XCTAssertEqual(
            try rows(
                path, "SELECT id, \(q(email)), \(q(newColumn)), \(q(select)), \(q(kanji + " " + emoji)) FROM \(q(newTable)) ORDER BY id"),
            [v(1, "a", "x", hostileDefault, "x\"y"), v(2, "b", "y", "kept", "x\"y")])
        XCTAssertEqual(
            try rows(path, "SELECT name, \"unique\" FROM pragma_index_list(\(lit(newTable))) WHERE origin = 'c'"),
            [v(index, 1)])
        XCTAssertEqual(
            try rows(path, "SELECT name FROM pragma_index_info(\(lit(index))) ORDER BY seqno").compactMap {
                String.fromDatabaseValue($0[0])
            },
            [email, select])
        XCTAssertEqual(
            try rows(path, "SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(\(lit(newTable)))"),
            [v(created, "order", createdKey)])
        XCTAssertEqual(
            try rows(path, "SELECT dflt_value FROM pragma_table_info(\(lit(created))) WHERE name = \(lit(backtick))").first?.first,
            lit("it's \"quoted\"").databaseValue)
        // A NOT NULL column with that default refuses NULLs by default, with the literal text.
        try ScenarioFree.execute(path, "INSERT INTO \(q(newTable)) (id, \(q(email))) VALUES (3, 'c')")
        XCTAssertEqual(try rows(path, "SELECT \(q(select)) FROM \(q(newTable)) WHERE id = 3").first?.first, hostileDefault.databaseValue)
        try ScenarioFree.execute(path, "DELETE FROM \(q(newTable)) WHERE id = 3")

        // No drift; the schema inspect output round-trips to no drift as well.
        XCTAssertEqual(try check(job, db: path).status, "clean", "check after the migration")
        let inspected = try SQLiteBackend.inspectSchema(database: path)
        let inspectedPath = dir.appendingPathComponent("inspected.yaml").path
        try inspected.write(toFile: inspectedPath, atomically: true, encoding: .utf8)
        let model = try SchemaLoader.load(path: inspectedPath)
        XCTAssertEqual(Set(model.tables.map(\.name)), Set(["canary", created, newTable]), inspected)
        let inspectedCheck = try check("version: 1\nschema: inspected.yaml\n", db: path)
        XCTAssertEqual(inspectedCheck.drift, [], inspected)
        // Running it again changes nothing.
        let again = try run(job, db: path)
        XCTAssertEqual(again.migrationSteps, 0)
        assertCanary(path, "after the second run")
    }

    /// Column types and SQL defaults are written in the schema file too. They are not
    /// identifiers, but they must not smuggle a second statement into the migration.
    func testTypesAndSQLDefaultsCannotInjectStatements() throws {
        let attempts: [(String, String)] = [
            ("type-semicolon", "{name: extra, type: \(y("integer; DROP TABLE canary; --"))}"),
            ("type-paren", "{name: extra, type: \(y("integer); DROP TABLE canary; --"))}"),
            ("sql-default", "{name: extra, type: integer, default: {sql: \(y("0); DROP TABLE canary; --"))}}"),
            ("sql-default-newline", "{name: extra, type: integer, default: {sql: \(y("1)\n; DROP TABLE canary;\nSELECT (1"))}}"),
            ("text-default", "{name: extra, type: text, default: \(y("'); DROP TABLE canary; --"))}"),
        ]
        for (name, column) in attempts {
            let path = dir.appendingPathComponent("\(name).sqlite").path
            try TestSupport.makeDatabase(
                at: path, sql: "\(canarySQL) CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');")
            let schemaPath = dir.appendingPathComponent("\(name).yaml").path
            try """
            version: 2
            tables:
              canary:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: note, type: text}
              t:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: v, type: text}
                  - \(column)

            """.write(toFile: schemaPath, atomically: true, encoding: .utf8)
            let job = "version: 1\nschema: \(name).yaml\n"
            let bytes = try TestSupport.fileBytes(path)
            do {
                _ = try plan(job, db: path)
            } catch let error as WinnowError {
                XCTAssertEqual(error.exitCode, 65, "\(name): plan: \(error)")
            }
            XCTAssertEqual(try TestSupport.fileBytes(path), bytes, "\(name): plan changed the file")
            do {
                _ = try run(job, db: path)
            } catch let error as WinnowError {
                XCTAssertEqual(error.exitCode, 65, "\(name): run: \(error)")
            } catch {
                XCTFail("\(name): \(error)")
            }
            assertCanary(path, name)
            // And in a new table (CREATE TABLE) rather than ADD COLUMN.
            try TestSupport.makeDatabase(at: path + ".new", sql: canarySQL)
            _ = try? run(job, db: path + ".new")
            assertCanary(path + ".new", "\(name) in CREATE TABLE")
        }
    }

    func testSeedWithHostileTableNames() throws {
        let seeded = "seed \"t\"; DROP TABLE canary; --"
        let seedPath = dir.appendingPathComponent("seed.sqlite").path
        try TestSupport.makeDatabase(
            at: seedPath,
            sql: """
                CREATE TABLE \(q(seeded)) (\(q(id)) INTEGER PRIMARY KEY, \(q(kanji)) TEXT, \(q(backtick)) TEXT);
                INSERT INTO \(q(seeded)) VALUES (1, 'ä', 'x'), (2, '😀', NULL);
                """)
        let path = dir.appendingPathComponent("target.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                \(canarySQL)
                CREATE TABLE \(q(seeded)) (\(q(id)) INTEGER PRIMARY KEY, \(q(kanji)) TEXT, \(q(backtick)) TEXT);
                """)
        let job = """
            version: 1
            seed:
              name: \(y("seed'; DROP TABLE canary; --"))
              from: seed.sqlite
              tables: [\(y(seeded))]
            dedupe:
              - entity: \(y(seeded))
                key: \(y(backtick))
                winner: [{\(y(id)): desc}]

            """
        let summary = try run(job, db: path)
        XCTAssertEqual(summary.status, "completed")
        XCTAssertEqual(
            try rows(path, "SELECT * FROM \(q(seeded)) ORDER BY 1"),
            [v(1, "ä", "x"), v(2, "😀", nil)])
        assertCanary(path)
        _ = try run(job, db: path)  // the marker with a hostile name is found: not seeded twice
        XCTAssertEqual(try rows(path, "SELECT count(*) FROM \(q(seeded))").first?.first, 2.databaseValue)
        assertCanary(path, "after the second run")
    }
}

/// A direct SQL helper that does not depend on other test files.
private enum ScenarioFree {
    static func execute(_ path: String, _ sql: String) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.write { db in try db.execute(sql: sql) }
    }
}

/// `most_complete` ranks rows by how many non-NULL columns they have; its tie test used to strip
/// " DESC" from the generated SQL, which also cut a quoted column named `x DESC` in two.
final class CompletenessTieTests: XCTestCase {
    func testMostCompleteWithAColumnNamedXDESC() throws {
        let dir = try TestSupport.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("desc.sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, "x DESC" TEXT, "y DESC " TEXT);
                INSERT INTO t VALUES (1, 'a', NULL, NULL), (2, 'a', 'v', NULL), (3, 'a', 'v', 'w'),
                                     (4, 'b', 'v', NULL), (5, 'b', NULL, 'w'), (6, 'b', NULL, NULL);
                """)
        let summary = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: k\n    winner: most_complete\n", db: path)
        XCTAssertEqual(summary.counts.deleted, 4)
        // Group a: row 3 has the most values. Group b: rows 4 and 5 tie on two values; content
        // decides ("x DESC" = 'v' sorts after NULL, so row 5 comes first).
        XCTAssertEqual(try ScenarioKit.column(path, "SELECT id FROM t ORDER BY id", as: Int64.self), [3, 5])
    }
}
