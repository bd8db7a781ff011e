import Foundation
import XCTest
@testable import WinnowCore

/// Rendered output compared with golden files in `Golden/`. To accept a deliberate change,
/// run the tests with WINNOW_UPDATE_GOLDEN=1 and review the diff of the golden files.
final class RendererGoldenTests: XCTestCase {
    static let goldenDirectory: URL = {
        // The sources' Golden folder (so updates land in the repository), else the bundled copy.
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
        if FileManager.default.fileExists(atPath: source.path) { return source }
        return Bundle.module.resourceURL!.appendingPathComponent("Golden")
    }()

    func assertGolden(_ actual: String, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let url = Self.goldenDirectory.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["WINNOW_UPDATE_GOLDEN"] == "1" {
            try (actual + "\n").write(to: url, atomically: true, encoding: .utf8)
            return
        }
        let expected = try String(contentsOf: url, encoding: .utf8)
        XCTAssertEqual(actual + "\n", expected, "rendered output differs from \(name)", file: file, line: line)
    }

    static func sampleCounts(
        groups: Int, deleted: Int, updated: Int = 0, repointed: Int = 0, children: Int = 0,
        hashed: Int = 0, skipped: Int = 0, batches: Int = 1
    ) -> Counts {
        var c = Counts()
        c.groups = groups
        c.deleted = deleted
        c.updated = updated
        c.repointed = repointed
        c.childrenDeleted = children
        c.hashed = hashed
        c.skipped = skipped
        c.batches = batches
        return c
    }

    static func rowid(_ value: Int64) -> RowKey { RowIdentity.rowid(expression: "rowid", alias: nil).key(rowid: value) }

    static let contactsRule = RuleSummary(
        index: 0, table: "contacts", key: ["email (trim, lowercase)"], winner: "created_at asc nulls last, content, id",
        references: ["orders.contact_id", "contact_tags.contact_id"],
        discovery: Discovery(groups: 4, losers: 5, tableRows: 14),
        counts: sampleCounts(groups: 4, deleted: 5, updated: 4, repointed: 8, children: 4),
        samples: [
            GroupSample(key: ["'alice@example.com'"], winner: rowid(1), losers: [rowid(2), rowid(3)]),
            GroupSample(key: ["'émile@example.fr'"], winner: rowid(6), losers: [rowid(7)]),
        ])

    static let plan = RunSummary(
        command: "plan", status: "planned", job: "jobs/example.yaml", database: "work/contacts.sqlite",
        dryRun: true, counts: sampleCounts(groups: 4, deleted: 5, updated: 4, repointed: 8, children: 4),
        seconds: 0.5, rules: [contactsRule])

    static var run: RunSummary {
        var rule = contactsRule
        rule.samples = []
        return RunSummary(
            command: "run", runID: 7, status: "completed", job: "jobs/example.yaml", database: "work/contacts.sqlite",
            counts: sampleCounts(groups: 4, deleted: 5, updated: 4, repointed: 8, children: 4, skipped: 1, batches: 2),
            seconds: 1.25, rules: [rule])
    }

    static func check(dirty: Bool) -> RunSummary {
        var rule = contactsRule
        rule.samples = []
        if !dirty { rule.counts = Counts() }
        return RunSummary(
            command: "check", status: dirty ? "duplicates" : "clean", job: "jobs/example.yaml",
            database: "work/contacts.sqlite", dryRun: true, counts: rule.counts, seconds: 0.1, rules: [rule])
    }

    func testPlanText() throws {
        try assertGolden(Renderer.text(Self.plan, includeTimes: false), "plan.txt")
    }

    func testPlanJSON() throws {
        try assertGolden(Renderer.json(Self.plan, includeTimes: false), "plan.json")
    }

    static var planWithWarnings: RunSummary {
        var plan = plan
        plan.rules[0].samples = []
        plan.rules[0].warnings = [
            #"orders.contact_id has no index: finding the rows that point at a contacts row reads all of orders (winnow does it once per rule; SQLite does it for every contacts row deleted while foreign keys are on); fix: CREATE INDEX "orders_contact_id" ON "orders" ("contact_id");"#
        ]
        return plan
    }

    /// `plan` names what will be slow under the rule it concerns, in text and JSON alike.
    func testPlanWarningsText() throws {
        try assertGolden(Renderer.text(Self.planWithWarnings, includeTimes: false), "plan-warnings.txt")
    }

    func testPlanWarningsJSON() throws {
        try assertGolden(Renderer.json(Self.planWithWarnings, includeTimes: false), "plan-warnings.json")
    }

    func testRunText() throws {
        try assertGolden(Renderer.text(Self.run, includeTimes: false), "run.txt")
    }

    func testRunJSON() throws {
        try assertGolden(Renderer.json(Self.run, includeTimes: false), "run.json")
    }

    func testBatchEventJSON() throws {
        let report = BatchReport(
            rule: 0, table: "contacts", batch: 3,
            counts: Self.sampleCounts(groups: 500, deleted: 612, updated: 20, repointed: 45), seconds: 0.2345,
            done: 1500, total: 3000)
        try assertGolden(Renderer.json(report, stamped: false), "batch.json")
    }

    func testCheckTextDirtyAndClean() throws {
        try assertGolden(
            Renderer.text(Self.check(dirty: true), includeTimes: false) + "\n---\n"
                + Renderer.text(Self.check(dirty: false), includeTimes: false), "check.txt")
    }

    func testCheckJUnit() throws {
        var other = Self.check(dirty: false)
        other.job = "jobs/<other> & \"quoted\".yaml"
        try assertGolden(Renderer.junit([Self.check(dirty: true), other], includeTimes: false), "check.junit.xml")
    }

    func testHistoryText() throws {
        let entries = [
            HistoryEntry(
                runID: 2, command: "restore", job: nil, startedAt: "2026-11-21T10:00:05.000Z", finishedAt: "2026-11-21T10:00:06.000Z",
                status: "completed", archive: false, counts: Counts(), migrationSteps: 0, seconds: 1, restoresRun: 1,
                restoredBy: nil, message: "restored run 1: 5 rows re-inserted, 4 rows reverted", reinserted: 5, reverted: 4),
            HistoryEntry(
                runID: 1, command: "run", job: "jobs/example.yaml", startedAt: "2026-11-21T10:00:00.000Z",
                finishedAt: nil, status: "interrupted", archive: true,
                counts: Self.sampleCounts(groups: 4, deleted: 5, updated: 4, repointed: 8), migrationSteps: 0, seconds: 0,
                restoresRun: nil, restoredBy: 2, message: nil),
            HistoryEntry(
                runID: 0, command: "run", job: "jobs/example.yaml", startedAt: "2026-10-01T09:00:00.000Z",
                finishedAt: "2026-10-01T09:00:01.000Z", status: "completed", archive: true,
                counts: Self.sampleCounts(groups: 1, deleted: 1), migrationSteps: 0, seconds: 1,
                restoresRun: nil, restoredBy: nil, message: nil, prunedAt: "2026-11-20T02:15:00.000Z"),
        ]
        try assertGolden(Renderer.text(entries), "history.txt")
        XCTAssertEqual(Renderer.text([]), "no runs recorded")
    }

    func testJSONErrorEvent() throws {
        let line = Renderer.jsonError(.invalidFile(SourceLocation(file: "j.yaml", line: 3, column: 7), "dedupe[0].key: missing"))
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        XCTAssertEqual(object["event"] as? String, "error")
        XCTAssertEqual(object["exit_code"] as? Int, 65)
        XCTAssertEqual(object["message"] as? String, "j.yaml:3:7: dedupe[0].key: missing")
    }

    static let report: RunReport = {
        let entry = HistoryEntry(
            runID: 3, command: .run, job: "jobs/example.yaml", startedAt: "2026-11-21T10:00:00.000Z",
            finishedAt: "2026-11-21T10:00:02.500Z", status: .completed, archive: true,
            counts: sampleCounts(groups: 4, deleted: 5, updated: 4, repointed: 8, children: 4, batches: 2), migrationSteps: 1,
            seconds: 2.5, restoresRun: nil, restoredBy: nil, message: nil)
        var report = RunReport(run: entry)
        var rule = RunReport.Rule(
            index: 0, table: "contacts", key: "email", counts: sampleCounts(groups: 4, deleted: 5, updated: 4, repointed: 8, children: 4))
        rule.keyColumns = ["email"]
        func id(_ n: Int) -> RowKey { RowKey(stored: String(n), parts: [.init(column: "id", literal: String(n))]) }
        func values(_ n: Int, _ email: String) -> [RunReport.Value] {
            [.init(column: "id", literal: String(n)), .init(column: "email", literal: email), .init(column: "phone", literal: "NULL")]
        }
        rule.groups = [
            .init(
                key: [.init(column: "email", literal: "'ann@example.com'")], kept: id(1),
                deleted: [.init(table: "contacts", key: id(5), values: values(5, "'ANN@example.com'"))],
                updated: .init(
                    table: "contacts", key: id(1), changes: [.init(column: "phone", before: "NULL", now: "'555-0100'")], exists: true)),
            .init(
                key: [.init(column: "email", literal: "'bob@example.com'")], kept: id(2),
                deleted: [
                    .init(table: "contacts", key: id(6), values: values(6, "'bob@example.com'")),
                    .init(table: "contacts", key: id(7), values: values(7, "' bob@example.com'")),
                ],
                updated: .init(table: "contacts", key: id(2), changes: [], exists: false)),
        ]
        rule.repointed = [
            .init(table: "orders", key: id(10), changes: [.init(column: "contact_id", before: "5", now: "1")], exists: true),
            .init(table: "orders", key: id(11), changes: [], exists: true),
        ]
        rule.childrenDeleted = [.init(table: "contact_tags", key: id(3), values: [.init(column: "contact_id", literal: "6")])]
        report.rules = [rule]
        report.rows = .listed
        report.groupLimit = 2
        report.journal = [
            .init(table: "contacts", deleted: 5, updated: 4), .init(table: "orders", deleted: 0, updated: 8),
            .init(table: "contact_tags", deleted: 4, updated: 0),
        ]
        return report
    }()

    func testShowText() throws {
        try assertGolden(Renderer.text(Self.report), "show.txt")
    }

    func testShowJSON() throws {
        var object = try JSONSerialization.jsonObject(with: Data(Renderer.json(Self.report).utf8)) as? [String: Any] ?? [:]
        object["time"] = nil
        let stable = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        try assertGolden(String(decoding: stable, as: UTF8.self), "show.json")
    }
}
