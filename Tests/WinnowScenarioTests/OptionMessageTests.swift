import Foundation
import WinnowTestSupport
import XCTest

/// What the command line answers to numbers out of range, and how times are shown: through
/// the built executable.
final class OptionMessageTests: CLITestCase {
    /// 5 groups of two contacts.
    func makeData() throws {
        try TestSupport.makeDatabase(
            at: path("db.sqlite"),
            sql: """
                CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10)
                INSERT INTO contacts SELECT i, 'c' || (i % 5) || '@example.com' FROM n;
                """)
    }

    /// A negative number is a value out of range (exit 64 with the option's own message),
    /// not a missing value: `--max-duration -5` must not read as an option named `-5`.
    func testNegativeNumbersGetTheOptionsOwnMessage() throws {
        try makeData()
        try write("job.yaml", "version: 1\ndatabase: db.sqlite\ndedupe:\n  - entity: contacts\n    key: email\n")
        let bytes = try TestSupport.fileBytes(path("db.sqlite"))
        let cases: [([String], String)] = [
            (["run", "job.yaml", "--max-duration", "-5"], "--max-duration takes a number of seconds greater than 0"),
            (["run", "job.yaml", "--wait", "-5"], "--wait takes a number of seconds, 0 or more"),
            (["run", "job.yaml", "--batch-size", "-5"], "--batch-size must be at least 1"),
            (["plan", "job.yaml", "--batch-size", "-5"], "--batch-size must be at least 1"),
            (["run", "job.yaml", "--parallel", "-2"], "--parallel takes a number of stores, 1 or more"),
            (["run", "job.yaml", "--canary", "-1"], "--canary takes a number of stores, 0 or more"),
            (["restore", "--database", "db.sqlite", "--run", "1", "--wait", "-5"], "--wait takes a number of seconds, 0 or more"),
        ]
        for (args, message) in cases {
            let result = try winnow(args, expect: 64)
            XCTAssertTrue(result.stderr.contains(message), "\(args.joined(separator: " ")): \(result.stderr)")
            XCTAssertFalse(result.stderr.contains("Missing value"), "\(args.joined(separator: " ")): \(result.stderr)")
        }
        XCTAssertEqual(try TestSupport.fileBytes(path("db.sqlite")), bytes)
    }

    /// A run stopped by `--max-duration 1` says so in whole numbers, in its summary and in
    /// `history`, not "0.999966 s" (what was left of the second when the job began).
    func testStoppedRunShowsTheLimitAsGiven() throws {
        try makeData()
        // One group per batch with a pause after each: the second is up after the third batch.
        try write(
            "job.yaml", "version: 1\ndatabase: db.sqlite\nbatch: {size: 1, pause_ms: 400}\ndedupe:\n  - entity: contacts\n    key: email\n")
        let run = try winnow(["run", "job.yaml", "--max-duration", "1", "--format", "json"], expect: 0)
        let summary = try XCTUnwrap(run.stdout.split(separator: "\n").compactMap(json).last)
        XCTAssertEqual(summary["status"] as? String, "stopped")
        let history = try winnow(["history", "--database", "db.sqlite"], expect: 0)
        XCTAssertTrue(history.stdout.contains("stopped after --max-duration 1 s;"), history.stdout)
        let entries = try winnow(["history", "--database", "db.sqlite", "--format", "json"], expect: 0)
        XCTAssertTrue(entries.stdout.contains("stopped after --max-duration 1 s;"), entries.stdout)
    }
}
