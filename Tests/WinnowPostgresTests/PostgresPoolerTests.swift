import Foundation
import WinnowCore
import WinnowPostgres
import WinnowTestSupport
import XCTest

/// winnow needs a server session of its own for a whole command. Through a pooler in
/// transaction mode its session settings would stay behind in a server process that other
/// clients of the pool then use, and its run lock would stay held by a process no client of
/// winnow reaches any more, so a command refuses such a connection before its first setting
/// (exit 66). Through a pooler in session mode, and where the server refuses the second
/// connection the check needs, commands run as they do on a direct connection.
final class PostgresPoolerTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        _ = try PostgresServer.require()
        dir = try TestSupport.scratchDirectory("Pooler")
    }

    override func tearDownWithError() throws { if let dir { try? FileManager.default.removeItem(at: dir) } }

    static let people = """
        CREATE TABLE people (id integer PRIMARY KEY, email text, created integer NOT NULL);
        INSERT INTO people VALUES (1, 'a@x', 1), (2, 'a@x', 2), (3, 'b@x', 1), (4, 'b@x', 2);
        """

    func job() throws -> String {
        try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: people, key: email, winner: [{created: asc}], archive: true}\nbatch: {size: 1}\n",
            to: dir.appendingPathComponent("job.yaml").path)
    }

    /// What `sql` prints through `url` (psql, unaligned, no header).
    func psql(_ url: String, _ sql: String) throws -> String {
        let result = try ThrowawayServer.run(["psql", url, "-X", "-At", "-c", sql])
        XCTAssertEqual(result.status, 0, result.stderr)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The test server emptied and holding ``people``, and a pooler in `mode` in front of it
    /// for the length of `body`.
    func throughPooler(_ mode: String, poolSize: Int = 20, _ body: (_ url: String, _ pooler: Pooler) throws -> Void) throws {
        let url = try PostgresServer.require()
        try PostgresServer.reset(url, sql: Self.people)
        let pooler = try Pooler(in: dir, server: url, mode: mode, poolSize: poolSize)
        defer { pooler.stop() }
        try body(url, pooler)
    }

    func testAPoolerInTransactionModeIsRefusedBeforeAnySettingOrLock() throws {
        try throughPooler("transaction") { url, pooler in
            try assertRefused(through: pooler, server: url, seen: "server process")
            // The pool's server processes carry no setting of winnow's to the pool's other clients
            // (the one a command would have set first is served again first: the pool reuses the
            // latest process).
            XCTAssertEqual(try psql(pooler.url, "SHOW lock_timeout"), "0")
            XCTAssertEqual(try psql(pooler.url, "SHOW jit"), "on")
        }
    }

    func testAPoolerInStatementModeIsRefusedBeforeAnySettingOrLock() throws {
        try throughPooler("statement") { url, pooler in
            try assertRefused(through: pooler, server: url, seen: "transaction was refused")
        }
    }

    /// `run`, `plan` and `check` through `pooler` end with exit 66 saying why (`seen`), before
    /// any change.
    func assertRefused(through pooler: Pooler, server url: String, seen: String, line: UInt = #line) throws {
        let job = try job()
        for command in ["run", "plan", "check"] {
            let refused = try TestSupport.winnow([command, job, "--database", pooler.url])
            XCTAssertEqual(refused.status, 66, "\(command): \(refused.stderr)", line: line)
            XCTAssertTrue(refused.stderr.contains("does not keep one server session"), refused.stderr, line: line)
            XCTAssertTrue(refused.stderr.contains(seen), refused.stderr, line: line)
            XCTAssertTrue(refused.stderr.contains("pooler in session mode"), refused.stderr, line: line)
        }
        XCTAssertEqual(try PostgresServer.integers(url, "id", of: "people"), [1, 2, 3, 4], line: line)
        XCTAssertEqual(
            try psql(url, "SELECT count(*) FROM pg_catalog.pg_locks WHERE locktype = 'advisory'"), "0", "no run lock left held", line: line)
        XCTAssertEqual(try psql(url, "SELECT to_regnamespace('winnow') IS NULL"), "t", "winnow's tables were not made", line: line)
    }

    func testAPoolerInSessionModeRunsTheJob() throws {
        try throughPooler("session") { url, pooler in
            let ran = try TestSupport.winnow(["run", try job(), "--database", pooler.url])
            XCTAssertEqual(ran.status, 0, ran.stderr)
            XCTAssertEqual(try PostgresServer.integers(url, "id", of: "people"), [1, 3])
        }
    }

    /// A pool in session mode whose one server process the command holds: the second
    /// connection gets none, and the command goes on after a short wait, not the connect
    /// timeout's 10 s.
    func testAFullPoolInSessionModeRunsTheJobAfterAShortWait() throws {
        try throughPooler("session", poolSize: 1) { url, pooler in
            let started = Date()
            let ran = try TestSupport.winnow(["run", try job(), "--database", pooler.url])
            let seconds = Date().timeIntervalSince(started)
            XCTAssertEqual(ran.status, 0, ran.stderr)
            XCTAssertEqual(try PostgresServer.integers(url, "id", of: "people"), [1, 3])
            XCTAssertLessThan(seconds, 8, "the command waited for the second connection as long as for a connection")
        }
    }

    func testARoleAllowedOneConnectionRunsWithoutTheCheck() throws {
        let server = try ThrowawayServer()
        defer { server.remove() }
        _ = try psql(server.url, Self.people)
        _ = try psql(server.url, "CREATE ROLE one LOGIN CONNECTION LIMIT 1")
        _ = try psql(server.url, "ALTER TABLE people OWNER TO one")
        _ = try psql(server.url, "GRANT CREATE ON DATABASE postgres TO one")
        let ran = try TestSupport.winnow(["run", try job(), "--database", try PostgresServer.connect(server.url, as: "one")])
        XCTAssertEqual(ran.status, 0, ran.stderr)
        XCTAssertEqual(try PostgresServer.integers(server.url, "id", of: "people"), [1, 3])
    }
}

/// A PgBouncer of one test's own in front of the test server, in `mode` (`transaction`,
/// `session`, `statement`) with up to `poolSize` server processes, on a free port of 127.0.0.1;
/// ``stop()`` ends it. Needs PgBouncer (Debian's `pgbouncer`, which `.ci/run` installs):
/// skipped without it, failed under CI=true.
struct Pooler {
    let url: String
    let pidFile: String

    init(in dir: URL, server: String, mode: String, poolSize: Int = 20) throws {
        let binary = "/usr/sbin/pgbouncer"
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            let why = "PgBouncer is not installed (Debian: apt-get install -y pgbouncer)"
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail(why) }
            throw XCTSkip(why)
        }
        let location = try PostgresLocation.parse(server)
        let folder = dir.appendingPathComponent("pgbouncer-\(mode)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // PgBouncer refuses to run as root: the server's own user runs it there.
        let runAs = getuid() == 0 ? ["runuser", "-u", "postgres", "--"] : []
        try "\"\(location.user)\" \"\"\n".write(toFile: "\(folder)/users.txt", atomically: true, encoding: .utf8)
        pidFile = "\(folder)/pgbouncer.pid"
        for port in (Int(location.port) + 1000)..<(Int(location.port) + 1040) {
            let settings = """
                [databases]
                \(location.database) = host=\(location.host) port=\(location.port) dbname=\(location.database)
                [pgbouncer]
                listen_addr = 127.0.0.1
                listen_port = \(port)
                unix_socket_dir =
                auth_type = trust
                auth_file = \(folder)/users.txt
                pool_mode = \(mode)
                default_pool_size = \(poolSize)
                logfile = \(folder)/pgbouncer.log
                pidfile = \(pidFile)
                """
            try settings.write(toFile: "\(folder)/pgbouncer.ini", atomically: true, encoding: .utf8)
            if !runAs.isEmpty { try ThrowawayServer.run(["chown", "-R", "postgres", dir.path]) }
            let started = try ThrowawayServer.run(runAs + [binary, "-d", "\(folder)/pgbouncer.ini"])
            let url = "postgresql://\(location.user)@127.0.0.1:\(port)/\(location.database)"
            // It listens once it has written its pid; a port already taken ends it at once.
            for _ in 0..<50 where started.status == 0 {
                if try ThrowawayServer.run(["psql", url, "-X", "-At", "-c", "SELECT 1"]).status == 0 {
                    self.url = url
                    return
                }
                if !FileManager.default.fileExists(atPath: pidFile) { break }
                Thread.sleep(forTimeInterval: 0.1)
            }
            Self.stop(pidFile)
        }
        throw WinnowError.io("PgBouncer did not start: \((try? String(contentsOfFile: "\(folder)/pgbouncer.log", encoding: .utf8)) ?? "")")
    }

    func stop() { Self.stop(pidFile) }

    private static func stop(_ pidFile: String) {
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { return }
        kill(pid, SIGTERM)
        for _ in 0..<50 where kill(pid, 0) == 0 { Thread.sleep(forTimeInterval: 0.05) }
    }
}
