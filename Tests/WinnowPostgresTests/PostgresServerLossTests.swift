import Foundation
import WinnowCore
import WinnowTestSupport
import XCTest

/// A run whose PostgreSQL server goes away in the middle of its batches: it ends within
/// seconds with exit 74 and a message that names the server, and once the server is back the
/// rerun ends with the rows of an uninterrupted run. Each test runs its own server
/// (``ThrowawayServer``), so killing or freezing it leaves the shared test server alone; the
/// uninterrupted run is done on the shared server, loaded from the same file.
final class PostgresServerLossTests: XCTestCase {
    /// 900 customers in 150 groups by email, merged and journaled in batches of 5 groups with a
    /// pause between them: 30 batches over a few seconds.
    static let data = """
        CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL, visits INTEGER NOT NULL);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 900)
        INSERT INTO customers SELECT i, 'user' || (i % 150) || '@x', i % 17, i % 5 FROM n;
        """

    static let job = """
        version: 1
        dedupe:
          - entity: customers
            key: email
            winner: [{created: asc}]
            merge: {visits: sum}
            archive: true
        batch: {size: 5, pause_ms: 100}
        """

    /// The folder, the SQLite file the data comes from, the job, and the rows an uninterrupted
    /// run leaves (on the shared server).
    static func prepare() throws -> (dir: URL, template: String, job: String, expected: [String: [String]]) {
        let shared = try PostgresServer.require()
        let dir = try TestSupport.scratchDirectory()
        let template = try TestSupport.makeDatabase(at: dir.appendingPathComponent("template.sqlite").path, sql: Self.data)
        let job = try TestSupport.writeFile(Self.job, to: dir.appendingPathComponent("job.yaml").path)
        try PostgresServer.reset(shared)
        try PostgresServer.load(template, into: shared)
        let clean = try TestSupport.winnow(["run", job, "--database", shared, "--quiet"])
        XCTAssertEqual(clean.status, 0, clean.stderr)
        return (dir, template, job, try PostgresServer.rows(shared, tables: ["customers"]))
    }

    /// `pg_ctl stop -m immediate` while the run is in its batches.
    func testServerKilledMidRunEndsTheRunAtOnceAndTheRerunConverges() throws {
        let (_, template, job, expected) = try Self.prepare()
        let server = try ThrowawayServer()
        defer { server.remove() }
        try PostgresServer.load(template, into: server.url)

        let run = try RunningWinnow(["run", job, "--database", server.url, "--format", "json"])
        XCTAssertTrue(run.waitForBatches(3, within: 60), "no batch was committed: \(run.stderrText)")
        try server.killImmediately()
        let killed = Date()
        let ended = run.waitForExit(within: 20)
        let seconds = Date().timeIntervalSince(killed)
        XCTAssertTrue(ended, "winnow was still waiting 20 s after its server was killed")
        XCTAssertLessThan(seconds, 5, "winnow took \(seconds) s to notice that its server was gone")
        XCTAssertEqual(run.status, 74, run.stderrText)
        XCTAssertTrue(run.stderrText.contains("127.0.0.1:\(server.port)"), "the message names no server: \(run.stderrText)")
        XCTAssertTrue(run.stderrText.contains("lost the connection"), run.stderrText)

        try server.start()
        let rerun = try TestSupport.winnow(["run", job, "--database", server.url])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", server.url]).status, 0)
        XCTAssertEqual(try PostgresServer.rows(server.url, tables: ["customers"]), expected, "not the rows of an uninterrupted run")
    }

    /// Every server process stopped (SIGSTOP) while the run is in its batches: the connection
    /// stays open and nothing answers. The liveness check (here after 2 s, with a 2 s connect
    /// timeout for its own connection) gives the server up.
    func testFrozenServerEndsTheRunAndTheRerunConverges() throws {
        let (_, template, job, expected) = try Self.prepare()
        let server = try ThrowawayServer()
        defer { server.remove() }
        try PostgresServer.load(template, into: server.url)
        let url = server.url + "?winnow_liveness_check=2&connect_timeout=2"

        let run = try RunningWinnow(["run", job, "--database", url, "--format", "json"])
        XCTAssertTrue(run.waitForBatches(3, within: 60), "no batch was committed: \(run.stderrText)")
        try server.freeze()
        let frozen = Date()
        let ended = run.waitForExit(within: 30)
        let seconds = Date().timeIntervalSince(frozen)
        server.thaw()
        XCTAssertTrue(ended, "winnow was still waiting 30 s after its server froze")
        XCTAssertLessThan(seconds, 15, "winnow took \(seconds) s to give up a server that answers nothing")
        XCTAssertEqual(run.status, 74, run.stderrText)
        XCTAssertTrue(run.stderrText.contains("127.0.0.1:\(server.port)"), "the message names no server: \(run.stderrText)")
        XCTAssertTrue(run.stderrText.contains("no answer for 2 s"), run.stderrText)

        // The server ends the abandoned session (and releases its lock) once it runs again.
        let rerun = try TestSupport.winnow(["run", job, "--database", server.url, "--wait", "60"])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", server.url]).status, 0)
        XCTAssertEqual(try PostgresServer.rows(server.url, tables: ["customers"]), expected, "not the rows of an uninterrupted run")
    }
}

/// The executable running in the background: its JSON lines read as they come, its exit
/// waited for with a limit (a process still running then is killed, so a hang fails the test
/// instead of holding it).
final class RunningWinnow: @unchecked Sendable {
    private let process = Process()
    private let lock = NSCondition()
    private var stdout = ""
    private var stderr = ""

    init(_ arguments: [String]) throws {
        process.executableURL = TestSupport.executable
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        for (pipe, isError) in [(out, false), (err, true)] {
            pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                if data.isEmpty { handle.readabilityHandler = nil } else { self?.append(data, error: isError) }
            }
        }
        try process.run()
    }

    private func append(_ data: Data, error: Bool) {
        lock.lock()
        if error { stderr += String(decoding: data, as: UTF8.self) } else { stdout += String(decoding: data, as: UTF8.self) }
        lock.broadcast()
        lock.unlock()
    }

    var stderrText: String {
        lock.lock()
        defer { lock.unlock() }
        return stderr
    }

    /// Waits until `count` batch events were printed (false when the time ran out or the
    /// process ended first).
    func waitForBatches(_ count: Int, within seconds: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        lock.lock()
        defer { lock.unlock() }
        while stdout.components(separatedBy: "\"event\":\"batch\"").count - 1 < count {
            guard process.isRunning, lock.wait(until: min(deadline, Date().addingTimeInterval(0.2))) || Date() < deadline else {
                return false
            }
        }
        return true
    }

    /// Waits up to `seconds` for the process to end; kills it (and returns false) when it has not.
    func waitForExit(within seconds: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        guard !process.isRunning else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return false
        }
        process.waitUntilExit()
        // The last output may still be on its way through the pipes.
        Thread.sleep(forTimeInterval: 0.2)
        return true
    }

    var status: Int32 { process.terminationStatus }
}
