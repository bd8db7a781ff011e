import Foundation
import WinnowCore
import WinnowSQLite
import WinnowTestSupport
import XCTest

/// `plan --save` fingerprints the job as it was loaded and planned, not the file as it is once
/// the plan is done.
final class PlanFingerprintTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("winnow-fingerprint-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    /// The job file is edited, then removed, while the plan runs (at its first event): the plan
    /// still completes, and its job fingerprint is that of the bytes it was loaded from, so a
    /// `run --plan` of the edited file is refused as "the job file changed".
    func testAFileEditedWhileThePlanRunsIsNotWhatThePlanFingerprints() throws {
        let db = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("people.sqlite").path,
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT);
                INSERT INTO people (email) VALUES ('a'), ('b'), ('a'), ('c'), ('b'), ('a');
                """)
        let text = "version: 1\ndedupe:\n  - entity: people\n    key: email\n    winner:\n      - id: asc\nbatch:\n  size: 1\n"
        let file = dir.appendingPathComponent("job.yaml").path
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let loaded = try JobLoader.load(path: file)
        var options = RunOptions(database: db)
        options.fingerprints = true
        var edits = 0
        let plan = try SQLiteBackend.plan(loaded, options: options) { _ in
            guard edits == 0 else { return }
            edits += 1
            try? (text + "# edited\n").write(toFile: file, atomically: true, encoding: .utf8)
        }
        XCTAssertEqual(edits, 1, "the plan reported an event")
        XCTAssertEqual(plan.counts.deleted, 3)
        XCTAssertEqual(plan.fingerprints?.job, loaded.digest)
        XCTAssertNotEqual(plan.fingerprints?.job, try JobLoader.load(path: file).digest, "the edit is not what was planned")

        try FileManager.default.removeItem(atPath: file)
        let again = try SQLiteBackend.plan(loaded, options: options)
        XCTAssertEqual(again.fingerprints, plan.fingerprints, "no need of the file once loaded")
    }
}
