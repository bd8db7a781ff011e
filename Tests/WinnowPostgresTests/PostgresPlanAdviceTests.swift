import WinnowCore
import XCTest

@testable import WinnowPostgres

/// `plan`'s warning about an unindexed reference says what it costs on PostgreSQL, where the
/// engine checks every deleted parent row itself (no server needed).
final class PostgresPlanAdviceTests: XCTestCase {
    func schema(declared: Bool) -> LiveSchema {
        func column(_ name: String, _ type: String, pk: Int = 0) -> LiveColumn {
            LiveColumn(name: name, type: type, notNull: false, primaryKeyIndex: pk)
        }
        let customers = LiveTable(
            name: "customers", columns: [column("id", "integer", pk: 1), column("email", "text")], hasRowID: false, isVirtual: false,
            foreignKeys: [], indexes: [])
        let orders = LiveTable(
            name: "orders", columns: [column("id", "integer", pk: 1), column("customer_id", "integer")], hasRowID: false, isVirtual: false,
            foreignKeys: declared
                ? [LiveForeignKey(childTable: "orders", childColumns: ["customer_id"], parentTable: "customers", parentColumns: ["id"])]
                : [],
            indexes: [])
        return LiveSchema(tables: [customers, orders])
    }

    func warnings(declared: Bool) throws -> [String] {
        let yaml =
            "version: 1\ndedupe:\n  - entity: customers\n    key: email\n" + (declared ? "" : "    referenced_by: [orders.customer_id]\n")
        let job = try JobLoader.decode(yaml: yaml, file: "job.yaml", baseDirectory: nil)
        let rule = try RuleCompiler.compile(job.dedupe[0], schema: schema(declared: declared), dialect: PostgresDialect())
        return PlanAdvice.warnings(rule, discovery: Discovery(groups: 10, losers: 20, tableRows: 30), settings: BatchSettings())
    }

    func testDeclaredForeignKeyWarnsOfTheEnginesCheckPerDeletedRow() throws {
        let warning = try XCTUnwrap(try warnings(declared: true).first)
        XCTAssertTrue(warning.contains("postgresql's foreign-key check reads it again for every customers row deleted"), warning)
        XCTAssertFalse(warning.contains("SQLite"), warning)
        // Built beside the writers a live server has, in the rule's schema.
        XCTAssertTrue(
            warning.hasSuffix("fix: CREATE INDEX CONCURRENTLY \"orders_customer_id\" ON \"public\".\"orders\" (\"customer_id\");"), warning)
    }

    /// `run` repeats the warning of a declared reference, whose cost is the server's and grows
    /// with the square of the rows, when it deletes rows; not of an undeclared one.
    func testRunRepeatsOnlyTheServersPerRowCheck() throws {
        func runWarnings(declared: Bool, dialect: PostgresDialect, losers: Int = 20) throws -> [String] {
            let yaml =
                "version: 1\ndedupe:\n  - entity: customers\n    key: email\n"
                + (declared ? "" : "    referenced_by: [orders.customer_id]\n")
            let job = try JobLoader.decode(yaml: yaml, file: "job.yaml", baseDirectory: nil)
            let rule = try RuleCompiler.compile(job.dedupe[0], schema: schema(declared: declared), dialect: dialect)
            return PlanAdvice.runWarnings(rule, discovery: Discovery(groups: 10, losers: losers, tableRows: 30))
        }
        let declared = try runWarnings(declared: true, dialect: PostgresDialect())
        XCTAssertEqual(declared, try warnings(declared: true).filter { $0.hasPrefix("orders.customer_id has no index") })
        XCTAssertEqual(declared.count, 1)
        XCTAssertEqual(try runWarnings(declared: true, dialect: PostgresDialect(), losers: 0), [])
        XCTAssertEqual(try runWarnings(declared: false, dialect: PostgresDialect()), [])
    }

    func testUndeclaredReferenceCostsAReadPerBatch() throws {
        let warning = try XCTUnwrap(try warnings(declared: false).first)
        XCTAssertTrue(warning.contains("reads all of orders for every batch;"), warning)
        XCTAssertFalse(warning.contains("foreign-key check"), warning)
    }
}
