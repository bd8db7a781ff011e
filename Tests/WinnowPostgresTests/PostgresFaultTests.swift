import Foundation
import WinnowCore
import WinnowPostgres
import WinnowTestSupport
import XCTest

/// Faults of a real deployment, each on a server of its own: winnow's backend terminated in the
/// middle of the batches, a lock another session keeps, the connection cut by a proxy or a proxy
/// that stops answering. Every run ends (never hangs) with an exit code of the contract, and the
/// rerun ends with the rows of an uninterrupted run (``PostgresServerLossTests/prepare()``).
final class PostgresFaultTests: XCTestCase {
    func execute(_ url: String, _ statement: String) throws {
        try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in try session.execute(statement) }
    }

    /// `pg_terminate_backend` on winnow's session while it is in its batches: exit 74 at once,
    /// naming the server; the rerun converges.
    func testBackendTerminatedMidRunEndsTheRunAndTheRerunConverges() throws {
        let (_, template, job, expected) = try PostgresServerLossTests.prepare()
        let server = try ThrowawayServer()
        defer { server.remove() }
        try PostgresServer.load(template, into: server.url)

        let run = try RunningWinnow(["run", job, "--database", server.url + "?application_name=winnow-fault", "--format", "json"])
        XCTAssertTrue(run.waitForBatches(3, within: 60), "no batch was committed: \(run.stderrText)")
        try execute(
            server.url,
            "SELECT pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE application_name = 'winnow-fault'")
        XCTAssertTrue(run.waitForExit(within: 20), "winnow was still running 20 s after its session was terminated")
        XCTAssertEqual(run.status, 74, run.stderrText)
        XCTAssertTrue(run.stderrText.contains("lost the connection to PostgreSQL at 127.0.0.1:\(server.port)"), run.stderrText)

        let rerun = try TestSupport.winnow(["run", job, "--database", server.url])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(try PostgresServer.rows(server.url, tables: ["customers"]), expected, "not the rows of an uninterrupted run")
    }

    /// Another session keeps a lock on the table (`LOCK TABLE ... IN EXCLUSIVE MODE`, which row
    /// locks wait for): each try of the batch gives up after its `lock_timeout`, it is tried
    /// again after a back-off, and the run ends with exit 75 naming the table, committed batches
    /// kept; once the lock is gone the rerun converges.
    func testLockHeldByAnotherSessionEndsTheRunWithExit75NamingTheTable() throws {
        let (_, template, job, expected) = try PostgresServerLossTests.prepare()
        let server = try ThrowawayServer()
        defer { server.remove() }
        try PostgresServer.load(template, into: server.url)
        let holder = LockHolder(url: server.url, statement: "LOCK TABLE customers IN EXCLUSIVE MODE")
        XCTAssertTrue(holder.waitUntilHeld(), holder.failure ?? "the lock was not taken")

        let started = Date()
        let refused = try TestSupport.winnow(["run", job, "--database", server.url])
        let seconds = Date().timeIntervalSince(started)
        holder.release()
        XCTAssertEqual(refused.status, 75, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("dedupe[0] (customers): another session held a lock on customers"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("5 times"), refused.stderr)
        XCTAssertLessThan(seconds, 30, "the batch waited \(seconds) s")

        let rerun = try TestSupport.winnow(["run", job, "--database", server.url])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(try PostgresServer.rows(server.url, tables: ["customers"]), expected)
    }
}

/// A session of its own that takes a lock in an open transaction and keeps it until released.
final class LockHolder: @unchecked Sendable {
    private let condition = NSCondition()
    private var held = false
    private var released = false
    private(set) var failure: String?

    init(url: String, statement: String) {
        Thread.detachNewThread { [self] in
            do {
                try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in
                    try session.execute("BEGIN")
                    try session.execute(statement)
                    condition.lock()
                    held = true
                    condition.broadcast()
                    while !released { condition.wait() }
                    condition.unlock()
                    try session.execute("ROLLBACK")
                }
            } catch {
                condition.lock()
                failure = "\(error)"
                held = false
                released = true
                condition.broadcast()
                condition.unlock()
            }
        }
    }

    func waitUntilHeld() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(20)
        while !held, failure == nil, condition.wait(until: deadline) {}
        return held
    }

    func release() {
        condition.lock()
        released = true
        condition.broadcast()
        condition.unlock()
    }
}
