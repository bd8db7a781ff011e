import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// A job refused by a guard that depends on the rows (`max_delete_percent`, `references:
/// restrict`, a unique index over duplicates) changes nothing, even when its migration would
/// have run first (docs/reference.md section 5): the guards are evaluated on the rows as the migration
/// will leave them, before its first step. Jobs that pass are not refused by mistake.
final class GuardsBeforeMigrationTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory("GuardsBeforeMigration") }
    override func tearDownWithError() throws { if let dir { try? FileManager.default.removeItem(at: dir) } }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// Five people, two of them sharing an email under another case; `nick` NULL for three.
    func makePeople() throws -> String {
        try TestSupport.makeDatabase(
            at: path("db.sqlite"),
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, mail TEXT COLLATE NOCASE, nick TEXT, score INTEGER);
                INSERT INTO people VALUES (1, 'a@x', 'ann', 1), (2, 'A@X', NULL, 2), (3, 'b@x', NULL, 3),
                                          (4, 'c@x', 'cat', 4), (5, 'd@x', NULL, 5);
                CREATE TABLE orders (id INTEGER PRIMARY KEY, person INTEGER REFERENCES people(id), total INTEGER);
                INSERT INTO orders VALUES (1, 2, 10), (2, 3, 20);
                """)
    }

    /// People v2: table renamed to contacts, `mail` renamed to email, `nick` made NOT NULL with a
    /// default (NULLs backfilled), a new column, and optional extra indexes.
    func writeSchema(indexes: String = "") throws {
        try TestSupport.writeFile(
            """
            version: 2
            tables:
              orders:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: person, type: integer, references: {table: contacts, column: id}}
                  - {name: total, type: integer}
              contacts:
                renamed_from: people
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: email, type: text, renamed_from: mail}
                  - {name: nick, type: text, nullable: false, default: "?"}
                  - {name: score, type: integer}
                  - {name: source, type: text, default: import}
            \(indexes.isEmpty ? "" : "    indexes:\n\(indexes)")
            """, to: path("schema.yaml"))
    }

    /// What must not change: every user object's SQL and every row.
    func state(_ db: String) throws -> String {
        let objects = try ScenarioKit.rows(
            db,
            """
            SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'winnow%' AND name NOT LIKE 'sqlite%' ORDER BY type, name
            """)
        return "\(objects)\n\(try TestSupport.contentDump(db).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" })"
    }

    func assertRefusedUnchanged(
        _ rules: String, indexes: String = "", mentions: String,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let db = try makePeople()
        try writeSchema(indexes: indexes)
        let before = try state(db)
        let job = try ScenarioKit.job("version: 1\nschema: schema.yaml\n\(rules)", dir: dir)
        XCTAssertThrowsError(try SQLiteBackend.run(job, options: RunOptions(database: db)), file: file, line: line) { error in
            XCTAssertEqual((error as? WinnowError)?.exitCode, 65, "\(error)", file: file, line: line)
            XCTAssertTrue("\(error)".contains(mentions), "\(error)", file: file, line: line)
            XCTAssertTrue("\(error)".contains("nothing was changed"), "\(error)", file: file, line: line)
        }
        XCTAssertEqual(try state(db), before, "a refused job changed the database", file: file, line: line)
    }

    /// The rule keys on a column the migration renames: only the preview can count its losers.
    func testDeleteGuardOnARenamedColumnRefusesBeforeTheMigration() throws {
        try assertRefusedUnchanged(
            "dedupe:\n  - entity: contacts\n    key: email\n    max_delete_percent: 10\n",
            mentions: "max_delete_percent")
    }

    /// NULL nicks become "?" by the backfill: three rows then share a nick (two losers of five).
    func testDeleteGuardSeesTheBackfilledValues() throws {
        try assertRefusedUnchanged(
            "dedupe:\n  - entity: contacts\n    key: nick\n    max_delete_percent: 30\n",
            mentions: "would delete 2 of 5 rows")
    }

    /// The loser of the email group (id 2; the winner is id 1 by `id asc`) has an order.
    func testRestrictedReferenceRefusesBeforeTheMigration() throws {
        try assertRefusedUnchanged(
            """
            dedupe:
              - entity: contacts
                key: email
                winner:
                  - id: asc
                references: restrict
            """ + "\n", mentions: "orders.person")
    }

    /// A unique index over a column the job does not deduplicate, with duplicates after the backfill.
    func testUniqueIndexOverBackfilledDuplicatesRefusesBeforeTheMigration() throws {
        try assertRefusedUnchanged(
            "", indexes: "      - {name: contacts_nick, columns: [nick], unique: true}\n",
            mentions: "contacts_nick")
    }

    /// The column's NOCASE collation makes 'a@x' and 'A@X' one key of the unique index; the rule
    /// on `score` leaves both.
    func testUniqueIndexFollowsTheColumnCollation() throws {
        try assertRefusedUnchanged(
            "dedupe:\n  - entity: contacts\n    key: score\n",
            indexes: "      - {name: contacts_email, columns: [email], unique: true}\n",
            mentions: "1 group(s) share a key that the job's dedupe rules leave")
    }

    /// The same index with a rule on its key: the rule removes the duplicates, the job runs.
    func testUniqueIndexWhoseDuplicatesTheRuleRemovesRuns() throws {
        let db = try makePeople()
        try writeSchema(indexes: "      - {name: contacts_email, columns: [email], unique: true}\n")
        let job = try ScenarioKit.job(
            "version: 1\nschema: schema.yaml\ndedupe:\n  - entity: contacts\n    key: email\n    normalize: [lowercase]\n", dir: dir)
        let summary = try SQLiteBackend.run(job, options: RunOptions(database: db))
        XCTAssertEqual(summary.counts.deleted, 1)
        XCTAssertEqual(try ScenarioKit.column(db, "SELECT nick FROM contacts ORDER BY id", as: String.self), ["?", "?", "cat", "?"])
        XCTAssertEqual(
            try ScenarioKit.column(db, "SELECT name FROM sqlite_master WHERE name = 'contacts_email'", as: String.self),
            ["contacts_email"])
    }

    /// A seed naming a table its file lacks is refused before the migration, not after it.
    func testSeedOfAMissingTableRefusesBeforeTheMigration() throws {
        try TestSupport.makeDatabase(at: path("seed.sqlite"), sql: "CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT);")
        let db = try makePeople()
        try writeSchema()
        let before = try state(db)
        for (tables, message) in [
            ("[orders]", "the seed database has no table 'orders'"), ("[nowhere]", "the seed database has no table 'nowhere'"),
        ] {
            let job = try ScenarioKit.job(
                "version: 1\nschema: schema.yaml\nseed:\n  name: s\n  from: seed.sqlite\n  tables: \(tables)\n", dir: dir)
            XCTAssertThrowsError(try SQLiteBackend.run(job, options: RunOptions(database: db))) { error in
                XCTAssertEqual((error as? WinnowError)?.exitCode, 65, "\(error)")
                XCTAssertTrue("\(error)".contains(message), "\(error)")
            }
            XCTAssertThrowsError(try SQLiteBackend.plan(job, options: RunOptions(database: db)), "plan refuses what run refuses")
            XCTAssertEqual(try state(db), before, "a refused seed changed the database")
        }
    }

    /// `plan` of a migrating job counts the rows as the migration will leave them (renamed
    /// table, NULL nicks filled with "?"): the same counts as the run, and not a byte changed.
    func testPlanCountsWhatTheRunDoesAfterTheMigration() throws {
        let db = try makePeople()
        try writeSchema()
        let job = try ScenarioKit.job("version: 1\nschema: schema.yaml\ndedupe:\n  - entity: contacts\n    key: nick\n", dir: dir)
        let bytes = try TestSupport.fileBytes(db)
        let plan = try SQLiteBackend.plan(job, options: RunOptions(database: db, sampleLimit: nil))
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes, "plan changed the file")
        XCTAssertEqual(plan.counts.groups, 1)
        XCTAssertEqual(plan.counts.deleted, 2)
        XCTAssertEqual(plan.rules.first?.samples.first?.key, ["'?'"])
        let run = try SQLiteBackend.run(job, options: RunOptions(database: db))
        XCTAssertEqual(run.counts.groups, plan.counts.groups)
        XCTAssertEqual(run.counts.deleted, plan.counts.deleted)
        XCTAssertEqual(try ScenarioKit.column(db, "SELECT id FROM contacts ORDER BY id", as: Int.self), [1, 2, 4])
    }

    /// A guard that passes on the preview lets the migration and the dedupe run.
    func testGuardThatPassesRuns() throws {
        let db = try makePeople()
        try writeSchema()
        let job = try ScenarioKit.job(
            "version: 1\nschema: schema.yaml\ndedupe:\n  - entity: contacts\n    key: email\n    max_delete_percent: 25\n", dir: dir)
        let summary = try SQLiteBackend.run(job, options: RunOptions(database: db))
        XCTAssertEqual(summary.counts.deleted, 1)
        XCTAssertEqual(
            try ScenarioKit.column(db, "SELECT source FROM contacts ORDER BY id", as: String.self),
            ["import", "import", "import", "import"])
    }
}

/// ``MigrationPreview`` without SQLite: the SELECT it writes for each kind of step.
final class MigrationPreviewTests: XCTestCase {
    let live = LiveSchema(tables: [
        LiveTable(
            name: "people",
            columns: [
                LiveColumn(name: "id", type: "INTEGER", notNull: false, defaultSQL: nil, primaryKeyIndex: 1),
                LiveColumn(name: "mail", type: "TEXT", notNull: false, defaultSQL: nil, primaryKeyIndex: 0, collation: "NOCASE"),
                LiveColumn(name: "old", type: "TEXT", notNull: false, defaultSQL: nil, primaryKeyIndex: 0),
            ], hasRowID: true, isVirtual: false, foreignKeys: [], indexes: []),
        LiveTable(
            name: "plain",
            columns: [
                LiveColumn(name: "v", type: "", notNull: false, defaultSQL: nil, primaryKeyIndex: 0)
            ], hasRowID: true, isVirtual: false, foreignKeys: [], indexes: []),
    ])

    func testUnchangedTablesSelectTheirColumnsAndRowID() {
        let preview = MigrationPreview(live: live, steps: [], dialect: SQLiteDialect())
        XCTAssertEqual(preview.select("plain", rowID: "rowid"), "SELECT \"v\" AS \"v\", rowid AS rowid FROM main.\"plain\"")
        XCTAssertEqual(
            preview.select("PEOPLE", rowID: "\"id\""),
            "SELECT \"id\" AS \"id\", \"mail\" AS \"mail\", \"old\" AS \"old\" FROM main.\"people\"")
    }

    func testRenamesAddsBackfillsAndDrops() {
        let preview = MigrationPreview(
            live: live,
            steps: [
                .renameTable(from: "people", to: "contacts"),
                .renameColumn(table: "contacts", from: "mail", to: "email"),
                .addColumn(table: "contacts", column: ColumnModel(name: "n", type: "integer", defaultValue: .integer(7))),
                .rebuild(
                    TableRebuild(
                        table: "contacts",
                        changed: [ColumnModel(name: "email", type: "text", nullable: false, defaultValue: .text("it's"))],
                        added: [], dropped: [], reasons: [])),
                .dropColumn(table: "contacts", column: "old"),
            ], dialect: SQLiteDialect())
        XCTAssertNil(preview.select("people", rowID: "rowid"))
        XCTAssertEqual(
            preview.select("contacts", rowID: "\"id\""),
            """
            SELECT "id" AS "id", coalesce("mail", 'it''s') COLLATE "NOCASE" AS "email", 7 AS "n" FROM main."people"
            """)
        XCTAssertTrue(preview.hasRows("contacts"))
    }

    func testRebuildAddsExpressionDefaultsAndNewTablesAreEmpty() {
        let preview = MigrationPreview(
            live: live,
            steps: [
                .rebuild(
                    TableRebuild(
                        table: "plain", changed: [],
                        added: [ColumnModel(name: "at", type: "text", defaultValue: .expression("CURRENT_TIMESTAMP"))],
                        dropped: [], reasons: [])),
                .createTable(TableModel(name: "fresh", columns: [ColumnModel(name: "k", type: "text")], indexes: [])),
                .dropTable("people"),
            ], dialect: SQLiteDialect())
        XCTAssertEqual(
            preview.select("plain", rowID: "rowid"),
            "SELECT \"v\" AS \"v\", CURRENT_TIMESTAMP AS \"at\", rowid AS rowid FROM main.\"plain\"")
        XCTAssertEqual(preview.select("fresh", rowID: "rowid"), "SELECT NULL AS \"k\", NULL AS rowid WHERE 0")
        XCTAssertFalse(preview.hasRows("fresh"))
        XCTAssertNil(preview.select("people", rowID: "\"id\""))
    }
}
