import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// A `winnow` process started in the background, its output collected as it comes, its exit time
/// taken when it exits (not when the test gets round to waiting for it). Optionally started
/// through `/bin/sh -c 'ulimit -f N; exec winnow ...'` to limit the size of every file it writes.
final class SpawnedWinnow {
    struct Outcome {
        var status: Int32
        var signaled: Bool
        var stdout: String
        var stderr: String
        var seconds: Double
        var startedAt: Date
        var endedAt: Date
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }

        /// The JSON objects of stdout (`--format json`).
        var objects: [[String: Any]] {
            lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }

        var summary: [String: Any]? { objects.last { $0["event"] as? String == "summary" } }
    }

    let process = Process()
    let label: String
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    private var exitedAt: Date?
    private let readers = DispatchGroup()
    private(set) var startedAt = Date()

    /// `fileSizeLimitBlocks`: `ulimit -f` in the 512-byte blocks of /bin/sh (dash).
    init(_ arguments: [String], in directory: URL, fileSizeLimitBlocks: Int? = nil) {
        if let blocks = fileSizeLimitBlocks {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -f \(blocks) && exec \"$0\" \"$@\"", TestSupport.executable.path] + arguments
            label = "ulimit -f \(blocks); winnow " + arguments.joined(separator: " ")
        } else {
            process.executableURL = TestSupport.executable
            process.arguments = arguments
            label = "winnow " + arguments.joined(separator: " ")
        }
        process.currentDirectoryURL = directory
    }

    @discardableResult
    func start() throws -> SpawnedWinnow {
        let outPipe = Pipe(), errPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.terminationHandler = { [weak self] _ in
            guard let self else { return }
            self.lock.withLock { self.exitedAt = Date() }
        }
        startedAt = Date()
        try process.run()
        for (handle, isOut) in [(outPipe.fileHandleForReading, true), (errPipe.fileHandleForReading, false)] {
            readers.enter()
            Thread.detachNewThread { [self] in
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    lock.withLock { if isOut { out.append(chunk) } else { err.append(chunk) } }
                }
                readers.leave()
            }
        }
        return self
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }

    /// Waits until stdout holds `count` occurrences of `marker`; false when the process ended
    /// first or `timeout` passed.
    func waitForOutput(_ marker: String, count: Int = 1, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stdout.components(separatedBy: marker).count - 1 >= count { return true }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return stdout.components(separatedBy: marker).count - 1 >= count
    }

    func wait() -> Outcome {
        process.waitUntilExit()
        readers.wait()
        let ended = lock.withLock { exitedAt } ?? Date()
        return lock.withLock {
            Outcome(
                status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
                stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self),
                seconds: ended.timeIntervalSince(startedAt), startedAt: startedAt, endedAt: ended)
        }
    }

    /// Runs `winnow ARGS` to its end, checking that it was not killed by a signal, did not report
    /// an internal error (70) and, with `expect`, exited with that code.
    @discardableResult
    static func run(
        _ arguments: [String], in directory: URL, expect: Int32? = nil, fileSizeLimitBlocks: Int? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> Outcome {
        let spawned = SpawnedWinnow(arguments, in: directory, fileSizeLimitBlocks: fileSizeLimitBlocks)
        try spawned.start()
        let outcome = spawned.wait()
        check(outcome, spawned.label, expect: expect, file: file, line: line)
        return outcome
    }

    static func check(_ outcome: Outcome, _ label: String, expect: Int32?, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(outcome.signaled, "\(label) was killed by signal \(outcome.status)\n\(outcome.stderr)", file: file, line: line)
        XCTAssertNotEqual(outcome.status, 70, "\(label) reported an internal error\n\(outcome.stderr)", file: file, line: line)
        if let expect {
            XCTAssertEqual(
                outcome.status, expect, "\(label)\nstdout: \(outcome.stdout.suffix(2000))\nstderr: \(outcome.stderr.suffix(2000))",
                file: file, line: line)
        }
    }
}

/// docs/reference.md section 5 through the real executable: the run lock between two `winnow run`
/// processes (exit 75, `--wait`, killed and reused-pid holders), and the exit codes that
/// CLITests.swift does not cover yet (it has: 0/1, the usage errors of --batch-size and
/// --wait -1, invalid job files, `references: restrict`, missing and non-database files, a
/// directory given to `run`, a database corrupt before the run, a lock row of a live process).
///
/// Read-only files: the tests run as root, and root ignores permission bits, so `chmod 0444`
/// cannot make a database read-only. ``testImmutableDatabaseFileExits74AndChangesNothing`` uses
/// the ext4 immutable attribute (`chattr +i`) instead, which binds root too; where `chattr`
/// does not work (another file system, no CAP_LINUX_IMMUTABLE) that test is skipped, and the
/// read-only case then stays covered only by DatabaseOpener's mapping of SQLITE_READONLY to 74.
final class LockAndExitCodeTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("LockExit")
        XCTAssertTrue(
            FileManager.default.isExecutableFile(atPath: TestSupport.executable.path),
            "build the winnow executable first (swift build --build-tests)")
    }

    override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String { try TestSupport.writeFile(text, to: path(name)) }

    @discardableResult
    func winnow(
        _ args: [String], expect: Int32? = nil, fileSizeLimitBlocks: Int? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> SpawnedWinnow.Outcome {
        try SpawnedWinnow.run(args, in: dir, expect: expect, fileSizeLimitBlocks: fileSizeLimitBlocks, file: file, line: line)
    }

    func strings(_ db: String, _ sql: String) throws -> [String] {
        try ScenarioKit.column(db, sql, as: String.self).map { $0 ?? "NULL" }
    }

    static let batchEvent = "\"event\":\"batch\""

    // MARK: - Fixtures

    /// `groups` groups of 3 people (deduplicated by `slowJob`), each with an order; `other` has 20
    /// groups of 2 rows for a second job.
    @discardableResult
    func makeSlowData(_ name: String, groups: Int = 150) throws -> String {
        var people: [String] = []
        var orders: [String] = []
        for g in 0..<groups {
            for r in 0..<3 {
                let id = g * 3 + r + 1
                people.append("(\(id), 'k\(g)', \(r + g % 5), \(r == 1 ? "NULL" : "'n\(r)-\(g)'"))")
                orders.append("(\(id), \(id))")
            }
        }
        return try TestSupport.makeDatabase(
            at: path(name),
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, k TEXT, visits INTEGER, note TEXT);
                CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES people(id) ON DELETE CASCADE);
                CREATE TABLE other (id INTEGER PRIMARY KEY, k TEXT);
                INSERT INTO people VALUES \(people.joined(separator: ", "));
                INSERT INTO orders VALUES \(orders.joined(separator: ", "));
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
                INSERT INTO other (id, k) SELECT i, 'o' || (i % 20) FROM n;
                """)
    }

    /// One group per batch with a pause: about 20 ms a group, so 150 groups take ~3 s or more.
    /// (A rule that only deletes: one that merges applies its merges, and deletes most losers
    /// with them, in stretches that `max_transaction_ms` alone bounds, a few on a table this small.)
    static let slowJob = """
        version: 1
        batch:
          size: 1
          pause_ms: 15
        dedupe:
          - entity: people
            key: k
        """

    static let otherJob = "version: 1\ndedupe:\n  - entity: other\n    key: k\n"

    func counts(_ summary: [String: Any]?) -> [Int] {
        ["groups", "deleted", "updated", "repointed"].map { summary?[$0] as? Int ?? -1 }
    }

    // MARK: - 75: two runs at once

    func testSecondConcurrentRunExits75AtOnceAndTheFirstCompletesUnaffected() throws {
        let db = try makeSlowData("db.sqlite")
        try makeSlowData("solo.sqlite")
        try write("job.yaml", Self.slowJob)
        let solo = try winnow(["run", "--format", "json", "--database", "solo.sqlite", "job.yaml"], expect: 0)

        let first = try SpawnedWinnow(["run", "--format", "json", "--database", "db.sqlite", "job.yaml"], in: dir).start()
        XCTAssertTrue(first.waitForOutput(Self.batchEvent, count: 3, timeout: 30), "the first run never got going: \(first.stdout)")
        let second = try winnow(["run", "--format", "json", "--database", "db.sqlite", "job.yaml"], expect: 75)
        XCTAssertTrue(first.isRunning, "the first run must still hold the lock when the second gives up")
        let firstOutcome = first.wait()
        SpawnedWinnow.check(firstOutcome, first.label, expect: 0)
        print(
            "[LockAndExitCode] first run \(String(format: "%.2f", firstOutcome.seconds)) s; the second gave up after \(String(format: "%.3f", second.seconds)) s"
        )

        // "At once": no waiting for the lock (the first commits a batch every ~20 ms, so only
        // process start and one short busy wait are in it), and well under the first's duration.
        XCTAssertLessThan(second.seconds, 2.0, "the second run should give up at once")
        XCTAssertLessThan(second.seconds, firstOutcome.seconds / 2)
        XCTAssertTrue(second.stderr.contains("lock"), second.stderr)
        for line in second.lines {
            XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(line.utf8)), "not JSON: \(line)")
        }

        // The first run is unaffected: the same result and counts as a run alone.
        XCTAssertEqual(try TestSupport.contentDump(db), try TestSupport.contentDump(path("solo.sqlite")))
        XCTAssertEqual(counts(firstOutcome.summary), counts(solo.summary))
        XCTAssertEqual(firstOutcome.summary?["status"] as? String, "completed")
        XCTAssertEqual(try strings(db, "SELECT status FROM winnow_runs WHERE status NOT IN ('refused') ORDER BY id"), ["completed"])
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM winnow_lock"), 0, "the lock is released")
        try winnow(["check", "--database", "db.sqlite", "job.yaml"], expect: 0)
    }

    func testWaitLetsTheSecondRunFinishAfterTheFirst() throws {
        let db = try makeSlowData("db.sqlite")
        try makeSlowData("solo.sqlite")
        try write("job.yaml", Self.slowJob)
        try write("other.yaml", Self.otherJob)
        try winnow(["run", "--database", "solo.sqlite", "job.yaml", "other.yaml"], expect: 0)

        let first = try SpawnedWinnow(["run", "--format", "json", "--database", "db.sqlite", "job.yaml"], in: dir).start()
        XCTAssertTrue(first.waitForOutput(Self.batchEvent, count: 3, timeout: 30), "the first run never got going: \(first.stdout)")
        let second = try winnow(["run", "--wait", "60", "--format", "json", "--database", "db.sqlite", "other.yaml"], expect: 0)
        let firstOutcome = first.wait()
        SpawnedWinnow.check(firstOutcome, first.label, expect: 0)
        print(
            "[LockAndExitCode] first run \(String(format: "%.2f", firstOutcome.seconds)) s; the waiting run took \(String(format: "%.2f", second.seconds)) s"
        )

        XCTAssertGreaterThan(second.endedAt, firstOutcome.endedAt, "the waiting run finished before the run that held the lock")
        XCTAssertGreaterThan(second.seconds, 0.5, "the second run did not wait")
        XCTAssertEqual(second.summary?["status"] as? String, "completed")
        XCTAssertEqual(second.summary?["deleted"] as? Int, 20)
        // It started its work only after the first had finished (ISO 8601 UTC timestamps sort as text).
        let runs = try ScenarioKit.rows(db, "SELECT status, started_at, finished_at FROM winnow_runs WHERE status <> 'refused' ORDER BY id")
        XCTAssertEqual(runs.count, 2)
        if runs.count == 2 {
            XCTAssertEqual(runs.map { String.fromDatabaseValue($0[0]) }, ["completed", "completed"])
            let firstFinished = String.fromDatabaseValue(runs[0][2]) ?? ""
            let secondStarted = String.fromDatabaseValue(runs[1][1]) ?? ""
            XCTAssertGreaterThanOrEqual(secondStarted, firstFinished, "the waiting run started before the first finished")
        }
        XCTAssertEqual(try TestSupport.contentDump(db), try TestSupport.contentDump(path("solo.sqlite")))
    }

    func testLockOfASIGKILLedRunIsTakenOverAtOnce() throws {
        let db = try makeSlowData("db.sqlite")
        try makeSlowData("solo.sqlite")
        try write("job.yaml", Self.slowJob)
        try winnow(["run", "--batch-size", "500", "--database", "solo.sqlite", "job.yaml"], expect: 0)

        let victim = try SpawnedWinnow(["run", "--format", "json", "--database", "db.sqlite", "job.yaml"], in: dir).start()
        XCTAssertTrue(victim.waitForOutput(Self.batchEvent, count: 5, timeout: 30), "the run never got going: \(victim.stdout)")
        XCTAssertTrue(victim.isRunning)
        kill(victim.pid, SIGKILL)
        let killed = victim.wait()
        XCTAssertTrue(killed.signaled)
        // The dead run's lock is still in the database.
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT pid FROM winnow_lock WHERE id = 1"), Int(victim.pid))
        let remaining = try ScenarioKit.int(db, "SELECT count(*) FROM people")
        XCTAssertLessThan(remaining, 450, "batches were committed before the kill")

        let next = try winnow(["run", "--batch-size", "500", "--database", "db.sqlite", "job.yaml"], expect: 0)
        print(
            "[LockAndExitCode] run after SIGKILL took \(String(format: "%.3f", next.seconds)) s (\(remaining) people rows left by the killed run)"
        )
        // At once: nowhere near the 5 s busy timeout, let alone a wait for the lock.
        XCTAssertLessThan(next.seconds, 3.0, "the lock of a killed run must be taken over at once")
        XCTAssertEqual(try TestSupport.contentDump(db), try TestSupport.contentDump(path("solo.sqlite")))
        XCTAssertEqual(try strings(db, "SELECT status FROM winnow_runs ORDER BY id"), ["interrupted", "completed"])
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM winnow_lock"), 0)
    }

    /// A run killed while it re-points children ahead of their batches (no index on the
    /// reference) leaves orders on winners whose losers still exist: the next run finishes with
    /// the same result as an uninterrupted one, and `restore` of the killed run brings back
    /// exactly what it changed.
    func testRunKilledWhileRepointingAheadConverges() throws {
        let fixture = """
            CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, created_at INTEGER NOT NULL, visits INTEGER NOT NULL);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), amount INTEGER);
            WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 59999)
            INSERT INTO customers (email, created_at, visits)
            SELECT CASE i % 3 WHEN 0 THEN 'u' || (i / 3) || '@x.org' WHEN 1 THEN 'U' || (i / 3) || '@x.org' ELSE 'u' || (i / 3) || '@X.ORG' END,
                   (i * 7919) % 100003, i % 5 FROM s;
            WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 59999)
            INSERT INTO orders (customer_id, amount) SELECT 1 + (i * 48271) % 60000, i FROM s;
            """
        for name in ["db.sqlite", "solo.sqlite", "undo.sqlite"] { try TestSupport.makeDatabase(at: path(name), sql: fixture) }
        let original = try ScenarioKit.userState(path("undo.sqlite"))
        try write(
            "job.yaml",
            """
            version: 1
            dedupe:
              - entity: customers
                key: email
                normalize: [lowercase]
                winner: [{created_at: asc}]
                merge: {visits: sum}
                archive: true
            batch:
              size: 50
            """)
        try winnow(["run", "--database", "solo.sqlite", "job.yaml"], expect: 0)
        for name in ["db.sqlite", "undo.sqlite"] {
            let victim = try SpawnedWinnow(["run", "--format", "json", "--database", name, "job.yaml"], in: dir).start()
            XCTAssertTrue(victim.waitForOutput(Self.batchEvent, timeout: 30), "the run never got going: \(victim.stdout)")
            kill(victim.pid, SIGKILL)
            XCTAssertTrue(victim.wait().signaled)
            XCTAssertTrue(victim.stdout.contains("\"deleted\":0"), "the first batch re-pointed ahead")
        }
        let db = path("db.sqlite")
        XCTAssertEqual(try ScenarioKit.rows(db, "PRAGMA foreign_key_check").count, 0)
        XCTAssertGreaterThan(
            try ScenarioKit.int(db, "SELECT count(*) FROM customers") - 20000, 0, "losers were left for the next run")
        try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 0)
        XCTAssertEqual(try TestSupport.contentDump(db), try TestSupport.contentDump(path("solo.sqlite")))
        let killedRun = try ScenarioKit.int(path("undo.sqlite"), "SELECT max(id) FROM winnow_runs")
        try winnow(["restore", "--run", "\(killedRun)", "--database", "undo.sqlite"], expect: 0)
        XCTAssertEqual(try ScenarioKit.userState(path("undo.sqlite")), original)
    }

    /// The holder's pid is alive (another process), but its start time is not the recorded one:
    /// the pid was reused and the lock is abandoned. The same row with the right start time is a
    /// live holder (exit 75), so the takeover comes from the start time, not from the pid.
    func testLockOfAReusedPidIsTakenOver() throws {
        let db = try makeSlowData("db.sqlite", groups: 5)
        try write("job.yaml", Self.slowJob)
        try write("other.yaml", Self.otherJob)
        // Installs winnow's tables; the lock row goes in then.
        try winnow(["run", "--database", "db.sqlite", "other.yaml"], expect: 0)
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["60"]
        try sleeper.run()
        defer {
            sleeper.terminate()
            sleeper.waitUntilExit()
        }
        let start = try XCTUnwrap(ProcessIdentity.startTime(of: sleeper.processIdentifier), "no /proc/PID/stat")
        let host = ProcessIdentity.hostName
        try ScenarioKit.execute(
            db,
            "INSERT INTO winnow_lock (id, run_id, pid, process_start, host, acquired_at) VALUES (1, 7, ?, ?, ?, '2024-01-01T00:00:00Z')",
            arguments: [sleeper.processIdentifier, start, host])
        let state = try ScenarioKit.userState(db)
        let held = try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 75)
        XCTAssertTrue(held.stderr.contains("\(sleeper.processIdentifier)"), held.stderr)
        XCTAssertEqual(try ScenarioKit.userState(db), state)

        try ScenarioKit.execute(db, "UPDATE winnow_lock SET process_start = ? WHERE id = 1", arguments: [start + "1"])
        XCTAssertTrue(sleeper.isRunning, "the pid must be alive for this test")
        let taken = try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 0)
        XCTAssertLessThan(taken.seconds, 3.0)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people"), 5)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM winnow_lock"), 0)
    }

    // MARK: - 75: the database locked by another connection

    /// Holds `BEGIN EXCLUSIVE` on its own connection until `release()`.
    final class ExclusiveHolder {
        let queue: DatabaseQueue
        init(_ path: String) throws {
            var config = Configuration()
            config.allowsUnsafeTransactions = true
            config.label = "exclusive-holder"
            queue = try DatabaseQueue(path: path, configuration: config)
            try queue.inDatabase { db in try db.execute(sql: "BEGIN EXCLUSIVE") }
        }

        func release() throws {
            try queue.inDatabase { db in try db.execute(sql: "ROLLBACK") }
            try queue.close()
        }
    }

    /// WAL mode: readers pass, so the run opens the database and reads it, and then its
    /// `BEGIN IMMEDIATE` waits the busy timeout (5 s) three times before it gives up.
    func testWriteLockHeldByAnotherConnectionExits75AfterTheRetries() throws {
        try XCTSkipIf(
            ["true", "1", "yes"].contains(ProcessInfo.processInfo.environment["CI"]?.lowercased() ?? ""),
            "takes about 15 s (3 attempts x 5 s busy timeout); skipped under CI=true")
        let db = try makeSlowData("db.sqlite", groups: 5)
        let queue = try DatabaseQueue(path: db)
        _ = try queue.writeWithoutTransaction { try String.fetchOne($0, sql: "PRAGMA journal_mode = WAL") }
        try queue.close()
        try write("job.yaml", Self.slowJob)
        let state = try ScenarioKit.userState(db)
        let holder = try ExclusiveHolder(db)
        let result: SpawnedWinnow.Outcome
        do {
            result = try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 75)
        } catch {
            try holder.release()
            throw error
        }
        try holder.release()
        print("[LockAndExitCode] WAL write lock held elsewhere: exit \(result.status) after \(String(format: "%.2f", result.seconds)) s")
        let expected = Double(Database.writeAttempts) * DatabaseOpener.busyTimeout
        XCTAssertGreaterThanOrEqual(result.seconds, expected - 1, "gave up before its retries")
        XCTAssertLessThan(result.seconds, expected + 10, "waited far beyond its retries")
        XCTAssertTrue(result.stderr.lowercased().contains("lock"), result.stderr)
        XCTAssertEqual(try ScenarioKit.userState(db), state)
        try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people"), 5)
    }

    /// Rollback journal: an EXCLUSIVE lock keeps readers out too, so the run cannot even read
    /// the schema; it gives up after the busy timeout (one attempt: nothing was started).
    func testExclusiveLockInRollbackModeExits75AfterTheBusyTimeout() throws {
        let db = try makeSlowData("db.sqlite", groups: 5)
        try write("job.yaml", Self.slowJob)
        XCTAssertEqual(try strings(db, "PRAGMA journal_mode"), ["delete"])
        let bytes = try TestSupport.fileBytes(db)
        let holder = try ExclusiveHolder(db)
        var results: [SpawnedWinnow.Outcome] = []
        do {
            results.append(try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 75))
        } catch {
            try holder.release()
            throw error
        }
        try holder.release()
        for result in results {
            print(
                "[LockAndExitCode] exclusive lock (rollback journal): exit \(result.status) after \(String(format: "%.2f", result.seconds)) s"
            )
            XCTAssertGreaterThanOrEqual(result.seconds, DatabaseOpener.busyTimeout - 0.5, "gave up before the busy timeout")
            XCTAssertLessThan(result.seconds, Double(Database.writeAttempts) * DatabaseOpener.busyTimeout + 5)
        }
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes, "a run refused by a locked database changes no byte")
        try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 0)
    }

    // MARK: - 66

    func testDirectoryAsDatabaseExits66ForEveryCommand() throws {
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("db.sqlite"), withIntermediateDirectories: true)
        try write("job.yaml", "version: 1\ndatabase: db.sqlite\ndedupe:\n  - entity: t\n    key: k\n")
        try write(
            "schema.yaml",
            "version: 1\ntables:\n  t:\n    columns:\n      - {name: id, type: integer, primary_key: true}\n      - {name: k, type: text}\n"
        )
        // A job with a schema may create a missing database, but not in place of a directory.
        try write("schemajob.yaml", "version: 1\ndatabase: db.sqlite\nschema: schema.yaml\n")
        for args in [
            ["run", "job.yaml"], ["plan", "job.yaml"], ["check", "job.yaml"], ["run", "schemajob.yaml"],
            ["run", "--dry-run", "schemajob.yaml"], ["check", "schemajob.yaml"],
            ["history", "--database", "db.sqlite"], ["schema", "inspect", "--database", "db.sqlite"],
            ["restore", "--database", "db.sqlite", "--run", "1"],
        ] {
            let result = try winnow(args, expect: 66)
            XCTAssertTrue(result.stderr.contains("db.sqlite"), "\(args): \(result.stderr)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: path("db.sqlite")), [], "nothing was created in the directory")
        let siblings = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        XCTAssertEqual(siblings, ["db.sqlite", "job.yaml", "schema.yaml", "schemajob.yaml"], "no -wal, -shm or -journal next to it")
    }

    /// SQLite treats an empty (0-byte) file as a valid database with no tables, and so does
    /// winnow: it is not "not a database" (66). A job about a table it lacks is refused (65,
    /// a missing table), read-only commands leave it at 0 bytes, and a job with a schema
    /// migrates it like a missing database.
    func testEmptyFileIsAnEmptyDatabaseNotExit66() throws {
        let db = try write("empty.sqlite", "")
        try write("job.yaml", "version: 1\ndatabase: empty.sqlite\ndedupe:\n  - entity: t\n    key: k\n")
        try write(
            "schema.yaml",
            "version: 1\ntables:\n  t:\n    columns:\n      - {name: id, type: integer, primary_key: true}\n      - {name: k, type: text}\n"
        )
        try write("schemajob.yaml", "version: 1\ndatabase: empty.sqlite\nschema: schema.yaml\ndedupe:\n  - entity: t\n    key: k\n")

        for command in ["plan", "check"] {
            let result = try winnow([command, "job.yaml"], expect: 65)
            XCTAssertTrue(result.stderr.contains("job.yaml:4:13:"), "\(command): \(result.stderr)")
        }
        try winnow(["plan", "schemajob.yaml"], expect: 0)
        try winnow(["check", "schemajob.yaml"], expect: 1)  // drift: the table is missing
        try winnow(["schema", "inspect", "--database", "empty.sqlite"], expect: 0)
        try winnow(["history", "--database", "empty.sqlite"], expect: 0)
        XCTAssertEqual(try TestSupport.fileBytes(db).count, 0, "read-only commands never change a byte, even of an empty file")

        try winnow(["run", "job.yaml"], expect: 65)
        XCTAssertEqual(try ScenarioKit.userState(db).schema, [], "a refused job creates no user table")
        try winnow(["run", "schemajob.yaml"], expect: 0)
        XCTAssertEqual(try strings(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 't'"), ["t"])
        try winnow(["check", "schemajob.yaml"], expect: 0)
    }

    /// A seed database that is not there is an input file not found (66), and the job is
    /// refused before it starts: neither its migration nor its dedupe rules are applied.
    func testMissingSeedDatabaseExits66AndChangesNothing() throws {
        let db = try TestSupport.makeDatabase(
            at: path("db.sqlite"),
            sql: """
                CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT);
                INSERT INTO contacts VALUES (1, 'a@x'), (2, 'a@x'), (3, 'b@x');
                """)
        try write(
            "schema.yaml",
            """
            version: 2
            tables:
              contacts:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: email, type: text}
                  - {name: phone, type: text}
              companies:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: name, type: text}
            """)
        try write(
            "job.yaml",
            """
            version: 1
            database: db.sqlite
            schema: schema.yaml
            seed:
              name: companies-v1
              from: seeds/missing.sqlite
              tables: [companies]
            dedupe:
              - entity: contacts
                key: email
            """)
        try write(
            "noschema.yaml",
            """
            version: 1
            database: db.sqlite
            seed:
              name: contacts-v1
              from: seeds/missing.sqlite
              tables: [contacts]
            dedupe:
              - entity: contacts
                key: email
            """)
        let state = try ScenarioKit.userState(db)
        let plain = try winnow(["run", "noschema.yaml"], expect: 66)
        XCTAssertTrue(plain.stderr.contains("missing.sqlite"), plain.stderr)
        XCTAssertEqual(try ScenarioKit.userState(db), state, "the dedupe rule ran although the job was refused")

        let migrating = try winnow(["run", "job.yaml"], expect: 66)
        XCTAssertTrue(migrating.stderr.contains("missing.sqlite"), migrating.stderr)
        XCTAssertEqual(try ScenarioKit.userState(db).schema, state.schema, "the migration was applied although the job was refused (66)")
        XCTAssertEqual(try ScenarioKit.userState(db), state)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM winnow_lock"), 0, "a refused run leaves no lock")

        // A seed file that is not a database: 66 as well, before the migration's first step.
        try FileManager.default.createDirectory(atPath: path("seeds"), withIntermediateDirectories: true)
        try write("seeds/missing.sqlite", String(repeating: "not a database ", count: 400))
        let garbage = try winnow(["run", "job.yaml"], expect: 66)
        XCTAssertTrue(garbage.stderr.contains("missing.sqlite"), garbage.stderr)
        XCTAssertEqual(try ScenarioKit.userState(db), state, "a job with an unreadable seed changed the database")
    }

    // MARK: - 74

    /// A full disk, simulated by a file size limit just above the database's size: the write-ahead
    /// log (or the growing file) hits it after some batches. winnow ignores SIGXFSZ, so the write
    /// fails with EFBIG and the run must end with a clean 74, its batch in flight rolled back.
    func testFileSizeLimitExits74CleanlyAndARunWithoutItFinishesTheJob() throws {
        func makeData(_ name: String) throws -> String {
            try TestSupport.makeDatabase(
                at: path(name),
                sql: """
                    CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v INTEGER, pad TEXT);
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 17999)
                    INSERT INTO t (id, k, v, pad) SELECT i + 1, 'k' || (i / 3), i % 7 + 1, printf('%.80c', 'p') || i FROM n;
                    """)
        }
        let db = try makeData("db.sqlite")
        _ = try makeData("reference.sqlite")
        try write(
            "job.yaml",
            """
            version: 1
            batch: {size: 20}
            dedupe:
              - entity: t
                key: k
                winner: [{id: asc}]
                merge: {v: sum}
                archive: true
            """)
        try winnow(["run", "--database", "reference.sqlite", "job.yaml"], expect: 0)

        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: db)[.size] as? Int)
        // 1 MiB above the file's size: room for winnow's own tables, created (in the rollback
        // journal mode the file is in before the run switches it to WAL) before the first batch,
        // and for the first stretch of merges (1,000 winners journaled, their losers recorded,
        // the 2,000 of them in its rowids deleted and journaled), not for the second (5,000).
        let blocks = size / 512 + 2048
        let limited = try winnow(
            ["run", "--format", "json", "--database", "db.sqlite", "job.yaml"], expect: 74, fileSizeLimitBlocks: blocks)
        let committedBatches = limited.objects.filter { $0["event"] as? String == "batch" }.count
        print(
            "[LockAndExitCode] ulimit -f \(blocks) (file \(size) bytes): exit \(limited.status) after \(committedBatches) batches; \(limited.stderr.prefix(300))"
        )
        XCTAssertTrue(
            limited.stderr.lowercased().contains("disk") || limited.stderr.lowercased().contains("full")
                || limited.stderr.lowercased().contains("i/o"), limited.stderr)
        XCTAssertGreaterThan(committedBatches, 0, "the limit should hit after some batches, not at once")

        // Integrity, and no partial batch: every group is fully resolved, or merged ahead of its
        // deletions with both losers recorded as taken, or untouched; exactly the committed
        // batches' deletes happened (and are journaled).
        XCTAssertEqual(try strings(db, "PRAGMA integrity_check"), ["ok"])
        let groups = try ScenarioKit.takenRows(
            db,
            """
            SELECT g.k, g.n, g.first, w.v, (SELECT count(*) FROM temp.taken AS m WHERE m.tbl = 't' AND m.winner = g.first)
            FROM (SELECT k, count(*) AS n, min(id) AS first FROM t GROUP BY k) AS g JOIN t AS w ON w.id = g.first
            """)
        var resolved = 0
        var mergedAhead = 0
        for group in groups {
            let n = Int.fromDatabaseValue(group[1])!
            let first = Int.fromDatabaseValue(group[2])!
            let values = (0..<3).map { (first - 1 + $0) % 7 + 1 }
            let winner = Int.fromDatabaseValue(group[3])!
            let taken = Int.fromDatabaseValue(group[4])!
            XCTAssertTrue(n == 1 || n == 3, "group \(group[0]) has \(n) rows: a batch was half applied")
            if n == 1 {
                XCTAssertEqual(winner, values.reduce(0, +), "group \(group[0]): merged value wrong")
                resolved += 1
            } else if taken > 0 {
                XCTAssertEqual(taken, 2, "group \(group[0]): merged ahead, with both losers recorded")
                XCTAssertEqual(winner, values.reduce(0, +), "group \(group[0]): merged value wrong")
                mergedAhead += 1
            } else {
                XCTAssertEqual(winner, values[0], "group \(group[0]): changed without a record")
            }
        }
        XCTAssertEqual(groups.count, 6000)
        XCTAssertGreaterThan(resolved + mergedAhead, 0, "batches committed before the limit must stay committed")
        XCTAssertLessThan(resolved, 6000, "the limit hit before the end")
        let deleted = 18000 - (try ScenarioKit.int(db, "SELECT count(*) FROM t"))
        XCTAssertEqual(deleted, 2 * resolved)
        XCTAssertEqual(
            try ScenarioKit.intOverJournal(db, "SELECT count(*) FROM {entries} WHERE op = 'delete'"), deleted,
            "the journal holds exactly the committed deletes")
        XCTAssertEqual(
            try ScenarioKit.int(db, "SELECT deleted FROM winnow_runs WHERE id = 1"), deleted,
            "the run's recorded progress matches the committed batches")

        // Without the limit, run again: the same result as an uninterrupted run.
        let again = try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 0)
        XCTAssertEqual(try TestSupport.contentDump(db), try TestSupport.contentDump(path("reference.sqlite")), again.stdout)
        XCTAssertEqual(try strings(db, "PRAGMA integrity_check"), ["ok"])
        XCTAssertEqual(try strings(db, "SELECT status FROM winnow_runs ORDER BY id").last, "completed")
    }

    /// A page of a child table that only a late batch touches (re-pointing its orders) is
    /// corrupt: the run fails in the middle with 74, committed batches stay, the batch in flight
    /// is rolled back, and once the page is repaired a new run finishes like an uninterrupted one.
    func testCorruptionMetInTheMiddleOfARunExits74AndKeepsCommittedBatches() throws {
        func makeData(_ name: String) throws -> String {
            try TestSupport.makeDatabase(
                at: path(name),
                sql: """
                    CREATE TABLE people (id INTEGER PRIMARY KEY, k TEXT, visits INTEGER);
                    CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES people(id), pad TEXT);
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 1799)
                    INSERT INTO people (id, k, visits) SELECT i + 1, 'k' || (i / 3), i % 5 FROM n;
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 8999)
                    INSERT INTO orders (id, person_id, pad) SELECT i + 1, i / 5 + 1, printf('%.60c', 'o') FROM n;
                    CREATE INDEX orders_person ON orders (person_id);
                    """)
        }
        let db = try makeData("db.sqlite")
        _ = try makeData("reference.sqlite")
        try write(
            "job.yaml",
            """
            version: 1
            batch: {size: 20}
            dedupe:
              - entity: people
                key: k
                winner: [{id: asc}]
                merge: {visits: sum}
                references: repoint
            """)
        try winnow(["run", "--database", "reference.sqlite", "job.yaml"], expect: 0)

        // The leaf page of `orders` in the middle of the table (rows in rowid order, so it holds
        // the orders of people in the middle), found with dbstat or, without it, from the layout.
        let pageSize = try ScenarioKit.int(db, "PRAGMA page_size")
        let leaves =
            (try? ScenarioKit.column(
                db, "SELECT pageno FROM dbstat WHERE name = 'orders' AND pagetype = 'leaf' ORDER BY path", as: Int.self)) ?? []
        let page: Int
        if leaves.count > 10 {
            page = leaves[leaves.count / 2]!
        } else {
            let tableRoot = try ScenarioKit.int(db, "SELECT rootpage FROM sqlite_master WHERE name = 'orders'")
            let indexRoot = try ScenarioKit.int(db, "SELECT rootpage FROM sqlite_master WHERE name = 'orders_person'")
            page = (tableRoot + indexRoot) / 2
        }
        let url = URL(fileURLWithPath: db)
        var data = try Data(contentsOf: url)
        let range = (page - 1) * pageSize..<page * pageSize
        let original = data.subdata(in: range)
        data.replaceSubrange(range, with: Data(repeating: 0xFF, count: pageSize))
        try data.write(to: url)

        let broken = try winnow(["run", "--format", "json", "--database", "db.sqlite", "job.yaml"], expect: 74)
        let batches = broken.objects.filter { $0["event"] as? String == "batch" }.count
        print(
            "[LockAndExitCode] corrupt page \(page): exit \(broken.status) after \(batches) committed batches; \(broken.stderr.prefix(200))"
        )
        XCTAssertTrue(broken.stderr.lowercased().contains("corrupt"), broken.stderr)
        XCTAssertGreaterThan(batches, 0, "the corruption should be met in the middle of the run, not before it")

        // Committed batches stay; the batch in flight was rolled back (whole groups only).
        let groups = try ScenarioKit.rows(db, "SELECT k, count(*), sum(visits) FROM people GROUP BY k")
        XCTAssertEqual(groups.count, 600)
        var resolved = 0
        for group in groups {
            let n = Int.fromDatabaseValue(group[1])!
            XCTAssertTrue(n == 1 || n == 3, "group \(group[0]) has \(n) rows: a batch was half applied")
            if n == 1 { resolved += 1 }
        }
        // (The orders go ahead of the deletions, in stretches of their table: the corruption in
        // its middle is met there, after the first stretches committed.)
        let repointed = try ScenarioKit.int(db, "SELECT repointed FROM winnow_runs WHERE id = 1")
        XCTAssertGreaterThan(resolved + repointed, 0, "some work was committed")
        XCTAssertLessThan(resolved, 600)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT deleted FROM winnow_runs WHERE id = 1"), 2 * resolved)
        XCTAssertEqual(try strings(db, "SELECT status FROM winnow_runs WHERE id = 1"), ["failed"])
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM winnow_lock"), 0, "the failed run released its lock")

        // Repair the page (the failed batch never wrote it), then finish the job.
        var repaired = try Data(contentsOf: url)
        repaired.replaceSubrange(range, with: original)
        try repaired.write(to: url)
        XCTAssertEqual(try strings(db, "PRAGMA integrity_check"), ["ok"])
        try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 0)
        XCTAssertEqual(try TestSupport.contentDump(db), try TestSupport.contentDump(path("reference.sqlite")))
    }

    /// See the class comment: root ignores `chmod`, but not the immutable attribute.
    func testImmutableDatabaseFileExits74AndChangesNothing() throws {
        let db = try makeSlowData("db.sqlite", groups: 5)
        try write("job.yaml", Self.slowJob)
        let bytes = try TestSupport.fileBytes(db)
        let chattr = try? Process.run(URL(fileURLWithPath: "/usr/bin/chattr"), arguments: ["+i", db])
        chattr?.waitUntilExit()
        try XCTSkipUnless(chattr?.terminationStatus == 0, "chattr +i does not work here; read-only files are not testable as root")
        defer {
            let undo = try? Process.run(URL(fileURLWithPath: "/usr/bin/chattr"), arguments: ["-i", db])
            undo?.waitUntilExit()
        }
        let result = try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 74)
        XCTAssertTrue(result.stderr.lowercased().contains("read"), result.stderr)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
        // Read-only commands still work on it.
        try winnow(["check", "--database", "db.sqlite", "job.yaml"], expect: 1)
    }

    // MARK: - 65

    func testMaxDeletePercentGuardExits65AndNoRuleChangesAnything() throws {
        let db = try makeSlowData("db.sqlite", groups: 10)  // people: 30 rows, 20 losers (66.7%)
        try write(
            "job.yaml",
            """
            version: 1
            dedupe:
              - entity: other
                key: k
              - entity: people
                key: k
                max_delete_percent: 50
            """)
        let bytes = try TestSupport.fileBytes(db)
        let planned = try winnow(["plan", "--database", "db.sqlite", "job.yaml"], expect: 65)
        XCTAssertTrue(planned.stderr.contains("max_delete_percent"), planned.stderr)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
        let state = try ScenarioKit.userState(db)
        let result = try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 65)
        XCTAssertTrue(result.stderr.contains("max_delete_percent"), result.stderr)
        XCTAssertTrue(result.stderr.contains("people"), result.stderr)
        XCTAssertEqual(try ScenarioKit.userState(db), state, "the first rule ran although the second was refused")
        // Just within the guard: runs.
        try write("ok.yaml", "version: 1\ndedupe:\n  - entity: people\n    key: k\n    max_delete_percent: 67\n")
        try winnow(["run", "--database", "db.sqlite", "ok.yaml"], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people"), 10)
    }

    /// A rule whose table an earlier rule changes is found again at its turn: refused there
    /// (its guard fails on the orders the first rule re-pointed), it exits 65 and changes
    /// nothing itself, the first rule's batch stays committed, and the message says so instead
    /// of claiming that nothing changed.
    func testRuleRefusedAtItsTurnSaysWhatStaysCommitted() throws {
        let db = try TestSupport.makeDatabase(
            at: path("db.sqlite"),
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, k TEXT);
                CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES people(id));
                INSERT INTO people VALUES (1, 'a'), (2, 'a'), (3, 'b');
                INSERT INTO orders VALUES (1, 1), (2, 2), (3, 3);
                """)
        try write(
            "job.yaml",
            """
            version: 1
            dedupe:
              - entity: people
                key: k
              - entity: orders
                key: person_id
                max_delete_percent: 0
            """)
        try FileManager.default.copyItem(atPath: db, toPath: path("copy.sqlite"))
        let result = try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 65)
        XCTAssertTrue(result.stderr.contains("dedupe[1] (orders): would delete 1 of 3 rows"), result.stderr)
        XCTAssertTrue(
            result.stderr.contains("this rule changed nothing, but what the run did before it stays committed (1 batch(es))"), result.stderr
        )
        XCTAssertFalse(result.stderr.contains("nothing was changed"), result.stderr)
        XCTAssertEqual(try ScenarioKit.column(db, "SELECT id FROM people ORDER BY id", as: Int.self), [1, 3], "the first rule's batch")
        XCTAssertEqual(try ScenarioKit.column(db, "SELECT person_id FROM orders ORDER BY id", as: Int.self), [1, 1, 3])
        // JSON names the guard, what it refused and what stays committed, as fields: on a copy
        // of the same data, then again once the first rule has nothing left to do.
        for (database, committed) in [("copy.sqlite", ["1 batch(es)"]), ("db.sqlite", [])] {
            let json = try winnow(["run", "--database", database, "job.yaml", "--format", "json"], expect: 65)
            let error = try XCTUnwrap(
                json.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                    .first { $0["event"] as? String == "error" }, json.stdout)
            XCTAssertEqual(error["guard"] as? String, "max_delete_percent")
            XCTAssertEqual(
                error["detail"] as? String, "dedupe[1] (orders): would delete 1 of 3 rows (33.3%), more than max_delete_percent 0%")
            XCTAssertEqual(error["committed"] as? [String], committed, database)
        }
    }

    func testNotLightweightMigrationExits65NamingTheChangeAndAppliesNoStep() throws {
        let db = try TestSupport.makeDatabase(
            at: path("db.sqlite"),
            sql: """
                CREATE TABLE items (id INTEGER PRIMARY KEY, qty INTEGER, k TEXT);
                INSERT INTO items VALUES (1, 5, 'a'), (2, 6, 'a'), (3, 7, 'b');
                """)
        // A lightweight step (a new column, a new table) next to a type change: nothing at all is applied.
        try write(
            "schema.yaml",
            """
            version: 2
            tables:
              items:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: qty, type: text}
                  - {name: k, type: text}
                  - {name: added, type: text}
              fresh:
                columns:
                  - {name: id, type: integer, primary_key: true}
            """)
        try write("job.yaml", "version: 1\nschema: schema.yaml\ndedupe:\n  - entity: items\n    key: k\n")
        let bytes = try TestSupport.fileBytes(db)
        let planned = try winnow(["plan", "--database", "db.sqlite", "job.yaml"], expect: 65)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
        let state = try ScenarioKit.userState(db)
        let result = try winnow(["run", "--database", "db.sqlite", "job.yaml"], expect: 65)
        for needle in ["items", "qty", "integer", "text"] {
            XCTAssertTrue(result.stderr.lowercased().contains(needle), "the refusal does not name \(needle): \(result.stderr)")
            XCTAssertTrue(planned.stderr.lowercased().contains(needle), "plan's refusal does not name \(needle): \(planned.stderr)")
        }
        XCTAssertEqual(try ScenarioKit.userState(db), state)
        XCTAssertEqual(
            try ScenarioKit.int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'winnow_schema'"), 0,
            "no schema version was recorded")
    }

    func testDatabaseNewerThanTheTargetExits65AndIsNeverDowngraded() throws {
        let db = try TestSupport.makeDatabase(
            at: path("db.sqlite"),
            sql: """
                CREATE TABLE items (id INTEGER PRIMARY KEY, k TEXT);
                INSERT INTO items VALUES (1, 'a'), (2, 'a');
                """)
        let v3 = """
            version: 3
            tables:
              items:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: k, type: text}
                  - {name: note, type: text}
            """
        try write("v3.yaml", v3)
        try write(
            "v2.yaml",
            "version: 2\ntables:\n  items:\n    columns:\n      - {name: id, type: integer, primary_key: true}\n      - {name: k, type: text}\n"
        )
        try write("job3.yaml", "version: 1\nschema: v3.yaml\n")
        try write("job2.yaml", "version: 1\nschema: v2.yaml\nallow_data_loss: true\ndedupe:\n  - entity: items\n    key: k\n")
        try winnow(["run", "--database", "db.sqlite", "job3.yaml"], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT version FROM winnow_schema"), 3)
        let state = try ScenarioKit.userState(db)
        let bytes = try TestSupport.fileBytes(db)
        let planned = try winnow(["plan", "--database", "db.sqlite", "job2.yaml"], expect: 65)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
        let result = try winnow(["run", "--database", "db.sqlite", "job2.yaml"], expect: 65)
        for output in [planned.stderr, result.stderr] {
            XCTAssertTrue(output.contains("3") && output.contains("2") && output.lowercased().contains("newer"), output)
        }
        XCTAssertEqual(try ScenarioKit.userState(db), state, "the database was changed (downgraded or deduplicated)")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT version FROM winnow_schema"), 3)
    }

    // MARK: - 64

    func testBadOptionValuesExit64AndChangeNothing() throws {
        let db = try makeSlowData("db.sqlite", groups: 3)
        try write("job.yaml", "version: 1\ndatabase: db.sqlite\ndedupe:\n  - entity: people\n    key: k\n")
        let bytes = try TestSupport.fileBytes(db)
        let cases: [[String]] = [
            ["run", "--wait", "abc", "job.yaml"],
            ["run", "--wait", "nan", "job.yaml"],
            ["run", "--wait", "inf", "job.yaml"],
            ["run", "--wait", "job.yaml"],
            ["run", "--batch-size", "1.5", "job.yaml"],
            ["run", "--batch-size", "", "job.yaml"],
            ["run", "--batch-size", "99999999999999999999999", "job.yaml"],
            ["run", "--format", "xml", "job.yaml"],
            ["run", "--format", "junit", "job.yaml"],
            ["plan", "--format", "junit", "job.yaml"],
            ["plan", "--batch-size", "0", "job.yaml"],
            ["check", "--format", "html", "job.yaml"],
            ["run", "--database", "job.yaml"],
            ["run"],
            ["check"],
            ["validate"],
            ["history", "--database", "db.sqlite", "--limit", "x"],
            ["history", "--database", "db.sqlite", "surplus"],
            ["restore", "--database", "db.sqlite", "--run", "abc"],
            ["restore", "--database", "db.sqlite", "--run"],
            ["schema", "inspect"],
            ["schema", "inspect", "--database", "db.sqlite", "--format", "yaml"],
        ]
        for args in cases {
            let result = try winnow(args, expect: 64)
            XCTAssertFalse(result.stderr.isEmpty, "\(args): a usage error says what is wrong")
        }
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
        XCTAssertFalse(FileManager.default.fileExists(atPath: db + "-wal"))
        try winnow(["run", "--wait", "0", "--batch-size", "1", "job.yaml"], expect: 0)
    }
}
