import Foundation
import GRDB
import XCTest
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// The real `winnow` executable: exit codes (docs/reference.md section 5), output formats, and that bad
/// input never crashes it nor changes the database.
final class CLITests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("CLI")
        XCTAssertTrue(
            FileManager.default.isExecutableFile(atPath: TestSupport.executable.path),
            "build the winnow executable first (swift build --build-tests)")
    }

    override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    struct CLIResult {
        var status: Int32
        var signaled: Bool
        var stdout: String
        var stderr: String
        var seconds: Double
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    /// Runs `winnow ARGS` in the scratch folder, and checks it neither crashed (signal) nor
    /// reported an internal error (70).
    @discardableResult
    func winnow(_ args: [String], expect: Int32? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> CLIResult {
        let process = Process()
        process.executableURL = TestSupport.executable
        process.arguments = args
        process.currentDirectoryURL = dir
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let started = Date()
        try process.run()
        // Read both pipes concurrently so that neither fills up.
        final class Box: @unchecked Sendable { var data = Data() }
        let errBox = Box()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            errBox.data = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        let errData = errBox.data
        process.waitUntilExit()
        let result = CLIResult(
            status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
            stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self),
            seconds: Date().timeIntervalSince(started))
        let label = "winnow \(args.joined(separator: " "))"
        XCTAssertFalse(result.signaled, "\(label) was killed by signal \(result.status)\n\(result.stderr)", file: file, line: line)
        XCTAssertNotEqual(result.status, 70, "\(label) reported an internal error\n\(result.stderr)", file: file, line: line)
        if let expect {
            XCTAssertEqual(result.status, expect, "\(label)\nstdout: \(result.stdout)\nstderr: \(result.stderr)", file: file, line: line)
        }
        return result
    }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String { try TestSupport.writeFile(text, to: path(name)) }

    /// data.sqlite with duplicates in `t` (3 groups) and a referenced `parent`.
    @discardableResult
    func makeData(_ name: String = "data.sqlite") throws -> String {
        try TestSupport.makeDatabase(
            at: path(name),
            sql: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v INTEGER);
                INSERT INTO t VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 1), (4, 'b', 2), (5, 'b', 3), (6, 'c', 1), (7, 'c', 1), (8, 'd', 1);
                CREATE TABLE parent (id INTEGER PRIMARY KEY, k TEXT);
                CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id));
                INSERT INTO parent VALUES (1, 'p'), (2, 'p');
                INSERT INTO child VALUES (1, 2);
                """)
    }

    static let job = """
        version: 1
        database: data.sqlite
        dedupe:
          - entity: t
            key: k
            merge:
              v: sum
        """

    func json(_ line: String, file: StaticString = #filePath, lineNumber: UInt = #line) -> [String: Any]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            XCTFail("not a JSON object: \(line)", file: file, line: lineNumber)
            return nil
        }
        return object
    }

    // MARK: 0 and 1

    func testCheckRunCheckExitCodes() throws {
        let db = try makeData()
        try write("job.yaml", Self.job)
        let bytes = try TestSupport.fileBytes(db)
        let dirty = try winnow(["check", "job.yaml"], expect: 1)
        XCTAssertTrue(dirty.stdout.contains("FAIL"), dirty.stdout)
        try winnow(["plan", "job.yaml"], expect: 0)
        try winnow(["run", "--dry-run", "job.yaml"], expect: 0)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes, "check, plan and --dry-run never change a byte")
        try winnow(["run", "job.yaml"], expect: 0)
        XCTAssertEqual(
            try ScenarioKit.rows(db, "SELECT id, v FROM t ORDER BY id"),
            [[1, 3], [3, 6], [6, 2], [8, 1]].map { $0.map(\.databaseValue) })
        let clean = try winnow(["check", "job.yaml"], expect: 0)
        XCTAssertTrue(clean.stdout.contains("OK"), clean.stdout)
        try winnow(["run", "job.yaml"], expect: 0)
    }

    func testDatabaseOptionOverridesJob() throws {
        try makeData()
        let other = try makeData("other.sqlite")
        try write("job.yaml", Self.job)
        try winnow(["run", "--database", "other.sqlite", "job.yaml"], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(other, "SELECT count(*) FROM t"), 4)
        XCTAssertEqual(try ScenarioKit.int(path("data.sqlite"), "SELECT count(*) FROM t"), 8)
    }

    func testJobPathsAreRelativeToTheJobFile() throws {
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("jobs"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("data"), withIntermediateDirectories: true)
        let db = try makeData("data/data.sqlite")
        try write("jobs/job.yaml", Self.job.replacingOccurrences(of: "database: data.sqlite", with: "database: ../data/data.sqlite"))
        try winnow(["run", "jobs/job.yaml"], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM t"), 4)
    }

    // MARK: 64

    func testUsageErrorsExit64AndChangeNothing() throws {
        let db = try makeData()
        try write("job.yaml", Self.job)
        try write("nodb.yaml", Self.job.replacingOccurrences(of: "database: data.sqlite\n", with: ""))
        let bytes = try TestSupport.fileBytes(db)
        try winnow(["run", "--bogus", "job.yaml"], expect: 64)
        try winnow(["frobnicate", "job.yaml"], expect: 64)
        try winnow(["run", "nodb.yaml"], expect: 64)
        try winnow(["plan", "nodb.yaml"], expect: 64)
        try winnow(["check", "nodb.yaml"], expect: 64)
        try winnow(["run", "--batch-size", "0", "job.yaml"], expect: 64)
        try winnow(["run", "--batch-size", "-3", "job.yaml"], expect: 64)
        try winnow(["run", "--batch-size", "many", "job.yaml"], expect: 64)
        try winnow(["run", "--wait", "-1", "job.yaml"], expect: 64)
        try winnow(["check", "--format", "yaml", "job.yaml"], expect: 64)
        try winnow(["history"], expect: 64)
        try winnow(["restore", "--database", "data.sqlite"], expect: 64)
        try winnow(["restore", "--database", "data.sqlite", "--run", "1"], expect: 64)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
        // With --database, the job without one is fine.
        try winnow(["run", "--database", "data.sqlite", "nodb.yaml"], expect: 0)
    }

    // MARK: 65

    func testInvalidJobExits65WithLocation() throws {
        let db = try makeData()
        try write(
            "bad.yaml",
            """
            version: 1
            database: data.sqlite
            dedupe:
              - entity: t
                key: k
                colour: blue
            """)
        let bytes = try TestSupport.fileBytes(db)
        for command in ["validate", "plan", "run", "check"] {
            let result = try winnow([command, "bad.yaml"], expect: 65)
            XCTAssertTrue(result.stderr.contains("bad.yaml:6:5:"), "\(command): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("colour"), result.stderr)
        }
        try write("wrongtype.yaml", "version: 1\ndatabase: data.sqlite\ndedupe:\n  - entity: t\n    key: k\n    hash: sometimes\n")
        let wrongType = try winnow(["validate", "wrongtype.yaml"], expect: 65)
        XCTAssertTrue(wrongType.stderr.contains("wrongtype.yaml:6:11:"), wrongType.stderr)
        try write("notyaml.yaml", "version: 1\ndedupe: [\n  - {entity: t\n")
        let broken = try winnow(["validate", "notyaml.yaml"], expect: 65)
        XCTAssertNotNil(broken.stderr.range(of: #"notyaml\.yaml:\d+:\d+:"#, options: .regularExpression), broken.stderr)
        try write("good.yaml", Self.job)
        try winnow(["validate", "good.yaml"], expect: 0)
        try winnow(["validate", "good.yaml", "bad.yaml"], expect: 65)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes, "a job refused before it starts changes nothing")
    }

    func testUnknownColumnExits65WithLocation() throws {
        let db = try makeData()
        try write(
            "col.yaml",
            """
            version: 1
            database: data.sqlite
            dedupe:
              - entity: t
                key: [k, nope]
            """)
        try write("table.yaml", "version: 1\ndatabase: data.sqlite\ndedupe:\n  - entity: nosuch\n    key: k\n")
        let bytes = try TestSupport.fileBytes(db)
        for command in ["plan", "check"] {
            let result = try winnow([command, "col.yaml"], expect: 65)
            XCTAssertTrue(result.stderr.contains("col.yaml:5:14:"), "\(command): \(result.stderr)")
            try winnow([command, "table.yaml"], expect: 65)
        }
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
        let state = try ScenarioKit.userState(db)
        let result = try winnow(["run", "col.yaml"], expect: 65)
        XCTAssertTrue(result.stderr.contains("col.yaml:5:14:"), result.stderr)
        XCTAssertTrue(result.stderr.contains("nope"), result.stderr)
        try winnow(["run", "table.yaml"], expect: 65)
        XCTAssertEqual(try ScenarioKit.userState(db), state)
    }

    func testRestrictExits65AndChangesNoUserData() throws {
        let db = try makeData()
        try write(
            "restrict.yaml",
            """
            version: 1
            database: data.sqlite
            dedupe:
              - entity: t
                key: k
              - entity: parent
                key: k
                references: restrict
            """)
        let state = try ScenarioKit.userState(db)
        let result = try winnow(["run", "restrict.yaml"], expect: 65)
        XCTAssertTrue(result.stderr.contains("restrict"), result.stderr)
        XCTAssertEqual(try ScenarioKit.userState(db), state)
        let bytes = try TestSupport.fileBytes(db)
        try winnow(["plan", "restrict.yaml"], expect: 65)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
    }

    // MARK: 66

    func testMissingOrNonDatabaseFilesExit66() throws {
        try write("job.yaml", Self.job)
        for command in ["run", "plan", "check"] {
            try winnow([command, "job.yaml"], expect: 66)
        }
        try winnow(["run", "missing-job.yaml"], expect: 66)
        try winnow(["validate", "missing-job.yaml"], expect: 66)
        try winnow(["history", "--database", "missing.sqlite"], expect: 66)
        try winnow(["restore", "--database", "missing.sqlite", "--run", "1"], expect: 66)
        try winnow(["schema", "inspect", "--database", "missing.sqlite"], expect: 66)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("data.sqlite")), "no command creates a missing database here")

        let text = try write("data.sqlite", String(repeating: "this is not a database, just some text\n", count: 200))
        let bytes = try TestSupport.fileBytes(text)
        for command in ["run", "plan", "check"] {
            try winnow([command, "job.yaml"], expect: 66)
        }
        try winnow(["history", "--database", "data.sqlite"], expect: 66)
        try winnow(["restore", "--database", "data.sqlite", "--run", "1"], expect: 66)
        try winnow(["schema", "inspect", "--database", "data.sqlite"], expect: 66)
        XCTAssertEqual(try TestSupport.fileBytes(text), bytes)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("adir.sqlite"), withIntermediateDirectories: true)
        try winnow(["run", "--database", "adir.sqlite", "job.yaml"], expect: 66)
    }

    // MARK: 74

    func testCorruptDatabaseExits74() throws {
        let db = path("data.sqlite")
        let queue = try DatabaseQueue(path: db)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v TEXT)")
            for i in 0..<4000 {
                try db.execute(
                    sql: "INSERT INTO t VALUES (?, ?, ?)", arguments: [i, "k\(i % 1500)", String(repeating: "x", count: 40 + i % 50)])
            }
        }
        try queue.close()
        var data = try Data(contentsOf: URL(fileURLWithPath: db))
        let pageSize = 4096
        let pages = data.count / pageSize
        XCTAssertGreaterThan(pages, 20)
        let start = (pages / 2) * pageSize
        data.replaceSubrange(start..<(start + pageSize), with: Data(repeating: 0xFF, count: pageSize))
        try data.write(to: URL(fileURLWithPath: db))
        try write("job.yaml", "version: 1\ndatabase: data.sqlite\ndedupe:\n  - entity: t\n    key: k\n")
        let bytes = try TestSupport.fileBytes(db)
        try winnow(["plan", "job.yaml"], expect: 74)
        try winnow(["check", "job.yaml"], expect: 74)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
        let run = try winnow(["run", "job.yaml"], expect: 74)
        XCTAssertTrue(run.stderr.lowercased().contains("corrupt"), run.stderr)
        try winnow(["run", "--format", "json", "job.yaml"], expect: 74)
    }

    // MARK: 75

    static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
        return String(cString: buffer)
    }

    func testLockHeldByLiveProcessExits75AndDeadHolderIsTakenOver() throws {
        let db = try makeData()
        try write("job.yaml", Self.job)
        try write("other.yaml", "version: 1\ndatabase: data.sqlite\ndedupe:\n  - entity: parent\n    key: k\n")
        try winnow(["run", "job.yaml"], expect: 0)
        try ScenarioKit.execute(db, "INSERT INTO t VALUES (100, 'a', 1)")
        try ScenarioKit.execute(
            db,
            """
            INSERT INTO winnow_lock (id, run_id, pid, process_start, host, acquired_at) VALUES (1, NULL, ?, NULL, ?, '2024-01-01T00:00:00Z')
            """, arguments: [ProcessInfo.processInfo.processIdentifier, Self.hostName])
        let bytes = try TestSupport.fileBytes(db)
        let locked = try winnow(["run", "job.yaml"], expect: 75)
        XCTAssertFalse(locked.stderr.isEmpty)
        try winnow(["run", "other.yaml"], expect: 75)
        try winnow(["restore", "--database", "data.sqlite", "--run", "1"], expect: 75)
        let waited = try winnow(["run", "--wait", "1", "job.yaml"], expect: 75)
        XCTAssertGreaterThanOrEqual(waited.seconds, 0.95, "--wait 1 waits about a second")
        XCTAssertLessThan(waited.seconds, 8)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes, "a run refused by the lock changes nothing")
        // read-only commands are not blocked by the run lock
        try winnow(["check", "job.yaml"], expect: 1)
        try winnow(["history", "--database", "data.sqlite"], expect: 0)

        let deadPid: Int32 = 999_999
        try XCTSkipIf(kill(deadPid, 0) == 0, "pid \(deadPid) exists on this machine")
        try ScenarioKit.execute(db, "UPDATE winnow_lock SET pid = ? WHERE id = 1", arguments: [deadPid])
        try winnow(["run", "job.yaml"], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM t WHERE k = 'a'"), 1)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM winnow_lock"), 0, "the lock is released after the run")
    }

    /// A run killed before it changed a row leaves its lock and a run marked running; the
    /// restore of it is refused (nothing to restore) and still clears that lock, as a run would.
    func testRefusedRestoreClearsTheLockOfADeadRun() throws {
        let db = try makeData()
        try write("job.yaml", Self.job)
        try winnow(["run", "job.yaml"], expect: 0)
        let deadPid: Int32 = 999_999
        try XCTSkipIf(kill(deadPid, 0) == 0, "pid \(deadPid) exists on this machine")
        try ScenarioKit.execute(
            db,
            "INSERT INTO winnow_runs (id, command, job, started_at, status, archive) VALUES (2, 'run', 'job.yaml', '2024-01-01T00:00:00Z', 'running', 1)"
        )
        try ScenarioKit.execute(
            db,
            """
            INSERT INTO winnow_lock (id, run_id, pid, process_start, host, acquired_at) VALUES (1, 2, ?, NULL, ?, '2024-01-01T00:00:00Z')
            """, arguments: [deadPid, Self.hostName])
        let before = try ScenarioKit.userState(db)
        let refused = try winnow(["restore", "--database", "data.sqlite", "--run", "2"], expect: 65)
        XCTAssertTrue(refused.stderr.contains("changed no rows"), refused.stderr)
        // A job refused before it starts changes no user table (contract, section 5).
        XCTAssertEqual(try ScenarioKit.userState(db), before, "a refused restore changes no user row or schema")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM winnow_lock"), 0, "the dead run's lock is cleared")
        XCTAssertEqual(try ScenarioKit.column(db, "SELECT status FROM winnow_runs WHERE id = 2", as: String.self), ["interrupted"])
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM winnow_runs"), 2, "a refused restore records no run")

        // A live holder's lock is left alone: the refusal comes at once, the lock stays.
        try ScenarioKit.execute(
            db,
            """
            INSERT INTO winnow_lock (id, run_id, pid, process_start, host, acquired_at) VALUES (1, NULL, ?, NULL, ?, '2024-01-01T00:00:00Z')
            """, arguments: [ProcessInfo.processInfo.processIdentifier, Self.hostName])
        try winnow(["restore", "--database", "data.sqlite", "--run", "2"], expect: 65)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM winnow_lock"), 1, "a live run's lock stays")
    }

    func testLockRowWithStaleProcessStartIsTakenOver() throws {
        let db = try makeData()
        try write("job.yaml", Self.job)
        try winnow(["run", "job.yaml"], expect: 0)
        // Our own pid, but a start time that is not ours: the pid was reused, the holder is gone.
        try ScenarioKit.execute(
            db,
            """
            INSERT INTO winnow_lock (id, run_id, pid, process_start, host, acquired_at) VALUES (1, 1, ?, '1', ?, '2024-01-01T00:00:00Z')
            """, arguments: [ProcessInfo.processInfo.processIdentifier, Self.hostName])
        try winnow(["run", "job.yaml"], expect: 0)
    }

    // MARK: killed runs

    /// A database with many duplicate groups (with merges and children), for slow runs.
    func makeBigData(_ name: String) throws -> String {
        var people: [String] = []
        var orders: [String] = []
        for g in 0..<120 {
            for r in 0..<3 {
                let id = g * 3 + r + 1
                people.append("(\(id), 'k\(g)', \(r + g % 4), \(r == 1 ? "NULL" : "'n\(r)'"))")
                orders.append("(\(id), \(id))")
            }
        }
        return try TestSupport.makeDatabase(
            at: path(name),
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, k TEXT, visits INTEGER, note TEXT);
                CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES people(id) ON DELETE CASCADE);
                INSERT INTO people VALUES \(people.joined(separator: ", "));
                INSERT INTO orders VALUES \(orders.joined(separator: ", "));
                """)
    }

    /// One group per batch, with a pause. (A rule that only deletes: one that merges applies
    /// its merges, and deletes most losers with them, in stretches that `max_transaction_ms`
    /// alone bounds, a few on a table this small.)
    static let slowJob = """
        version: 1
        batch:
          size: 1
          pause_ms: 15
        dedupe:
          - entity: people
            key: k
        """

    func testKilledRunNeverBlocksAndResumesToTheSameResult() throws {
        let killed = try makeBigData("killed.sqlite")
        let reference = try makeBigData("reference.sqlite")
        let original = try ScenarioKit.userState(killed)
        try write("job.yaml", Self.slowJob)

        let process = Process()
        process.executableURL = TestSupport.executable
        process.arguments = ["run", "--format", "json", "--database", "killed.sqlite", "job.yaml"]
        process.currentDirectoryURL = dir
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var seen = ""
        let deadline = Date().addingTimeInterval(20)
        while seen.components(separatedBy: "\"event\":\"batch\"").count < 4, Date() < deadline {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        XCTAssertTrue(process.isRunning, "the run must still be going when it is killed")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)
        let partial = try ScenarioKit.int(killed, "SELECT count(*) FROM people")
        XCTAssertLessThan(partial, 360, "some batches were committed before the kill")
        XCTAssertGreaterThan(partial, 120, "the kill came before the end")
        XCTAssertEqual(try ScenarioKit.int(killed, "SELECT count(*) FROM orders"), 360)

        // The next command is not blocked by the dead run's lock: restore its committed batches.
        try winnow(["restore", "--database", "killed.sqlite", "--run", "1"], expect: 0)
        XCTAssertEqual(try ScenarioKit.userState(killed), original, "restore of the interrupted run brings back every committed change")

        // And a run after that finishes the job exactly like an uninterrupted run.
        try winnow(["run", "--batch-size", "500", "--database", "killed.sqlite", "job.yaml"], expect: 0)
        try winnow(["run", "--batch-size", "500", "--database", "reference.sqlite", "job.yaml"], expect: 0)
        XCTAssertEqual(try TestSupport.contentDump(killed), try TestSupport.contentDump(reference))
        let history = try winnow(["history", "--format", "json", "--database", "killed.sqlite"], expect: 0)
        let statuses = history.lines.compactMap { json($0)?["status"] as? String }
        XCTAssertEqual(statuses.last, "interrupted", "the killed run is recorded as interrupted: \(history.stdout)")
    }

    func testKilledRunThenRunAgainGivesTheSameResult() throws {
        let killed = try makeBigData("killed.sqlite")
        let reference = try makeBigData("reference.sqlite")
        try write("job.yaml", Self.slowJob)
        let process = Process()
        process.executableURL = TestSupport.executable
        process.arguments = ["run", "--format", "json", "--database", "killed.sqlite", "job.yaml"]
        process.currentDirectoryURL = dir
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var seen = ""
        let deadline = Date().addingTimeInterval(20)
        while seen.components(separatedBy: "\"event\":\"batch\"").count < 6, Date() < deadline {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try winnow(["run", "--batch-size", "500", "--database", "killed.sqlite", "job.yaml"], expect: 0)
        try winnow(["run", "--batch-size", "500", "--database", "reference.sqlite", "job.yaml"], expect: 0)
        XCTAssertEqual(try TestSupport.contentDump(killed), try TestSupport.contentDump(reference))
        try winnow(["check", "--database", "killed.sqlite", "job.yaml"], expect: 0)
    }

    func testSeveralJobsInOneCommand() throws {
        let db = try makeData()
        try write("a.yaml", Self.job)
        try write("b.yaml", "version: 1\ndatabase: data.sqlite\ndedupe:\n  - entity: parent\n    key: k\n")
        try winnow(["check", "a.yaml", "b.yaml"], expect: 1)
        try winnow(["run", "a.yaml"], expect: 0)
        try winnow(["check", "a.yaml", "b.yaml"], expect: 1)
        let both = try winnow(["run", "--format", "json", "a.yaml", "b.yaml"], expect: 0)
        XCTAssertEqual(both.lines.compactMap { json($0) }.filter { $0["event"] as? String == "summary" }.count, 2)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM parent"), 1)
        try winnow(["check", "a.yaml", "b.yaml"], expect: 0)
    }

    // MARK: output formats

    func testRunJSONLines() throws {
        try makeData()
        try write("job.yaml", Self.job)
        let result = try winnow(["run", "--format", "json", "--batch-size", "1", "job.yaml"], expect: 0)
        let objects = result.lines.compactMap { json($0) }
        XCTAssertEqual(objects.count, result.lines.count, "every stdout line is a JSON object")
        // One stretch merges the three winners ahead and deletes their four losers with them
        // (the stretches ahead grow with max_transaction_ms alone).
        let batches = objects.filter { $0["event"] as? String == "batch" }
        XCTAssertEqual(batches.count, 1)
        XCTAssertEqual(objects.count, 2)
        XCTAssertEqual(batches.first?["updated"] as? Int, 3)
        let summary = try XCTUnwrap(objects.last)
        XCTAssertEqual(summary["event"] as? String, "summary")
        for key in ["run_id", "status", "groups", "deleted", "updated", "repointed", "batches", "migration_steps", "seconds"] {
            XCTAssertNotNil(summary[key], "summary lacks \(key): \(summary)")
        }
        XCTAssertEqual(summary["status"] as? String, "completed")
        XCTAssertEqual(summary["groups"] as? Int, 3)
        XCTAssertEqual(summary["deleted"] as? Int, 4)
        XCTAssertEqual(summary["updated"] as? Int, 3)
        XCTAssertEqual(summary["repointed"] as? Int, 0)
        XCTAssertEqual(summary["batches"] as? Int, 1)
        XCTAssertEqual(summary["migration_steps"] as? Int, 0)
        XCTAssertNotNil(summary["run_id"] as? Int)
        XCTAssertNotNil(summary["seconds"] as? Double ?? (summary["seconds"] as? Int).map(Double.init))
        XCTAssertEqual(batches.compactMap { $0["deleted"] as? Int }.reduce(0, +), 4)
    }

    func testPlanAndCheckJSONCarryWouldBeCounts() throws {
        let db = try makeData()
        try write("job.yaml", Self.job)
        let bytes = try TestSupport.fileBytes(db)
        let plan = try winnow(["plan", "--format", "json", "job.yaml"], expect: 0)
        let check = try winnow(["check", "--format", "json", "job.yaml"], expect: 1)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
        for result in [plan, check] {
            XCTAssertFalse(result.lines.isEmpty)
            let objects = result.lines.compactMap { json($0) }
            XCTAssertEqual(objects.count, result.lines.count)
            let summary = try XCTUnwrap(objects.last)
            XCTAssertEqual(summary["event"] as? String, "summary")
            XCTAssertEqual(summary["groups"] as? Int, 3)
            XCTAssertEqual(summary["deleted"] as? Int, 4)
            XCTAssertEqual(summary["updated"] as? Int, 3)
            for key in ["run_id", "status", "repointed", "batches", "migration_steps", "seconds"] {
                XCTAssertTrue(summary.keys.contains(key), "summary lacks \(key): \(summary)")
            }
        }
    }

    func testErrorsInJSONModeKeepStdoutParseable() throws {
        try write("job.yaml", Self.job)
        let result = try winnow(["run", "--format", "json", "job.yaml"], expect: 66)
        for line in result.lines { _ = json(line) }
    }

    final class FailureCounter: NSObject, XMLParserDelegate {
        var failures = 0
        var testcases = 0
        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            if elementName == "failure" { failures += 1 }
            if elementName == "testcase" { testcases += 1 }
        }
    }

    func junit(_ xml: String) -> (ok: Bool, failures: Int, testcases: Int) {
        let parser = XMLParser(data: Data(xml.utf8))
        let counter = FailureCounter()
        parser.delegate = counter
        let ok = parser.parse()
        return (ok, counter.failures, counter.testcases)
    }

    func testCheckJUnit() throws {
        try makeData()
        try write("job.yaml", Self.job + "\n  - entity: parent\n    key: k\n")
        let dirty = try winnow(["check", "--format", "junit", "job.yaml"], expect: 1)
        let parsed = junit(dirty.stdout)
        XCTAssertTrue(parsed.ok, "not well-formed XML: \(dirty.stdout)")
        XCTAssertEqual(parsed.testcases, 2)
        XCTAssertEqual(parsed.failures, 2)
        try winnow(["run", "job.yaml"], expect: 0)
        let clean = try winnow(["check", "--format", "junit", "job.yaml"], expect: 0)
        let cleanParsed = junit(clean.stdout)
        XCTAssertTrue(cleanParsed.ok, clean.stdout)
        XCTAssertEqual(cleanParsed.testcases, 2)
        XCTAssertEqual(cleanParsed.failures, 0)
    }

    func testHistoryJSONOneObjectPerRun() throws {
        let db = try makeData()
        try write("job.yaml", Self.job)
        try write("parent.yaml", "version: 1\ndatabase: data.sqlite\ndedupe:\n  - entity: parent\n    key: k\n")
        let empty = try winnow(["history", "--format", "json", "--database", "data.sqlite"], expect: 0)
        XCTAssertTrue(empty.lines.isEmpty, empty.stdout)
        try winnow(["run", "job.yaml"], expect: 0)
        try winnow(["run", "parent.yaml"], expect: 0)
        let bytes = try TestSupport.fileBytes(db)
        let result = try winnow(["history", "--format", "json", "--database", "data.sqlite"], expect: 0)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes, "history never writes")
        let objects = result.lines.compactMap { json($0) }
        XCTAssertEqual(objects.count, 2)
        XCTAssertEqual(result.lines.count, 2)
        XCTAssertEqual(objects.compactMap { $0["run_id"] as? Int }, [2, 1], "newest first")
        for object in objects {
            for key in ["run_id", "status", "groups", "deleted", "updated", "repointed", "batches", "migration_steps", "seconds"] {
                XCTAssertTrue(object.keys.contains(key), "history object lacks \(key): \(object)")
            }
            XCTAssertEqual(object["status"] as? String, "completed")
        }
        XCTAssertEqual(objects[1]["deleted"] as? Int, 4)
        XCTAssertEqual(objects[1]["groups"] as? Int, 3)
        XCTAssertEqual(objects[0]["deleted"] as? Int, 1)
        XCTAssertEqual(objects[0]["repointed"] as? Int, 1)
        let text = try winnow(["history", "--database", "data.sqlite"], expect: 0)
        XCTAssertFalse(text.stdout.isEmpty)
    }

    func testRestoreThroughTheCommandLine() throws {
        let db = try makeData()
        try write("job.yaml", Self.job)
        let before = try ScenarioKit.userState(db)
        try winnow(["run", "job.yaml"], expect: 0)
        try winnow(["restore", "--database", "data.sqlite", "--run", "1"], expect: 0)
        XCTAssertEqual(try ScenarioKit.userState(db), before)
        let state = try TestSupport.fileBytes(db)
        try winnow(["restore", "--database", "data.sqlite", "--run", "1"], expect: 65)
        try winnow(["restore", "--database", "data.sqlite", "--run", "77"], expect: 64)
        XCTAssertEqual(try ScenarioKit.userState(db), before)
        _ = state
    }

    func testSchemaInspectAndQuiet() throws {
        let db = try makeData()
        let bytes = try TestSupport.fileBytes(db)
        let inspect = try winnow(["schema", "inspect", "--database", "data.sqlite"], expect: 0)
        XCTAssertTrue(inspect.stdout.contains("tables:"), inspect.stdout)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
        try write("job.yaml", Self.job)
        let quiet = try winnow(["run", "--quiet", "job.yaml"], expect: 0)
        XCTAssertEqual(quiet.stdout, "")
    }
}
