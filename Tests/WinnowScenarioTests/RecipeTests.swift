import Foundation
import XCTest

@testable import WinnowCore
import WinnowTestSupport

/// The README's recipes, run as written: each test takes a recipe's code block out of README.md
/// and runs it with bash in a scratch folder where `winnow` is the built executable, on FEBRL's
/// person records (with a table of visits pointing at them) as `app.sqlite`. A recipe that
/// stops being true fails here, not on a user's machine.
final class RecipeTests: CLITestCase {
    static let readme = TestSupport.repositoryRoot.appendingPathComponent("README.md")

    /// The first code block in `language` after the heading `heading` (exact text, any level).
    static func block(after heading: String, language: String = "sh") throws -> String {
        let text = try String(contentsOf: readme, encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        guard
            let start = lines.firstIndex(where: {
                $0.hasPrefix("#") && $0.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces) == heading
            })
        else { throw XCTSkip("README has no heading '\(heading)'") }
        guard let open = lines[start...].firstIndex(of: "```\(language)"),
            let close = lines[(open + 1)...].firstIndex(of: "```")
        else { throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no ```\(language) block after \(heading)"]) }
        return lines[(open + 1)..<close].joined(separator: "\n") + "\n"
    }

    /// `winnow` on PATH: a folder holding a link to the built executable.
    func binFolder() throws -> String {
        let bin = dir.appendingPathComponent(".recipe-bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let link = bin.appendingPathComponent("winnow").path
        if !FileManager.default.fileExists(atPath: link) {
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: TestSupport.executable.path)
        }
        return bin.path
    }

    /// Runs `script` with `bash -euo pipefail` in the scratch folder: every line must succeed.
    @discardableResult
    func shell(
        _ script: String, expect: Int32 = 0, environment extra: [String: String] = [:], file: StaticString = #filePath,
        line: UInt = #line
    ) throws -> TestSupport.Result {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = try binFolder() + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["EDITOR"] = "true"  // the recipe's review step, accepted as written
        environment["NO_COLOR"] = "1"
        for (key, value) in extra { environment[key] = value }
        let result = try TestSupport.run(
            URL(fileURLWithPath: "/bin/bash"), ["-euo", "pipefail", "-c", script], in: dir, environment: environment)
        XCTAssertEqual(
            result.status, expect, "recipe:\n\(script)\nstdout: \(result.stdout)\nstderr: \(result.stderr)", file: file, line: line)
        return result
    }

    /// `app.sqlite`: FEBRL 3's 5,000 people (3,000 duplicates of 2,000 originals) and a visit for
    /// every tenth person, pointing at them by a declared foreign key.
    @discardableResult
    func makeApp(_ name: String = "app.sqlite") throws -> String {
        let db = try ScenarioKit.copyDataset("febrl3.sqlite", into: dir)
        let target = path(name)
        try FileManager.default.moveItem(atPath: db, toPath: target)
        try ScenarioKit.execute(
            target,
            """
            CREATE TABLE visits (id INTEGER PRIMARY KEY, person_id INTEGER NOT NULL REFERENCES people(id), day TEXT);
            INSERT INTO visits (person_id, day) SELECT id, '2024-01-' || printf('%02d', 1 + id % 28) FROM people WHERE id % 10 = 0;
            """)
        return target
    }

    func people(_ db: String) throws -> Int { try ScenarioKit.int(db, "SELECT count(*) FROM people") }

    /// Visits whose person is gone (0 after every run: references follow the winner).
    func orphans(_ db: String) throws -> Int {
        try ScenarioKit.int(db, "SELECT count(*) FROM visits WHERE person_id NOT IN (SELECT id FROM people)")
    }

    func testFirstContact() throws {
        let app = try makeApp()
        try shell("git init -q .")
        let before = try TestSupport.fileBytes(app)
        let visits = try ScenarioKit.int(app, "SELECT count(*) FROM visits")
        try shell(try Self.block(after: "First contact: from an unknown database to a reviewed job"))
        XCTAssertEqual(try TestSupport.fileBytes(app), before, "only the copy is written")
        let copy = path("app-copy.sqlite")
        // init proposes soc_sec_id or name + birth date (key: {any: ...}): 2,852 extra rows.
        XCTAssertEqual(try people(copy), 5000 - 2852, "the 2,852 extra rows either key finds are gone")
        XCTAssertEqual(try ScenarioKit.int(copy, "SELECT count(*) FROM visits"), visits, "every visit kept")
        XCTAssertEqual(try orphans(copy), 0, "every visit points at a survivor")
        let staged = try shell("git status --porcelain").stdout
        XCTAssertTrue(staged.contains("A  jobs/app.yaml") && staged.contains("A  schemas/app.yaml"), staged)
    }

    func testThePlanCIApprovedIsThePlanCronApplies() throws {
        let app = try makeApp()
        try shell("git init -q . && winnow init --database app.sqlite")
        try shell(try Self.block(after: "The plan CI approved is the plan cron applies"))
        XCTAssertEqual(try people(app), 5000 - 2852)
        XCTAssertEqual(try orphans(app), 0)
        // Applied once: the duplicates it approved are gone, so the same plan is refused.
        let again = try shell("winnow run jobs/app.yaml --plan plans/app.plan", expect: 65)
        XCTAssertTrue(again.stderr.contains("no longer matches"), again.stderr)
    }

    /// The workflow's steps after the build, with `.build/release/winnow` the built executable:
    /// annotations and a JUnit report while the fixture holds duplicates, a clean pass after.
    func testCIWorkflowSteps() throws {
        try makeApp("fixture.sqlite")
        try shell("winnow init --database fixture.sqlite --job jobs/app.yaml --schema schemas/app.yaml")
        try FileManager.default.createDirectory(atPath: path("fixtures"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: path("fixture.sqlite"), toPath: path("fixtures/app.sqlite"))
        try FileManager.default.createDirectory(atPath: path(".build/release"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: path(".build/release/winnow"), withDestinationPath: TestSupport.executable.path)
        let workflow = try Self.block(after: "CI: check a fixture database on every pull request", language: "yaml")
        let steps = workflow.components(separatedBy: "\n").compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("run:") || trimmed.hasPrefix("- run:") else { return nil }
            let command = trimmed.drop { $0 != ":" }.dropFirst().trimmingCharacters(in: .whitespaces)
            return command.hasPrefix(".build/release/winnow") ? command : nil
        }
        XCTAssertEqual(steps.count, 2, "the workflow's winnow steps: \(workflow)")
        guard steps.count == 2 else { return }
        let annotations = try shell(steps[0], expect: 1).stdout
        XCTAssertTrue(annotations.hasPrefix("::error file=jobs/app.yaml,line="), annotations)
        try shell(steps[1], expect: 1)
        let junit = try String(contentsOfFile: path("winnow-junit.xml"), encoding: .utf8)
        XCTAssertEqual(JUnitSchema.violations(junit), [], junit)
        XCTAssertTrue(junit.contains("<failure"), junit)
        // Once the fixture is clean, the same steps pass.
        try shell("winnow run jobs/app.yaml --database fixtures/app.sqlite --quiet")
        try shell(steps[0])
        try shell(steps[1])
    }

    func testOneOffMaintenanceAndUndo() throws {
        let app = try makeApp()
        try shell("winnow init --database app.sqlite")
        let before = try ScenarioKit.userState(app)
        let result = try shell(try Self.block(after: "One-off maintenance, seeding, undoing"))
        XCTAssertTrue(result.stdout.contains("1144 duplicate groups"), result.stdout)
        XCTAssertEqual(try ScenarioKit.userState(app).dump, before.dump, "restore put back every row, with its rowid")
        XCTAssertEqual(try orphans(app), 0)
    }
}
