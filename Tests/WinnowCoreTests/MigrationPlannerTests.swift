import Foundation
import XCTest
@testable import WinnowCore

/// Lightweight migrations (docs/reference.md section 3) inferred from a hand-built live schema and a
/// target model; schema drift; and column defaults as SQL text. Pure: no database.
final class MigrationPlannerTests: XCTestCase {

    // MARK: Building live schemas by hand

    private func col(
        _ name: String, _ type: String, notNull: Bool = false, dflt: String? = nil, pk: Int = 0, constrainedInDefinition: Bool = false,
        inTableConstraint: Bool = false
    ) -> LiveColumn {
        var column = LiveColumn(name: name, type: type, notNull: notNull, defaultSQL: dflt, primaryKeyIndex: pk)
        column.constrainedInDefinition = constrainedInDefinition
        column.inTableConstraint = inTableConstraint
        return column
    }

    private func table(
        _ name: String, sql: String, _ columns: [LiveColumn], foreignKeys: [LiveForeignKey] = [],
        indexes: [LiveIndex] = []
    ) -> LiveTable {
        LiveTable(
            name: name, sql: sql, columns: columns, hasRowID: true, isVirtual: false, foreignKeys: foreignKeys,
            indexes: indexes)
    }

    private func index(_ name: String, _ columns: [String], unique: Bool = false, origin: IndexOrigin = .createIndex) -> LiveIndex {
        LiveIndex(name: name, columns: columns, unique: unique, partial: false, origin: origin)
    }

    /// contacts(id INTEGER PRIMARY KEY, email TEXT NOT NULL DEFAULT '', phone TEXT, created_at INTEGER)
    private func liveContacts(
        name: String = "contacts", indexes: [LiveIndex] = [], extra: [LiveColumn] = [],
        extraSQL: String = ""
    ) -> LiveTable {
        table(
            name,
            sql: """
                CREATE TABLE \(name) (
                    id INTEGER PRIMARY KEY,
                    email TEXT NOT NULL DEFAULT '',
                    phone TEXT,
                    created_at INTEGER\(extraSQL)
                )
                """,
            [
                col("id", "INTEGER", pk: 1), col("email", "TEXT", notNull: true, dflt: "''"), col("phone", "TEXT"),
                col("created_at", "INTEGER"),
            ] + extra, indexes: indexes)
    }

    private func c(
        _ name: String, _ type: String, nullable: Bool = true, _ dflt: DefaultValue? = nil, pk: Bool = false,
        renamedFrom: [String] = [], references: ColumnReferenceModel? = nil
    ) -> ColumnModel {
        ColumnModel(
            name: name, type: type, nullable: nullable, defaultValue: dflt, primaryKey: pk, renamedFrom: renamedFrom,
            references: references)
    }

    /// The target that matches `liveContacts()` exactly.
    private func targetContacts(
        name: String = "contacts", renamedFrom: [String] = [], columns: [ColumnModel]? = nil,
        indexes: [IndexModel] = [], dropped: [String] = [], droppedIndexes: [String] = []
    ) -> TableModel {
        TableModel(
            name: name, renamedFrom: renamedFrom,
            columns: columns ?? [
                c("id", "integer", pk: true),
                c("email", "text", nullable: false, .text("")),
                c("phone", "text"),
                c("created_at", "integer"),
            ], indexes: indexes, dropped: dropped.map { DroppedName($0) }, droppedIndexes: droppedIndexes.map { DroppedName($0) })
    }

    private func replacing(_ name: String, with column: ColumnModel, in columns: [ColumnModel]? = nil) -> [ColumnModel] {
        (columns ?? targetContacts().columns).map { $0.name == name ? column : $0 }
    }

    private func steps(
        _ live: [LiveTable], _ target: [TableModel], liveVersion: Int? = 1, targetVersion: Int = 2,
        allowDataLoss: Bool = false, deduped: Set<String> = [], dropsInPlace: Bool = true,
        dependents: [(name: String, sql: String)] = [], droppedTables: [String] = []
    ) throws -> [MigrationStep] {
        try plan(
            live, target, liveVersion: liveVersion, targetVersion: targetVersion, allowDataLoss: allowDataLoss, deduped: deduped,
            dropsInPlace: dropsInPlace, dependents: dependents, droppedTables: droppedTables
        ).steps
    }

    private func plan(
        _ live: [LiveTable], _ target: [TableModel], liveVersion: Int? = 1, targetVersion: Int = 2,
        allowDataLoss: Bool = false, deduped: Set<String> = [], dropsInPlace: Bool = true,
        dependents: [(name: String, sql: String)] = [], droppedTables: [String] = []
    ) throws -> MigrationPlan {
        let plan = try MigrationPlanner(
            live: LiveSchema(tables: live), liveVersion: liveVersion,
            target: SchemaModel(version: targetVersion, tables: target, droppedTables: droppedTables.map { DroppedName($0) }),
            allowDataLoss: allowDataLoss, dedupedTables: deduped, dropsColumnInPlace: dropsInPlace,
            dependents: dependents
        ).plan()
        XCTAssertEqual(plan.toVersion, targetVersion)
        XCTAssertEqual(plan.fromVersion, liveVersion)
        return plan
    }

    /// Expects an exit-65 refusal whose message mentions every fragment; returns the message.
    @discardableResult
    private func assertRefused(
        _ live: [LiveTable], _ target: [TableModel], liveVersion: Int? = 1, targetVersion: Int = 2,
        allowDataLoss: Bool = false, dropsInPlace: Bool = true,
        dependents: [(name: String, sql: String)] = [], droppedTables: [String] = [], mentions fragments: [String],
        file: StaticString = #filePath, line: UInt = #line
    ) -> String {
        do {
            let result = try MigrationPlanner(
                live: LiveSchema(tables: live), liveVersion: liveVersion,
                target: SchemaModel(version: targetVersion, tables: target, droppedTables: droppedTables.map { DroppedName($0) }),
                allowDataLoss: allowDataLoss, dropsColumnInPlace: dropsInPlace, dependents: dependents
            ).plan()
            XCTFail("expected a refusal, got steps \(result.steps.map(\.summary))", file: file, line: line)
            return ""
        } catch let error as WinnowError {
            XCTAssertEqual(error.exitCode, 65, "\(error)", file: file, line: line)
            guard case let .refused(message) = error else {
                XCTFail("expected .refused, got \(error)", file: file, line: line)
                return ""
            }
            for fragment in fragments {
                XCTAssertTrue(message.contains(fragment), "refusal should mention '\(fragment)': \(message)", file: file, line: line)
            }
            return message
        } catch {
            XCTFail("expected WinnowError, got \(error)", file: file, line: line)
            return ""
        }
    }

    private func rebuilds(_ steps: [MigrationStep]) -> [TableRebuild] {
        steps.compactMap { if case let .rebuild(r) = $0 { return r } else { return nil } }
    }

    // MARK: No change

    func testIdenticalSchemasGiveNoSteps() throws {
        XCTAssertEqual(try steps([liveContacts()], [targetContacts()]), [])
    }

    func testSameVersionAndSameSchemaGiveNoSteps() throws {
        XCTAssertEqual(try steps([liveContacts()], [targetContacts()], liveVersion: 2, targetVersion: 2), [])
    }

    func testIdenticalWithIndexesGiveNoSteps() throws {
        let live = liveContacts(indexes: [
            index("contacts_email", ["email"], unique: true),
            index("sqlite_autoindex_contacts_1", ["phone"], unique: true, origin: .uniqueConstraint),
        ])
        let target = targetContacts(indexes: [IndexModel(name: "contacts_email", columns: ["email"], unique: true)])
        XCTAssertEqual(try steps([live], [target]), [], "a UNIQUE constraint's automatic index is not a schema index")
    }

    // MARK: Tables

    func testAddTableCreatesItAndItsIndexes() throws {
        let companies = TableModel(
            name: "companies", columns: [c("id", "integer", pk: true), c("name", "text")],
            indexes: [IndexModel(name: "companies_name", columns: ["name"], unique: false)])
        let result = try steps([liveContacts()], [targetContacts(), companies])
        XCTAssertEqual(
            result,
            [
                .createTable(companies),
                .createIndex(
                    table: "companies", index: IndexModel(name: "companies_name", columns: ["name"], unique: false),
                    afterDedupe: false),
            ])
    }

    func testEmptyDatabaseCreatesEveryTable() throws {
        let a = TableModel(name: "a", columns: [c("id", "integer", pk: true)])
        let b = TableModel(
            name: "b", columns: [c("id", "integer", pk: true), c("a_id", "integer", references: .init(table: "a", column: "id"))])
        XCTAssertEqual(try steps([], [a, b], liveVersion: nil), [.createTable(a), .createTable(b)])
    }

    /// A new table is filled by the seed after the migration; a unique index on a table the
    /// job deduplicates must wait for the dedupe rules like any other.
    func testNewTableThatTheJobDedupesGetsItsUniqueIndexAfterDedupe() throws {
        let unique = IndexModel(name: "companies_name", columns: ["name"], unique: true)
        let companies = TableModel(name: "companies", columns: [c("id", "integer", pk: true), c("name", "text")], indexes: [unique])
        let result = try steps([], [companies], liveVersion: nil, deduped: ["companies"])
        XCTAssertEqual(result, [.createTable(companies), .createIndex(table: "companies", index: unique, afterDedupe: true)])
    }

    func testRenameTableByHint() throws {
        let result = try steps([liveContacts(name: "people")], [targetContacts(renamedFrom: ["people"])])
        XCTAssertEqual(result, [.renameTable(from: "people", to: "contacts")])
    }

    func testRenameTableTwoVersionsBehind() throws {
        let result = try steps([liveContacts(name: "persons")], [targetContacts(renamedFrom: ["people", "persons"])])
        XCTAssertEqual(result, [.renameTable(from: "persons", to: "contacts")])
    }

    func testRenameHintIsIgnoredWhenTheTableAlreadyHasItsNewName() throws {
        let result = try steps(
            [liveContacts(), liveContacts(name: "people")], [targetContacts(renamedFrom: ["people"])],
            allowDataLoss: true, droppedTables: ["people"])
        XCTAssertEqual(result, [.dropTable("people")])
    }

    func testTableNamesMatchCaseInsensitively() throws {
        XCTAssertEqual(try steps([liveContacts(name: "Contacts")], [targetContacts()]), [])
    }

    func testDropTableWithoutAllowDataLossIsRefused() {
        let old = table(
            "legacy", sql: "CREATE TABLE legacy (id INTEGER PRIMARY KEY, v TEXT)",
            [col("id", "INTEGER", pk: 1), col("v", "TEXT")])
        let message = assertRefused(
            [liveContacts(), old], [targetContacts()], droppedTables: ["legacy"], mentions: ["legacy", "dropped_tables", "allow_data_loss"])
        XCTAssertTrue(message.contains("take it off dropped_tables to keep it"), message)
    }

    func testDropTableWithAllowDataLoss() throws {
        let old = table(
            "legacy", sql: "CREATE TABLE legacy (id INTEGER PRIMARY KEY, v TEXT)",
            [col("id", "INTEGER", pk: 1), col("v", "TEXT")])
        XCTAssertEqual(
            try steps([liveContacts(), old], [targetContacts()], allowDataLoss: true, droppedTables: ["legacy"]), [.dropTable("legacy")])
    }

    /// A table the schema file does not mention is kept, whatever `allow_data_loss` says.
    func testUnmentionedTableIsKept() throws {
        let old = table(
            "audit", sql: "CREATE TABLE audit (id INTEGER PRIMARY KEY, v TEXT)", [col("id", "INTEGER", pk: 1), col("v", "TEXT")])
        for allowDataLoss in [false, true] {
            let result = try plan([liveContacts(), old], [targetContacts()], allowDataLoss: allowDataLoss)
            XCTAssertEqual(result.steps, [])
            XCTAssertEqual(result.kept, [KeptObject(kind: .table, table: "audit", name: "audit")])
            XCTAssertEqual(result.kept.first?.description, "table audit (not in the schema file; list it under dropped_tables to drop it)")
        }
    }

    func testLiveVersionNewerThanTargetIsRefused() {
        assertRefused([liveContacts()], [targetContacts()], liveVersion: 5, targetVersion: 4, mentions: ["5", "4"])
    }

    // MARK: Adding columns

    func testAddNullableColumn() throws {
        let nick = c("nick", "text")
        let result = try steps([liveContacts()], [targetContacts(columns: targetContacts().columns + [nick])])
        XCTAssertEqual(result, [.addColumn(table: "contacts", column: nick)])
    }

    func testAddNotNullColumnWithDefault() throws {
        let visits = c("visits", "integer", nullable: false, .integer(0))
        let result = try steps([liveContacts()], [targetContacts(columns: targetContacts().columns + [visits])])
        XCTAssertEqual(result, [.addColumn(table: "contacts", column: visits)])
    }

    func testAddNotNullColumnWithoutDefaultIsRefused() {
        let visits = c("visits", "integer", nullable: false)
        assertRefused(
            [liveContacts()], [targetContacts(columns: targetContacts().columns + [visits])],
            mentions: ["contacts", "visits"])
    }

    func testAddNotNullColumnWithNullDefaultIsRefused() {
        let visits = c("visits", "integer", nullable: false, .null)
        assertRefused(
            [liveContacts()], [targetContacts(columns: targetContacts().columns + [visits])],
            mentions: ["contacts", "visits"])
    }

    func testAddColumnWithCurrentTimestampDefaultRebuilds() throws {
        let updated = c("updated_at", "text", .expression("CURRENT_TIMESTAMP"))
        let result = try steps([liveContacts()], [targetContacts(columns: targetContacts().columns + [updated])])
        XCTAssertEqual(result.count, 1, "\(result.map(\.summary))")
        let rebuild = try XCTUnwrap(rebuilds(result).first, "ALTER TABLE ADD COLUMN cannot add a non-constant default")
        XCTAssertEqual(rebuild.table, "contacts")
        XCTAssertEqual(rebuild.added, [updated])
        XCTAssertEqual(rebuild.changed, [])
        XCTAssertEqual(rebuild.dropped, [])
        XCTAssertFalse(rebuild.reasons.isEmpty)
    }

    /// `{sql: "strftime('%s','now')"}` is as non-constant as CURRENT_TIMESTAMP: SQLite refuses
    /// `ADD COLUMN ... DEFAULT (strftime('%s','now'))` on a table that has rows.
    func testAddColumnWithFunctionDefaultRebuilds() throws {
        let value = DefaultValue.parse(sql: "strftime('%s','now')")
        XCTAssertFalse(value.isConstant, "a function call is not a constant default")
        let stamped = c("stamped", "integer", value)
        let result = try steps([liveContacts()], [targetContacts(columns: targetContacts().columns + [stamped])])
        XCTAssertFalse(
            result.contains { if case .addColumn = $0 { return true } else { return false } },
            "ADD COLUMN cannot add a function default: \(result.map(\.summary))")
        XCTAssertEqual(rebuilds(result).first?.added, [stamped])
    }

    func testAddReferenceColumnWithDefaultIsNotAnAddColumn() throws {
        let live = [
            liveContacts(), table("companies", sql: "CREATE TABLE companies (id INTEGER PRIMARY KEY)", [col("id", "INTEGER", pk: 1)]),
        ]
        let companyID = c("company_id", "integer", .integer(1), references: .init(table: "companies", column: "id"))
        let target = [
            targetContacts(columns: targetContacts().columns + [companyID]),
            TableModel(name: "companies", columns: [c("id", "integer", pk: true)]),
        ]
        let result = try steps(live, target)
        XCTAssertEqual(
            rebuilds(result).first?.added, [companyID],
            "SQLite refuses ADD COLUMN of a REFERENCES column with a non-NULL default")
    }

    func testAddPrimaryKeyColumnIsRefused() {
        let uuid = c("uuid", "text", nullable: false, .text(""), pk: true)
        assertRefused([liveContacts()], [targetContacts(columns: targetContacts().columns + [uuid])], mentions: ["contacts", "uuid"])
    }

    // MARK: Renaming columns

    func testRenameColumnByHint() throws {
        let live = table(
            "contacts",
            sql: "CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT NOT NULL DEFAULT '', phone_number TEXT, created_at INTEGER)",
            [
                col("id", "INTEGER", pk: 1), col("email", "TEXT", notNull: true, dflt: "''"), col("phone_number", "TEXT"),
                col("created_at", "INTEGER"),
            ])
        let target = targetContacts(columns: replacing("phone", with: c("phone", "text", renamedFrom: ["phone_number"])))
        XCTAssertEqual(try steps([live], [target]), [.renameColumn(table: "contacts", from: "phone_number", to: "phone")])
    }

    func testRenameColumnTwoVersionsBehind() throws {
        let live = table(
            "contacts", sql: "CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT NOT NULL DEFAULT '', tel TEXT, created_at INTEGER)",
            [
                col("id", "INTEGER", pk: 1), col("email", "TEXT", notNull: true, dflt: "''"), col("tel", "TEXT"),
                col("created_at", "INTEGER"),
            ])
        let target = targetContacts(columns: replacing("phone", with: c("phone", "text", renamedFrom: ["phone_number", "tel"])))
        XCTAssertEqual(try steps([live], [target]), [.renameColumn(table: "contacts", from: "tel", to: "phone")])
    }

    func testRenameColumnInARenamedTable() throws {
        let live = table(
            "people",
            sql: "CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT NOT NULL DEFAULT '', phone_number TEXT, created_at INTEGER)",
            [
                col("id", "INTEGER", pk: 1), col("email", "TEXT", notNull: true, dflt: "''"), col("phone_number", "TEXT"),
                col("created_at", "INTEGER"),
            ])
        let target = targetContacts(
            renamedFrom: ["people"],
            columns: replacing("phone", with: c("phone", "text", renamedFrom: ["phone_number"])))
        XCTAssertEqual(
            try steps([live], [target]),
            [
                .renameTable(from: "people", to: "contacts"),
                .renameColumn(table: "contacts", from: "phone_number", to: "phone"),
            ], "column steps name the table by its new name, after the table rename")
    }

    // MARK: Dropping columns

    private var targetWithoutPhone: TableModel {
        targetContacts(columns: targetContacts().columns.filter { $0.name != "phone" }, dropped: ["phone"])
    }

    func testDropColumnWithoutAllowDataLossIsRefused() {
        let message = assertRefused([liveContacts()], [targetWithoutPhone], mentions: ["contacts", "phone", "allow_data_loss"])
        XCTAssertTrue(message.contains("take it off dropped to keep it"), "the advice names the safe way too: \(message)")
    }

    /// A column the schema file does not mention (one the application added) is kept, and no
    /// refusal advises `allow_data_loss`, which would have dropped it.
    func testUnmentionedColumnIsKept() throws {
        let extra = col("nickname", "TEXT")
        for allowDataLoss in [false, true] {
            let result = try plan(
                [liveContacts(extra: [extra], extraSQL: ", nickname TEXT")], [targetContacts()], allowDataLoss: allowDataLoss)
            XCTAssertEqual(result.steps, [])
            XCTAssertEqual(result.kept, [KeptObject(kind: .column, table: "contacts", name: "nickname")])
        }
    }

    /// A column listed under `dropped:` that the database no longer has: nothing to do.
    func testDroppingAColumnThatIsGoneIsNothing() throws {
        let target = targetContacts(dropped: ["fax"])
        XCTAssertEqual(try plan([liveContacts()], [target], allowDataLoss: true).steps, [])
        XCTAssertEqual(try plan([liveContacts()], [target], allowDataLoss: false).kept, [])
    }

    func testDropPlainColumnNatively() throws {
        XCTAssertEqual(
            try steps([liveContacts()], [targetWithoutPhone], allowDataLoss: true),
            [.dropColumn(table: "contacts", column: "phone")])
    }

    func testDropColumnOnSQLiteWithoutDropColumnRebuilds() throws {
        let result = try steps([liveContacts()], [targetWithoutPhone], allowDataLoss: true, dropsInPlace: false)
        XCTAssertEqual(result.count, 1, "\(result.map(\.summary))")
        let rebuild = try XCTUnwrap(rebuilds(result).first)
        XCTAssertEqual(rebuild.table, "contacts")
        XCTAssertEqual(rebuild.dropped, ["phone"])
        XCTAssertEqual(rebuild.added, [])
        XCTAssertEqual(rebuild.changed, [])
    }

    func testDropColumnWhereTheEngineDropsInPlace() throws {
        XCTAssertEqual(
            try steps([liveContacts()], [targetWithoutPhone], allowDataLoss: true, dropsInPlace: true),
            [.dropColumn(table: "contacts", column: "phone")])
    }

    func testDropColumnWithUniqueConstraintRebuilds() throws {
        let live = table(
            "contacts",
            sql: "CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT NOT NULL DEFAULT '', phone TEXT UNIQUE, created_at INTEGER)",
            [
                col("id", "INTEGER", pk: 1), col("email", "TEXT", notNull: true, dflt: "''"),
                col("phone", "TEXT", constrainedInDefinition: true), col("created_at", "INTEGER"),
            ],
            indexes: [index("sqlite_autoindex_contacts_1", ["phone"], unique: true, origin: .uniqueConstraint)])
        let result = try steps([live], [targetWithoutPhone], allowDataLoss: true)
        XCTAssertEqual(result.count, 1, "\(result.map(\.summary))")
        XCTAssertEqual(rebuilds(result).first?.dropped, ["phone"], "SQLite cannot DROP COLUMN a UNIQUE column")
    }

    func testDropForeignKeyColumnRebuilds() throws {
        let companies = table("companies", sql: "CREATE TABLE companies (id INTEGER PRIMARY KEY)", [col("id", "INTEGER", pk: 1)])
        let live = table(
            "contacts",
            sql:
                "CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT NOT NULL DEFAULT '', phone TEXT, created_at INTEGER, company_id INTEGER REFERENCES companies(id))",
            [
                col("id", "INTEGER", pk: 1), col("email", "TEXT", notNull: true, dflt: "''"), col("phone", "TEXT"),
                col("created_at", "INTEGER"), col("company_id", "INTEGER"),
            ],
            foreignKeys: [
                LiveForeignKey(
                    childTable: "contacts", childColumns: ["company_id"], parentTable: "companies",
                    parentColumns: ["id"])
            ])
        let target = [targetContacts(dropped: ["company_id"]), TableModel(name: "companies", columns: [c("id", "integer", pk: true)])]
        let result = try steps([companies, live], target, allowDataLoss: true)
        XCTAssertEqual(result.count, 1, "\(result.map(\.summary))")
        let rebuild = try XCTUnwrap(rebuilds(result).first, "SQLite cannot DROP COLUMN a foreign key column")
        XCTAssertEqual(rebuild.table, "contacts")
        XCTAssertEqual(rebuild.dropped, ["company_id"])
    }

    func testDropColumnTogetherWithItsIndex() throws {
        let live = liveContacts(indexes: [index("contacts_phone", ["phone"])])
        var target = targetWithoutPhone
        target.droppedIndexes = [DroppedName("contacts_phone")]
        XCTAssertEqual(
            try steps([live], [target], allowDataLoss: true),
            [
                .dropIndex(table: "contacts", name: "contacts_phone"),
                .dropColumn(table: "contacts", column: "phone"),
            ], "the index goes first, then the column")
    }

    /// Dropping a column that an index the file does not mention covers: the index is kept, so
    /// the column cannot go; the refusal names the index and the key that would drop it.
    func testDropColumnUnderAKeptIndexIsRefused() {
        let live = liveContacts(indexes: [index("contacts_phone", ["phone"])])
        assertRefused([live], [targetWithoutPhone], allowDataLoss: true, mentions: ["phone", "contacts_phone", "dropped_indexes"])
    }

    /// A column that no table constraint names drops in place, beside columns that one does.
    func testDropColumnBesideAConstrainedKey() throws {
        let live = table(
            "kv", sql: "CREATE TABLE kv (ns TEXT NOT NULL, id INTEGER NOT NULL, key TEXT, value TEXT, PRIMARY KEY (ns, id))",
            [
                col("ns", "TEXT", notNull: true, pk: 1, inTableConstraint: true),
                col("id", "INTEGER", notNull: true, pk: 2, inTableConstraint: true), col("key", "TEXT"), col("value", "TEXT"),
            ],
            indexes: [index("sqlite_autoindex_kv_1", ["ns", "id"], unique: true, origin: .primaryKey)])
        let target = TableModel(
            name: "kv",
            columns: [
                c("ns", "text", nullable: false, pk: true), c("id", "integer", nullable: false, pk: true),
                c("value", "text"),
            ], dropped: [DroppedName("key")])
        XCTAssertEqual(try steps([live], [target], allowDataLoss: true), [.dropColumn(table: "kv", column: "key")])
    }

    /// A column that a table constraint names (a CHECK over two columns, say) is not dropped:
    /// the constraint would go with it, on every engine.
    func testDropColumnNamedByATableConstraintIsRefused() {
        var live = liveContacts()
        live.columns[2].inTableConstraint = true
        assertRefused(
            [live], [targetWithoutPhone], allowDataLoss: true, mentions: ["phone", "is named by a table constraint"])
    }

    func testDropColumnUsedByAViewIsRefused() {
        assertRefused(
            [liveContacts()], [targetWithoutPhone], allowDataLoss: true,
            dependents: [(name: "contact_phones", sql: "CREATE VIEW contact_phones AS SELECT id, phone FROM contacts")],
            mentions: ["contacts", "phone", "contact_phones"])
    }

    func testDropPrimaryKeyColumnIsRefused() {
        var columns = targetContacts().columns.filter { $0.name != "id" }
        columns[0].primaryKey = false
        assertRefused(
            [liveContacts()], [targetContacts(columns: columns, dropped: ["id"])], allowDataLoss: true, mentions: ["contacts", "id"])
    }

    // MARK: Changing columns

    func testMakeColumnNullableRebuilds() throws {
        let email = c("email", "text", nullable: true, .text(""))
        let result = try steps([liveContacts()], [targetContacts(columns: replacing("email", with: email))])
        XCTAssertEqual(result.count, 1, "\(result.map(\.summary))")
        let rebuild = try XCTUnwrap(rebuilds(result).first)
        XCTAssertEqual(rebuild.table, "contacts")
        XCTAssertEqual(rebuild.changed.map(\.name), ["email"])
        XCTAssertEqual(rebuild.changed.first?.nullable, true)
        XCTAssertEqual(rebuild.changed.first?.defaultValue, .text(""), "the default stays")
        XCTAssertEqual(rebuild.added, [])
        XCTAssertEqual(rebuild.dropped, [])
    }

    func testMakeColumnNotNullWithDefaultRebuildsFillingNulls() throws {
        let phone = c("phone", "text", nullable: false, .text("unknown"))
        let result = try steps([liveContacts()], [targetContacts(columns: replacing("phone", with: phone))])
        XCTAssertEqual(result.count, 1, "one rebuild whose copy fills the NULLs: \(result.map(\.summary))")
        guard case let .rebuild(rebuild)? = result.last else { return XCTFail("expected a rebuild last: \(result)") }
        XCTAssertEqual(rebuild.changed.map(\.name), ["phone"])
        XCTAssertEqual(rebuild.changed.first?.nullable, false)
        XCTAssertEqual(rebuild.changed.first?.defaultValue, .text("unknown"))
    }

    func testMakeRenamedColumnNotNullRebuildsUnderItsNewName() throws {
        let live = table(
            "contacts",
            sql: "CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT NOT NULL DEFAULT '', phone_number TEXT, created_at INTEGER)",
            [
                col("id", "INTEGER", pk: 1), col("email", "TEXT", notNull: true, dflt: "''"), col("phone_number", "TEXT"),
                col("created_at", "INTEGER"),
            ])
        let phone = c("phone", "text", nullable: false, .text(""), renamedFrom: ["phone_number"])
        let result = try steps([live], [targetContacts(columns: replacing("phone", with: phone))])
        XCTAssertEqual(result.count, 2, "\(result.map(\.summary))")
        XCTAssertEqual(result[0], .renameColumn(table: "contacts", from: "phone_number", to: "phone"))
        guard case let .rebuild(rebuild) = result[1] else { return XCTFail("expected a rebuild last: \(result)") }
        XCTAssertEqual(rebuild.changed.map(\.name), ["phone"], "the rebuild runs after the rename")
    }

    func testMakeColumnNotNullWithoutDefaultIsRefused() {
        let phone = c("phone", "text", nullable: false)
        assertRefused([liveContacts()], [targetContacts(columns: replacing("phone", with: phone))], mentions: ["contacts", "phone"])
    }

    func testChangeDefaultRebuilds() throws {
        let email = c("email", "text", nullable: false, .text("nobody@example.com"))
        let result = try steps([liveContacts()], [targetContacts(columns: replacing("email", with: email))])
        XCTAssertEqual(result.count, 1, "\(result.map(\.summary))")
        let rebuild = try XCTUnwrap(rebuilds(result).first)
        XCTAssertEqual(rebuild.changed, [email])
    }

    func testAddDefaultRebuilds() throws {
        let phone = c("phone", "text", .text("n/a"))
        let result = try steps([liveContacts()], [targetContacts(columns: replacing("phone", with: phone))])
        XCTAssertEqual(rebuilds(result).first?.changed, [phone])
        XCTAssertEqual(rebuilds(result).first?.changed.first?.nullable, true, "a nullable column keeps its NULLs")
    }

    func testNullDefaultIsNoDefault() throws {
        let phone = c("phone", "text", .null)
        XCTAssertEqual(try steps([liveContacts()], [targetContacts(columns: replacing("phone", with: phone))]), [])
    }

    func testTypeChangeIsRefusedNamingBothDefinitions() {
        let createdAt = c("created_at", "text")
        assertRefused(
            [liveContacts()], [targetContacts(columns: replacing("created_at", with: createdAt))],
            mentions: ["contacts", "created_at", "integer", "text"])
    }

    func testTypeComparisonIgnoresCaseAndSpacing() throws {
        let live = table(
            "t", sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR (20))",
            [col("id", "INTEGER", pk: 1), col("name", "VARCHAR (20)")])
        let target = TableModel(name: "t", columns: [c("id", "integer", pk: true), c("name", "varchar(20)")])
        XCTAssertEqual(try steps([live], [target]), [])
    }

    func testExistingColumnBecomingPrimaryKeyIsRefused() {
        let live = table("t", sql: "CREATE TABLE t (code TEXT, v TEXT)", [col("code", "TEXT"), col("v", "TEXT")])
        let target = TableModel(name: "t", columns: [c("code", "text", pk: true), c("v", "text")])
        assertRefused([live], [target], mentions: ["t", "code"])
    }

    func testChangedForeignKeyIsRefused() {
        let companies = table("companies", sql: "CREATE TABLE companies (id INTEGER PRIMARY KEY)", [col("id", "INTEGER", pk: 1)])
        let firms = table("firms", sql: "CREATE TABLE firms (id INTEGER PRIMARY KEY)", [col("id", "INTEGER", pk: 1)])
        let live = table(
            "contacts", sql: "CREATE TABLE contacts (id INTEGER PRIMARY KEY, company_id INTEGER REFERENCES companies(id))",
            [col("id", "INTEGER", pk: 1), col("company_id", "INTEGER")],
            foreignKeys: [
                LiveForeignKey(
                    childTable: "contacts", childColumns: ["company_id"], parentTable: "companies",
                    parentColumns: ["id"])
            ])
        let target = [
            TableModel(name: "companies", columns: [c("id", "integer", pk: true)]),
            TableModel(name: "firms", columns: [c("id", "integer", pk: true)]),
            TableModel(
                name: "contacts",
                columns: [
                    c("id", "integer", pk: true),
                    c("company_id", "integer", references: .init(table: "firms", column: "id")),
                ]),
        ]
        assertRefused([companies, firms, live], target, mentions: ["contacts", "company_id", "companies", "firms"])
    }

    func testAddingAForeignKeyToAnExistingColumnIsRefused() {
        let companies = table("companies", sql: "CREATE TABLE companies (id INTEGER PRIMARY KEY)", [col("id", "INTEGER", pk: 1)])
        let live = table(
            "contacts", sql: "CREATE TABLE contacts (id INTEGER PRIMARY KEY, company_id INTEGER)",
            [col("id", "INTEGER", pk: 1), col("company_id", "INTEGER")])
        let target = [
            TableModel(name: "companies", columns: [c("id", "integer", pk: true)]),
            TableModel(
                name: "contacts",
                columns: [
                    c("id", "integer", pk: true),
                    c("company_id", "integer", references: .init(table: "companies", column: "id")),
                ]),
        ]
        assertRefused([companies, live], target, mentions: ["contacts", "company_id"])
    }

    // MARK: Indexes

    func testAddIndex() throws {
        let byPhone = IndexModel(name: "contacts_phone", columns: ["phone"], unique: false)
        XCTAssertEqual(
            try steps([liveContacts()], [targetContacts(indexes: [byPhone])]),
            [.createIndex(table: "contacts", index: byPhone, afterDedupe: false)])
    }

    func testDropIndexNeedsNoDataLossPermission() throws {
        let live = liveContacts(indexes: [index("contacts_phone", ["phone"])])
        XCTAssertEqual(
            try steps([live], [targetContacts(droppedIndexes: ["contacts_phone"])]), [.dropIndex(table: "contacts", name: "contacts_phone")]
        )
    }

    /// An index the schema file does not mention (one `plan` advised, created by hand) is kept.
    func testUnmentionedIndexIsKept() throws {
        let live = liveContacts(indexes: [index("my_idx", ["phone"])])
        let result = try plan([live], [targetContacts()], allowDataLoss: true)
        XCTAssertEqual(result.steps, [])
        XCTAssertEqual(result.kept, [KeptObject(kind: .index, table: "contacts", name: "my_idx")])
        XCTAssertEqual(
            result.kept.first?.description, "index my_idx on contacts (not in the schema file; list it under dropped_indexes to drop it)")
    }

    func testChangedIndexIsDroppedThenCreated() throws {
        let live = liveContacts(indexes: [index("contacts_lookup", ["email"])])
        let changed = IndexModel(name: "contacts_lookup", columns: ["email", "phone"], unique: false)
        XCTAssertEqual(
            try steps([live], [targetContacts(indexes: [changed])]),
            [
                .dropIndex(table: "contacts", name: "contacts_lookup"),
                .createIndex(table: "contacts", index: changed, afterDedupe: false),
            ])
    }

    func testIndexBecomingUniqueIsDroppedThenCreated() throws {
        let live = liveContacts(indexes: [index("contacts_email", ["email"])])
        let unique = IndexModel(name: "contacts_email", columns: ["email"], unique: true)
        XCTAssertEqual(
            try steps([live], [targetContacts(indexes: [unique])]),
            [
                .dropIndex(table: "contacts", name: "contacts_email"),
                .createIndex(table: "contacts", index: unique, afterDedupe: false),
            ])
    }

    func testUniqueIndexOnADedupedTableWaitsForDedupe() throws {
        let unique = IndexModel(name: "contacts_email", columns: ["email"], unique: true)
        XCTAssertEqual(
            try steps([liveContacts()], [targetContacts(indexes: [unique])], deduped: ["Contacts"]),
            [.createIndex(table: "contacts", index: unique, afterDedupe: true)])
    }

    func testUniqueIndexOnAnotherTableIsCreatedAtOnce() throws {
        let unique = IndexModel(name: "contacts_email", columns: ["email"], unique: true)
        XCTAssertEqual(
            try steps([liveContacts()], [targetContacts(indexes: [unique])], deduped: ["orders"]),
            [.createIndex(table: "contacts", index: unique, afterDedupe: false)])
    }

    func testPlainIndexOnADedupedTableIsCreatedAtOnce() throws {
        let plain = IndexModel(name: "contacts_email", columns: ["email"], unique: false)
        XCTAssertEqual(
            try steps([liveContacts()], [targetContacts(indexes: [plain])], deduped: ["contacts"]),
            [.createIndex(table: "contacts", index: plain, afterDedupe: false)])
    }

    // MARK: Order and refusals together

    func testStepOrder() throws {
        // Live: people (renamed to contacts) with an index to drop, a column to rename, a column
        // to drop, a column to make nullable; a table to drop.
        let people = table(
            "people",
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT NOT NULL DEFAULT '', phone_number TEXT, fax TEXT, created_at INTEGER)
                """,
            [
                col("id", "INTEGER", pk: 1), col("email", "TEXT", notNull: true, dflt: "''"), col("phone_number", "TEXT"),
                col("fax", "TEXT"), col("created_at", "INTEGER"),
            ],
            indexes: [index("people_created", ["created_at"])])
        let legacy = table("legacy", sql: "CREATE TABLE legacy (id INTEGER PRIMARY KEY)", [col("id", "INTEGER", pk: 1)])
        let byEmail = IndexModel(name: "contacts_email", columns: ["email"], unique: true)
        let contacts = TableModel(
            name: "contacts", renamedFrom: ["people"],
            columns: [
                c("id", "integer", pk: true),
                c("email", "text", nullable: true, .text("")),
                c("phone", "text", renamedFrom: ["phone_number"]),
                c("created_at", "integer"),
                c("nick", "text"),
            ], indexes: [byEmail], dropped: [DroppedName("fax")], droppedIndexes: [DroppedName("people_created")])
        let byName = IndexModel(name: "companies_name", columns: ["name"], unique: false)
        let companies = TableModel(name: "companies", columns: [c("id", "integer", pk: true), c("name", "text")], indexes: [byName])

        let result = try steps(
            [people, legacy], [contacts, companies], allowDataLoss: true, deduped: ["contacts"], droppedTables: ["legacy"])
        func rank(_ step: MigrationStep) -> Int {
            switch step {
            case .renameTable: return 0
            case .createTable: return 1
            case .dropIndex: return 2
            case .renameColumn, .addColumn, .rebuild: return 3
            case .dropColumn: return 4
            case .createIndex: return 5
            case .dropTable: return 6
            }
        }
        let ranks = result.map(rank)
        XCTAssertEqual(ranks, ranks.sorted(), "steps out of order: \(result.map(\.summary))")
        XCTAssertEqual(result.first, .renameTable(from: "people", to: "contacts"))
        XCTAssertTrue(result.contains(.createTable(companies)))
        XCTAssertTrue(result.contains(.dropIndex(table: "contacts", name: "people_created")))
        XCTAssertTrue(result.contains(.renameColumn(table: "contacts", from: "phone_number", to: "phone")))
        XCTAssertTrue(result.contains(.addColumn(table: "contacts", column: c("nick", "text"))))
        XCTAssertTrue(result.contains(.dropColumn(table: "contacts", column: "fax")))
        XCTAssertTrue(result.contains(.createIndex(table: "contacts", index: byEmail, afterDedupe: true)))
        XCTAssertTrue(result.contains(.createIndex(table: "companies", index: byName, afterDedupe: false)))
        XCTAssertEqual(result.last, .dropTable("legacy"))
        XCTAssertEqual(rebuilds(result).map(\.table), ["contacts"])
        XCTAssertEqual(rebuilds(result).first?.changed.map(\.name), ["email"])
        XCTAssertEqual(result.count, 10, "\(result.map(\.summary))")
    }

    func testSeveralRefusalsAreListedInOneError() {
        let legacy = table("legacy", sql: "CREATE TABLE legacy (id INTEGER PRIMARY KEY)", [col("id", "INTEGER", pk: 1)])
        var columns = replacing("created_at", with: c("created_at", "text"))
        columns = replacing("phone", with: c("phone", "text", nullable: false), in: columns)
        columns.append(c("score", "real", nullable: false))
        assertRefused(
            [liveContacts(), legacy], [targetContacts(columns: columns)], droppedTables: ["legacy"],
            mentions: ["created_at", "phone", "score", "legacy"])
    }

    func testNothingIsPlannedWhenAnythingIsRefused() {
        // One lightweight change (a new column) and one refusal: the whole plan is refused.
        var columns = targetContacts().columns + [c("nick", "text")]
        columns = replacing("created_at", with: c("created_at", "blob"), in: columns)
        assertRefused([liveContacts()], [targetContacts(columns: columns)], mentions: ["created_at"])
    }

    // MARK: Drift

    private func model(_ tables: TableModel...) -> SchemaModel { SchemaModel(version: 1, tables: tables) }

    func testNoDriftBetweenEqualModels() {
        XCTAssertEqual(model(targetContacts()).drift(to: model(targetContacts())), [])
    }

    func testLiveTableModelMatchesItsSchema() {
        let live = SchemaModel(live: LiveSchema(tables: [liveContacts()]), version: 1)
        XCTAssertEqual(live.drift(to: model(targetContacts())), [])
    }

    func testRenameHintsAndColumnOrderAreNotDrift() {
        var target = targetContacts(renamedFrom: ["people"])
        target.columns.reverse()
        target.columns[0].renamedFrom = ["updated"]
        XCTAssertEqual(model(targetContacts()).drift(to: model(target)), [])
    }

    func testMissingAndExtraTables() {
        let extra = TableModel(name: "legacy", columns: [c("id", "integer", pk: true)])
        let missing = TableModel(name: "companies", columns: [c("id", "integer", pk: true)])
        let drift = model(targetContacts(), extra).drift(to: model(targetContacts(), missing))
        XCTAssertEqual(drift.count, 2, "\(drift)")
        XCTAssertTrue(drift.contains { $0.table == "companies" && $0.column == nil }, "\(drift)")
        XCTAssertTrue(drift.contains { $0.table == "legacy" && $0.column == nil }, "\(drift)")
    }

    func testMissingAndExtraColumns() {
        let live = targetContacts(columns: targetContacts().columns + [c("fax", "text")])
        let target = targetContacts(columns: targetContacts().columns.filter { $0.name != "phone" } + [c("nick", "text")])
        let drift = model(live).drift(to: model(target))
        XCTAssertEqual(drift.count, 3, "\(drift)")
        for name in ["phone", "fax", "nick"] {
            XCTAssertTrue(drift.contains { $0.table == "contacts" && $0.column == name }, "\(name) missing from \(drift)")
        }
    }

    func testMissingExtraAndChangedIndexes() {
        let live = targetContacts(indexes: [
            IndexModel(name: "a", columns: ["email"], unique: false),
            IndexModel(name: "b", columns: ["phone"], unique: false),
        ])
        let target = targetContacts(indexes: [
            IndexModel(name: "b", columns: ["phone"], unique: true),
            IndexModel(name: "c", columns: ["created_at"], unique: false),
        ])
        let drift = model(live).drift(to: model(target))
        XCTAssertEqual(drift.count, 3, "\(drift)")
        for name in ["a", "b", "c"] {
            XCTAssertTrue(
                drift.contains { $0.message.contains(" \(name) ") || $0.message.hasSuffix(" \(name)") },
                "index \(name) missing from \(drift)")
        }
    }

    /// `check` still reports what the database has beyond the file, and says whether a run keeps
    /// it (not mentioned) or drops it (listed).
    func testDriftSaysWhatARunKeepsAndWhatItDrops() {
        let live = targetContacts(
            columns: targetContacts().columns + [c("fax", "text"), c("nick", "text")],
            indexes: [IndexModel(name: "a", columns: ["email"], unique: false), IndexModel(name: "b", columns: ["phone"], unique: false)])
        let legacy = TableModel(name: "legacy", columns: [c("id", "integer", pk: true)])
        let audit = TableModel(name: "audit", columns: [c("id", "integer", pk: true)])
        var target = model(targetContacts(dropped: ["fax"], droppedIndexes: ["a"]))
        target.droppedTables = [DroppedName("legacy")]
        let drift = model(live, legacy, audit).drift(to: target).map(\.description)
        XCTAssertEqual(
            Set(drift),
            [
                "contacts.fax: column is listed under dropped, still in the database (a run drops it)",
                "contacts.nick: column is not in the schema file (kept by a run; add it to the file, or list it under dropped to drop it)",
                "contacts: index a is listed under dropped_indexes, still in the database (a run drops it)",
                "contacts: index b is not in the schema file (kept by a run; add it to the file, or list it under dropped_indexes to drop it)",
                "legacy: table is listed under dropped_tables, still in the database (a run drops it)",
                "audit: table is not in the schema file (kept by a run; add it to the file, or list it under dropped_tables to drop it)",
            ])
    }

    func testColumnDifferencesAreDrift() {
        let live = targetContacts(columns: targetContacts().columns + [c("company_id", "integer")])
        var target = targetContacts(
            columns: targetContacts().columns + [c("company_id", "integer", references: .init(table: "companies", column: nil))])
        target.columns[1].nullable = true  // email: nullability
        target.columns[2].defaultValue = .text("?")  // phone: default
        target.columns[3].type = "text"  // created_at: type
        let drift = model(live).drift(to: model(target))
        XCTAssertEqual(Set(drift.compactMap(\.column)), ["email", "phone", "created_at", "company_id"], "\(drift)")
        XCTAssertEqual(drift.count, 4, "one entry per column: \(drift)")
        XCTAssertTrue(drift.first { $0.column == "created_at" }!.message.contains("integer"))
        XCTAssertTrue(drift.first { $0.column == "created_at" }!.message.contains("text"))
        XCTAssertTrue(drift.first { $0.column == "company_id" }!.message.contains("companies"))
    }

    func testNullDefaultAndNoDefaultAreNotDrift() {
        let target = targetContacts(columns: replacing("phone", with: c("phone", "text", .null)))
        XCTAssertEqual(model(targetContacts()).drift(to: model(target)), [])
    }

    func testTableNamesInDriftAreCaseInsensitive() {
        XCTAssertEqual(model(targetContacts(name: "CONTACTS")).drift(to: model(targetContacts())), [])
    }

    // MARK: DefaultValue as SQL

    func testDefaultSQLRoundTrips() {
        let values: [DefaultValue] = [
            .null, .integer(0), .integer(-5), .integer(Int64.max), .real(1.5), .real(2.0), .real(-0.25),
            .real(1e20), .text(""), .text("it's"), .text("a''b"), .text("NULL"), .text("42"),
            .expression("CURRENT_TIMESTAMP"),
        ]
        for value in values {
            XCTAssertEqual(DefaultValue.parse(sql: value.sql), value, "round trip of \(value.sql)")
        }
    }

    func testDefaultSQLText() {
        XCTAssertEqual(DefaultValue.text("it's").sql, "'it''s'")
        XCTAssertEqual(DefaultValue.null.sql, "NULL")
        XCTAssertEqual(DefaultValue.integer(-5).sql, "-5")
        XCTAssertEqual(DefaultValue.expression("CURRENT_DATE").sql, "CURRENT_DATE")
    }

    func testParseDefaults() {
        XCTAssertEqual(DefaultValue.parse(sql: "NULL"), .null)
        XCTAssertEqual(DefaultValue.parse(sql: "null"), .null)
        XCTAssertEqual(DefaultValue.parse(sql: "''"), .text(""))
        XCTAssertEqual(DefaultValue.parse(sql: "'it''s'"), .text("it's"))
        XCTAssertEqual(DefaultValue.parse(sql: "'42'"), .text("42"))
        XCTAssertEqual(DefaultValue.parse(sql: "42"), .integer(42))
        XCTAssertEqual(DefaultValue.parse(sql: "-3"), .integer(-3))
        XCTAssertEqual(DefaultValue.parse(sql: "3.0"), .real(3.0), "3.0 is a real in SQLite")
        XCTAssertEqual(DefaultValue.parse(sql: ".5"), .real(0.5))
        XCTAssertEqual(DefaultValue.parse(sql: "CURRENT_TIMESTAMP"), .expression("CURRENT_TIMESTAMP"))
        XCTAssertEqual(DefaultValue.parse(sql: "'a' || 'b'"), .expression("'a' || 'b'"), "two literals are an expression, not text")
        XCTAssertEqual(DefaultValue.parse(sql: "'a' = 'b'"), .expression("'a' = 'b'"))
    }

    func testConstantDefaults() {
        XCTAssertTrue(DefaultValue.integer(1).isConstant)
        XCTAssertTrue(DefaultValue.text("x").isConstant)
        XCTAssertTrue(DefaultValue.null.isConstant)
        XCTAssertFalse(DefaultValue.expression("CURRENT_TIMESTAMP").isConstant)
        XCTAssertFalse(DefaultValue.expression("current_date").isConstant)
        XCTAssertFalse(DefaultValue.expression("(strftime('%s','now'))").isConstant)
    }
}
