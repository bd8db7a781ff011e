import Foundation
import WinnowTestSupport
import XCTest

/// The README's cron lines, run as cron runs them: the command of each line of its ```cron
/// blocks, read from the README (so the two cannot drift apart), given to `/bin/sh -c` with
/// only the paths replaced (the app folder, the log folder, `winnow` itself). Cron mails
/// whatever the command prints that is not redirected: that is the "mail" checked here.
final class CronRecipeTests: CLITestCase {
    /// The command of every cron line of the README (the five schedule fields left out).
    static func readmeCronCommands() throws -> [String] {
        let readme = try String(contentsOf: TestSupport.repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let schedule = try NSRegularExpression(pattern: #"^\s*(?:\S+\s+){5}(\S.*)$"#)
        var commands: [String] = []
        var inBlock = false
        for line in readme.split(separator: "\n").map(String.init) {
            if line.hasPrefix("```") {
                inBlock = line == "```cron"
                continue
            }
            guard inBlock, !line.hasPrefix("#"), !line.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
            let range = NSRange(line.startIndex..., in: line)
            guard let match = schedule.firstMatch(in: line, range: range), let command = Range(match.range(at: 1), in: line) else {
                XCTFail("not a cron line: \(line)")
                continue
            }
            commands.append(String(line[command]))
        }
        return commands
    }

    /// The README's cron command that runs `job`.
    func recipe(running job: String) throws -> String {
        let commands = try Self.readmeCronCommands()
        let matching = commands.filter { $0.contains("winnow run \(job) ") }
        XCTAssertEqual(matching.count, 1, "the README's cron lines running \(job): \(commands)")
        return try XCTUnwrap(matching.first)
    }

    /// What cron does with the line: `/bin/sh -c COMMAND`, standard input empty; the output
    /// that is not redirected is the mail. The app's folder (`/srv/app`) and the log folder
    /// (`/var/log/winnow/`) are scratch folders here, and `winnow` is the built executable.
    func cron(_ command: String) throws -> (status: Int32, mail: String) {
        XCTAssertTrue(command.hasPrefix("cd /srv/app && winnow "), command)
        XCTAssertTrue(command.contains("/var/log/winnow/"), command)
        let local =
            command
            .replacingOccurrences(of: "cd /srv/app && winnow ", with: "cd '\(path("app"))' && '\(TestSupport.executable.path)' ")
            .replacingOccurrences(of: "/var/log/winnow/", with: path("log") + "/")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", local]
        process.standardInput = FileHandle.nullDevice
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let mail = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: mail, as: UTF8.self))
    }

    /// The JSON objects of a log file, one per line.
    func log(_ name: String) throws -> [[String: Any]] {
        let text = try String(contentsOfFile: path("log/\(name)"), encoding: .utf8)
        return text.split(separator: "\n").map { line in
            let object = json(line)
            XCTAssertNotNil(object, "not a JSON line in \(name): \(line)")
            return object ?? [:]
        }
    }

    /// A store of contacts, `duplicates` of them repeating an earlier e-mail.
    func makeStore(_ name: String, duplicates: Int) throws {
        var values = (1...10).map { "(\($0), 'p\($0)@example.com')" }
        if duplicates > 0 { values += (1...duplicates).map { "(\(10 + $0), 'p\($0)@example.com')" } }
        try TestSupport.makeDatabase(
            at: path(name),
            sql:
                "CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT); INSERT INTO contacts VALUES \(values.joined(separator: ", "));"
        )
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        for folder in ["app/jobs", "app/tenants", "log"] {
            try FileManager.default.createDirectory(atPath: path(folder), withIntermediateDirectories: true)
        }
    }

    static let rule = "dedupe:\n  - entity: contacts\n    key: email\n"

    /// The nightly line: each run appends its summary to the log and mails nothing; a failing
    /// run appends its error object and mails the error's full text.
    func testNightlyCronLineLogsEachRunsSummaryAndMailsOnlyFailures() throws {
        let command = try recipe(running: "jobs/app.yaml")
        try makeStore("app/app.sqlite", duplicates: 4)
        try write("app/jobs/app.yaml", "version: 1\ndatabase: ../app.sqlite\n" + Self.rule)

        let first = try cron(command)
        XCTAssertEqual(first.status, 0, first.mail)
        XCTAssertEqual(first.mail, "", "a run that succeeds mails nothing")
        var lines = try log("app.jsonl")
        XCTAssertEqual(lines.count, 1, "one line per run: the summary")
        XCTAssertEqual(lines.last?["event"] as? String, "summary")
        XCTAssertEqual(lines.last?["status"] as? String, "completed")
        XCTAssertEqual(lines.last?["deleted"] as? Int, 4)
        XCTAssertEqual(lines.last?["run_id"] as? Int, 1)

        let second = try cron(command)
        XCTAssertEqual(second.status, 0, second.mail)
        XCTAssertEqual(second.mail, "")
        lines = try log("app.jsonl")
        XCTAssertEqual(lines.count, 2, "the log grows by one line a night")
        XCTAssertEqual(lines.last?["deleted"] as? Int, 0)
        XCTAssertEqual(lines.last?["run_id"] as? Int, 2)

        // The job now names a column the table does not have.
        try write(
            "app/jobs/app.yaml",
            "version: 1\ndatabase: ../app.sqlite\n" + Self.rule.replacingOccurrences(of: "key: email", with: "key: emial"))
        let failed = try cron(command)
        XCTAssertEqual(failed.status, 65)
        XCTAssertTrue(failed.mail.hasPrefix("winnow: error: "), "the mail carries the error: \(failed.mail)")
        XCTAssertTrue(failed.mail.contains("jobs/app.yaml:5:10"), "the full text, with the place: \(failed.mail)")
        XCTAssertTrue(failed.mail.contains("emial"), failed.mail)
        lines = try log("app.jsonl")
        XCTAssertEqual(lines.count, 3)
        XCTAssertEqual(lines.last?["event"] as? String, "error")
        XCTAssertEqual(lines.last?["exit_code"] as? Int, 65)
    }

    /// The per-tenant line: one JSON line per tenant and one for the fleet, no mail while all
    /// succeed; a tenant that fails is named in the mail.
    func testTenantCronLineLogsEveryStoreAndMailsTheFailingOne() throws {
        let command = try recipe(running: "jobs/tenant.yaml")
        try makeStore("app/tenants/a.sqlite", duplicates: 2)
        try makeStore("app/tenants/b.sqlite", duplicates: 3)
        try write("app/jobs/tenant.yaml", "version: 1\n" + Self.rule)

        let first = try cron(command)
        XCTAssertEqual(first.status, 0, first.mail)
        XCTAssertEqual(first.mail, "", "a night where every tenant succeeds mails nothing")
        var lines = try log("tenants.jsonl")
        XCTAssertEqual(lines.count, 3, "a line per tenant and one for the fleet: \(lines)")
        let stores = lines.compactMap { $0["store"] as? String }.map { URL(fileURLWithPath: $0).lastPathComponent }.sorted()
        XCTAssertEqual(stores, ["a.sqlite", "b.sqlite"])
        let deleted = lines.compactMap { ($0["summary"] as? [String: Any])?["deleted"] as? Int }
        XCTAssertEqual(deleted.reduce(0, +), 5)
        XCTAssertNotNil(lines.last?["fleet"], "the fleet's line comes last")

        // A third tenant whose file is not a database.
        try write("app/tenants/c.sqlite", "not a database, just text that is long enough to be read as a header")
        let failed = try cron(command)
        XCTAssertNotEqual(failed.status, 0)
        XCTAssertTrue(failed.mail.contains("winnow: error: "), failed.mail)
        XCTAssertTrue(failed.mail.contains("c.sqlite"), "the mail names the failing tenant: \(failed.mail)")
        XCTAssertFalse(failed.mail.contains("a.sqlite") || failed.mail.contains("b.sqlite"), "only the failure is mailed: \(failed.mail)")
        lines = try log("tenants.jsonl")
        XCTAssertEqual(lines.count, 7, "three tenants and the fleet appended")
        let c = lines.last { ($0["store"] as? String)?.hasSuffix("c.sqlite") == true }
        XCTAssertEqual(c?["status"] as? String, "failed")
    }
}
