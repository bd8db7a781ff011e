import Foundation
import XCTest
@testable import WinnowCore

/// Schema files (docs/reference.md section 3): every key decodes to the right model value, and every
/// mistake is an exit-65 `WinnowError.invalidFile(location, "key.path: message")` pointing at
/// the node that caused it.
final class SchemaLoaderTests: XCTestCase {

    // MARK: Helpers

    /// Line and column (1-based, columns in Unicode scalars as libyaml counts) of the
    /// `occurrence`-th appearance of `needle` in `text`.
    private func place(
        of needle: String, in text: String, occurrence: Int = 1,
        file: StaticString = #filePath, line: UInt = #line
    ) -> (line: Int, column: Int) {
        var searchStart = text.startIndex
        var found: Range<String.Index>?
        for _ in 0..<occurrence {
            guard let range = text.range(of: needle, range: searchStart..<text.endIndex) else {
                XCTFail("test bug: '\(needle)' occurs fewer than \(occurrence) times", file: file, line: line)
                return (0, 0)
            }
            found = range
            searchStart = range.upperBound
        }
        let before = text[..<found!.lowerBound]
        let lineNumber = before.filter { $0 == "\n" }.count + 1
        let lineStart = before.lastIndex(of: "\n").map { text.index(after: $0) } ?? text.startIndex
        return (lineNumber, text[lineStart..<found!.lowerBound].unicodeScalars.count + 1)
    }

    private func decode(_ yaml: String) throws -> SchemaModel {
        try SchemaLoader.decode(yaml: yaml, file: "schema.yaml")
    }

    /// Expects an exit-65 invalid-file error located at `needle` (its `occurrence`), whose message
    /// starts with `path: ` (unless `path` is empty) and mentions every fragment.
    private func assertInvalid(
        _ yaml: String, at needle: String, occurrence: Int = 1, path: String,
        mentions fragments: [String] = [], checkColumn: Bool = true,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let expected = place(of: needle, in: yaml, occurrence: occurrence, file: file, line: line)
        assertInvalid(
            yaml, line: expected.line, column: checkColumn ? expected.column : nil, path: path,
            mentions: fragments, file: file, line: line)
    }

    private func assertInvalid(
        _ yaml: String, line expectedLine: Int, column expectedColumn: Int?, path: String,
        mentions fragments: [String] = [], file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            let model = try decode(yaml)
            XCTFail("expected an invalid-file error, decoded \(model.tables.count) tables", file: file, line: line)
        } catch let error as WinnowError {
            XCTAssertEqual(error.exitCode, 65, "\(error)", file: file, line: line)
            guard case let .invalidFile(location, message) = error else {
                return XCTFail("expected .invalidFile, got \(error)", file: file, line: line)
            }
            guard let location else { return XCTFail("no location in \(error)", file: file, line: line) }
            XCTAssertEqual(location.file, "schema.yaml", file: file, line: line)
            XCTAssertEqual(location.line, expectedLine, "line of: \(message)", file: file, line: line)
            if let expectedColumn {
                XCTAssertEqual(location.column, expectedColumn, "column of: \(message)", file: file, line: line)
            }
            if !path.isEmpty {
                XCTAssertTrue(
                    message.hasPrefix("\(path)"), "message should start with the key path \(path): \(message)",
                    file: file, line: line)
            }
            for fragment in fragments {
                XCTAssertTrue(message.contains(fragment), "message should mention '\(fragment)': \(message)", file: file, line: line)
            }
        } catch {
            XCTFail("expected WinnowError, got \(error)", file: file, line: line)
        }
    }

    // MARK: A full valid file

    private let fullSchema = """
        version: 3
        tables:
          companies:
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: name, type: TEXT, nullable: false}
          contacts:
            renamed_from: people
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: email, type: text, nullable: false, default: ""}
              - {name: phone, type: text, renamed_from: phone_number}
              - {name: mobile, type: text, renamed_from: [cell, cellphone]}
              - {name: visits, type: integer, default: 0}
              - {name: debt, type: integer, default: -7}
              - {name: score, type: real, default: 1.5}
              - {name: active, type: boolean, default: true}
              - {name: archived, type: boolean, default: false}
              - {name: note, type: text, default: null}
              - {name: label, type: text, default: "42"}
              - {name: quote, type: text, default: "it's"}
              - {name: created_at, type: text, default: {sql: CURRENT_TIMESTAMP}}
              - {name: company_id, type: integer, references: {table: companies, column: id}}
              - {name: parent_id, type: integer, references: {table: contacts}}
              - {name: nick, type: varchar(20)}
              - {name: anything}
            indexes:
              - {name: contacts_email, columns: [email], unique: true}
              - {name: contacts_company, columns: [company_id, created_at]}
              - {name: contacts_phone, columns: [phone], unique: false}
          legacy:
            renamed_from: [old_legacy, older_legacy]
            columns:
              - name: id
                type: integer
                primary_key: true
        """

    func testFullFileDecodesEveryKey() throws {
        let model = try decode(fullSchema)
        XCTAssertEqual(model.version, 3)
        XCTAssertEqual(model.tables.map(\.name), ["companies", "contacts", "legacy"], "tables keep the file's order")

        let companies = try XCTUnwrap(model.table(named: "companies"))
        XCTAssertEqual(companies.renamedFrom, [])
        XCTAssertEqual(companies.indexes, [])
        XCTAssertEqual(companies.primaryKey, ["id"])
        let companyName = try XCTUnwrap(companies.column(named: "name"))
        XCTAssertEqual(companyName.type, "text", "types are lowercased")
        XCTAssertFalse(companyName.nullable)
        XCTAssertNil(companyName.defaultValue)

        let contacts = try XCTUnwrap(model.table(named: "contacts"))
        XCTAssertEqual(contacts.renamedFrom, ["people"], "one earlier name")
        XCTAssertEqual(
            contacts.columns.map(\.name),
            [
                "id", "email", "phone", "mobile", "visits", "debt", "score", "active", "archived", "note", "label",
                "quote", "created_at", "company_id", "parent_id", "nick", "anything",
            ])

        let id = try XCTUnwrap(contacts.column(named: "id"))
        XCTAssertTrue(id.primaryKey)
        XCTAssertEqual(id.type, "integer")

        let email = try XCTUnwrap(contacts.column(named: "email"))
        XCTAssertFalse(email.nullable)
        XCTAssertEqual(email.defaultValue, .text(""))
        XCTAssertFalse(email.primaryKey)

        let phone = try XCTUnwrap(contacts.column(named: "phone"))
        XCTAssertTrue(phone.nullable, "nullable by default")
        XCTAssertEqual(phone.renamedFrom, ["phone_number"])
        XCTAssertNil(phone.defaultValue)
        XCTAssertNil(phone.references)

        XCTAssertEqual(contacts.column(named: "mobile")?.renamedFrom, ["cell", "cellphone"], "a list of earlier names, in order")
        XCTAssertEqual(contacts.column(named: "visits")?.defaultValue, .integer(0))
        XCTAssertEqual(contacts.column(named: "debt")?.defaultValue, .integer(-7))
        XCTAssertEqual(contacts.column(named: "score")?.defaultValue, .real(1.5))
        XCTAssertEqual(contacts.column(named: "active")?.defaultValue, .integer(1), "SQLite stores true as 1")
        XCTAssertEqual(contacts.column(named: "archived")?.defaultValue, .integer(0), "SQLite stores false as 0")
        XCTAssertEqual(contacts.column(named: "note")?.defaultValue, .null)
        XCTAssertEqual(contacts.column(named: "label")?.defaultValue, .text("42"), "a quoted number is text")
        XCTAssertEqual(contacts.column(named: "quote")?.defaultValue, .text("it's"))
        XCTAssertEqual(contacts.column(named: "created_at")?.defaultValue, .expression("CURRENT_TIMESTAMP"))
        XCTAssertEqual(contacts.column(named: "company_id")?.references, ColumnReferenceModel(table: "companies", column: "id"))
        XCTAssertEqual(
            contacts.column(named: "parent_id")?.references, ColumnReferenceModel(table: "contacts", column: nil),
            "a reference without column means the primary key")
        XCTAssertEqual(contacts.column(named: "nick")?.type, "varchar(20)")
        XCTAssertEqual(contacts.column(named: "anything")?.type, "", "type is optional")

        XCTAssertEqual(
            contacts.indexes,
            [
                IndexModel(name: "contacts_email", columns: ["email"], unique: true),
                IndexModel(name: "contacts_company", columns: ["company_id", "created_at"], unique: false),
                IndexModel(name: "contacts_phone", columns: ["phone"], unique: false),
            ])

        let legacy = try XCTUnwrap(model.table(named: "legacy"))
        XCTAssertEqual(legacy.renamedFrom, ["old_legacy", "older_legacy"])
        XCTAssertEqual(legacy.columns.map(\.name), ["id"])
        XCTAssertTrue(legacy.columns[0].primaryKey)
    }

    func testLocationsOfTablesAndColumnsPointIntoTheFile() throws {
        let model = try decode(fullSchema)
        let contacts = try XCTUnwrap(model.table(named: "contacts"))
        let expectedTable = place(of: "contacts:", in: fullSchema)
        XCTAssertEqual(contacts.location?.line, expectedTable.line)
        XCTAssertEqual(contacts.location?.file, "schema.yaml")
        let expectedColumn = place(of: "name: phone", in: fullSchema)
        XCTAssertEqual(contacts.column(named: "phone")?.location?.line, expectedColumn.line)
    }

    func testDefaultSQLExpressionWithFunctionIsKeptAsExpression() throws {
        let model = try decode(
            """
            version: 1
            tables:
              t:
                columns:
                  - {name: at, type: integer, default: {sql: "(strftime('%s','now'))"}}
                  - {name: n, type: integer, default: {sql: "42"}}
            """)
        let table = try XCTUnwrap(model.table(named: "t"))
        guard case .expression? = table.column(named: "at")?.defaultValue else {
            return XCTFail("a function default is an expression, got \(String(describing: table.column(named: "at")?.defaultValue))")
        }
        XCTAssertEqual(table.column(named: "n")?.defaultValue, .integer(42), "{sql: 42} is the integer literal 42")
    }

    // MARK: Unknown keys, at every level

    func testUnknownRootKey() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: a}]
            colour: blue
            """
        assertInvalid(yaml, at: "colour", path: "", mentions: ["unknown key 'colour'"])
    }

    func testUnknownTableKey() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: a}]
                primary_key: [a]
            """
        assertInvalid(yaml, at: "primary_key", path: "tables.t", mentions: ["unknown key 'primary_key'"])
    }

    func testUnknownColumnKey() {
        let yaml = """
            version: 1
            tables:
              t:
                columns:
                  - {name: a, type: text}
                  - {name: b, type: text, unique: true}
            """
        assertInvalid(yaml, at: "unique", path: "tables.t.columns[1]", mentions: ["unknown key 'unique'"])
    }

    func testUnknownIndexKey() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: a}]
                indexes:
                  - {name: t_a, columns: [a], where: "a > 0"}
            """
        assertInvalid(yaml, at: "where", path: "tables.t.indexes[0]", mentions: ["unknown key 'where'"])
    }

    func testUnknownReferenceKey() {
        let yaml = """
            version: 1
            tables:
              p:
                columns: [{name: id, type: integer, primary_key: true}]
              c:
                columns:
                  - {name: p_id, type: integer, references: {table: p, column: id, on_delete: cascade}}
            """
        assertInvalid(yaml, at: "on_delete", path: "tables.c.columns[0].references", mentions: ["unknown key 'on_delete'"])
    }

    func testUnknownKeyInSQLDefault() {
        let yaml = """
            version: 1
            tables:
              t:
                columns:
                  - {name: a, default: {expr: CURRENT_TIMESTAMP}}
            """
        assertInvalid(yaml, at: "expr", path: "tables.t.columns[0].default", mentions: ["unknown key 'expr'"])
    }

    // MARK: Wrong types

    func testVersionMustBeAnInteger() {
        let yaml = """
            version: three
            tables:
              t:
                columns: [{name: a}]
            """
        assertInvalid(yaml, at: "three", path: "version", mentions: ["three"])
    }

    func testVersionZeroIsRefused() {
        let yaml = """
            version: 0
            tables:
              t:
                columns: [{name: a}]
            """
        assertInvalid(yaml, at: "0", path: "version", mentions: ["0"])
    }

    func testNegativeVersionIsRefused() {
        let yaml = """
            version: -2
            tables:
              t:
                columns: [{name: a}]
            """
        assertInvalid(yaml, at: "-2", path: "version")
    }

    func testTablesMustBeAMapping() {
        let yaml = """
            version: 1
            tables:
              - t
            """
        assertInvalid(yaml, at: "- t", path: "tables", mentions: ["mapping"])
    }

    func testTableMustBeAMapping() {
        let yaml = """
            version: 1
            tables:
              t: [a, b]
            """
        assertInvalid(yaml, at: "[a, b]", path: "tables.t", mentions: ["mapping"])
    }

    func testColumnsMustBeAList() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: {name: a}
            """
        assertInvalid(yaml, at: "{name: a}", path: "tables.t.columns", mentions: ["list"])
    }

    func testColumnsMustNotBeEmpty() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: []
            """
        assertInvalid(yaml, at: "[]", path: "tables.t.columns")
    }

    func testColumnMustBeAMapping() {
        let yaml = """
            version: 1
            tables:
              t:
                columns:
                  - just_a_name
            """
        assertInvalid(yaml, at: "just_a_name", path: "tables.t.columns[0]", mentions: ["mapping"])
    }

    func testNullableMustBeABoolean() {
        let yaml = """
            version: 1
            tables:
              t:
                columns:
                  - {name: a, nullable: maybe}
            """
        assertInvalid(yaml, at: "maybe", path: "tables.t.columns[0].nullable", mentions: ["maybe"])
    }

    func testPrimaryKeyMustBeABoolean() {
        let yaml = """
            version: 1
            tables:
              t:
                columns:
                  - {name: a, primary_key: 1}
            """
        assertInvalid(yaml, at: "1}", path: "tables.t.columns[0].primary_key")
    }

    func testTypeMustBeAString() {
        let yaml = """
            version: 1
            tables:
              t:
                columns:
                  - {name: a, type: [integer]}
            """
        assertInvalid(yaml, at: "[integer]", path: "tables.t.columns[0].type")
    }

    func testColumnNameMustBeAString() {
        let yaml = """
            version: 1
            tables:
              t:
                columns:
                  - {name: [a, b]}
            """
        assertInvalid(yaml, at: "[a, b]", path: "tables.t.columns[0].name")
    }

    func testRenamedFromMustBeNames() {
        let yaml = """
            version: 1
            tables:
              t:
                renamed_from: {old: yes}
                columns: [{name: a}]
            """
        assertInvalid(yaml, at: "{old", path: "tables.t.renamed_from")
    }

    func testColumnRenamedFromEntriesMustBeStrings() {
        let yaml = """
            version: 1
            tables:
              t:
                columns:
                  - {name: a, renamed_from: [b, [c]]}
            """
        assertInvalid(yaml, at: "[c]", path: "tables.t.columns[0].renamed_from[1]")
    }

    func testReferencesMustBeAMapping() {
        let yaml = """
            version: 1
            tables:
              p:
                columns: [{name: id, type: integer, primary_key: true}]
              c:
                columns:
                  - {name: p_id, references: p}
            """
        assertInvalid(yaml, at: "p}", path: "tables.c.columns[0].references", mentions: ["mapping"])
    }

    func testDefaultMustNotBeAList() {
        let yaml = """
            version: 1
            tables:
              t:
                columns:
                  - {name: a, default: [1, 2]}
            """
        assertInvalid(yaml, at: "[1, 2]", path: "tables.t.columns[0].default")
    }

    func testIndexesMustBeAList() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: a}]
                indexes: {name: t_a, columns: [a]}
            """
        assertInvalid(yaml, at: "{name: t_a", path: "tables.t.indexes", mentions: ["list"])
    }

    func testIndexUniqueMustBeABoolean() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: a}]
                indexes:
                  - {name: t_a, columns: [a], unique: sometimes}
            """
        assertInvalid(yaml, at: "sometimes", path: "tables.t.indexes[0].unique")
    }

    func testIndexColumnsMustBeNames() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: a}]
                indexes:
                  - {name: t_a, columns: {a: asc}}
            """
        assertInvalid(yaml, at: "{a: asc}", path: "tables.t.indexes[0].columns")
    }

    func testIndexColumnsMustNotBeEmpty() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: a}]
                indexes:
                  - {name: t_a, columns: []}
            """
        assertInvalid(yaml, at: "[]", path: "tables.t.indexes[0].columns")
    }

    // MARK: Missing keys

    func testMissingVersion() {
        let yaml = """
            tables:
              t:
                columns: [{name: a}]
            """
        assertInvalid(yaml, line: 1, column: 1, path: "", mentions: ["version"])
    }

    func testMissingTables() {
        let yaml = """
            version: 1
            """
        assertInvalid(yaml, line: 1, column: 1, path: "", mentions: ["tables"])
    }

    func testMissingColumns() {
        let yaml = """
            version: 1
            tables:
              t:
                renamed_from: s
            """
        assertInvalid(yaml, at: "renamed_from", path: "tables.t", mentions: ["columns"])
    }

    func testMissingColumnName() {
        let yaml = """
            version: 1
            tables:
              t:
                columns:
                  - {name: a}
                  - {type: text}
            """
        assertInvalid(yaml, at: "{type: text}", path: "tables.t.columns[1]", mentions: ["name"])
    }

    func testMissingIndexName() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: a}]
                indexes:
                  - {columns: [a]}
            """
        assertInvalid(yaml, at: "{columns: [a]}", path: "tables.t.indexes[0]", mentions: ["name"])
    }

    func testMissingIndexColumns() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: a}]
                indexes:
                  - {name: t_a, unique: true}
            """
        assertInvalid(yaml, at: "{name: t_a", path: "tables.t.indexes[0]", mentions: ["columns"])
    }

    func testMissingReferencedTableKey() {
        let yaml = """
            version: 1
            tables:
              p:
                columns: [{name: id, type: integer, primary_key: true}]
              c:
                columns:
                  - {name: p_id, references: {column: id}}
            """
        assertInvalid(yaml, at: "{column: id}", path: "tables.c.columns[0].references", mentions: ["table"])
    }

    // MARK: Consistency

    func testTableDefinedTwiceCaseInsensitively() {
        let yaml = """
            version: 1
            tables:
              contacts:
                columns: [{name: a}]
              Contacts:
                columns: [{name: b}]
            """
        assertInvalid(yaml, at: "Contacts:", path: "tables", mentions: ["Contacts", "twice"])
    }

    func testColumnDefinedTwice() {
        let yaml = """
            version: 1
            tables:
              t:
                columns:
                  - {name: email, type: text}
                  - {name: phone, type: text}
                  - {name: Email, type: text}
            """
        assertInvalid(yaml, at: "Email", path: "tables.t.columns[2]", mentions: ["Email", "twice"])
    }

    func testIndexNamingAMissingColumn() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: email}, {name: phone}]
                indexes:
                  - {name: t_x, columns: [email, fax]}
            """
        assertInvalid(yaml, at: "fax", path: "tables.t.indexes[0].columns", mentions: ["fax"])
    }

    /// The offending node of a reference to an undefined table is the `table:` value.
    func testReferenceToAnUndefinedTable() {
        let yaml = """
            version: 1
            tables:
              orders:
                columns:
                  - name: id
                    type: integer
                    primary_key: true
                  - name: customer_id
                    type: integer
                    references:
                      table: customers
            """
        assertInvalid(yaml, at: "customers", path: "tables.orders.columns", mentions: ["customers"], checkColumn: false)
    }

    func testReferenceToAnUndefinedColumn() {
        let yaml = """
            version: 1
            tables:
              customers:
                columns: [{name: id, type: integer, primary_key: true}]
              orders:
                columns:
                  - name: customer_id
                    type: integer
                    references:
                      table: customers
                      column: uuid
            """
        assertInvalid(yaml, at: "uuid", path: "tables.orders.columns", mentions: ["uuid"], checkColumn: false)
    }

    func testReferenceMatchesTableNamesCaseInsensitively() throws {
        let model = try decode(
            """
            version: 1
            tables:
              Customers:
                columns: [{name: ID, type: integer, primary_key: true}]
              orders:
                columns:
                  - {name: customer_id, type: integer, references: {table: customers, column: id}}
            """)
        XCTAssertNotNil(model.table(named: "orders")?.column(named: "customer_id")?.references)
    }

    func testReservedWinnowTableName() {
        let yaml = """
            version: 1
            tables:
              winnow_runs:
                columns: [{name: a}]
            """
        assertInvalid(yaml, at: "winnow_runs", path: "tables", mentions: ["winnow_runs", "reserved"])
    }

    func testReservedWinnowTableNameInUpperCase() {
        let yaml = """
            version: 1
            tables:
              ok:
                columns: [{name: a}]
              WINNOW_Stuff:
                columns: [{name: a}]
            """
        assertInvalid(yaml, at: "WINNOW_Stuff", path: "tables", mentions: ["reserved"])
    }

    func testReservedSQLiteTableName() {
        let yaml = """
            version: 1
            tables:
              sqlite_stat1:
                columns: [{name: a}]
            """
        assertInvalid(yaml, at: "sqlite_stat1", path: "tables", mentions: ["sqlite_stat1", "reserved"])
    }

    /// Indexes share SQLite's one namespace with tables, winnow's bookkeeping tables included.
    func testReservedIndexName() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: a}]
                indexes:
                  - {name: Winnow_Runs, columns: [a]}
            """
        assertInvalid(yaml, at: "Winnow_Runs", path: "tables.t.indexes[0].name", mentions: ["Winnow_Runs", "reserved"])
    }

    func testIndexNamedLikeATable() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: a}]
                indexes:
                  - {name: u, columns: [a]}
              u:
                columns: [{name: b}]
            """
        assertInvalid(yaml, at: "u,", path: "tables.t.indexes[0].name", mentions: ["'u'", "name of a table"])
    }

    func testEmptyFileIsInvalid() {
        XCTAssertThrowsError(try decode("")) { error in
            XCTAssertEqual((error as? WinnowError)?.exitCode, 65, "\(error)")
        }
    }

    func testInvalidYAMLIsInvalidFile() {
        XCTAssertThrowsError(try decode("version: 1\ntables: {t: [\n")) { error in
            guard case .invalidFile(let location?, _)? = error as? WinnowError else {
                return XCTFail("expected a located invalid-file error, got \(error)")
            }
            XCTAssertEqual(location.file, "schema.yaml")
        }
    }

    /// SQLite index names are global to the database: two indexes of one name can never both
    /// be created, so the file is invalid.
    func testIndexNameDefinedTwice() {
        let yaml = """
            version: 1
            tables:
              a:
                columns: [{name: x}]
                indexes:
                  - {name: by_x, columns: [x]}
              b:
                columns: [{name: x}]
                indexes:
                  - {name: by_x, columns: [x]}
            """
        assertInvalid(yaml, at: "by_x", occurrence: 2, path: "tables.b.indexes[0]", mentions: ["by_x"], checkColumn: false)
    }
    // MARK: Drops, by name only

    func testDropListsDecodeAndRenderBack() throws {
        let yaml = """
            version: 2
            tables:
              contacts:
                columns: [{name: id, type: integer, primary_key: true}, {name: email, type: text}]
                dropped: [fax, pager]
                dropped_indexes: contacts_fax
            dropped_tables: [legacy_contacts]
            """
        let model = try decode(yaml)
        let contacts = try XCTUnwrap(model.table(named: "contacts"))
        XCTAssertEqual(contacts.dropped.map(\.name), ["fax", "pager"])
        XCTAssertEqual(contacts.droppedIndexes.map(\.name), ["contacts_fax"])
        XCTAssertEqual(model.droppedTables.map(\.name), ["legacy_contacts"])
        XCTAssertTrue(model.drops(table: "LEGACY_contacts") && contacts.drops(column: "Fax") && contacts.drops(index: "contacts_FAX"))
        XCTAssertEqual(contacts.dropped.first?.location?.line, 5, "a dropped name keeps where the file wrote it")
        // What the printer writes loads back as the same model (YAML and JSON).
        XCTAssertEqual(try decode(try SchemaPrinter.render(model)), model)
        XCTAssertEqual(try decode(SchemaPrinter.json(model)), model)
        XCTAssertNotEqual(
            try SchemaVersions.checksum(of: model), try SchemaVersions.checksum(of: SchemaModel(version: 2, tables: model.tables)))
    }

    func testDroppedColumnThatIsAlsoDescribedIsInvalid() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: email}, {name: phone}]
                dropped: [fax, Phone]
            """
        assertInvalid(yaml, at: "Phone", path: "tables.t.dropped", mentions: ["Phone", "also described"])
    }

    func testDroppedColumnThatARenameReadsIsInvalid() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: mobile, renamed_from: phone}]
                dropped: [phone]
            """
        assertInvalid(yaml, at: "phone]", path: "tables.t.dropped", mentions: ["phone", "renamed_from", "mobile"])
    }

    func testDroppedIndexThatIsAlsoDescribedIsInvalid() {
        let yaml = """
            version: 1
            tables:
              t:
                columns: [{name: email}]
                indexes: [{name: t_email, columns: [email]}]
                dropped_indexes: [t_email]
            """
        assertInvalid(yaml, at: "t_email]", path: "tables.t.dropped_indexes", mentions: ["t_email", "also described"])
    }

    func testDroppedTableThatIsAlsoDescribedOrRenamedIsInvalid() {
        let described = """
            version: 1
            tables:
              t:
                columns: [{name: email}]
            dropped_tables: [T]
            """
        assertInvalid(described, at: "T]", path: "dropped_tables", mentions: ["T", "also described"])
        let renamed = """
            version: 1
            tables:
              t:
                renamed_from: old_t
                columns: [{name: email}]
            dropped_tables: [old_t]
            """
        assertInvalid(renamed, at: "old_t]", path: "dropped_tables", mentions: ["old_t", "renamed_from"])
    }

    func testDropListsRefuseTwiceNamedAndReservedNames() {
        let twice = """
            version: 1
            tables:
              t:
                columns: [{name: email}]
                dropped: [fax, FAX]
            """
        assertInvalid(twice, at: "FAX", path: "tables.t.dropped[1]", mentions: ["FAX", "twice"])
        let reserved = """
            version: 1
            tables:
              t:
                columns: [{name: email}]
            dropped_tables: [winnow_runs]
            """
        assertInvalid(reserved, at: "winnow_runs", path: "dropped_tables[0]", mentions: ["reserved"])
        let notAName = """
            version: 1
            tables:
              t:
                columns: [{name: email}]
                dropped: [{name: fax}]
            """
        assertInvalid(notAName, at: "{name: fax}", path: "tables.t.dropped[0]", checkColumn: false)
    }
}
