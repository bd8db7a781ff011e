import Foundation
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite

/// `plan` warns about what will be slow, from the compiled rule alone (no database).
final class PlanAdviceTests: XCTestCase {
    private func column(_ name: String, _ type: String = "TEXT", pk: Int = 0) -> LiveColumn {
        LiveColumn(name: name, type: type, notNull: false, defaultSQL: nil, primaryKeyIndex: pk)
    }

    private func schema(orderIndexes: [LiveIndex]) -> LiveSchema {
        let customers = LiveTable(
            name: "customers", columns: [column("id", "INTEGER", pk: 1), column("email")],
            hasRowID: true, isVirtual: false, foreignKeys: [], indexes: [])
        let orders = LiveTable(
            name: "order lines", columns: [column("id", "INTEGER", pk: 1), column("customer id", "INTEGER")],
            hasRowID: true, isVirtual: false,
            foreignKeys: [
                LiveForeignKey(
                    childTable: "order lines", childColumns: ["customer id"],
                    parentTable: "customers", parentColumns: ["id"])
            ],
            indexes: orderIndexes)
        return LiveSchema(tables: [customers, orders])
    }

    private func compile(_ schema: LiveSchema) throws -> CompiledRule {
        let job = try JobLoader.decode(
            yaml: "version: 1\ndedupe:\n  - entity: customers\n    key: email\n", file: "job.yaml", baseDirectory: nil)
        return try SQLiteBackend.compile(job.dedupe[0], schema: schema)
    }

    private let found = Discovery(groups: 10_000, losers: 20_000, tableRows: 30_000)

    func testAnUnindexedReferenceIsNamedWithTheIndexThatFixesIt() throws {
        let rule = try compile(schema(orderIndexes: []))
        XCTAssertFalse(rule.references[0].indexed)
        let warnings = PlanAdvice.warnings(rule, discovery: found, settings: BatchSettings())
        XCTAssertEqual(warnings.count, 1, "\(warnings)")
        XCTAssertTrue(
            warnings[0].hasPrefix(
                "order lines.customer id has no index: finding the rows that point at a customers row reads all of order lines"),
            warnings[0])
        XCTAssertTrue(warnings[0].hasSuffix(#"fix: CREATE INDEX "order lines_customer id" ON "order lines" ("customer id");"#), warnings[0])
    }

    /// SQLite suspends enforcement and checks what each batch touched: `run` has nothing to say
    /// of an unindexed reference (plan still names the index, for the batches' own reads).
    func testRunDoesNotWarnWhereWinnowChecksTheReferencesItself() throws {
        XCTAssertEqual(PlanAdvice.runWarnings(try compile(schema(orderIndexes: [])), discovery: found), [])
    }

    func testAnIndexLedByTheReferenceSilencesTheWarning() throws {
        let led = LiveIndex(name: "by_customer", columns: ["customer id", "id"], unique: false, partial: false, origin: .createIndex)
        XCTAssertEqual(PlanAdvice.warnings(try compile(schema(orderIndexes: [led])), discovery: found, settings: BatchSettings()), [])
        // An index where the reference is not the first column does not find a parent's children.
        let second = LiveIndex(name: "by_id_customer", columns: ["id", "customer id"], unique: false, partial: false, origin: .createIndex)
        XCTAssertEqual(
            PlanAdvice.warnings(try compile(schema(orderIndexes: [second])), discovery: found, settings: BatchSettings()).count, 1)
        // Nor does a partial index.
        let partial = LiveIndex(name: "some", columns: ["customer id"], unique: false, partial: true, origin: .createIndex)
        XCTAssertEqual(
            PlanAdvice.warnings(try compile(schema(orderIndexes: [partial])), discovery: found, settings: BatchSettings()).count, 1)
    }

    /// `run` names a child table it re-pointed ahead in many stretches, with the limit that
    /// bounded them; below ``PlanAdvice/manyStretches`` it says nothing.
    func testManyStretchesOfChildrenAreToldWithTheLimitThatBoundedThem() throws {
        let led = LiveIndex(name: "by_customer", columns: ["customer id"], unique: false, partial: false, origin: .createIndex)
        let path = try compile(schema(orderIndexes: [led])).references[0]
        let settings = BatchSettings(size: 500, maxTransactionMilliseconds: 1000)
        XCTAssertEqual(PlanAdvice.manyStretches, 16)
        XCTAssertNil(PlanAdvice.stretchesWarning(path, stretches: 15, settings: settings))
        let warning = try XCTUnwrap(PlanAdvice.stretchesWarning(path, stretches: 28, settings: settings))
        XCTAssertTrue(
            warning.hasPrefix("order lines.customer id was re-pointed in 28 stretches, each rewriting most of its index"), warning)
        XCTAssertTrue(warning.contains(", since batch.max_transaction_ms (1000) bounds each one;"), warning)
        XCTAssertTrue(
            warning.hasSuffix("a longer batch.max_transaction_ms takes fewer stretches and writes the index fewer times"), warning)
    }

    func testSmallBatchesAreWarnedAboutOnlyWhenThereAreManyGroups() throws {
        let led = LiveIndex(name: "by_customer", columns: ["customer id"], unique: false, partial: false, origin: .createIndex)
        let rule = try compile(schema(orderIndexes: [led]))
        let small = BatchSettings(size: 50, maxTransactionMilliseconds: 250)
        let warnings = PlanAdvice.warnings(rule, discovery: found, settings: small)
        XCTAssertEqual(warnings.count, 1)
        XCTAssertTrue(warnings[0].hasPrefix("batch.size 50: 200 batches of 50 groups"), warnings[0])
        XCTAssertEqual(
            PlanAdvice.warnings(rule, discovery: Discovery(groups: 40, losers: 80, tableRows: 30_000), settings: small), [],
            "one batch holds every group")
        XCTAssertEqual(PlanAdvice.warnings(rule, discovery: found, settings: BatchSettings(size: 500)), [])
    }
}
