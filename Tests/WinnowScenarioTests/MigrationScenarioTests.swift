import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// Schema-migration scenarios of docs/reference.md sections 3, 4 and 5, end to end through
/// `JobLoader.decode` and `JobRunner.run/plan/check`, with schema files in a scratch folder.
final class MigrationScenarioTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("MigrationScenario")
    }

    override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    // MARK: - Helpers

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    @discardableResult
    func makeDB(_ sql: String, name: String = "db.sqlite") throws -> String {
        try TestSupport.makeDatabase(at: path(name), sql: sql)
    }

    @discardableResult
    func writeSchema(_ yaml: String, name: String = "schema.yaml") throws -> String {
        try TestSupport.writeFile(yaml, to: path(name))
    }

    /// A job naming `schema` (relative to the scratch folder), decoded by the library's loader.
    func job(schema: String? = "schema.yaml", allowDataLoss: Bool = false, extra: String = "") throws -> Job {
        var text = "version: 1\n"
        if let schema { text += "schema: \(schema)\n" }
        if allowDataLoss { text += "allow_data_loss: true\n" }
        text += extra
        return try JobLoader.decode(yaml: text, file: path("job.yaml"), baseDirectory: dir)
    }

    @discardableResult
    func run(_ job: Job, _ db: String) throws -> RunSummary {
        try SQLiteBackend.run(job, options: RunOptions(database: db))
    }

    func plan(_ job: Job, _ db: String) throws -> RunSummary {
        try SQLiteBackend.plan(job, options: RunOptions(database: db, sampleLimit: nil))
    }

    func check(_ job: Job, _ db: String) throws -> RunSummary {
        try SQLiteBackend.check(job, options: RunOptions(database: db))
    }

    func rows(_ db: String, _ sql: String) throws -> [[DatabaseValue]] { try ScenarioKit.rows(db, sql) }

    func strings(_ db: String, _ sql: String) throws -> [String?] { try ScenarioKit.column(db, sql, as: String.self) }

    func columns(_ db: String, _ table: String) throws -> [String] {
        try strings(db, "SELECT name FROM pragma_table_info(\(ScenarioKit.lit(table))) ORDER BY cid").compactMap { $0 }
    }

    func masterNames(_ db: String, type: String, table: String? = nil) throws -> [String] {
        var sql = "SELECT name FROM sqlite_master WHERE type = \(ScenarioKit.lit(type))"
        if let table { sql += " AND tbl_name = \(ScenarioKit.lit(table))" }
        return try strings(db, sql + " ORDER BY name").compactMap { $0 }
    }

    /// The recorded version of the database at `path`, read on a read-only connection.
    func recordedVersion(_ path: String) throws -> Int? { try recordedRecord(path)?.version }

    func recordedRecord(_ path: String) throws -> SchemaVersions.Record? {
        let queue = try DatabaseQueue(
            path: path,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        defer { try? queue.close() }
        return try queue.read { try SchemaVersions.recorded($0) }
    }

    /// (type, name) of every user object of the schema.
    func objects(_ db: String) throws -> [String] {
        try strings(
            db,
            """
            SELECT type || ' ' || name FROM sqlite_master WHERE lower(tbl_name) NOT LIKE 'winnow\\_%' ESCAPE '\\' ORDER BY type, name
            """
        ).compactMap { $0 }
    }

    func tableSQL(_ db: String, _ table: String) throws -> String {
        try strings(db, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = \(ScenarioKit.lit(table))").first.flatMap { $0 }
            ?? ""
    }

    /// What must hold after every successful migration: integrity ok, no foreign key violation,
    /// a second `plan` with no migration step, `check` without drift, no rebuild leftovers.
    func assertSettled(_ job: Job, _ db: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try strings(db, "PRAGMA integrity_check"), ["ok"], "integrity_check", file: file, line: line)
        XCTAssertEqual(try rows(db, "PRAGMA foreign_key_check").count, 0, "foreign_key_check", file: file, line: line)
        let again = try plan(job, db)
        XCTAssertEqual(again.migration.map(\.summary), [], "a second plan has migration steps", file: file, line: line)
        XCTAssertEqual(again.migrationSteps, 0, file: file, line: line)
        let checked = try check(job, db)
        XCTAssertEqual(checked.drift, [], "check reports drift", file: file, line: line)
        XCTAssertNotEqual(checked.status, "drift", file: file, line: line)
        let leftovers = try strings(
            db,
            """
            SELECT name FROM sqlite_master WHERE name LIKE 'winnow\\_rebuild%' ESCAPE '\\' OR name LIKE 'winnow\\_capture%' ESCAPE '\\'
            """)
        XCTAssertEqual(leftovers, [], "rebuild leftovers", file: file, line: line)
    }

    /// `run` (and `plan`) refuse with exit 65, the message names every string of `naming`, and
    /// the user tables' content and schema are unchanged.
    func assertRefused(_ job: Job, _ db: String, naming: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try ScenarioKit.userState(db)
        for (command, body) in [("run", { _ = try self.run(job, db) }), ("plan", { _ = try self.plan(job, db) })]
            as [(String, () throws -> Void)]
        {
            do {
                try body()
                XCTFail("\(command): expected a refusal (65)", file: file, line: line)
            } catch let error as WinnowError {
                XCTAssertEqual(error.exitCode, 65, "\(command): \(error)", file: file, line: line)
                for name in naming {
                    XCTAssertTrue(
                        error.description.contains(name), "\(command): the message does not name '\(name)': \(error)",
                        file: file, line: line)
                }
            } catch {
                XCTFail("\(command): expected a WinnowError, got \(error)", file: file, line: line)
            }
        }
        let after = try ScenarioKit.userState(db)
        XCTAssertEqual(after.schema, before.schema, "schema changed by a refused job", file: file, line: line)
        XCTAssertEqual(after.dump, before.dump, "content changed by a refused job", file: file, line: line)
    }

    // MARK: - The base model (version 1)

    static let baseSQL = """
        CREATE TABLE companies (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE people (
            id INTEGER PRIMARY KEY,
            email TEXT,
            name TEXT,
            phone_number TEXT,
            score INTEGER DEFAULT 0,
            company_id INTEGER REFERENCES companies(id)
        );
        CREATE INDEX people_email ON people (email);
        INSERT INTO companies VALUES (1, 'Acme'), (2, 'Globex');
        INSERT INTO people VALUES (1, 'ada@x', 'Ada', '111', 5, 1), (2, 'alan@x', NULL, NULL, NULL, 2),
                                  (3, NULL, 'Grace', '333', 7, NULL), (4, 'ada@x', 'Ada L.', '444', 1, 1);
        """

    static let companiesYAML = """
          companies:
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: name, type: text, nullable: false}
        """

    static let baseColumns = [
        "{name: id, type: integer, primary_key: true}",
        "{name: email, type: text}",
        "{name: name, type: text}",
        "{name: phone_number, type: text}",
        "{name: score, type: integer, default: 0}",
        "{name: company_id, type: integer, references: {table: companies, column: id}}",
    ]

    static let baseIndexes = ["{name: people_email, columns: [email]}"]

    /// A schema file: companies as in version 1 (unless replaced), people with the given columns.
    static func schema(
        _ version: Int, people columns: [String] = baseColumns, indexes: [String] = baseIndexes,
        peopleName: String = "people", peopleExtra: String = "", companies: String = companiesYAML,
        extraTables: String = "", dropped: [String] = [], droppedIndexes: [String] = [], droppedTables: [String] = []
    ) -> String {
        var text = "version: \(version)\ntables:\n\(companies)\n  \(peopleName):\n"
        if !peopleExtra.isEmpty { text += "    \(peopleExtra)\n" }
        text += "    columns:\n" + columns.map { "      - \($0)\n" }.joined()
        if !indexes.isEmpty { text += "    indexes:\n" + indexes.map { "      - \($0)\n" }.joined() }
        if !dropped.isEmpty { text += "    dropped: [\(dropped.joined(separator: ", "))]\n" }
        if !droppedIndexes.isEmpty { text += "    dropped_indexes: [\(droppedIndexes.joined(separator: ", "))]\n" }
        if !extraTables.isEmpty { text += extraTables + "\n" }
        if !droppedTables.isEmpty { text += "dropped_tables: [\(droppedTables.joined(separator: ", "))]\n" }
        return text
    }

    static func replacing(_ name: String, with column: String, in columns: [String] = baseColumns) -> [String] {
        columns.map { $0.hasPrefix("{name: \(name),") ? column : $0 }
    }

    /// The people rows other than the given columns, by id.
    func people(_ db: String, _ columns: String = "id, email, name, score, company_id") throws -> [[DatabaseValue]] {
        try rows(db, "SELECT \(columns) FROM people ORDER BY id")
    }

    /// Migrates the base database to `yaml`: plan shows steps and changes nothing, run applies
    /// them, and the result is settled. Returns the database path and the job.
    @discardableResult
    func migrate(
        _ yaml: String, allowDataLoss: Bool = false, sql: String = baseSQL,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> (db: String, job: Job, summary: RunSummary) {
        let db = try makeDB(sql)
        try writeSchema(yaml)
        let job = try job(allowDataLoss: allowDataLoss)
        let bytes = try TestSupport.fileBytes(db)
        let planned = try plan(job, db)
        XCTAssertFalse(planned.migration.isEmpty, "plan shows no migration step", file: file, line: line)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes, "plan changed the database file", file: file, line: line)
        let summary = try run(job, db)
        XCTAssertEqual(summary.status, "completed", file: file, line: line)
        XCTAssertEqual(
            summary.migrationSteps, planned.migration.count, "run applied another number of steps than planned",
            file: file, line: line)
        try assertSettled(job, db, file: file, line: line)
        return (db, job, summary)
    }

    // MARK: - The base model itself

    func testBaseSchemaMatchesBaseDatabase() throws {
        let db = try makeDB(Self.baseSQL)
        try writeSchema(Self.schema(1))
        let job = try job()
        XCTAssertEqual(try plan(job, db).migration.map(\.summary), [])
        XCTAssertEqual(try check(job, db).drift, [])
        try run(job, db)
        XCTAssertEqual(try recordedVersion(db), 1)
        try assertSettled(job, db)
    }

    /// A job whose target was read once (a command over many stores) brings each store to that
    /// target, though the file changes or goes after it was read; a job that reads the file
    /// when it runs gets the file as it is then.
    func testATargetReadOnceStaysTheTargetWhateverHappensToTheFile() throws {
        try writeSchema(Self.schema(1))
        let once = try JobRunner.readingTarget(try job())
        XCTAssertEqual(once.readTarget?.version, 1)
        try writeSchema(
            Self.schema(
                2,
                extraTables: """
                      tags:
                        columns:
                          - {name: id, type: integer, primary_key: true}
                    """))
        let first = try makeDB(Self.baseSQL, name: "first.sqlite")
        try run(once, first)
        XCTAssertEqual(try recordedVersion(first), 1)
        XCTAssertEqual(try masterNames(first, type: "table", table: "tags"), [])
        try FileManager.default.removeItem(atPath: path("schema.yaml"))
        let second = try makeDB(Self.baseSQL, name: "second.sqlite")
        try run(once, second)
        XCTAssertEqual(try recordedVersion(second), 1)
        XCTAssertThrowsError(try run(try job(), second)) { XCTAssertEqual(($0 as? WinnowError)?.exitCode, 66) }
    }

    // MARK: - Lightweight changes

    func testAddTable() throws {
        let before = try ScenarioKit.userState(try makeDB(Self.baseSQL, name: "reference.sqlite"))
        let (db, _, _) = try migrate(
            Self.schema(
                2,
                extraTables: """
                      tags:
                        columns:
                          - {name: id, type: integer, primary_key: true}
                          - {name: label, type: text, nullable: false, default: "none"}
                          - {name: person_id, type: integer, references: {table: people, column: id}}
                        indexes:
                          - {name: tags_label, columns: [label], unique: true}
                    """))
        XCTAssertEqual(try columns(db, "tags"), ["id", "label", "person_id"])
        XCTAssertEqual(try masterNames(db, type: "index", table: "tags").filter { !$0.hasPrefix("sqlite_") }, ["tags_label"])
        let after = try ScenarioKit.userState(db)
        XCTAssertEqual(after.dump["people"], before.dump["people"])
        XCTAssertEqual(after.dump["companies"], before.dump["companies"])
        XCTAssertEqual(after.dump["tags"], [])
        XCTAssertThrowsError(
            try ScenarioKit.execute(db, "INSERT INTO tags (label, person_id) VALUES ('x', 99)"), "tags.person_id references people")
    }

    func testRenameTableByHint() throws {
        let reference = try ScenarioKit.userState(try makeDB(Self.baseSQL, name: "reference.sqlite"))
        let (db, _, summary) = try migrate(Self.schema(2, peopleName: "contacts", peopleExtra: "renamed_from: people"))
        XCTAssertTrue(
            summary.migration.contains { $0.summary.contains("rename table people to contacts") }, "\(summary.migration.map(\.summary))")
        XCTAssertFalse(summary.migration.contains { $0.rebuildsTable })
        XCTAssertEqual(try masterNames(db, type: "table").filter { !$0.hasPrefix("winnow_") }, ["companies", "contacts"])
        let after = try ScenarioKit.userState(db)
        XCTAssertEqual(after.dump["contacts"], reference.dump["people"], "rows and rowids kept")
        XCTAssertEqual(after.dump["companies"], reference.dump["companies"])
        XCTAssertEqual(try masterNames(db, type: "index", table: "contacts"), ["people_email"])
        XCTAssertEqual(try strings(db, "SELECT \"table\" FROM pragma_foreign_key_list('contacts')"), ["companies"])
    }

    /// Renaming a table that a child references: SQLite's RENAME updates the child's foreign
    /// key, so the target (which names the new table, the only one it can name) is reachable.
    func testRenameTableReferencedByChild() throws {
        let sql =
            Self.baseSQL + """

                CREATE TABLE notes (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES people(id) ON DELETE CASCADE, body TEXT);
                INSERT INTO notes VALUES (1, 1, 'n1'), (2, 1, 'n2'), (3, 3, 'n3');
                """
        let reference = try ScenarioKit.userState(try makeDB(sql, name: "reference.sqlite"))
        let (db, _, summary) = try migrate(
            Self.schema(
                2, peopleName: "contacts", peopleExtra: "renamed_from: [persons, people]",
                extraTables: """
                      notes:
                        columns:
                          - {name: id, type: integer, primary_key: true}
                          - {name: person_id, type: integer, references: {table: contacts, column: id}}
                          - {name: body, type: text}
                    """), sql: sql)
        XCTAssertTrue(
            summary.migration.contains { $0.summary.contains("rename table people to contacts") }, "\(summary.migration.map(\.summary))")
        XCTAssertEqual(try masterNames(db, type: "table").filter { !$0.hasPrefix("winnow_") }, ["companies", "contacts", "notes"])
        let after = try ScenarioKit.userState(db)
        XCTAssertEqual(after.dump["contacts"], reference.dump["people"])
        XCTAssertEqual(after.dump["notes"], reference.dump["notes"], "no child row lost")
        XCTAssertEqual(try strings(db, "SELECT \"table\" FROM pragma_foreign_key_list('notes')"), ["contacts"])
    }

    func testAddNullableColumn() throws {
        let reference = try people(try makeDB(Self.baseSQL, name: "reference.sqlite"))
        let (db, _, _) = try migrate(Self.schema(2, people: Self.baseColumns + ["{name: nickname, type: text}"]))
        XCTAssertEqual(try columns(db, "people").last, "nickname")
        XCTAssertEqual(try people(db), reference)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people WHERE nickname IS NULL"), 4)
    }

    func testAddNotNullColumnWithDefault() throws {
        let reference = try people(try makeDB(Self.baseSQL, name: "reference.sqlite"))
        let (db, _, _) = try migrate(
            Self.schema(
                2,
                people: Self.baseColumns + [
                    "{name: visits, type: integer, nullable: false, default: 0}",
                    "{name: status, type: text, nullable: false, default: \"it's new\"}",
                ]))
        XCTAssertEqual(try people(db), reference)
        XCTAssertEqual(try rows(db, "SELECT DISTINCT visits, status FROM people"), [[0.databaseValue, "it's new".databaseValue]])
        try ScenarioKit.execute(db, "INSERT INTO people (id, email) VALUES (10, 'new@x')")
        XCTAssertEqual(try rows(db, "SELECT visits, status FROM people WHERE id = 10"), [[0.databaseValue, "it's new".databaseValue]])
    }

    func testRenameColumn() throws {
        let reference = try people(try makeDB(Self.baseSQL, name: "reference.sqlite"), "id, phone_number")
        let (db, _, summary) = try migrate(
            Self.schema(2, people: Self.replacing("phone_number", with: "{name: phone, type: text, renamed_from: phone_number}")))
        XCTAssertTrue(summary.migration.contains { $0.summary.contains("rename column") }, "\(summary.migration)")
        XCTAssertFalse(summary.migration.contains { $0.rebuildsTable }, "a rename is ALTER TABLE RENAME COLUMN, not a rebuild")
        XCTAssertEqual(try columns(db, "people"), ["id", "email", "name", "phone", "score", "company_id"])
        XCTAssertEqual(try people(db, "id, phone"), reference)
    }

    /// A column renamed twice (phone_number → phone → mobile), found from a database two versions behind.
    func testColumnRenamedTwiceFromDatabaseTwoVersionsBehind() throws {
        let db = try makeDB(Self.baseSQL)
        let reference = try people(db, "id, phone_number")
        try writeSchema(Self.schema(1), name: "v1.yaml")
        try run(try job(schema: "v1.yaml"), db)
        XCTAssertEqual(try recordedVersion(db), 1)
        // Version 2 said {name: phone, renamed_from: phone_number}; version 3 says:
        try writeSchema(
            Self.schema(3, people: Self.replacing("phone_number", with: "{name: mobile, type: text, renamed_from: [phone, phone_number]}")),
            name: "v3.yaml")
        let v3 = try job(schema: "v3.yaml")
        let summary = try run(v3, db)
        XCTAssertTrue(
            summary.migration.contains { $0.summary.contains("phone_number") && $0.summary.contains("mobile") }, "\(summary.migration)")
        XCTAssertEqual(try columns(db, "people"), ["id", "email", "name", "mobile", "score", "company_id"])
        XCTAssertEqual(try people(db, "id, mobile"), reference)
        XCTAssertEqual(try recordedVersion(db), 3)
        try assertSettled(v3, db)

        // A database that is one version behind (it already says phone) also arrives at mobile.
        let other = try makeDB(Self.baseSQL.replacingOccurrences(of: "phone_number TEXT", with: "phone TEXT"), name: "v2.sqlite")
        try run(v3, other)
        XCTAssertEqual(try people(other, "id, mobile"), reference)
        try assertSettled(v3, other)
    }

    func testDropColumnOnlyWithAllowDataLoss() throws {
        let db = try makeDB(Self.baseSQL)
        let reference = try people(db, "id, name, score, company_id")
        // Drops phone_number, and email together with its index.
        let columns = Self.baseColumns.filter { !$0.hasPrefix("{name: phone_number,") && !$0.hasPrefix("{name: email,") }
        try writeSchema(
            Self.schema(2, people: columns, indexes: [], dropped: ["phone_number", "email"], droppedIndexes: ["people_email"]))
        try assertRefused(try job(), db, naming: ["people", "phone_number"])
        try assertRefused(try job(), db, naming: ["people", "email"])

        let job = try job(allowDataLoss: true)
        let summary = try run(job, db)
        XCTAssertEqual(summary.status, "completed")
        XCTAssertEqual(try self.columns(db, "people"), ["id", "name", "score", "company_id"])
        XCTAssertEqual(try people(db, "id, name, score, company_id"), reference)
        XCTAssertEqual(try masterNames(db, type: "index", table: "people"), [])
        try assertSettled(job, db)
    }

    /// What the schema file does not mention is kept, whatever allow_data_loss says: columns,
    /// indexes and tables an application added after the file was written. `plan` and `run`
    /// say so, and `check` reports it as drift.
    func testWhatTheFileDoesNotMentionIsKept() throws {
        let db = try makeDB(
            Self.baseSQL + """

                CREATE TABLE audit (id INTEGER PRIMARY KEY, line TEXT);
                INSERT INTO audit VALUES (1, 'a');
                """)
        let reference = try ScenarioKit.userState(db)
        let columns = Self.baseColumns.filter { !$0.hasPrefix("{name: phone_number,") }
        try writeSchema(Self.schema(2, people: columns, indexes: []))
        for allowDataLoss in [false, true] {
            let job = try job(allowDataLoss: allowDataLoss)
            let planned = try plan(job, db)
            XCTAssertEqual(planned.migration, [], "nothing to change")
            let kept = Set(planned.kept.map(\.description))
            XCTAssertEqual(
                kept,
                [
                    "column people.phone_number (not in the schema file; list it under dropped to drop it)",
                    "index people_email on people (not in the schema file; list it under dropped_indexes to drop it)",
                    "table audit (not in the schema file; list it under dropped_tables to drop it)",
                ])
            let summary = try run(job, db)
            XCTAssertEqual(summary.status, "completed")
            XCTAssertEqual(Set(summary.kept.map(\.description)), kept, "run says what it kept")
            XCTAssertEqual(try ScenarioKit.userState(db).dump, reference.dump, "rows kept")
            XCTAssertEqual(try self.columns(db, "people"), ["id", "email", "name", "phone_number", "score", "company_id"])
            XCTAssertEqual(try masterNames(db, type: "index", table: "people"), ["people_email"])
            XCTAssertEqual(try masterNames(db, type: "table").filter { !$0.hasPrefix("winnow_") }, ["audit", "companies", "people"])
            let check = try self.check(job, db)
            XCTAssertEqual(check.drift.count, 3, "\(check.drift)")
            XCTAssertTrue(check.drift.allSatisfy { $0.contains("kept by a run") }, "\(check.drift)")
        }
    }

    func testDropTableOnlyWithAllowDataLoss() throws {
        let db = try makeDB(
            Self.baseSQL + """

                CREATE TABLE legacy_log (id INTEGER PRIMARY KEY, line TEXT);
                CREATE INDEX legacy_log_line ON legacy_log (line);
                INSERT INTO legacy_log VALUES (1, 'a'), (2, 'b');
                """)
        let reference = try people(db)
        try writeSchema(Self.schema(2, droppedTables: ["legacy_log"]))
        try assertRefused(try job(), db, naming: ["legacy_log", "dropped_tables", "allow_data_loss"])

        let job = try job(allowDataLoss: true)
        try run(job, db)
        XCTAssertEqual(try masterNames(db, type: "table").filter { !$0.hasPrefix("winnow_") }, ["companies", "people"])
        XCTAssertEqual(try masterNames(db, type: "index", table: "legacy_log"), [])
        XCTAssertEqual(try people(db), reference)
        try assertSettled(job, db)
    }

    func testMakeColumnNullable() throws {
        let reference = try ScenarioKit.userState(try makeDB(Self.baseSQL, name: "reference.sqlite"))
        let (db, _, _) = try migrate(
            Self.schema(
                2,
                companies: """
                      companies:
                        columns:
                          - {name: id, type: integer, primary_key: true}
                          - {name: name, type: text}
                    """))
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT \"notnull\" FROM pragma_table_info('companies') WHERE name = 'name'"), 0)
        let after = try ScenarioKit.userState(db)
        XCTAssertEqual(after.dump, reference.dump, "rows (and rowids) kept")
        try ScenarioKit.execute(db, "INSERT INTO companies (id, name) VALUES (3, NULL)")
    }

    func testMakeNotNullWithDefaultBackfillsNulls() throws {
        let reference = try people(try makeDB(Self.baseSQL, name: "reference.sqlite"), "id, email, score, company_id")
        let (db, _, summary) = try migrate(
            Self.schema(2, people: Self.replacing("name", with: "{name: name, type: text, nullable: false, default: anon}")))
        XCTAssertTrue(summary.migration.contains { $0.rebuildsTable })
        XCTAssertEqual(try strings(db, "SELECT name FROM people ORDER BY id"), ["Ada", "anon", "Grace", "Ada L."])
        XCTAssertEqual(try people(db, "id, email, score, company_id"), reference)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT \"notnull\" FROM pragma_table_info('people') WHERE name = 'name'"), 1)
        XCTAssertEqual(try strings(db, "SELECT dflt_value FROM pragma_table_info('people') WHERE name = 'name'"), ["'anon'"])
        XCTAssertThrowsError(try ScenarioKit.execute(db, "INSERT INTO people (id, name) VALUES (20, NULL)"), "NOT NULL holds")
    }

    func testChangeDefault() throws {
        let reference = try ScenarioKit.userState(try makeDB(Self.baseSQL, name: "reference.sqlite"))
        let (db, _, _) = try migrate(Self.schema(2, people: Self.replacing("score", with: "{name: score, type: integer, default: 10}")))
        XCTAssertEqual(try ScenarioKit.userState(db).dump, reference.dump, "rows, NULLs and rowids kept")
        try ScenarioKit.execute(db, "INSERT INTO people (id, email) VALUES (10, 'new@x')")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT score FROM people WHERE id = 10"), 10)
    }

    func testAddAndDropIndex() throws {
        let reference = try ScenarioKit.userState(try makeDB(Self.baseSQL, name: "reference.sqlite"))
        let (db, _, summary) = try migrate(
            Self.schema(
                2,
                indexes: [
                    "{name: people_name_email, columns: [name, email]}",
                    "{name: people_phone, columns: [phone_number], unique: true}",
                ], droppedIndexes: ["people_email"]))
        XCTAssertFalse(summary.migration.contains { $0.rebuildsTable })
        XCTAssertEqual(try masterNames(db, type: "index", table: "people"), ["people_name_email", "people_phone"])
        XCTAssertEqual(
            try rows(db, "SELECT name, \"unique\" FROM pragma_index_list('people') ORDER BY name"),
            [["people_name_email".databaseValue, 0.databaseValue], ["people_phone".databaseValue, 1.databaseValue]])
        XCTAssertEqual(try strings(db, "SELECT name FROM pragma_index_info('people_name_email') ORDER BY seqno"), ["name", "email"])
        XCTAssertEqual(try ScenarioKit.userState(db).dump, reference.dump)
    }

    func testNonConstantDefaultAddedByRebuild() throws {
        let reference = try ScenarioKit.userState(try makeDB(Self.baseSQL, name: "reference.sqlite"))
        let (db, _, summary) = try migrate(
            Self.schema(
                2,
                people: Self.baseColumns + [
                    "{name: created_at, type: text, nullable: false, default: {sql: CURRENT_TIMESTAMP}}",
                    "{name: stamp, type: integer, default: {sql: \"(strftime('%s','now'))\"}}",
                ]))
        XCTAssertTrue(summary.migration.contains { $0.rebuildsTable }, "ALTER TABLE ADD COLUMN cannot add a non-constant default")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people WHERE created_at IS NULL OR stamp IS NULL"), 0)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people WHERE created_at LIKE '20__-__-__ __:__:__'"), 4)
        XCTAssertEqual(
            try rows(db, "SELECT rowid, id, email, name, phone_number, score, company_id FROM people ORDER BY rowid"),
            reference.dump["people"])
        XCTAssertEqual(try masterNames(db, type: "index", table: "people"), ["people_email"])
    }

    /// The same, with the expression written as `schema inspect` prints it (SQLite reports the
    /// default of `DEFAULT (expr)` without its parentheses).
    func testNonConstantDefaultWithoutParenthesesAddedByRebuild() throws {
        let reference = try ScenarioKit.userState(try makeDB(Self.baseSQL, name: "reference.sqlite"))
        let (db, _, summary) = try migrate(
            Self.schema(
                2,
                people: Self.baseColumns + [
                    "{name: stamp, type: integer, default: {sql: \"strftime('%s','now')\"}}",
                    "{name: day, type: text, default: {sql: CURRENT_DATE}}",
                ]))
        XCTAssertTrue(summary.migration.contains { $0.rebuildsTable }, "\(summary.migration.map(\.summary))")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people WHERE stamp > 1600000000 AND day LIKE '20__-__-__'"), 4)
        XCTAssertEqual(
            try rows(db, "SELECT rowid, id, email, name, phone_number, score, company_id FROM people ORDER BY rowid"),
            reference.dump["people"])
    }

    // MARK: - Refusals

    func testTypeChangeIsRefused() throws {
        let db = try makeDB(Self.baseSQL)
        try writeSchema(Self.schema(2, people: Self.replacing("score", with: "{name: score, type: text, default: 0}")))
        try assertRefused(try job(allowDataLoss: true), db, naming: ["people", "score", "integer", "text"])
    }

    func testNewPrimaryKeyIsRefused() throws {
        let db = try makeDB(Self.baseSQL)
        try writeSchema(Self.schema(2, people: Self.baseColumns + ["{name: uid, type: integer, primary_key: true}"]))
        try assertRefused(try job(allowDataLoss: true), db, naming: ["people", "uid"])

        // Moving the primary key to another column.
        try writeSchema(
            Self.schema(
                2,
                companies: """
                      companies:
                        columns:
                          - {name: id, type: integer}
                          - {name: name, type: text, nullable: false, primary_key: true}
                    """))
        try assertRefused(try job(allowDataLoss: true), db, naming: ["companies", "name"])
    }

    func testNotNullWithoutDefaultIsRefused() throws {
        let db = try makeDB(Self.baseSQL)
        try writeSchema(Self.schema(2, people: Self.baseColumns + ["{name: nick, type: text, nullable: false}"]))
        try assertRefused(try job(), db, naming: ["people", "nick"])

        try writeSchema(Self.schema(2, people: Self.replacing("email", with: "{name: email, type: text, nullable: false}")))
        try assertRefused(try job(), db, naming: ["people", "email"])
    }

    func testRefusalAfterOtherwiseValidStepsChangesNothing() throws {
        // A new table, a new column, a rename: all lightweight, but one type change refuses the lot.
        let db = try makeDB(Self.baseSQL)
        var columns = Self.replacing("phone_number", with: "{name: phone, type: text, renamed_from: phone_number}")
        columns = Self.replacing("score", with: "{name: score, type: real, default: 0}", in: columns)
        try writeSchema(
            Self.schema(
                2, people: columns + ["{name: nickname, type: text}"],
                extraTables: """
                      tags:
                        columns:
                          - {name: id, type: integer, primary_key: true}
                    """))
        try assertRefused(try job(), db, naming: ["people", "score"])
        XCTAssertNil(try recordedVersion(db))
    }

    // MARK: - A rebuild keeps everything around the table

    static let richSQL = """
        CREATE TABLE companies (id INTEGER PRIMARY KEY, name TEXT NOT NULL CHECK (length(name) > 0));
        CREATE TABLE people (
            id INTEGER PRIMARY KEY,
            email TEXT COLLATE NOCASE,
            code TEXT UNIQUE,
            score INTEGER DEFAULT 0 CHECK (score >= 0),
            company_id INTEGER REFERENCES companies(id) ON DELETE CASCADE,
            CHECK (email IS NULL OR email LIKE '%@%')
        );
        CREATE INDEX people_email ON people (email);
        CREATE UNIQUE INDEX "people code+score" ON people (code, score);
        CREATE TABLE notes (id INTEGER PRIMARY KEY, person_id INTEGER NOT NULL REFERENCES people(id) ON DELETE CASCADE, body TEXT);
        CREATE INDEX notes_person ON notes (person_id);
        CREATE TABLE audit (id INTEGER PRIMARY KEY, person_id INTEGER, what TEXT);
        CREATE TRIGGER people_audit AFTER UPDATE OF score ON people BEGIN
            INSERT INTO audit (person_id, what) VALUES (NEW.id, 'score ' || NEW.score);
        END;
        CREATE TRIGGER companies_audit AFTER INSERT ON companies BEGIN
            INSERT INTO audit (person_id, what) VALUES (NULL, 'company ' || NEW.name);
        END;
        CREATE VIEW people_view AS SELECT p.id, p.email, c.name AS company FROM people p LEFT JOIN companies c ON c.id = p.company_id;
        CREATE VIEW company_count AS SELECT count(*) AS n FROM companies;
        INSERT INTO companies VALUES (1, 'Acme'), (2, 'Globex');
        INSERT INTO people VALUES (1, 'ada@x', 'A1', 5, 1), (2, 'alan@x', 'A2', NULL, 2), (3, NULL, 'G3', 7, NULL),
                                  (4, 'Edsger@X', 'E4', 1, 1), (5, 'barbara@x', NULL, 2, 2);
        INSERT INTO notes (person_id, body) SELECT id, 'first' FROM people;
        INSERT INTO notes (person_id, body) SELECT id, 'second' FROM people;
        """

    static let richYAML = """
        version: 2
        tables:
          companies:
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: name, type: text}
          people:
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: email, type: text}
              - {name: code, type: text}
              - {name: score, type: integer, default: 1}
              - {name: company_id, type: integer, references: {table: companies, column: id}}
            indexes:
              - {name: people_email, columns: [email]}
              - {name: "people code+score", columns: [code, score], unique: true}
          notes:
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: person_id, type: integer, nullable: false, references: {table: people, column: id}}
              - {name: body, type: text}
            indexes:
              - {name: notes_person, columns: [person_id]}
          audit:
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: person_id, type: integer}
              - {name: what, type: text}
        """

    func testRebuildKeepsIndexesTriggersViewsConstraintsAndForeignKeys() throws {
        let reference = try ScenarioKit.userState(try makeDB(Self.richSQL, name: "reference.sqlite"))
        // people: default of score changes (rebuild); companies: name becomes nullable (rebuild).
        let (db, _, summary) = try migrate(Self.richYAML, sql: Self.richSQL)
        XCTAssertEqual(
            Set(summary.migration.filter(\.rebuildsTable).map { $0.summary.components(separatedBy: ":")[0] }),
            ["rebuild table people", "rebuild table companies"], "\(summary.migration.map(\.summary))")

        // Every row of every table kept, with its rowid; the children were not cascaded.
        let after = try ScenarioKit.userState(db)
        XCTAssertEqual(after.dump, reference.dump)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM notes"), 10)

        // Same objects by name: indexes (same names), triggers, views.
        XCTAssertEqual(try objects(db), try objects(path("reference.sqlite")))
        XCTAssertEqual(
            try masterNames(db, type: "index", table: "people"),
            ["people code+score", "people_email", "sqlite_autoindex_people_1"])
        XCTAssertEqual(try masterNames(db, type: "trigger"), ["companies_audit", "people_audit"])
        XCTAssertEqual(try masterNames(db, type: "view"), ["company_count", "people_view"])

        // Clauses kept in the table definitions.
        let peopleSQL = try tableSQL(db, "people")
        for clause in [
            "COLLATE NOCASE", "UNIQUE", "CHECK (score >= 0)", "CHECK (email IS NULL OR email LIKE '%@%')",
            "REFERENCES companies(id) ON DELETE CASCADE",
        ] {
            XCTAssertTrue(peopleSQL.contains(clause), "people lost '\(clause)': \(peopleSQL)")
        }
        let companiesSQL = try tableSQL(db, "companies")
        XCTAssertTrue(companiesSQL.contains("CHECK (length(name) > 0)"), companiesSQL)
        XCTAssertEqual(try strings(db, "SELECT \"table\" FROM pragma_foreign_key_list('notes')"), ["people"])
        XCTAssertEqual(
            try strings(db, "SELECT \"table\" || ':' || on_delete FROM pragma_foreign_key_list('people')"), ["companies:CASCADE"])

        // ...and in force.
        func fails(_ sql: String, _ what: String, line: UInt = #line) {
            XCTAssertThrowsError(try ScenarioKit.execute(db, sql), what, line: line)
        }
        fails("INSERT INTO people (id, email, score) VALUES (20, 'x@x', -1)", "CHECK on score")
        fails("INSERT INTO people (id, email) VALUES (21, 'no-at-sign')", "table CHECK")
        fails("INSERT INTO people (id, email, code) VALUES (22, 'y@x', 'A1')", "UNIQUE on code")
        fails("INSERT INTO people (id, email, company_id) VALUES (23, 'z@x', 99)", "foreign key to companies")
        fails("INSERT INTO notes (person_id, body) VALUES (99, 'orphan')", "foreign key to people")
        fails("INSERT INTO companies (id, name) VALUES (9, '')", "CHECK on companies")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people WHERE email = 'EDSGER@x'"), 1, "COLLATE NOCASE")
        try ScenarioKit.execute(db, "INSERT INTO people (id, email) VALUES (30, 'new@x')")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT score FROM people WHERE id = 30"), 1, "the new default")
        try ScenarioKit.execute(db, "INSERT INTO companies (id, name) VALUES (3, NULL)")
        try ScenarioKit.execute(db, "DELETE FROM audit")
        try ScenarioKit.execute(db, "UPDATE people SET score = 9 WHERE id = 1")
        XCTAssertEqual(try strings(db, "SELECT what FROM audit ORDER BY id"), ["score 9"], "people's trigger fires")
        try ScenarioKit.execute(db, "INSERT INTO companies (id, name) VALUES (4, 'Initech')")
        XCTAssertEqual(try strings(db, "SELECT what FROM audit ORDER BY id"), ["score 9", "company Initech"], "companies' trigger fires")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people_view WHERE company = 'Acme'"), 2)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT n FROM company_count"), 4)
        // The cascades still work when asked for.
        try ScenarioKit.execute(db, "DELETE FROM people WHERE id = 1")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM notes"), 8)
        try ScenarioKit.execute(db, "DELETE FROM companies WHERE id = 2")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people WHERE company_id = 2"), 0)
        XCTAssertEqual(try strings(db, "PRAGMA integrity_check"), ["ok"])
    }

    func testRebuildOfParentWithForeignKeysOnDoesNotCascade() throws {
        // A NOT NULL backfill and rebuild of a parent whose children cascade on delete.
        let sql = """
            CREATE TABLE parents (id INTEGER PRIMARY KEY, label TEXT);
            CREATE TABLE children (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parents(id) ON DELETE CASCADE ON UPDATE CASCADE);
            CREATE TABLE grandchildren (id INTEGER PRIMARY KEY, child_id INTEGER REFERENCES children(id) ON DELETE CASCADE);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
            INSERT INTO parents SELECT i, CASE WHEN i % 3 = 0 THEN NULL ELSE 'p' || i END FROM n;
            INSERT INTO children SELECT id, id FROM parents;
            INSERT INTO children SELECT id + 1000, id FROM parents;
            INSERT INTO grandchildren SELECT id, id FROM children;
            """
        let yaml = """
            version: 2
            tables:
              parents:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: label, type: text, nullable: false, default: "?"}
              children:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: parent_id, type: integer, references: {table: parents, column: id}}
              grandchildren:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: child_id, type: integer, references: {table: children, column: id}}
            """
        let (db, _, _) = try migrate(yaml, sql: sql)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM parents"), 300)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM parents WHERE label = '?'"), 100)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM children"), 600)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM grandchildren"), 600)
    }

    /// A rebuild of a table whose names need quoting, without an INTEGER PRIMARY KEY (its rowids
    /// must survive), with an index, a trigger and a view that need quoting too.
    func testRebuildOfAwkwardlyNamedRowidTable() throws {
        let sql = #"""
            CREATE TABLE "my table" ("key" TEXT PRIMARY KEY, "first name" TEXT, "true" INTEGER DEFAULT 0, "名前" TEXT);
            CREATE INDEX "idx ""q""" ON "my table" ("first name", "名前");
            CREATE TABLE "log table" (what TEXT);
            CREATE TRIGGER "my trigger" AFTER INSERT ON "my table" BEGIN INSERT INTO "log table" VALUES (NEW."key"); END;
            CREATE VIEW "my view" AS SELECT "key", "first name" FROM "my table";
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50)
            INSERT INTO "my table" SELECT 'k' || i, CASE WHEN i % 4 = 0 THEN NULL ELSE 'n' || i END, i, 'ü' || i FROM n;
            DELETE FROM "my table" WHERE "true" IN (3, 17);
            DELETE FROM "log table";
            """#
        let reference = try makeDB(sql, name: "reference.sqlite")
        let expected = try rows(
            reference, #"SELECT rowid, "key", coalesce("first name", '?'), "true", "名前" FROM "my table" ORDER BY rowid"#)
        let (db, _, summary) = try migrate(
            #"""
            version: 2
            tables:
              "my table":
                columns:
                  - {name: key, type: text, primary_key: true}
                  - {name: "first name", type: text, nullable: false, default: "?"}
                  - {name: "true", type: integer, default: 1}
                  - {name: 名前, type: text}
                indexes:
                  - {name: 'idx "q"', columns: ["first name", 名前]}
              "log table":
                columns:
                  - {name: what, type: text}
            """#, sql: sql)
        XCTAssertTrue(summary.migration.contains { $0.rebuildsTable })
        XCTAssertEqual(try rows(db, #"SELECT rowid, * FROM "my table" ORDER BY rowid"#), expected, "rows and rowids kept, NULLs filled")
        XCTAssertEqual(try masterNames(db, type: "index", table: "my table"), ["idx \"q\"", "sqlite_autoindex_my table_1"])
        XCTAssertEqual(try objects(db), try objects(reference))
        try ScenarioKit.execute(db, #"INSERT INTO "my table" ("key") VALUES ('new')"#)
        XCTAssertEqual(try strings(db, #"SELECT what FROM "log table""#), ["new"], "the trigger fires")
        XCTAssertEqual(
            try rows(db, #"SELECT v."first name", t."true" FROM "my view" v JOIN "my table" t USING ("key") WHERE "key" = 'new'"#).first,
            ["?".databaseValue, 1.databaseValue])
        XCTAssertThrowsError(
            try ScenarioKit.execute(db, #"INSERT INTO "my table" ("key") VALUES ('k1')"#), "the primary key is still unique")
    }

    /// Dropping a column that a view uses would break the view: refused, nothing changed.
    func testDropColumnUsedByViewIsRefused() throws {
        let db = try makeDB(Self.baseSQL + "\nCREATE VIEW phones AS SELECT id, phone_number FROM people;")
        try writeSchema(
            Self.schema(2, people: Self.baseColumns.filter { !$0.hasPrefix("{name: phone_number,") }, dropped: ["phone_number"]))
        try assertRefused(try job(allowDataLoss: true), db, naming: ["people", "phone_number"])
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM phones"), 4)
    }

    // MARK: - Versions

    func testAppliedVersionAndChecksumAreRecorded() throws {
        let db = try makeDB(Self.baseSQL)
        let v1 = try writeSchema(Self.schema(1), name: "v1.yaml")
        try run(try job(schema: "v1.yaml"), db)
        var recorded = try XCTUnwrap(try recordedRecord(db))
        XCTAssertEqual(recorded.version, 1)
        XCTAssertEqual(recorded.checksum, try SchemaVersions.checksum(of: try SchemaLoader.load(path: v1)))
        XCTAssertEqual(recorded.checksum.count, 64)

        let v2 = try writeSchema(Self.schema(2, people: Self.baseColumns + ["{name: nickname, type: text}"]), name: "v2.yaml")
        let job2 = try job(schema: "v2.yaml")
        try run(job2, db)
        recorded = try XCTUnwrap(try recordedRecord(db))
        XCTAssertEqual(recorded.version, 2)
        XCTAssertEqual(recorded.checksum, try SchemaVersions.checksum(of: try SchemaLoader.load(path: v2)))
        XCTAssertNotEqual(recorded.checksum, try SchemaVersions.checksum(of: try SchemaLoader.load(path: v1)))
        try assertSettled(job2, db)

        // Same model, other formatting: same checksum.
        let reformatted = try writeSchema(
            """
            # the same model, written differently
            version: 2
            tables:
              companies:
                columns:
                  - name: id
                    type: INTEGER
                    primary_key: true
                  - {name: name, type: text, nullable: false}
              people:
                columns: [{name: id, type: integer, primary_key: true}, {name: email, type: text}, {name: name, type: text},
                          {name: phone_number, type: text}, {name: score, type: integer, default: 0},
                          {name: company_id, type: integer, references: {table: companies, column: id}}, {name: nickname, type: text}]
                indexes: [{name: people_email, columns: email}]
            """, name: "v2b.yaml")
        XCTAssertEqual(try SchemaVersions.checksum(of: try SchemaLoader.load(path: reformatted)), recorded.checksum)
    }

    func testDatabaseNewerThanTargetIsRefused() throws {
        let db = try makeDB(Self.baseSQL)
        try writeSchema(Self.schema(1), name: "v1.yaml")
        try writeSchema(Self.schema(2, people: Self.baseColumns + ["{name: nickname, type: text}"]), name: "v2.yaml")
        try run(try job(schema: "v2.yaml"), db)
        XCTAssertEqual(try recordedVersion(db), 2)
        let recorded = try recordedRecord(db)

        // Version 1 would drop nickname (allowed here): still refused, it is a downgrade.
        let old = try job(schema: "v1.yaml", allowDataLoss: true)
        try assertRefused(old, db, naming: ["2", "1"])
        XCTAssertEqual(try recordedRecord(db), recorded)
        XCTAssertEqual(try columns(db, "people").last, "nickname")

        // Even a target that matches the live schema exactly is refused when its version is lower.
        try writeSchema(Self.schema(1, people: Self.baseColumns + ["{name: nickname, type: text}"]), name: "v1b.yaml")
        try assertRefused(try job(schema: "v1b.yaml"), db, naming: [])
        XCTAssertEqual(try recordedRecord(db), recorded)
    }

    // MARK: - Create from empty

    func testRunCreatesMissingDatabaseFromSchema() throws {
        let db = path("fresh/new.sqlite")
        try FileManager.default.createDirectory(atPath: path("fresh"), withIntermediateDirectories: true)
        try writeSchema(
            Self.schema(
                1,
                extraTables: """
                      "order lines":
                        columns:
                          - {name: order_id, type: integer, primary_key: true}
                          - {name: line, type: integer, primary_key: true}
                          - {name: person_id, type: integer, references: {table: people, column: id}}
                          - {name: qty, type: integer, nullable: false, default: 1}
                        indexes:
                          - {name: order_lines_person, columns: [person_id]}
                    """))
        let job = try job()
        ScenarioKit.expectExit(66, "plan on a missing file") { _ = try self.plan(job, db) }
        ScenarioKit.expectExit(66, "check on a missing file") { _ = try self.check(job, db) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: db), "plan/check created the file")
        // A job without a schema does not create it either.
        ScenarioKit.expectExit(66, "run without a schema on a missing file") { _ = try self.run(try self.job(schema: nil), db) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: db), "run without a schema created the file")

        let summary = try run(job, db)
        XCTAssertEqual(summary.status, "completed")
        XCTAssertEqual(summary.migrationSteps, summary.migration.count)
        XCTAssertEqual(
            try masterNames(db, type: "table").filter { !$0.hasPrefix("winnow_") && !$0.hasPrefix("sqlite_") },
            ["companies", "order lines", "people"])
        XCTAssertEqual(try masterNames(db, type: "index", table: "people"), ["people_email"])
        XCTAssertEqual(try masterNames(db, type: "index", table: "order lines").filter { !$0.hasPrefix("sqlite_") }, ["order_lines_person"])
        XCTAssertEqual(try strings(db, "SELECT name FROM pragma_table_info('order lines') WHERE pk > 0 ORDER BY pk"), ["order_id", "line"])
        XCTAssertEqual(try recordedVersion(db), 1)
        try assertSettled(job, db)
    }

    func testMissingDatabaseIsCreatedThenSeeded() throws {
        let seed = try makeDB(Self.baseSQL, name: "seed.sqlite")
        let seedState = try ScenarioKit.userState(seed)
        try writeSchema(Self.schema(1))
        let db = path("new.sqlite")
        let job = try job(
            extra: """
                seed:
                  name: initial
                  from: seed.sqlite
                  tables: [companies, people]
                """)
        try run(job, db)
        XCTAssertEqual(try ScenarioKit.userState(db).dump, seedState.dump, "an empty database is filled with the seed as it is")
        try assertSettled(job, db)
    }

    // MARK: - Seed

    func testSeedCopiesOnceAndRemapsTakenKeys() throws {
        try makeDB(
            """
            CREATE TABLE companies (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, name TEXT, phone_number TEXT, score INTEGER DEFAULT 0,
                                 company_id INTEGER REFERENCES companies(id));
            INSERT INTO companies VALUES (1, 'Seed One'), (2, 'Seed Two'), (7, 'Seed Seven');
            INSERT INTO people VALUES (1, 's1@x', 'S1', NULL, 0, 1), (2, 's2@x', 'S2', NULL, 0, 2),
                                      (50, 's50@x', 'S50', NULL, 0, 7), (51, 's51@x', 'S51', NULL, 0, NULL),
                                      (52, 's52@x', 'S52', NULL, 0, 1);
            """, name: "seed.sqlite")
        let db = try makeDB(Self.baseSQL)
        let before = try ScenarioKit.userState(db)
        try writeSchema(Self.schema(1))
        let job = try job(
            extra: """
                seed:
                  name: crm-seed
                  from: seed.sqlite
                  tables: [people, companies]
                """)
        let planned = try plan(job, db)
        XCTAssertTrue(planned.notes.contains { $0.contains("crm-seed") }, "\(planned.notes)")
        try run(job, db)

        // The rows that were there are untouched.
        let after = try ScenarioKit.userState(db)
        for row in before.dump["companies"]! { XCTAssertTrue(after.dump["companies"]!.contains(row), "\(row) lost") }
        for row in before.dump["people"]! { XCTAssertTrue(after.dump["people"]!.contains(row), "\(row) lost") }
        XCTAssertEqual(after.dump["companies"]!.count, 5)
        XCTAssertEqual(after.dump["people"]!.count, 9)

        // Taken keys got new ones, free keys were kept; the children follow their parents' keys.
        let companyIDs = Dictionary(
            uniqueKeysWithValues: try rows(db, "SELECT name, id FROM companies").map {
                (String.fromDatabaseValue($0[0])!, Int64.fromDatabaseValue($0[1])!)
            })
        XCTAssertEqual(companyIDs["Acme"], 1)
        XCTAssertEqual(companyIDs["Globex"], 2)
        XCTAssertEqual(companyIDs["Seed Seven"], 7, "a free key is kept")
        XCTAssertFalse([1, 2].contains(companyIDs["Seed One"]!), "a taken key gets a new one")
        XCTAssertFalse([1, 2].contains(companyIDs["Seed Two"]!))
        XCTAssertEqual(
            try rows(
                db,
                """
                SELECT p.name, c.name FROM people p LEFT JOIN companies c ON c.id = p.company_id WHERE p.name LIKE 'S%' ORDER BY p.name
                """),
            [["S1", "Seed One"], ["S2", "Seed Two"], ["S50", "Seed Seven"], ["S51", nil], ["S52", "Seed One"]].map {
                $0.map { $0?.databaseValue ?? .null }
            })
        XCTAssertEqual(
            try ScenarioKit.column(db, "SELECT id FROM people WHERE name IN ('S50', 'S51') ORDER BY id", as: Int64.self), [50, 51])
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people WHERE name IN ('S1', 'S2') AND id IN (1, 2)"), 0)
        XCTAssertEqual(try strings(db, "SELECT name FROM winnow_seeds"), ["crm-seed"])
        XCTAssertEqual(try rows(db, "PRAGMA foreign_key_check").count, 0)

        // A second run (even after the seed grew) does not seed again.
        try ScenarioKit.execute(path("seed.sqlite"), "INSERT INTO companies VALUES (8, 'Seed Eight')")
        let seeded = try ScenarioKit.userState(db)
        let again = try run(job, db)
        XCTAssertTrue(again.notes.contains { $0.contains("not applied again") || $0.contains("before") }, "\(again.notes)")
        XCTAssertEqual(try ScenarioKit.userState(db), seeded)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM winnow_seeds"), 1)
        try assertSettled(job, db)
    }

    // MARK: - Order of migration and dedupe

    func testUniqueIndexIsCreatedAfterDedupe() throws {
        let db = try makeDB(Self.baseSQL)
        try writeSchema(Self.schema(2, indexes: Self.baseIndexes + ["{name: people_email_unique, columns: [email], unique: true}"]))
        let job = try job(
            extra: """
                dedupe:
                  - entity: people
                    key: email
                    winner:
                      - id: asc
                """)
        let planned = try plan(job, db)
        XCTAssertTrue(
            planned.migration.contains { $0.summary.contains("people_email_unique") && $0.summary.contains("after deduplication") },
            "\(planned.migration.map(\.summary))")
        let summary = try run(job, db)
        XCTAssertEqual(summary.counts.deleted, 1)
        XCTAssertEqual(try ScenarioKit.column(db, "SELECT id FROM people ORDER BY id", as: Int64.self), [1, 2, 3])
        XCTAssertEqual(
            try rows(db, "SELECT \"unique\" FROM pragma_index_list('people') WHERE name = 'people_email_unique'"), [[1.databaseValue]])
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) - count(DISTINCT email) FROM people WHERE email IS NOT NULL"), 0)
        try assertSettled(job, db)
        XCTAssertEqual(try check(job, db).status, "clean")
    }

    // MARK: - Drift

    func testCheckReportsDrift() throws {
        let db = try makeDB(Self.baseSQL)
        var columns = Self.replacing("email", with: "{name: email, type: text, nullable: false, default: \"\"}")
        columns = Self.replacing("score", with: "{name: score, type: integer, default: 5}", in: columns)
        columns = columns.filter { !$0.hasPrefix("{name: phone_number,") } + ["{name: nickname, type: text}"]
        try writeSchema(
            Self.schema(
                2, people: columns, indexes: ["{name: people_name, columns: [name]}"],
                extraTables: """
                      tags:
                        columns:
                          - {name: id, type: integer, primary_key: true}
                    """))
        let job = try job()
        let bytes = try TestSupport.fileBytes(db)
        let summary = try check(job, db)
        XCTAssertEqual(summary.status, "drift")
        let drift = summary.drift.joined(separator: "\n")
        for name in ["people.email", "people.score", "people.phone_number", "people.nickname", "people_name", "people_email", "tags"] {
            XCTAssertTrue(drift.contains(name), "drift does not name \(name):\n\(drift)")
        }
        XCTAssertFalse(drift.contains("companies"), "companies matches:\n\(drift)")
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes, "check changed the database file")

        // The CLI exits 1.
        try TestSupport.writeFile("version: 1\nschema: schema.yaml\n", to: path("job.yaml"))
        let cli = try TestSupport.winnow(["check", path("job.yaml"), "--database", db, "--format", "json"])
        XCTAssertEqual(cli.status, 1, cli.stdout + cli.stderr)
        XCTAssertTrue(cli.stdout.contains("drift"), cli.stdout)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)

        // A model version that differs is drift too, even when the tables match.
        try writeSchema(Self.schema(1), name: "v1.yaml")
        try run(try self.job(schema: "v1.yaml"), db)
        try writeSchema(Self.schema(2), name: "v2.yaml")
        let versionDrift = try check(try self.job(schema: "v2.yaml"), db)
        XCTAssertEqual(versionDrift.status, "drift", "\(versionDrift.drift)")
    }

    // MARK: - schema inspect round trip

    /// `winnow schema inspect` → schema file → `check` shows no drift and `plan` no step.
    func assertRoundTrip(_ db: String, tables expected: Int? = nil, file: StaticString = #filePath, line: UInt = #line) throws {
        let bytes = try TestSupport.fileBytes(db)
        let cli = try TestSupport.winnow(["schema", "inspect", "--database", db])
        XCTAssertEqual(cli.status, 0, cli.stderr, file: file, line: line)
        let schemaPath = try TestSupport.writeFile(cli.stdout, to: path("inspected.yaml"))
        XCTAssertEqual(try SQLiteBackend.inspectSchema(database: db), cli.stdout.trimmingCharacters(in: .newlines), file: file, line: line)
        let model: SchemaModel
        do {
            model = try SchemaLoader.load(path: schemaPath)
        } catch {
            XCTFail("the inspected schema does not load: \(error)\n\(cli.stdout)", file: file, line: line)
            return
        }
        if let expected { XCTAssertEqual(model.tables.count, expected, file: file, line: line) }
        let job = try job(schema: "inspected.yaml")
        let checked = try check(job, db)
        XCTAssertEqual(checked.drift, [], "\n\(cli.stdout)", file: file, line: line)
        XCTAssertEqual(checked.status, "clean", file: file, line: line)
        let planned = try plan(job, db)
        XCTAssertEqual(planned.migration.map(\.summary), [], "\n\(cli.stdout)", file: file, line: line)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes, "inspect/check/plan changed the file", file: file, line: line)
        // Re-inspecting gives the same text; the model loaded equals the live model.
        XCTAssertEqual(try TestSupport.winnow(["schema", "inspect", "--database", db]).stdout, cli.stdout, file: file, line: line)
    }

    func testInspectRoundTripChinook() throws {
        let db = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        try assertRoundTrip(db, tables: 11)
    }

    func testInspectRoundTripCoreDataBookMigration() throws {
        let db = try ScenarioKit.copyDataset("coredata-bookmigration-v1.sqlite", into: dir)
        try assertRoundTrip(db)
    }

    func testInspectRoundTripCoreDataTestModel() throws {
        // A store may ship with its WAL beside it: copy it too when there is one.
        for suffix in ["-wal", "-shm"]
        where FileManager.default.fileExists(atPath: ScenarioKit.datasets.appendingPathComponent("coredata-testmodel.sqlite" + suffix).path)
        {
            _ = try ScenarioKit.copyDataset("coredata-testmodel.sqlite" + suffix, into: dir)
        }
        let db = try ScenarioKit.copyDataset("coredata-testmodel.sqlite", into: dir)
        try assertRoundTrip(db)
    }

    func testInspectRoundTripAwkwardSchema() throws {
        let db = try makeDB(
            #"""
            CREATE TABLE "my table" (
                "id" INTEGER PRIMARY KEY,
                "first name" TEXT NOT NULL DEFAULT 'O''Brien',
                "true" INTEGER DEFAULT 1,
                "null" TEXT DEFAULT NULL,
                "yes" TEXT DEFAULT 'no',
                "123" REAL DEFAULT -1.5,
                "quo""te" TEXT DEFAULT '',
                "a: b # c" TEXT DEFAULT 'x: y',
                "名前" TEXT DEFAULT 'café',
                created TEXT DEFAULT CURRENT_TIMESTAMP,
                day TEXT DEFAULT CURRENT_DATE,
                stamp INTEGER DEFAULT (strftime('%s', 'now')),
                big INTEGER DEFAULT 9223372036854775807,
                negative INTEGER DEFAULT -42,
                sci REAL DEFAULT 1.5e10,
                whole REAL DEFAULT 2.0,
                flag BOOLEAN DEFAULT TRUE,
                bytes BLOB DEFAULT X'00FF',
                untyped,
                sized VARCHAR(20) DEFAULT 'v',
                multiline TEXT DEFAULT 'line1
            line2'
            );
            CREATE TABLE "Café ñ" (
                a INTEGER NOT NULL,
                "b b" TEXT NOT NULL,
                ref INTEGER REFERENCES "my table"("id"),
                ref2 INTEGER REFERENCES "my table",
                PRIMARY KEY (a, "b b")
            );
            CREATE TABLE "link""s" (
                left_id INTEGER REFERENCES "true"("on"),
                right_id INTEGER REFERENCES "my table"(id) ON DELETE CASCADE,
                note TEXT,
                PRIMARY KEY (right_id, left_id)
            ) WITHOUT ROWID;
            CREATE TABLE "true" ("false" TEXT, "on" INTEGER DEFAULT 0);
            CREATE UNIQUE INDEX "idx ""q"" é" ON "my table" ("first name", "名前");
            CREATE INDEX "plain idx" ON "my table" ("true");
            CREATE INDEX "Café_ix" ON "Café ñ" (ref);
            CREATE UNIQUE INDEX "true_on" ON "true" ("on");
            INSERT INTO "my table" (id) VALUES (1);
            INSERT INTO "Café ñ" VALUES (1, 'x', 1, 1);
            INSERT INTO "true" VALUES ('f', 1);
            INSERT INTO "link""s" VALUES (1, 1, 'n');
            """#)
        try assertRoundTrip(db, tables: 4)
    }

    /// A migrated database, inspected, round trips too (the printed schema is what migrations produce).
    func testInspectRoundTripAfterMigration() throws {
        let (db, _, _) = try migrate(Self.richYAML, sql: Self.richSQL)
        try assertRoundTrip(db, tables: 4)
        XCTAssertTrue(try TestSupport.winnow(["schema", "inspect", "--database", db]).stdout.hasPrefix("version: 2"))
    }
}
