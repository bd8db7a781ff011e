import Foundation
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite

/// Binding a dedupe rule to a (hand-built) live schema: names are checked and canonicalised,
/// errors point at the rule's nodes, and the SQL fragments quote every identifier and encode
/// the winner order of docs/reference.md section 2.
final class RuleCompilerTests: XCTestCase {

    // MARK: Schema builders

    private func column(_ name: String, _ type: String = "TEXT", pk: Int = 0, hidden: Int = 0) -> LiveColumn {
        LiveColumn(name: name, type: type, notNull: false, defaultSQL: nil, primaryKeyIndex: pk, generated: hidden != 0)
    }

    private func table(
        _ name: String, _ columns: [LiveColumn], hasRowID: Bool = true, isVirtual: Bool = false,
        foreignKeys: [LiveForeignKey] = [], indexes: [LiveIndex] = []
    ) -> LiveTable {
        LiveTable(
            name: name, columns: columns, hasRowID: hasRowID, isVirtual: isVirtual,
            foreignKeys: foreignKeys, indexes: indexes)
    }

    private func index(_ name: String, _ columns: [String?], unique: Bool, origin: IndexOrigin = .createIndex) -> LiveIndex {
        LiveIndex(name: name, columns: columns, unique: unique, partial: false, origin: origin)
    }

    private lazy var contacts = table(
        "contacts",
        [
            column("id", "INTEGER", pk: 1), column("email"), column("name"), column("created_at", "INTEGER"),
            column("visits", "INTEGER"), column("key_hash"),
        ])

    private lazy var orders = table(
        "orders",
        [
            column("id", "INTEGER", pk: 1), column("customer_id", "INTEGER"), column("order_no"),
        ],
        foreignKeys: [
            LiveForeignKey(childTable: "orders", childColumns: ["customer_id"], parentTable: "contacts", parentColumns: ["ID"])
        ],
        indexes: [
            index("orders_no_customer", ["order_no", "customer_id"], unique: true),
            index("orders_customer", ["customer_id"], unique: false),
            index("orders_no", ["order_no"], unique: true, origin: .uniqueConstraint),
        ])

    /// A link table (composite primary key, so no rowid alias) whose foreign key names no
    /// parent columns, which means the parent's primary key.
    private lazy var links = table(
        "links",
        [
            column("contact_id", "INTEGER", pk: 1), column("tag_id", "INTEGER", pk: 2),
        ],
        foreignKeys: [
            LiveForeignKey(childTable: "links", childColumns: ["contact_id"], parentTable: "Contacts", parentColumns: nil)
        ],
        indexes: [
            index("sqlite_autoindex_links_1", ["contact_id", "tag_id"], unique: true, origin: .primaryKey)
        ])

    /// One row per contact: the reference is the rowid alias itself.
    private lazy var profiles = table(
        "profiles",
        [
            column("contact_id", "INTEGER", pk: 1), column("bio"),
        ],
        foreignKeys: [
            LiveForeignKey(childTable: "profiles", childColumns: ["contact_id"], parentTable: "contacts", parentColumns: ["id"])
        ])

    /// No declared foreign key: only `referenced_by:` knows about it.
    private lazy var notes = table("notes", [column("id", "INTEGER", pk: 1), column("contact_id", "INTEGER"), column("body")])

    private lazy var memberships = table(
        "memberships",
        [
            column("group_id", "INTEGER", pk: 1), column("member_id", "INTEGER", pk: 2), column("role"),
        ], indexes: [index("sqlite_autoindex_memberships_1", ["group_id", "member_id"], unique: true, origin: .primaryKey)])

    private lazy var events = table("events", [column("kind"), column("at", "INTEGER")])

    private lazy var schema = LiveSchema(tables: [contacts, orders, links, profiles, notes, memberships, events])

    // MARK: Rule builders

    private func at(_ line: Int, _ column: Int) -> SourceLocation {
        SourceLocation(file: "job.yaml", line: line, column: column)
    }

    private func name(_ value: String, _ line: Int = 0, _ col: Int = 0) -> Located<String> {
        Located(value, at: line == 0 ? nil : at(line, col))
    }

    private func rule(
        _ entity: String, key: [String], index: Int = 0, normalize: [String: [Normalizer]] = [:],
        hash: Bool = false, nulls: NullPolicy = .distinct, winner: WinnerRule = .ordered([]),
        merge: [MergeRule] = [], referencedBy: [ColumnReference] = []
    ) -> DedupeRule {
        DedupeRule(
            index: index, location: at(3, 5), entity: name(entity, 3, 13), key: key.map { name($0) },
            hash: hash, normalize: normalize, nulls: nulls, winner: winner, merge: merge,
            referencedBy: referencedBy)
    }

    private func assertInvalid(
        _ rule: DedupeRule, in schema: LiveSchema? = nil, at location: SourceLocation,
        path: String, mentions fragments: [String] = [],
        file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            let compiled = try SQLiteBackend.compile(rule, schema: schema ?? self.schema)
            XCTFail("expected an invalid-file error, compiled \(compiled.table)", file: file, line: line)
        } catch let error as WinnowError {
            XCTAssertEqual(error.exitCode, 65, file: file, line: line)
            guard case let .invalidFile(actual, message) = error else {
                return XCTFail("expected .invalidFile, got \(error)", file: file, line: line)
            }
            XCTAssertEqual(actual, location, message, file: file, line: line)
            XCTAssertTrue(message.hasPrefix("\(path): "), "message should start with \(path): \(message)", file: file, line: line)
            for fragment in fragments {
                XCTAssertTrue(message.contains(fragment), "message should mention '\(fragment)': \(message)", file: file, line: line)
            }
        } catch {
            XCTFail("expected WinnowError, got \(error)", file: file, line: line)
        }
    }

    /// The terms of an ORDER BY list (no identifier in these tests contains ", ").
    private func terms(_ orderBy: String) -> [String] { orderBy.components(separatedBy: ", ") }

    // MARK: Unknown names

    func testUnknownTablePointsAtTheEntity() {
        assertInvalid(
            rule("customers", key: ["email"], index: 2), at: at(3, 13), path: "dedupe[2].entity",
            mentions: ["customers"])
    }

    func testUnknownKeyColumnPointsAtThatColumn() {
        var r = rule("contacts", key: [])
        r.key = [name("email", 4, 11), name("phon", 4, 18)]
        assertInvalid(r, at: at(4, 18), path: "dedupe[0].key", mentions: ["phon"])
    }

    func testUnknownWinnerColumn() {
        let winner = WinnerRule.ordered([WinnerTerm(column: name("created", 6, 9), descending: false)])
        assertInvalid(
            rule("contacts", key: ["email"], winner: winner), at: at(6, 9), path: "dedupe[0].winner",
            mentions: ["created"])
    }

    func testUnknownMergeColumn() {
        let merge = [MergeRule(column: name("phone", 8, 7), strategy: .fillNull)]
        assertInvalid(
            rule("contacts", key: ["email"], merge: merge), at: at(8, 7), path: "dedupe[0].merge",
            mentions: ["phone"])
    }

    func testUnknownHashColumn() {
        var r = rule("contacts", key: ["email"], hash: true)
        r.hashColumn = name("email_hash", 5, 18)
        assertInvalid(r, at: at(5, 18), path: "dedupe[0].hash_column", mentions: ["email_hash"])
    }

    func testUnknownReferencingTableAndColumn() {
        let missingTable = ColumnReference(table: "invoices", column: "contact_id", location: at(9, 9))
        assertInvalid(
            rule("contacts", key: ["email"], referencedBy: [missingTable]), at: at(9, 9),
            path: "dedupe[0].referenced_by", mentions: ["invoices"])
        let missingColumn = ColumnReference(table: "notes", column: "author_id", location: at(10, 9))
        assertInvalid(
            rule("contacts", key: ["email"], referencedBy: [missingColumn]), at: at(10, 9),
            path: "dedupe[0].referenced_by", mentions: ["author_id"])
    }

    func testKeyColumnNamedTwiceInDifferentCase() {
        var r = rule("contacts", key: [])
        r.key = [name("email", 4, 11), name("EMAIL", 4, 18)]
        // The second spelling is the offending node (as JobLoader points at a repeated column).
        assertInvalid(r, at: at(4, 18), path: "dedupe[0].key", mentions: ["EMAIL"])
    }

    func testMergingAKeyColumnInAnotherCaseIsRefused() {
        let merge = [MergeRule(column: name("EMAIL", 8, 7), strategy: .fillNull)]
        assertInvalid(rule("contacts", key: ["email"], merge: merge), at: at(8, 7), path: "dedupe[0].merge")
    }

    func testMergingThePrimaryKeyIsRefused() {
        let merge = [MergeRule(column: name("id", 8, 7), strategy: .max)]
        assertInvalid(rule("contacts", key: ["email"], merge: merge), at: at(8, 7), path: "dedupe[0].merge")
    }

    func testMergingAGeneratedColumnIsRefused() {
        let people = table("people", [column("id", "INTEGER", pk: 1), column("first"), column("full", hidden: 2)])
        let merge = [MergeRule(column: name("full", 8, 7), strategy: .longest)]
        assertInvalid(
            rule("people", key: ["first"], merge: merge), in: LiveSchema(tables: [people]), at: at(8, 7),
            path: "dedupe[0].merge", mentions: ["generated"])
    }

    // MARK: Tables that cannot be deduplicated

    func testWinnowTablesAreRefused() {
        let bookkeeping = LiveSchema(tables: [table("winnow_runs", [column("id", "INTEGER", pk: 1), column("job")])])
        assertInvalid(
            rule("winnow_runs", key: ["job"]), in: bookkeeping, at: at(3, 13), path: "dedupe[0].entity",
            mentions: ["winnow_"])
        assertInvalid(rule("WINNOW_Journal", key: ["job"]), in: bookkeeping, at: at(3, 13), path: "dedupe[0].entity")
    }

    /// A WITHOUT ROWID table is named by its primary key, and so is a WITHOUT ROWID table that
    /// references it; what needs a rowid (a change log by rowid) is refused at the option that
    /// asks for it.
    func testWithoutRowIDTableIsNamedByItsPrimaryKey() throws {
        let kv = table(
            "kv", [column("k", pk: 1), column("n", "INTEGER", pk: 2), column("v"), column("h")], hasRowID: false,
            indexes: [index("sqlite_autoindex_kv_1", ["k", "n"], unique: true, origin: .primaryKey)])
        let schema = LiveSchema(tables: [kv])
        let compiled = try SQLiteBackend.compile(rule("kv", key: ["v"]), schema: schema)
        XCTAssertEqual(compiled.identity, .primaryKey(["k", "n"]))
        var hashed = rule("kv", key: ["v"], hash: true)
        hashed.hashColumn = name("h", 5, 18)
        XCTAssertEqual(try SQLiteBackend.compile(hashed, schema: schema).hashColumn, "h")
        var incremental = rule("kv", key: ["v"])
        incremental.incremental = true
        assertInvalid(incremental, in: schema, at: at(3, 5), path: "dedupe[0].incremental", mentions: ["WITHOUT ROWID"])
        let child = table(
            "kv_notes", [column("k", pk: 1), column("n", "INTEGER", pk: 2)], hasRowID: false,
            foreignKeys: [LiveForeignKey(childTable: "kv_notes", childColumns: ["k", "n"], parentTable: "kv", parentColumns: nil)],
            indexes: [index("sqlite_autoindex_kv_notes_1", ["k", "n"], unique: true, origin: .primaryKey)])
        let withChild = try SQLiteBackend.compile(rule("kv", key: ["v"]), schema: LiveSchema(tables: [kv, child]))
        XCTAssertEqual(withChild.references.map(\.childIdentity), [.primaryKey(["k", "n"])])
        XCTAssertEqual(withChild.references.map(\.childKeyTypes), [["TEXT", "INTEGER"]])
    }

    func testVirtualTableIsRefused() {
        let fts = table("docs", [column("body")], hasRowID: false, isVirtual: true)
        assertInvalid(rule("docs", key: ["body"]), in: LiveSchema(tables: [fts]), at: at(3, 13), path: "dedupe[0].entity")
    }

    // MARK: Canonical names

    func testNamesResolveCaseInsensitivelyToTheirCanonicalSpelling() throws {
        let winner = WinnerRule.ordered([WinnerTerm(column: name("CREATED_AT"), descending: true)])
        var r = rule(
            "CONTACTS", key: ["EMAIL"], normalize: ["EMAIL": [.lowercase]], hash: true, winner: winner,
            merge: [MergeRule(column: name("Visits"), strategy: .sum)])
        r.hashColumn = name("Key_Hash")
        let compiled = try SQLiteBackend.compile(r, schema: schema)
        XCTAssertEqual(compiled.table, "contacts")
        XCTAssertEqual(compiled.qualifiedTable, "main.\"contacts\"")
        XCTAssertEqual(compiled.keyColumns, ["email"])
        XCTAssertEqual(compiled.hashColumn, "key_hash")
        XCTAssertEqual(compiled.mergeColumns.map(\.name), ["visits"])
        XCTAssertEqual(compiled.mergeColumns.map(\.strategy), [.sum])
        XCTAssertEqual(compiled.winnerTerms, [.column("created_at", descending: true, nullsLast: false)])
        // The normalisers written for "EMAIL" still apply to the canonical column.
        XCTAssertEqual(compiled.keyExpressions(), ["winnow_lower(\"email\")"])
        XCTAssertEqual(compiled.primaryKey, ["id"])
        XCTAssertEqual(compiled.storedColumns, ["id", "email", "name", "created_at", "visits", "key_hash"])
    }

    func testGeneratedColumnsAreNotStored() throws {
        let people = table("people", [column("id", "INTEGER", pk: 1), column("first"), column("full", hidden: 3)])
        let compiled = try SQLiteBackend.compile(rule("people", key: ["first"]), schema: LiveSchema(tables: [people]))
        XCTAssertEqual(compiled.storedColumns, ["id", "first"])
    }

    // MARK: Winner order

    func testOrderByIsWinnerTermsThenContentThenPrimaryKey() throws {
        let winner = WinnerRule.ordered([WinnerTerm(column: name("created_at"), descending: true)])
        let compiled = try SQLiteBackend.compile(rule("contacts", key: ["email"], winner: winner), schema: schema)
        XCTAssertEqual(
            terms(compiled.orderBy()),
            [
                "\"created_at\" DESC",
                "\"email\" COLLATE BINARY ASC",
                "\"name\" COLLATE BINARY ASC",
                "\"created_at\" COLLATE BINARY ASC",
                "\"visits\" COLLATE BINARY ASC",
                "\"key_hash\" COLLATE BINARY ASC",
                "\"id\" ASC",
            ])
        XCTAssertEqual(terms(compiled.orderBy(alias: "t")).first, "t.\"created_at\" DESC")
        XCTAssertEqual(terms(compiled.orderBy(alias: "t")).last, "t.\"id\" ASC")
    }

    func testOrderByWithoutWinnerIsContentThenKey() throws {
        let compiled = try SQLiteBackend.compile(rule("contacts", key: ["email"]), schema: schema)
        let order = terms(compiled.orderBy())
        XCTAssertEqual(order.first, "\"email\" COLLATE BINARY ASC")
        XCTAssertEqual(order.last, "\"id\" ASC")
        XCTAssertFalse(order.dropLast().contains { $0.contains("\"id\"") }, "the primary key is not content: \(order)")
    }

    func testOrderByOfATableWithoutDeclaredKeyEndsWithRowID() throws {
        let compiled = try SQLiteBackend.compile(rule("events", key: ["kind"]), schema: schema)
        XCTAssertEqual(terms(compiled.orderBy()), ["\"kind\" COLLATE BINARY ASC", "\"at\" COLLATE BINARY ASC", "rowid ASC"])
        XCTAssertEqual(terms(compiled.orderBy(alias: "e")).last, "e.rowid ASC")
    }

    func testOrderByWithANonIntegerKeyEndsWithKeyThenRowID() throws {
        let codes = table(
            "codes", [column("code", "TEXT", pk: 1), column("label")],
            indexes: [index("sqlite_autoindex_codes_1", ["code"], unique: true, origin: .primaryKey)])
        let compiled = try SQLiteBackend.compile(rule("codes", key: ["label"]), schema: LiveSchema(tables: [codes]))
        XCTAssertEqual(terms(compiled.orderBy()), ["\"label\" COLLATE BINARY ASC", "\"code\" ASC", "rowid ASC"])
    }

    func testOrderByWhenAColumnShadowsRowID() throws {
        let shadow = table("shadow", [column("rowid"), column("v")])
        let compiled = try SQLiteBackend.compile(rule("shadow", key: ["v"]), schema: LiveSchema(tables: [shadow]))
        let order = terms(compiled.orderBy())
        XCTAssertEqual(order.first, "\"rowid\" COLLATE BINARY ASC", "the column named rowid is content")
        XCTAssertEqual(order.last, "_rowid_ ASC", "the real rowid is reached under another name")
    }

    func testEarliestAndLatestPutNullsLast() throws {
        let earliest = WinnerRule.ordered([WinnerTerm(column: name("created_at"), descending: false, nullsLast: true)])
        let latest = WinnerRule.ordered([WinnerTerm(column: name("created_at"), descending: true, nullsLast: true)])
        let first = try SQLiteBackend.compile(rule("contacts", key: ["email"], winner: earliest), schema: schema)
        let last = try SQLiteBackend.compile(rule("contacts", key: ["email"], winner: latest), schema: schema)
        XCTAssertEqual(terms(first.orderBy()).first, "\"created_at\" ASC NULLS LAST")
        XCTAssertEqual(terms(last.orderBy()).first, "\"created_at\" DESC NULLS LAST")
        XCTAssertEqual(terms(last.orderBy()).last, "\"id\" ASC")
    }

    func testMostCompleteCountsNonNullContentColumns() throws {
        let compiled = try SQLiteBackend.compile(rule("contacts", key: ["email"], winner: .mostComplete), schema: schema)
        let first = try XCTUnwrap(terms(compiled.orderBy()).first)
        XCTAssertTrue(first.hasSuffix(") DESC"), "more non-NULL columns first: \(first)")
        for content in ["email", "name", "created_at", "visits", "key_hash"] {
            XCTAssertTrue(first.contains("(\"\(content)\" IS NOT NULL)"), "\(content) counts: \(first)")
        }
        XCTAssertFalse(first.contains("\"id\""), "the primary key is never NULL and does not count: \(first)")
        XCTAssertEqual(first.components(separatedBy: " + ").count, 5)
        XCTAssertEqual(terms(compiled.orderBy())[1], "\"email\" COLLATE BINARY ASC", "then the content tie-break")
    }

    // MARK: Grouping

    func testNormalisersApplyInnermostFirst() throws {
        let r = rule(
            "contacts", key: ["email", "name", "visits"],
            normalize: ["email": [.trim, .lowercase], "name": [.collapseWhitespace, .nfkc], "visits": [.digitsOnly]])
        let compiled = try SQLiteBackend.compile(r, schema: schema)
        XCTAssertEqual(
            compiled.groupExpressions(),
            [
                "winnow_lower(winnow_trim(\"email\"))",
                "winnow_nfkc(winnow_collapse_ws(\"name\"))",
                "winnow_digits(\"visits\")",
            ])
        XCTAssertEqual(compiled.groupExpressions(alias: "a").first, "winnow_lower(winnow_trim(a.\"email\"))")
    }

    func testKeyWithoutNormalisersIsTheBareColumn() throws {
        let compiled = try SQLiteBackend.compile(rule("contacts", key: ["email", "name"]), schema: schema)
        XCTAssertEqual(compiled.groupExpressions(), ["\"email\"", "\"name\""])
    }

    func testHashModeGroupsByOneHashExpression() throws {
        let distinct = try SQLiteBackend.compile(
            rule(
                "contacts", key: ["email", "name"], normalize: ["email": [.lowercase]],
                hash: true), schema: schema)
        XCTAssertEqual(distinct.groupExpressions(), ["winnow_hash(0, winnow_lower(\"email\"), \"name\")"])
        let equal = try SQLiteBackend.compile(
            rule(
                "contacts", key: ["email", "name"], normalize: ["email": [.lowercase]],
                hash: true, nulls: .equal), schema: schema)
        XCTAssertEqual(equal.groupExpressions(), ["winnow_hash(1, winnow_lower(\"email\"), \"name\")"])
    }

    func testCandidateFilterForNullPolicies() throws {
        let distinct = try SQLiteBackend.compile(
            rule("contacts", key: ["email", "name"], normalize: ["email": [.trim]]),
            schema: schema)
        // Normalisers keep NULL as NULL and never make NULL of a value (NormalizeTests), so the
        // raw columns are tested: no normaliser runs twice per row.
        XCTAssertEqual(distinct.candidateFilter(), "\"email\" IS NOT NULL AND \"name\" IS NOT NULL")
        XCTAssertEqual(distinct.candidateFilter(alias: "c"), "c.\"email\" IS NOT NULL AND c.\"name\" IS NOT NULL")
        let equal = try SQLiteBackend.compile(rule("contacts", key: ["email", "name"], nulls: .equal), schema: schema)
        XCTAssertEqual(equal.candidateFilter(), "1", "NULL matches NULL: every row is a candidate")
    }

    func testSameKeyUsesISOnlyWhenNullsAreEqual() throws {
        let distinct = try SQLiteBackend.compile(rule("contacts", key: ["email"]), schema: schema)
        XCTAssertEqual(distinct.sameKey("a", "b"), "a.\"email\" = b.\"email\"")
        let equal = try SQLiteBackend.compile(rule("contacts", key: ["email"], nulls: .equal), schema: schema)
        XCTAssertEqual(equal.sameKey("a", "b"), "a.\"email\" IS b.\"email\"")
    }

    // MARK: References

    func testDeclaredForeignKeysBecomeReferencePaths() throws {
        let compiled = try SQLiteBackend.compile(rule("contacts", key: ["email"]), schema: schema)
        XCTAssertEqual(compiled.references.map(\.childTable), ["orders", "links", "profiles"])
        XCTAssertTrue(compiled.references.allSatisfy(\.declared))

        let order = compiled.references[0]
        XCTAssertEqual(order.childColumns, ["customer_id"])
        XCTAssertEqual(order.parentColumns, ["id"], "the declared parent column in its canonical spelling")
        XCTAssertEqual(order.childRowID, "\"id\"")
        XCTAssertEqual(order.childStoredColumns, ["id", "customer_id", "order_no"])
        // Only unique keys that include the re-pointed column can be broken by re-pointing.
        XCTAssertEqual(order.uniqueKeys, [["order_no", "customer_id"]])

        let link = compiled.references[1]
        XCTAssertEqual(link.childColumns, ["contact_id"])
        XCTAssertEqual(link.parentColumns, ["id"], "a foreign key without columns means the parent's primary key")
        XCTAssertEqual(link.childRowID, "rowid")
        XCTAssertEqual(link.uniqueKeys, [["contact_id", "tag_id"]], "the link table's primary key")

        let profile = compiled.references[2]
        XCTAssertEqual(profile.uniqueKeys, [["contact_id"]], "a reference that is the child's INTEGER PRIMARY KEY is unique")
    }

    func testReferencedByAddsUndeclaredReferences() throws {
        let ref = ColumnReference(table: "notes", column: "contact_id", location: at(12, 9))
        let compiled = try SQLiteBackend.compile(rule("contacts", key: ["email"], referencedBy: [ref]), schema: schema)
        let paths = compiled.references.filter { $0.childTable == "notes" }
        XCTAssertEqual(paths.count, 1)
        XCTAssertEqual(paths.first?.childColumns, ["contact_id"])
        XCTAssertEqual(paths.first?.parentColumns, ["id"], "referenced_by holds the table's primary key")
        XCTAssertEqual(paths.first?.declared, false)
        XCTAssertEqual(paths.first?.uniqueKeys, [])
        XCTAssertEqual(compiled.references.count, 4, "the three declared references stay")
    }

    func testReferencedByNamingADeclaredForeignKeyIsNotRepeated() throws {
        let ref = ColumnReference(table: "ORDERS", column: "Customer_ID", location: at(12, 9))
        let compiled = try SQLiteBackend.compile(rule("contacts", key: ["email"], referencedBy: [ref]), schema: schema)
        let paths = compiled.references.filter { $0.childTable == "orders" }
        XCTAssertEqual(paths.count, 1, "re-pointing the same column twice would be wrong: \(paths)")
        XCTAssertEqual(paths.first?.declared, true)
    }

    func testReferencedByCanonicalisesNames() throws {
        let ref = ColumnReference(table: "Notes", column: "CONTACT_ID", location: at(12, 9))
        let compiled = try SQLiteBackend.compile(rule("contacts", key: ["email"], referencedBy: [ref]), schema: schema)
        let path = try XCTUnwrap(compiled.references.first { !$0.declared })
        XCTAssertEqual(path.childTable, "notes")
        XCTAssertEqual(path.childColumns, ["contact_id"])
    }

    func testReferencedByOnACompositePrimaryKeyIsRefused() {
        let ref = ColumnReference(table: "notes", column: "contact_id", location: at(12, 9))
        assertInvalid(
            rule("memberships", key: ["role"], referencedBy: [ref]), at: at(12, 9),
            path: "dedupe[0].referenced_by", mentions: ["memberships"])
    }

    func testReferencedByOnATableWithoutPrimaryKeyIsRefused() {
        let ref = ColumnReference(table: "notes", column: "contact_id", location: at(12, 9))
        assertInvalid(
            rule("events", key: ["kind"], referencedBy: [ref]), at: at(12, 9),
            path: "dedupe[0].referenced_by", mentions: ["events"])
    }

    func testTableWithoutReferencesHasNone() throws {
        let compiled = try SQLiteBackend.compile(rule("notes", key: ["body"]), schema: schema)
        XCTAssertTrue(compiled.references.isEmpty)
    }

    // MARK: Quoting

    func testIdentifiersAreQuoted() throws {
        let weird = table(
            "we\"ird table",
            [
                column("id", "INTEGER", pk: 1), column("we\"ird"), column("first name"), column("x\"); DROP TABLE t; --"),
            ])
        var r = rule(
            "we\"ird table", key: ["we\"ird", "first name"], normalize: ["first name": [.trim]],
            merge: [MergeRule(column: name("x\"); DROP TABLE t; --"), strategy: .fillNull)])
        r.index = 0
        let compiled = try SQLiteBackend.compile(r, schema: LiveSchema(tables: [weird]))
        XCTAssertEqual(compiled.qualifiedTable, "main.\"we\"\"ird table\"")
        XCTAssertEqual(compiled.keyExpressions(), ["\"we\"\"ird\"", "winnow_trim(\"first name\")"])
        XCTAssertEqual(
            compiled.orderBy(),
            [
                "\"we\"\"ird\" COLLATE BINARY ASC",
                "\"first name\" COLLATE BINARY ASC",
                "\"x\"\"); DROP TABLE t; --\" COLLATE BINARY ASC",
                "\"id\" ASC",
            ].joined(separator: ", "))
        XCTAssertEqual(compiled.candidateFilter(), "\"we\"\"ird\" IS NOT NULL AND \"first name\" IS NOT NULL")
        XCTAssertEqual(compiled.mergeColumns.map(\.name), ["x\"); DROP TABLE t; --"])
    }
}
