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

    /// A TCP proxy between winnow and the server (Python, started by the test): `SIGUSR1` drops
    /// every connection (as a restarting load balancer does), `SIGUSR2` stops it answering
    /// (connections stay open, nothing goes through, new ones are accepted and left silent).
    final class Proxy {
        let port: Int
        private let process = Process()

        static let script = """
            import signal, socket, sys, threading, time
            target = int(sys.argv[1])
            listener = socket.socket()
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", 0))
            listener.listen(64)
            print(listener.getsockname()[1], flush=True)
            sockets, lock, frozen = [], threading.Lock(), threading.Event()
            def pump(source, target):
                try:
                    while True:
                        data = source.recv(65536)
                        if not data:
                            break
                        while frozen.is_set():
                            time.sleep(3600)
                        target.sendall(data)
                except OSError:
                    pass
                for s in (source, target):
                    try:
                        s.close()
                    except OSError:
                        pass
            def drop(*_):
                with lock:
                    for s in sockets:
                        try:
                            s.shutdown(socket.SHUT_RDWR)
                            s.close()
                        except OSError:
                            pass
                    sockets.clear()
            signal.signal(signal.SIGUSR1, drop)
            signal.signal(signal.SIGUSR2, lambda *_: frozen.set())
            while True:
                client, _ = listener.accept()
                with lock:
                    sockets.append(client)
                if frozen.is_set():
                    continue
                upstream = socket.create_connection(("127.0.0.1", target))
                with lock:
                    sockets.append(upstream)
                threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
                threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
            """

        init(to target: Int, in dir: URL) throws {
            let path = dir.appendingPathComponent("proxy.py").path
            try Self.script.write(toFile: path, atomically: true, encoding: .utf8)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", path, String(target)]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let data = out.fileHandleForReading.availableData
                guard !data.isEmpty else { break }
                line.append(data)
            }
            guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw WinnowError.io("the proxy did not start")
            }
            self.port = port
        }

        func drop() { kill(process.processIdentifier, SIGUSR1) }
        func freeze() { kill(process.processIdentifier, SIGUSR2) }

        func stop() {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// The proxy drops the connection while the run is in its batches: exit 74 at once; the
    /// rerun converges.
    func testConnectionDroppedByAProxyEndsTheRunAndTheRerunConverges() throws {
        let (dir, template, job, expected) = try PostgresServerLossTests.prepare()
        let server = try ThrowawayServer()
        defer { server.remove() }
        try PostgresServer.load(template, into: server.url)
        let proxy = try Proxy(to: server.port, in: dir)
        defer { proxy.stop() }

        let through = "postgresql://postgres@127.0.0.1:\(proxy.port)/postgres"
        let run = try RunningWinnow(["run", job, "--database", through, "--format", "json"])
        XCTAssertTrue(run.waitForBatches(3, within: 60), "no batch was committed: \(run.stderrText)")
        proxy.drop()
        let dropped = Date()
        XCTAssertTrue(run.waitForExit(within: 20), "winnow was still running 20 s after its connection was dropped")
        XCTAssertLessThan(Date().timeIntervalSince(dropped), 5)
        XCTAssertEqual(run.status, 74, run.stderrText)
        XCTAssertTrue(run.stderrText.contains("lost the connection"), run.stderrText)

        let rerun = try TestSupport.winnow(["run", job, "--database", server.url, "--wait", "30"])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(try PostgresServer.rows(server.url, tables: ["customers"]), expected, "not the rows of an uninterrupted run")
    }

    /// The proxy stops answering (connections open, nothing goes through): the liveness check's
    /// own connection gets no answer either, and the run ends with exit 74 instead of hanging;
    /// once the proxy is gone (the server then ends the session) the rerun converges.
    func testProxyThatStopsAnsweringEndsTheRunInsteadOfHanging() throws {
        let (dir, template, job, expected) = try PostgresServerLossTests.prepare()
        let server = try ThrowawayServer()
        defer { server.remove() }
        try PostgresServer.load(template, into: server.url)
        let proxy = try Proxy(to: server.port, in: dir)

        let through = "postgresql://postgres@127.0.0.1:\(proxy.port)/postgres?winnow_liveness_check=2&connect_timeout=2"
        let run = try RunningWinnow(["run", job, "--database", through, "--format", "json"])
        XCTAssertTrue(run.waitForBatches(3, within: 60), "no batch was committed: \(run.stderrText)")
        proxy.freeze()
        let frozen = Date()
        let ended = run.waitForExit(within: 30)
        let seconds = Date().timeIntervalSince(frozen)
        proxy.stop()
        XCTAssertTrue(ended, "winnow was still waiting 30 s after its proxy stopped answering")
        XCTAssertLessThan(seconds, 15)
        XCTAssertEqual(run.status, 74, run.stderrText)
        XCTAssertTrue(run.stderrText.contains("no answer for 2 s"), run.stderrText)

        let rerun = try TestSupport.winnow(["run", job, "--database", server.url, "--wait", "60"])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(try PostgresServer.rows(server.url, tables: ["customers"]), expected, "not the rows of an uninterrupted run")
    }

    /// Failover: the primary (with a streaming standby) is killed in the middle of the batches,
    /// the standby promoted; the rerun, pointed at both hosts with target_session_attrs=read-write,
    /// finds the new primary and ends with the rows of an uninterrupted run; the journal there
    /// matches its rows (batches the old primary committed but never shipped are simply done
    /// again): restoring every run brings back the rows as they were before the first run.
    func testFailoverToAPromotedStandbyConverges() throws {
        let (_, template, job, expected) = try PostgresServerLossTests.prepare()
        let primary = try ThrowawayServer()
        defer { primary.remove() }
        try PostgresServer.load(template, into: primary.url)
        let original = try PostgresServer.rows(primary.url, tables: ["customers"])
        let standby = try primary.standby()
        defer { standby.remove() }
        var replayed = false
        for _ in 0..<100 where !replayed {
            replayed = (try? PostgresServer.rows(standby.url, tables: ["customers"])) == original
            if !replayed { Thread.sleep(forTimeInterval: 0.1) }
        }
        XCTAssertTrue(replayed, "the standby did not replay the table")
        let both = "postgresql://postgres@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/postgres?target_session_attrs=read-write"

        let run = try RunningWinnow(["run", job, "--database", both, "--format", "json"])
        XCTAssertTrue(run.waitForBatches(3, within: 60), "no batch was committed: \(run.stderrText)")
        try primary.killImmediately()
        XCTAssertTrue(run.waitForExit(within: 20), "winnow was still running 20 s after its primary was killed")
        XCTAssertEqual(run.status, 74, run.stderrText)
        try standby.promote()

        let rerun = try TestSupport.winnow(["run", job, "--database", both, "--wait", "30"])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(try PostgresServer.rows(standby.url, tables: ["customers"]), expected, "not the rows of an uninterrupted run")

        let history = try TestSupport.winnow(["history", "--database", standby.url, "--format", "json"])
        XCTAssertEqual(history.status, 0, history.stderr)
        let runs = history.stdout.split(separator: "\n").compactMap { line -> Int? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["command"] as? String == "run"
            else { return nil }
            return object["run_id"] as? Int
        }.sorted(by: >)
        XCTAssertFalse(runs.isEmpty, history.stdout)
        for id in runs {
            let restored = try TestSupport.winnow(["restore", "--run", String(id), "--database", standby.url])
            XCTAssertEqual(restored.status, 0, "restore \(id): \(restored.stderr)")
        }
        XCTAssertEqual(try PostgresServer.rows(standby.url, tables: ["customers"]), original, "the journal does not match the rows")
    }

    /// winnow's backend terminated while `CREATE UNIQUE INDEX CONCURRENTLY` of a migration waits
    /// for another session's transaction: the build is left INVALID; the next run finds it,
    /// drops it, builds it again and says so.
    func testIndexBuildTerminatedMidMigrationIsBuiltAgainByTheNextRun() throws {
        let server = try ThrowawayServer()
        defer { server.remove() }
        let dir = try TestSupport.scratchDirectory("Migration")
        defer { try? FileManager.default.removeItem(at: dir) }
        try execute(server.url, "CREATE TABLE t (id integer PRIMARY KEY, email text)")
        try execute(server.url, "INSERT INTO t SELECT i, 'u' || i || '@x' FROM generate_series(1, 1000) AS i")
        _ = try TestSupport.writeFile(
            """
            version: 2
            tables:
              t:
                columns:
                - {name: id, type: integer, primary_key: true}
                - {name: email, type: text}
                indexes:
                - {name: t_email, columns: [email], unique: true}
            """, to: dir.appendingPathComponent("schema.yaml").path)
        let job = try TestSupport.writeFile("version: 1\nschema: schema.yaml\n", to: dir.appendingPathComponent("job.yaml").path)
        // A writer's open transaction: the concurrent build waits for it once its index exists.
        let holder = LockHolder(url: server.url, statement: "LOCK TABLE t IN ROW EXCLUSIVE MODE")
        XCTAssertTrue(holder.waitUntilHeld(), holder.failure ?? "the lock was not taken")
        let through = server.url + "?application_name=winnow-migration"
        let run = try RunningWinnow(["run", job, "--database", through, "--format", "json"])
        var waiting = false
        for _ in 0..<100 where !waiting {
            waiting =
                (try? PostgresBackend().withSession(server.url, mode: .readOnly) { session in
                    try session.value(
                        """
                        SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE application_name = 'winnow-migration'
                        AND query ILIKE 'CREATE UNIQUE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock'
                        """
                    ).int == 1
                }) == true
            if !waiting { Thread.sleep(forTimeInterval: 0.1) }
        }
        XCTAssertTrue(waiting, "the index build never waited: \(run.stderrText)")
        try execute(
            server.url, "SELECT pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE application_name = 'winnow-migration'")
        XCTAssertTrue(run.waitForExit(within: 20))
        XCTAssertEqual(run.status, 74, run.stderrText)
        holder.release()
        let invalid = try PostgresBackend().withSession(server.url, mode: .readOnly) { session in
            try session.value(
                "SELECT count(*) FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid WHERE c.relname = 't_email' AND NOT i.indisvalid"
            ).int
        }
        XCTAssertEqual(invalid, 1, "the interrupted build left no INVALID index")

        let rerun = try TestSupport.winnow(["run", job, "--database", server.url, "--wait", "30", "--verbose"])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertTrue((rerun.stdout + rerun.stderr).contains("index t_email was left INVALID by an interrupted build"), rerun.stdout)
        let valid = try PostgresBackend().withSession(server.url, mode: .readOnly) { session in
            try session.value(
                "SELECT count(*) FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid WHERE c.relname = 't_email' AND i.indisvalid"
            ).int
        }
        XCTAssertEqual(valid, 1)
        XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", server.url]).status, 0)
    }

    /// The run lock held by a session whose run is gone (a connection cut between a killed run
    /// and the server, which keeps the session until it notices): the next run ends that
    /// session and takes the lock at once. A lock whose run is alive is left alone (exit 75).
    func testLockOfAnOrphanedSessionIsTakenOverAndALiveOneIsNot() throws {
        let server = try ThrowawayServer()
        defer { server.remove() }
        let dir = try TestSupport.scratchDirectory("Orphan")
        defer { try? FileManager.default.removeItem(at: dir) }
        try execute(server.url, "CREATE TABLE people (id integer PRIMARY KEY, email text)")
        try execute(server.url, "INSERT INTO people VALUES (1, 'a@x'), (2, 'a@x')")
        let job = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: people, key: email, winner: [{id: asc}]}\n", to: dir.appendingPathComponent("job.yaml").path)
        XCTAssertEqual(try TestSupport.winnow(["run", job, "--database", server.url]).status, 0)
        try execute(server.url, "INSERT INTO people VALUES (3, 'a@x')")

        func hold(as identity: ProcessIdentity) throws -> LockHolder {
            let holder = LockHolder(url: server.url, statement: "SELECT pg_try_advisory_lock(1466527311, hashtext('winnow:winnow'))")
            XCTAssertTrue(holder.waitUntilHeld(), holder.failure ?? "the lock was not taken")
            try execute(server.url, "DELETE FROM winnow.winnow_lock")
            try execute(
                server.url,
                """
                INSERT INTO winnow.winnow_lock (id, run_id, pid, process_start, host, acquired_at)
                VALUES (1, 7, \(identity.pid), \(identity.start.map { "'\($0)'" } ?? "NULL"), '\(identity.host)', '2026-01-01T00:00:00Z')
                """)
            return holder
        }
        let alive = try hold(as: .current)
        let refused = try TestSupport.winnow(["run", job, "--database", server.url])
        alive.release()
        XCTAssertEqual(refused.status, 75, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("another winnow run holds the lock (run 7"), refused.stderr)
        XCTAssertNil(alive.failure, "the live holder's session was ended")

        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        var dead = ProcessIdentity.current
        dead.pid = gone.processIdentifier
        dead.start = nil
        let orphan = try hold(as: dead)
        let started = Date()
        let ran = try TestSupport.winnow(["run", job, "--database", server.url])
        orphan.release()
        XCTAssertEqual(ran.status, 0, ran.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        XCTAssertEqual(try PostgresServer.integers(server.url, "id", of: "people"), [1])
        XCTAssertNotNil(orphan.failure, "the orphaned session still runs")
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
