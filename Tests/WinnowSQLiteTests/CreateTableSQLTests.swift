import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite

/// The SQL tokenizer, the CREATE TABLE editor used by rebuilds (everything kept as written
/// except exactly what a migration changes), and the SQL of migration steps. Statements are
/// checked by running them in an in-memory database and reading SQLite's own view back.
final class CreateTableSQLTests: XCTestCase {

    // MARK: Helpers

    private struct ColumnInfo: Equatable {
        var name: String
        var type: String
        var notNull: Bool
        var dflt: String?
        var pk: Int
        var hidden: Int
    }

    private func xinfo(_ db: Database, _ table: String) throws -> [ColumnInfo] {
        try Row.fetchAll(
            db, sql: "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?) ORDER BY cid",
            arguments: [table]
        ).map {
            ColumnInfo(name: $0[0], type: $0[1], notNull: $0[2], dflt: $0[3], pk: $0[4], hidden: $0[5])
        }
    }

    private func foreignKeys(_ db: Database, _ table: String) throws -> [[String?]] {
        try Row.fetchAll(
            db, sql: "SELECT \"table\", \"from\", \"to\", on_update, on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq",
            arguments: [table]
        ).map { row in (0..<5).map { row[$0] as String? } }
    }

    /// An in-memory database with `companies` rows 1, 2, 3 (GRDB enforces foreign keys).
    private func queueWithCompanies() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE companies (id INTEGER PRIMARY KEY); INSERT INTO companies VALUES (1), (2), (3)")
        }
        return queue
    }

    private func column(_ parsed: CreateTableSQL, _ name: String) -> String? {
        parsed.index(of: name).map { SQLTokenizer.render(parsed.columns[$0].tokens) }
    }

    private func significant(_ sql: String) -> [SQLToken] {
        SQLTokenizer.tokenize(sql).filter { !$0.isTrivia }
    }

    // MARK: Tokenizer

    func testStringWithDoubledQuotesIsOneToken() {
        let tokens = significant("'it''s, (not) -- here' x")
        XCTAssertEqual(tokens.count, 2, "\(tokens)")
        XCTAssertEqual(tokens[0].kind, .string)
        XCTAssertEqual(tokens[0].text, "'it''s, (not) -- here'")
        XCTAssertEqual(tokens[0].identifierValue, "it's, (not) -- here")
        XCTAssertEqual(tokens[1], SQLToken(kind: .identifier, text: "x"))
    }

    func testQuotedIdentifiers() {
        let tokens = significant("\"a\"\"b, c\" [my col] `x``y` \"\"\"\"")
        XCTAssertEqual(tokens.map(\.kind), [.quotedIdentifier, .quotedIdentifier, .quotedIdentifier, .quotedIdentifier], "\(tokens)")
        XCTAssertEqual(tokens.map(\.identifierValue), ["a\"b, c", "my col", "x`y", "\""])
    }

    func testQuotedKeywordIsNotAKeyword() {
        let tokens = significant("\"NOT\" not")
        XCTAssertFalse(tokens[0].isKeyword("NOT"))
        XCTAssertTrue(tokens[1].isKeyword("NOT"), "keywords are case-insensitive")
    }

    func testComments() {
        let sql = "a -- note, (x 'y\nb /* c, ) \" */ c"
        let tokens = SQLTokenizer.tokenize(sql)
        XCTAssertEqual(tokens.filter { !$0.isTrivia }.map(\.text), ["a", "b", "c"], "\(tokens)")
        XCTAssertEqual(tokens.filter { $0.kind == .comment }.map(\.text), ["-- note, (x 'y", "/* c, ) \" */"])
    }

    func testNumbers() {
        let tokens = significant("42 1.5e-3 .5 0x1F 1E+10 3.")
        XCTAssertEqual(tokens.map(\.kind), Array(repeating: .number, count: 6), "\(tokens)")
        XCTAssertEqual(tokens.map(\.text), ["42", "1.5e-3", ".5", "0x1F", "1E+10", "3."])
    }

    func testPunctuation() {
        let tokens = significant("f(a,b);x.y")
        XCTAssertEqual(tokens.map(\.text), ["f", "(", "a", ",", "b", ")", ";", "x", ".", "y"])
        XCTAssertEqual(tokens.filter { $0.kind == .punctuation }.map(\.text), ["(", ",", ")", ";", "."])
    }

    func testRenderIsLossless() {
        let sql = """
            CREATE TABLE "we""ird" ( -- comment, with (parens)
              [a b] TEXT DEFAULT 'x''y' /* block, ) */ ,
              `c``d` REAL CHECK (`c``d` > -1.5e+3),
              é INTEGER -- unicode
            ) WITHOUT ROWID;
            """
        XCTAssertEqual(SQLTokenizer.render(SQLTokenizer.tokenize(sql)), sql)
    }

    // MARK: Parsing CREATE TABLE

    private let complexTable = """
        CREATE TABLE "Contacts" (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          email TEXT COLLATE NOCASE NOT NULL DEFAULT '' CHECK (email <> 'x, NOT y' AND length(email) < 100) UNIQUE ON CONFLICT REPLACE,
          company_id INTEGER DEFAULT 0 REFERENCES companies(id) ON DELETE SET NULL ON UPDATE SET DEFAULT NOT DEFERRABLE NOT NULL,
          nick TEXT CONSTRAINT nick_nn NOT NULL CONSTRAINT nick_df DEFAULT 'x' CONSTRAINT nick_ck CHECK (nick <> ''),
          title TEXT CONSTRAINT title_nn NOT NULL,
          price REAL NOT NULL DEFAULT 1.5,
          total REAL GENERATED ALWAYS AS (coalesce(price, 0) * 2) VIRTUAL,
          "we""ird" VARCHAR(20, 3) NULL, -- a trailing comment
          note TEXT,
          CONSTRAINT contacts_pair UNIQUE (email, company_id),
          CHECK (price >= 0 AND (title <> 'a, b')),
          FOREIGN KEY (company_id) REFERENCES companies(id) ON DELETE SET NULL
        )
        """

    func testParseSplitsColumnsAndTableConstraints() throws {
        let parsed = try CreateTableSQL.parse(complexTable)
        XCTAssertEqual(
            parsed.columns.map(\.name),
            ["id", "email", "company_id", "nick", "title", "price", "total", "we\"ird", "note"])
        XCTAssertEqual(parsed.constraints.count, 3)
        XCTAssertEqual(SQLTokenizer.render(parsed.constraints[0]), "CONSTRAINT contacts_pair UNIQUE (email, company_id)")
        XCTAssertEqual(SQLTokenizer.render(parsed.constraints[1]), "CHECK (price >= 0 AND (title <> 'a, b'))")
        XCTAssertEqual(SQLTokenizer.render(parsed.constraints[2]), "FOREIGN KEY (company_id) REFERENCES companies(id) ON DELETE SET NULL")
        XCTAssertEqual(
            column(parsed, "total"), "total REAL GENERATED ALWAYS AS (coalesce(price, 0) * 2) VIRTUAL",
            "a comma inside parentheses does not split a column")
        XCTAssertEqual(column(parsed, "we\"ird"), "\"we\"\"ird\" VARCHAR(20, 3) NULL")
        XCTAssertEqual(parsed.tail.map(\.text).joined(), "")
    }

    func testParseKeepsTheTail() throws {
        XCTAssertEqual(
            SQLTokenizer.render(try CreateTableSQL.parse("CREATE TABLE kv (k TEXT PRIMARY KEY, v) WITHOUT ROWID").tail),
            " WITHOUT ROWID")
        XCTAssertEqual(
            SQLTokenizer.render(try CreateTableSQL.parse("CREATE TABLE s (a INTEGER) STRICT, WITHOUT ROWID").tail),
            " STRICT, WITHOUT ROWID")
    }

    func testParseRefusesCreateTableAsSelect() {
        XCTAssertThrowsError(try CreateTableSQL.parse("CREATE TABLE t AS SELECT 1 AS x"))
    }

    func testParseRefusesUnbalancedParentheses() {
        XCTAssertThrowsError(try CreateTableSQL.parse("CREATE TABLE t (a TEXT CHECK (a <> ''"))
    }

    func testRenderUnderANewNameKeepsEverything() throws {
        let parsed = try CreateTableSQL.parse(complexTable)
        let rendered = parsed.render(name: "new \"Contacts\"")
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE companies (id INTEGER PRIMARY KEY)")
            try db.execute(sql: complexTable)
            try db.execute(sql: rendered)
            XCTAssertEqual(
                try String.fetchOne(db, sql: "SELECT name FROM sqlite_master WHERE name = ?", arguments: ["new \"Contacts\""]),
                "new \"Contacts\"", "created under the new name:\n\(rendered)")
            XCTAssertEqual(try xinfo(db, "new \"Contacts\""), try xinfo(db, "Contacts"))
            XCTAssertEqual(try foreignKeys(db, "new \"Contacts\""), try foreignKeys(db, "Contacts"))
            let uniques = "SELECT count(*) FROM pragma_index_list(?) WHERE \"unique\" = 1"
            XCTAssertEqual(
                try Int.fetchOne(db, sql: uniques, arguments: ["new \"Contacts\""]),
                try Int.fetchOne(db, sql: uniques, arguments: ["Contacts"]))
        }
        for part in [
            "AUTOINCREMENT", "UNIQUE ON CONFLICT REPLACE", "NOT DEFERRABLE", "CONSTRAINT nick_ck CHECK (nick <> '')",
            "CHECK (price >= 0 AND (title <> 'a, b'))", "GENERATED ALWAYS AS (coalesce(price, 0) * 2) VIRTUAL",
        ] {
            XCTAssertTrue(rendered.contains(part), "rendered statement lost '\(part)':\n\(rendered)")
        }
    }

    func testRenderDropsTheSchemaQualifierAndKeepsIfNotExists() throws {
        let qualified = try CreateTableSQL.parse("CREATE TABLE main.\"old\" (a TEXT)").render(name: "fresh")
        let guarded = try CreateTableSQL.parse("CREATE TABLE IF NOT EXISTS old2 (a TEXT)").render(name: "fresh2")
        XCTAssertTrue(guarded.contains("IF NOT EXISTS"), guarded)
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: qualified)
            try db.execute(sql: guarded)
            XCTAssertEqual(
                try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"),
                ["fresh", "fresh2"])
        }
    }

    func testRenderKeepsWithoutRowID() throws {
        let rendered = try CreateTableSQL.parse("CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID").render(name: "kv2")
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: rendered)
            XCTAssertThrowsError(try db.execute(sql: "SELECT rowid FROM kv2"), "a WITHOUT ROWID table has no rowid:\n\(rendered)")
        }
    }

    func testRenderKeepsStrict() throws {
        let rendered = try CreateTableSQL.parse("CREATE TABLE s (a INTEGER, b TEXT) STRICT").render(name: "s2")
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: rendered)
            XCTAssertThrowsError(
                try db.execute(sql: "INSERT INTO s2 (a) VALUES ('not a number')"),
                "a STRICT table refuses text in an INTEGER column:\n\(rendered)")
        }
    }

    // MARK: setConstraints

    func testSetConstraintsChangesOnlyNotNullAndDefault() throws {
        var parsed = try CreateTableSQL.parse(complexTable)
        let before = parsed
        parsed.setConstraints(of: "email", nullable: true, defaultValue: .text("z"))
        let email = try XCTUnwrap(column(parsed, "email"))
        for kept in [
            "email TEXT", "COLLATE NOCASE", "CHECK (email <> 'x, NOT y' AND length(email) < 100)", "UNIQUE ON CONFLICT REPLACE",
            "DEFAULT 'z'",
        ] {
            XCTAssertTrue(email.contains(kept), "'\(kept)' missing from: \(email)")
        }
        XCTAssertFalse(email.contains("NOT NULL"), email)
        XCTAssertFalse(email.contains("DEFAULT ''"), email)
        for (old, new) in zip(before.columns, parsed.columns) where old.name != "email" {
            XCTAssertEqual(SQLTokenizer.render(new.tokens), SQLTokenizer.render(old.tokens), "column \(old.name) must be kept as written")
        }
        XCTAssertEqual(parsed.constraints, before.constraints)

        let queue = try queueWithCompanies()
        try queue.write { db in
            try db.execute(sql: parsed.render(name: "c2"))
            let info = try XCTUnwrap(try xinfo(db, "c2").first { $0.name == "email" })
            XCTAssertFalse(info.notNull)
            XCTAssertEqual(info.dflt, "'z'")
            try db.execute(sql: "INSERT INTO c2 (company_id, nick, title) VALUES (1, 'n', 't')")
            XCTAssertEqual(try String.fetchOne(db, sql: "SELECT email FROM c2"), "z", "the new default applies")
            try db.execute(sql: "INSERT INTO c2 (email, company_id, nick, title) VALUES ('Ab', 1, 'n', 't')")
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM c2 WHERE email = 'aB'"), 1, "COLLATE NOCASE kept")
            XCTAssertThrowsError(
                try db.execute(sql: "INSERT INTO c2 (email, company_id, nick, title) VALUES ('x, NOT y', 2, 'n', 't')"),
                "CHECK kept")
            try db.execute(sql: "INSERT INTO c2 (email, company_id, nick, title) VALUES ('AB', 3, 'n', 't')")
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM c2 WHERE email = 'ab'"), 1, "UNIQUE ON CONFLICT REPLACE kept")
        }
    }

    func testSetConstraintsKeepsForeignKeyActions() throws {
        var parsed = try CreateTableSQL.parse(complexTable)
        parsed.setConstraints(of: "company_id", nullable: true, defaultValue: .integer(7))
        let companyID = try XCTUnwrap(column(parsed, "company_id"))
        XCTAssertTrue(companyID.contains("REFERENCES companies(id) ON DELETE SET NULL ON UPDATE SET DEFAULT NOT DEFERRABLE"), companyID)
        XCTAssertFalse(companyID.contains("DEFAULT 0"), companyID)
        XCTAssertFalse(companyID.contains("NOT NULL"), companyID)
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE companies (id INTEGER PRIMARY KEY)")
            try db.execute(sql: complexTable)
            try db.execute(sql: parsed.render(name: "c2"))
            let info = try XCTUnwrap(try xinfo(db, "c2").first { $0.name == "company_id" })
            XCTAssertFalse(info.notNull)
            XCTAssertEqual(info.dflt, "7")
            XCTAssertEqual(try foreignKeys(db, "c2"), try foreignKeys(db, "Contacts"), "ON DELETE SET NULL / ON UPDATE SET DEFAULT kept")
        }
    }

    func testSetConstraintsMakesNotNullWithANewDefault() throws {
        var parsed = try CreateTableSQL.parse(complexTable)
        parsed.setConstraints(of: "note", nullable: false, defaultValue: .text("it's"))
        parsed.setConstraints(of: "WE\"IRD", nullable: false, defaultValue: .integer(-5))
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: parsed.render(name: "c2"))
            let info = try xinfo(db, "c2")
            XCTAssertEqual(info.first { $0.name == "note" }?.notNull, true)
            XCTAssertEqual(info.first { $0.name == "note" }?.dflt, "'it''s'")
            XCTAssertEqual(info.first { $0.name == "we\"ird" }?.notNull, true, "the explicit NULL clause is replaced")
            XCTAssertEqual(info.first { $0.name == "we\"ird" }?.dflt, "-5")
            XCTAssertEqual(info.first { $0.name == "we\"ird" }?.type, "VARCHAR(20, 3)")
        }
    }

    func testSetConstraintsRemovesNamedNotNullAndDefaultWithTheirNames() throws {
        var parsed = try CreateTableSQL.parse(complexTable)
        parsed.setConstraints(of: "nick", nullable: true, defaultValue: nil)
        let nick = try XCTUnwrap(column(parsed, "nick"))
        XCTAssertTrue(nick.contains("CONSTRAINT nick_ck CHECK (nick <> '')"), nick)
        XCTAssertFalse(nick.contains("NOT NULL"), nick)
        XCTAssertFalse(nick.contains("DEFAULT"), nick)
        XCTAssertFalse(nick.contains("nick_nn"), "the name of a removed NOT NULL goes with it: \(nick)")
        XCTAssertFalse(nick.contains("nick_df"), "the name of a removed DEFAULT goes with it: \(nick)")
        XCTAssertEqual(column(parsed, "title"), "title TEXT CONSTRAINT title_nn NOT NULL", "another column's named NOT NULL is kept")
        let queue = try queueWithCompanies()
        try queue.write { db in
            try db.execute(sql: parsed.render(name: "c2"))
            let info = try XCTUnwrap(try xinfo(db, "c2").first { $0.name == "nick" })
            XCTAssertFalse(info.notNull)
            XCTAssertNil(info.dflt)
            XCTAssertThrowsError(try db.execute(sql: "INSERT INTO c2 (company_id, nick, title) VALUES (1, '', 't')"), "CHECK kept")
        }
    }

    func testSetConstraintsChangingOnlyTheDefaultKeepsNotNull() throws {
        var parsed = try CreateTableSQL.parse(complexTable)
        parsed.setConstraints(of: "nick", nullable: false, defaultValue: .text("y"))
        parsed.setConstraints(of: "price", nullable: false, defaultValue: .real(2.0))
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: parsed.render(name: "c2"))
            let info = try xinfo(db, "c2")
            XCTAssertEqual(info.first { $0.name == "nick" }?.notNull, true)
            XCTAssertEqual(info.first { $0.name == "nick" }?.dflt, "'y'")
            XCTAssertEqual(info.first { $0.name == "price" }?.notNull, true)
            XCTAssertEqual(info.first { $0.name == "price" }.flatMap(\.dflt).map(DefaultValue.parse(sql:)), .real(2.0))
            XCTAssertEqual(info.first { $0.name == "total" }?.hidden, 2, "the generated column is still generated")
        }
    }

    func testSetConstraintsWithExpressionDefaults() throws {
        let sql = "CREATE TABLE t (a TEXT, b INTEGER, c INTEGER, d TEXT)"
        var parsed = try CreateTableSQL.parse(sql)
        parsed.setConstraints(of: "a", nullable: true, defaultValue: .expression("CURRENT_TIMESTAMP"))
        parsed.setConstraints(of: "b", nullable: true, defaultValue: DefaultValue.parse(sql: "strftime('%s','now')"))
        parsed.setConstraints(of: "c", nullable: true, defaultValue: DefaultValue.parse(sql: "(1 + 1)"))
        parsed.setConstraints(of: "d", nullable: false, defaultValue: DefaultValue.parse(sql: "'a' || 'b'"))
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: parsed.render(name: "t2"))
            try db.execute(sql: "INSERT INTO t2 DEFAULT VALUES")
            let row = try XCTUnwrap(try Row.fetchOne(db, sql: "SELECT a, b, c, d FROM t2"))
            XCTAssertNotNil(row["a"] as String?)
            XCTAssertGreaterThan(row["b"] as Int? ?? 0, 1_600_000_000)
            XCTAssertEqual(row["c"] as Int?, 2)
            XCTAssertEqual(row["d"] as String?, "ab")
        }
    }

    func testSetConstraintsOnAnUnknownColumnChangesNothing() throws {
        var parsed = try CreateTableSQL.parse(complexTable)
        let before = parsed
        parsed.setConstraints(of: "nope", nullable: false, defaultValue: .integer(1))
        XCTAssertEqual(parsed, before)
    }

    // MARK: dropColumn / addColumn

    func testDropColumn() throws {
        var parsed = try CreateTableSQL.parse(complexTable)
        parsed.dropColumn("NOTE")
        XCTAssertNil(parsed.index(of: "note"))
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: complexTable)
            try db.execute(sql: parsed.render(name: "c2"))
            XCTAssertEqual(try xinfo(db, "c2"), try xinfo(db, "Contacts").filter { $0.name != "note" })
        }
    }

    func testAddColumn() throws {
        var parsed = try CreateTableSQL.parse("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT) WITHOUT ROWID")
        let added = ColumnModel(name: "new \"one\"", type: "text", nullable: false, defaultValue: .expression("CURRENT_TIMESTAMP"))
        parsed.addColumn(MigrationSQL.columnDefinition(added, inlinePrimaryKey: false))
        XCTAssertNotNil(parsed.index(of: "new \"one\""))
        let rendered = parsed.render(name: "t2")
        XCTAssertTrue(rendered.hasSuffix(" WITHOUT ROWID"), rendered)
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: rendered)
            let info = try XCTUnwrap(try xinfo(db, "t2").last)
            XCTAssertEqual(info, ColumnInfo(name: "new \"one\"", type: "TEXT", notNull: true, dflt: "CURRENT_TIMESTAMP", pk: 0, hidden: 0))
        }
    }

    // MARK: constraintsMention

    func testConstraintsMentionColumnsOfTableConstraints() throws {
        let parsed = try CreateTableSQL.parse(
            """
            CREATE TABLE t (a TEXT, b TEXT, c TEXT UNIQUE, status TEXT, "company id" INTEGER, d TEXT,
              PRIMARY KEY (a, B),
              CHECK (status IN ('open', 'closed')),
              FOREIGN KEY ("company id") REFERENCES companies(id))
            """)
        XCTAssertTrue(parsed.constraintsMention("a"))
        XCTAssertTrue(parsed.constraintsMention("b"), "case-insensitive")
        XCTAssertTrue(parsed.constraintsMention("status"))
        XCTAssertTrue(parsed.constraintsMention("company id"))
        XCTAssertFalse(parsed.constraintsMention("c"), "a column constraint is not a table constraint")
        XCTAssertFalse(parsed.constraintsMention("d"))
        XCTAssertFalse(parsed.constraintsMention("open"), "a string literal is not a column")
    }

    /// SQL keywords of a constraint are not column names: a column called `key` is not named by
    /// `PRIMARY KEY (a, b)`.
    func testConstraintsMentionIgnoresKeywords() throws {
        let parsed = try CreateTableSQL.parse("CREATE TABLE kv (a TEXT, b TEXT, key TEXT, value TEXT, PRIMARY KEY (a, b))")
        XCTAssertFalse(parsed.constraintsMention("key"))
        XCTAssertFalse(parsed.constraintsMention("value"))
    }

    /// The inspector hands the planner what the statement says as facts of each column: named
    /// by a table constraint, or constrained in its own definition (UNIQUE, CHECK, generated).
    func testInspectorReadsEachColumnsConstraints() throws {
        let queue = try DatabaseQueue()
        let table = try queue.write { db -> LiveTable? in
            try db.execute(
                sql: """
                    CREATE TABLE kv (ns TEXT NOT NULL, id INTEGER NOT NULL, key TEXT, value TEXT UNIQUE, lo INTEGER CHECK (lo > 0),
                      hi INTEGER, total INTEGER AS (lo + hi), PRIMARY KEY (ns, id), CHECK (lo <= hi))
                    """)
            return try SchemaInspector.table(db, named: "kv")
        }
        let columns = try XCTUnwrap(table).columns
        XCTAssertEqual(columns.filter(\.inTableConstraint).map(\.name), ["ns", "id", "lo", "hi"])
        XCTAssertEqual(columns.filter(\.constrainedInDefinition).map(\.name), ["value", "lo", "total"])
        XCTAssertEqual(columns.filter(\.generated).map(\.name), ["total"])
        XCTAssertEqual(try XCTUnwrap(table).indexes.map(\.origin), [.primaryKey, .uniqueConstraint].reversed())
    }

    // MARK: MigrationSQL

    private func liveModel(_ db: Database) throws -> SchemaModel {
        SchemaModel(live: try SchemaInspector.inspect(db), version: 1)
    }

    func testCreateTableReadsBackAsTheModel() throws {
        let parent = TableModel(
            name: "my \"parents\"",
            columns: [
                ColumnModel(name: "id", type: "integer", primaryKey: true),
                ColumnModel(name: "select", type: "text", nullable: false, defaultValue: .text("it's")),
            ])
        let child = TableModel(
            name: "order",
            columns: [
                ColumnModel(name: "id", type: "integer", primaryKey: true),
                ColumnModel(name: "e", type: "text", nullable: false, defaultValue: .text("")),
                ColumnModel(name: "n", type: "integer", nullable: false, defaultValue: .integer(-5)),
                ColumnModel(name: "r", type: "real", defaultValue: .real(2.0)),
                ColumnModel(name: "r2", type: "real", defaultValue: .real(0.25)),
                ColumnModel(name: "flag", type: "boolean", nullable: false, defaultValue: .integer(1)),
                ColumnModel(name: "at", type: "text", defaultValue: .expression("CURRENT_TIMESTAMP")),
                ColumnModel(name: "at2", type: "integer", defaultValue: DefaultValue.parse(sql: "strftime('%s','now')")),
                ColumnModel(name: "none", type: ""),
                ColumnModel(name: "v", type: "varchar(20)"),
                ColumnModel(
                    name: "parent \"id\"", type: "integer", references: ColumnReferenceModel(table: "my \"parents\"", column: "id")),
                ColumnModel(name: "parent_pk", type: "integer", references: ColumnReferenceModel(table: "my \"parents\"", column: nil)),
            ])
        let target = SchemaModel(version: 1, tables: [parent, child])
        let queue = try DatabaseQueue()
        try queue.write { db in
            for table in target.tables { try db.execute(sql: MigrationSQL.createTable(table)) }
            let live = try liveModel(db)
            XCTAssertEqual(live.drift(to: target), [], "\(MigrationSQL.createTable(child))")
            XCTAssertEqual(live.tables.map(\.name), ["my \"parents\"", "order"])
            XCTAssertEqual(try xinfo(db, "order").first?.pk, 1)
            try db.execute(sql: "INSERT INTO \"order\" DEFAULT VALUES")
            let row = try XCTUnwrap(try Row.fetchOne(db, sql: "SELECT e, n, r, flag FROM \"order\""))
            XCTAssertEqual(row["e"] as String?, "")
            XCTAssertEqual(row["n"] as Int?, -5)
            XCTAssertEqual(row["r"] as Double?, 2.0)
            XCTAssertEqual(row["flag"] as Int?, 1)
        }
    }

    /// `default: {sql: "(strftime('%s','now'))"}` as the loader reads it: the created column
    /// must not show drift from the schema it was created from.
    func testCreateTableWithParenthesisedSQLDefaultReadsBackWithoutDrift() throws {
        let table = TableModel(
            name: "t",
            columns: [
                ColumnModel(name: "id", type: "integer", primaryKey: true),
                ColumnModel(name: "at", type: "integer", defaultValue: DefaultValue.parse(sql: "(strftime('%s','now'))")),
            ])
        let target = SchemaModel(version: 1, tables: [table])
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: MigrationSQL.createTable(table))
            XCTAssertEqual(try liveModel(db).drift(to: target), [])
        }
    }

    func testCreateTableWithCompositePrimaryKey() throws {
        let table = TableModel(
            name: "links",
            columns: [
                ColumnModel(name: "a", type: "integer", nullable: false, primaryKey: true),
                ColumnModel(name: "b \"x\"", type: "integer", nullable: false, primaryKey: true),
                ColumnModel(name: "note", type: "text"),
            ])
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: MigrationSQL.createTable(table))
            XCTAssertEqual(try xinfo(db, "links").map(\.pk), [1, 2, 0])
            XCTAssertEqual(try liveModel(db).drift(to: SchemaModel(version: 1, tables: [table])), [])
            try db.execute(sql: "INSERT INTO links VALUES (1, 1, 'x')")
            XCTAssertThrowsError(try db.execute(sql: "INSERT INTO links VALUES (1, 1, 'y')"), "the pair is the key")
        }
    }

    func testCreateTableUnderAnotherName() throws {
        let table = TableModel(name: "t", columns: [ColumnModel(name: "a", type: "text")])
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: MigrationSQL.createTable(table, name: "t \"tmp\""))
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"), ["t \"tmp\""])
        }
    }

    func testCreateIndexReadsBackAsTheModel() throws {
        let table = TableModel(
            name: "we \"ird\"",
            columns: [
                ColumnModel(name: "id", type: "integer", primaryKey: true),
                ColumnModel(name: "e \"mail\"", type: "text"),
                ColumnModel(name: "group", type: "text"),
            ],
            indexes: [
                IndexModel(name: "by \"mail\"", columns: ["e \"mail\"", "group"], unique: true),
                IndexModel(name: "by group", columns: ["group"], unique: false),
            ])
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: MigrationSQL.createTable(table))
            for index in table.indexes { try db.execute(sql: MigrationSQL.createIndex(index, on: table.name)) }
            let live = try liveModel(db)
            XCTAssertEqual(live.drift(to: SchemaModel(version: 1, tables: [table])), [])
            XCTAssertEqual(Set(live.tables[0].indexes.map(\.name)), ["by \"mail\"", "by group"])
            XCTAssertEqual(live.tables[0].indexes.first { $0.name == "by \"mail\"" }, table.indexes[0])
            try db.execute(sql: "INSERT INTO \"we \"\"ird\"\"\" (\"e \"\"mail\"\"\", \"group\") VALUES ('a', 'g')")
            XCTAssertThrowsError(
                try db.execute(sql: "INSERT INTO \"we \"\"ird\"\"\" (\"e \"\"mail\"\"\", \"group\") VALUES ('a', 'g')"),
                "the index is unique")
        }
    }

    func testStepStatementsRunWithAwkwardIdentifiers() throws {
        let name = "we \"ird\"; DROP"
        let table = TableModel(
            name: name,
            columns: [
                ColumnModel(name: "id", type: "integer", primaryKey: true),
                ColumnModel(name: "old \"c\"", type: "text"),
            ])
        let added = ColumnModel(name: "added \"x\"", type: "integer", nullable: false, defaultValue: .integer(3))
        let index = IndexModel(name: "ix \"1\"", columns: ["added \"x\""], unique: false)
        let queue = try DatabaseQueue()
        try queue.write { db in
            let steps: [MigrationStep] = [
                .createTable(table),
                .renameTable(from: name, to: "renamed \"t\""),
                .renameColumn(table: "renamed \"t\"", from: "old \"c\"", to: "new \"c\""),
                .addColumn(table: "renamed \"t\"", column: added),
                .createIndex(table: "renamed \"t\"", index: index, afterDedupe: false),
            ]
            for step in steps {
                for sql in MigrationSQL.statements(step) { try db.execute(sql: sql) }
            }
            XCTAssertEqual(try xinfo(db, "renamed \"t\"").map(\.name), ["id", "new \"c\"", "added \"x\""])
            let info = try xinfo(db, "renamed \"t\"")[2]
            XCTAssertTrue(info.notNull)
            XCTAssertEqual(info.dflt, "3")
            for step in [
                MigrationStep.dropIndex(table: "renamed \"t\"", name: "ix \"1\""),
                .dropColumn(table: "renamed \"t\"", column: "new \"c\""),
                .dropTable("renamed \"t\""),
            ] {
                for sql in MigrationSQL.statements(step) { try db.execute(sql: sql) }
            }
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master"), 0)
        }
    }

    /// A column made NOT NULL: the rebuild's copy fills only the NULLs with the default.
    func testNotNullRebuildFillsOnlyNulls() throws {
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
            try db.execute(sql: "INSERT INTO t (v) VALUES ('keep'), (NULL), (NULL), ('')")
            let v = ColumnModel(name: "v", type: "text", nullable: false, defaultValue: .text("it's"))
            let rebuild = TableRebuild(table: "t", changed: [v], added: [], dropped: [], reasons: [])
            XCTAssertTrue(MigrationSQL.statements(.rebuild(rebuild)).joined().contains("coalesce(\"v\", 'it''s')"))
            _ = try TableRebuilder(db: db, rebuild: rebuild, settings: BatchSettings()).run()
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT v FROM t ORDER BY id"), ["keep", "it's", "it's", ""])
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT \"notnull\" FROM pragma_table_info('t') WHERE name = 'v'"), 1)
        }
    }

    func testDefaultLiteralsReadBackFromSQLite() throws {
        let values: [DefaultValue] = [
            .integer(0), .integer(-5), .real(1.5), .real(2.0), .real(-0.25), .text(""), .text("it's"),
            .text("NULL"), .expression("CURRENT_TIMESTAMP"),
        ]
        let queue = try DatabaseQueue()
        try queue.write { db in
            for (i, value) in values.enumerated() {
                try db.execute(sql: "CREATE TABLE t\(i) (x DEFAULT \(value.sql))")
                let dflt = try XCTUnwrap(try xinfo(db, "t\(i)").first?.dflt)
                XCTAssertEqual(DefaultValue.parse(sql: dflt), value, "DEFAULT \(value.sql) read back as \(dflt)")
            }
        }
    }
}
