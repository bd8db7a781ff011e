import Foundation
import GRDB
import WinnowTestSupport
import XCTest

/// `run --wait SECONDS` waits for the database, whoever holds it: another run's lock (see
/// LockAndExitCodeTests) and a lock another connection holds on the SQLite file. Here this
/// test's process holds `BEGIN EXCLUSIVE` while the spawned `winnow run` starts; without
/// `--wait` SQLite's busy timeout of 5 s applies (LockAndExitCodeTests checks that exit 75).
final class BusyWaitTests: CLITestCase {
    static let job = "version: 1\ndatabase: db.sqlite\ndedupe:\n  - entity: people\n    key: email\n    archive: true\n"

    /// 30 people, 10 of them repeating an earlier e-mail.
    @discardableResult
    func makeData(wal: Bool = false) throws -> String {
        let db = try TestSupport.makeDatabase(
            at: path("db.sqlite"),
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30)
                INSERT INTO people SELECT i, 'p' || (CASE WHEN i > 20 THEN i - 20 ELSE i END) || '@example.com' FROM n;
                """)
        if wal {
            let queue = try DatabaseQueue(path: db)
            _ = try queue.writeWithoutTransaction { try String.fetchOne($0, sql: "PRAGMA journal_mode = WAL") }
            try queue.close()
        }
        try write("job.yaml", Self.job)
        return db
    }

    /// Holds `BEGIN EXCLUSIVE` on `db` from now until `seconds` have passed (or `release()`).
    final class TimedExclusiveLock {
        let holder: LockAndExitCodeTests.ExclusiveHolder
        private let lock = NSLock()
        private var released = false

        init(_ db: String, seconds: Double) throws {
            holder = try LockAndExitCodeTests.ExclusiveHolder(db)
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in try? release() }
        }

        func release() throws {
            let first = lock.withLock { () -> Bool in
                defer { released = true }
                return !released
            }
            if first { try holder.release() }
        }
    }

    func runWaitingOutALock(wal: Bool) throws {
        let db = try makeData(wal: wal)
        let held = try TimedExclusiveLock(db, seconds: 8)
        defer { try? held.release() }
        let outcome = try SpawnedWinnow.run(["run", "--wait", "30", "--format", "json", "job.yaml"], in: dir, expect: 0)
        print(
            "[BusyWait] wal=\(wal): exclusive lock held 8 s; run --wait 30 exit \(outcome.status) after \(String(format: "%.2f", outcome.seconds)) s"
        )
        XCTAssertGreaterThan(outcome.seconds, 7, "the run cannot have written while the lock was held")
        XCTAssertEqual(outcome.summary?["status"] as? String, "completed")
        XCTAssertEqual(outcome.summary?["deleted"] as? Int, 10)
        XCTAssertEqual(outcome.stderr, "")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people"), 20)
    }

    /// Rollback journal: the exclusive lock keeps even readers out, so the run waits at its
    /// first read (opening the database), then goes on.
    func testRunWaitsOutAnotherProcesssExclusiveLockInRollbackMode() throws {
        try runWaitingOutALock(wal: false)
    }

    /// WAL: readers pass, so the run reads the schema and waits at its first write transaction
    /// (taking the run lock), then goes on.
    func testRunWaitsOutAnotherProcesssExclusiveLockInWALMode() throws {
        try runWaitingOutALock(wal: true)
    }

    /// A lock held past the wait: exit 75 once the wait is over (not at SQLite's default 5 s),
    /// naming how long winnow waited, with nothing changed.
    func testLockHeldPastTheWaitExits75AfterTheWait() throws {
        let db = try makeData()
        let bytes = try TestSupport.fileBytes(db)
        let held = try TimedExclusiveLock(db, seconds: 60)
        let outcome: SpawnedWinnow.Outcome
        do {
            outcome = try SpawnedWinnow.run(["run", "--wait", "7", "job.yaml"], in: dir, expect: 75)
        } catch {
            try held.release()
            throw error
        }
        try held.release()
        print("[BusyWait] lock held past --wait 7: exit \(outcome.status) after \(String(format: "%.2f", outcome.seconds)) s")
        XCTAssertGreaterThan(outcome.seconds, 6.5, "gave up before the wait was over")
        XCTAssertLessThan(outcome.seconds, 20)
        XCTAssertTrue(outcome.stderr.contains("for longer than the 7 s winnow waits"), outcome.stderr)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
    }

    /// `winnow ARGS` on a terminal (script(1) gives it one): its exit code and what the
    /// terminal showed.
    func onTerminal(_ arguments: [String]) throws -> (status: Int32, screen: String) {
        let script = "/usr/bin/script"
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: script), "script(1) is needed to give winnow a terminal")
        let command = ([TestSupport.executable.path] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["-qefc", command, "/dev/null"]
        process.currentDirectoryURL = dir
        process.standardInput = FileHandle.nullDevice
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let screen = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, screen)
    }

    /// On a terminal, a wait that lasts says what the run waits for, with the time waited.
    func testWaitingRunSaysWhatItWaitsForOnATerminal() throws {
        let db = try makeData()
        let held = try TimedExclusiveLock(db, seconds: 3)
        defer { try? held.release() }
        let (status, screen) = try onTerminal(["run", "--wait", "30", "job.yaml"])
        XCTAssertEqual(status, 0, screen)
        XCTAssertTrue(screen.contains("waiting: another connection holds a lock on the database"), screen)
        XCTAssertTrue(screen.contains("of at most 30.0 s"), screen)
        XCTAssertTrue(screen.contains("completed"), screen)
    }

    /// The same for another run's lock: the line names the run that holds it.
    func testWaitForAnotherRunsLockSaysWhoHoldsItOnATerminal() throws {
        let db = try makeData()
        try SpawnedWinnow.run(["run", "job.yaml"], in: dir, expect: 0)
        // This test's process, alive, holds the lock.
        try ScenarioKit.execute(
            db,
            "INSERT INTO winnow_lock (id, run_id, pid, process_start, host, acquired_at) VALUES (1, 7, ?, NULL, ?, '2024-01-01T00:00:00Z')",
            arguments: [ProcessInfo.processInfo.processIdentifier, ProcessInfo.processInfo.hostName])
        let (status, screen) = try onTerminal(["run", "--wait", "2", "job.yaml"])
        XCTAssertEqual(status, 75, screen)
        XCTAssertTrue(
            screen.contains("waiting: another winnow run holds the lock (run 7, pid \(ProcessInfo.processInfo.processIdentifier)"), screen)
    }
}
