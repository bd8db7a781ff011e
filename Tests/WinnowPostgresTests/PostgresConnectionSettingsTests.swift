import Foundation
import WinnowCore
import WinnowPostgres
import WinnowTestSupport
import XCTest

/// libpq's connection settings against real servers, as `psql` reads them: the password file,
/// a service file, key-word strings, several hosts and the one a run takes.
final class PostgresConnectionSettingsTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        _ = try PostgresServer.require()
        dir = try TestSupport.scratchDirectory("ConnectionSettings")
    }

    override func tearDownWithError() throws { if let dir { try? FileManager.default.removeItem(at: dir) } }

    func execute(_ url: String, _ statements: [String]) throws {
        try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in
            for statement in statements { try session.execute(statement) }
        }
    }

    /// A job over `people` (two rows share an e-mail) and the statements that make the table.
    func peopleJob() throws -> String {
        try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: people, key: email}\n", to: dir.appendingPathComponent("job.yaml").path)
    }
    static let people = [
        "CREATE TABLE people (id integer PRIMARY KEY, email text)",
        "INSERT INTO people VALUES (1, 'a@x'), (2, 'a@x'), (3, 'b@x')",
    ]

    func writePrivate(_ text: String, to name: String, mode: Int = 0o600) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    /// What every session of winnow's sets for itself, whatever the server's configuration
    /// says (the server here may compile statements: `jit` is on by default): a lock wait gives
    /// up after 5 s, floating point prints exactly, and no statement is JIT-compiled.
    func testEverySessionSetsItsLockWaitFloatPrintingAndNoJIT() throws {
        let url = try PostgresServer.require()
        let settings = try PostgresBackend().withSession(url, mode: .readOnly) { session in
            try session.rows(
                "SELECT current_setting('lock_timeout'), current_setting('extra_float_digits'), current_setting('jit')"
            ).first?.values.map { $0.string ?? "" }
        }
        XCTAssertEqual(settings, ["5s", "1", "off"])
    }

    /// A server that asks `shopper` for a password (scram-sha-256): the password comes from
    /// `~/.pgpass` (a test HOME) as it does for psql, escapes included; a file others may read
    /// is ignored with libpq's warning, and the server's demand is then named.
    func testPasswordFileIsReadAsPsqlReadsIt() throws {
        let server = try ThrowawayServer()
        defer { server.remove() }
        try execute(
            server.url,
            ["CREATE ROLE shopper LOGIN PASSWORD 'pw:se\\cret'", "CREATE DATABASE shop OWNER shopper"])
        try server.authenticate(["host all shopper 127.0.0.1/32 scram-sha-256"])
        let shop = "postgresql://postgres@127.0.0.1:\(server.port)/shop"
        try execute(shop, ["SET ROLE shopper"] + Self.people + ["ALTER TABLE people OWNER TO shopper"])
        let url = "postgresql://shopper@127.0.0.1:\(server.port)/shop"
        let job = try peopleJob()
        let home = dir.path
        let pgpass = try writePrivate("# the shop\n127.0.0.1:\(server.port):shop:shopper:pw\\:se\\\\cret\n", to: ".pgpass")

        let asked = try TestSupport.winnow(["plan", job, "--database", url], environment: ["HOME": home, "PGPASSFILE": "/nonexistent"])
        XCTAssertEqual(asked.status, 66, asked.stderr)
        XCTAssertTrue(asked.stderr.contains("asks for a password"), asked.stderr)

        let planned = try TestSupport.winnow(["plan", job, "--database", url], environment: ["HOME": home])
        XCTAssertEqual(planned.status, 0, planned.stderr)
        XCTAssertTrue(planned.stdout.contains("1 duplicate group"), planned.stdout)
        XCTAssertFalse(planned.stdout.contains("se\\cret") || planned.stderr.contains("se\\cret"))

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: pgpass)
        let open = try TestSupport.winnow(["plan", job, "--database", url], environment: ["HOME": home])
        XCTAssertEqual(open.status, 66, open.stderr)
        XCTAssertTrue(open.stderr.contains("warning: password file \"\(pgpass)\" has group or world access"), open.stderr)

        let wrong = try TestSupport.winnow(
            ["plan", job, "--database", url], environment: ["HOME": home, "PGPASSWORD": "not it"])
        XCTAssertEqual(wrong.status, 66, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("authentication failed"), wrong.stderr)
        XCTAssertFalse(wrong.stderr.contains("not it"), wrong.stderr)

        // A password in the connection string never shows: not in the run's JSON events and
        // summary, not in history or show, not in an error.
        let secret = "postgresql://shopper:pw%3Ase%5Ccret@127.0.0.1:\(server.port)/shop"
        let outputs = [
            try TestSupport.winnow(
                ["run", job, "--database", secret, "--format", "json", "--batch-size", "1"], environment: ["HOME": home]),
            try TestSupport.winnow(["history", "--database", secret, "--format", "json"], environment: ["HOME": home]),
            try TestSupport.winnow(["show", "--run", "1", "--database", secret, "--format", "json"], environment: ["HOME": home]),
            try TestSupport.winnow(
                ["plan", job, "--database", "host=127.0.0.1 port=\(server.port) dbname=shop user=shopper password=wr0ngpass"],
                environment: ["HOME": home]),
        ]
        XCTAssertEqual(outputs.map(\.status), [0, 0, 0, 66], outputs.map(\.stderr).joined(separator: "\n"))
        for output in outputs {
            for shown in [output.stdout, output.stderr] {
                XCTAssertFalse(shown.contains("se\\cret") || shown.contains("se%5Ccret") || shown.contains("wr0ngpass"), shown)
            }
        }
        XCTAssertTrue(outputs[0].stdout.contains("postgresql://shopper:***@127.0.0.1"), outputs[0].stdout)
    }

    /// A service names the server; a key-word string does too; the job file may name either.
    func testServiceFileAndKeywordStrings() throws {
        let url = try PostgresServer.require()
        try PostgresServer.reset(url)
        try execute(url, Self.people)
        let location = try PostgresLocation.parse(url)
        let service = "[winnowtest]\nhost=\(location.host)\nport=\(location.port)\nuser=\(location.user)\ndbname=\(location.database)\n"
        _ = try writePrivate(service, to: ".pg_service.conf", mode: 0o644)
        let job = try peopleJob()
        for database in [
            "service=winnowtest",
            "host=\(location.host) port=\(location.port) user=\(location.user) dbname='\(location.database)' application_name=nightly",
        ] {
            let planned = try TestSupport.winnow(["plan", job, "--database", database], environment: ["HOME": dir.path])
            XCTAssertEqual(planned.status, 0, "\(database): \(planned.stderr)")
            XCTAssertTrue(planned.stdout.contains("1 duplicate group"), planned.stdout)
        }
        let inJob = try TestSupport.writeFile(
            "version: 1\ndatabase: service=winnowtest\ndedupe:\n  - {entity: people, key: email}\n",
            to: dir.appendingPathComponent("service-job.yaml").path)
        let ran = try TestSupport.winnow(["run", inJob], environment: ["HOME": dir.path])
        XCTAssertEqual(ran.status, 0, ran.stderr)
        XCTAssertEqual(try PostgresServer.integers(url, "id", of: "people"), [1, 3])
        let missing = try TestSupport.winnow(["plan", job, "--database", "service=nowhere"], environment: ["HOME": dir.path])
        XCTAssertEqual(missing.status, 64, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("definition of service \"nowhere\" not found"), missing.stderr)
    }

    /// Several hosts are tried in order: a host that refuses is passed over; with
    /// `target_session_attrs=read-write` a read-only server is too, and the run writes on the
    /// writable one; `read-only` takes the read-only one. A run whose hosts all fail names each.
    func testSeveralHostsAndTheOneARunTakes() throws {
        let writable = try PostgresServer.require()
        try PostgresServer.reset(writable)
        try execute(writable, Self.people)
        let readOnly = try ThrowawayServer()
        defer { readOnly.remove() }
        try execute(
            readOnly.url, Self.people + ["INSERT INTO people VALUES (4, 'b@x')", "ALTER SYSTEM SET default_transaction_read_only = on"])
        try readOnly.reload()
        let w = try PostgresLocation.parse(writable)
        let job = try peopleJob()
        let hosts = "postgresql://postgres@127.0.0.1:1,127.0.0.1:\(readOnly.port),\(w.host):\(w.port)/postgres"

        let ran = try TestSupport.winnow(["run", job, "--database", hosts + "?target_session_attrs=read-write"])
        XCTAssertEqual(ran.status, 0, ran.stderr)
        XCTAssertEqual(try PostgresServer.integers(writable, "id", of: "people"), [1, 3], "the run wrote on the writable server")
        XCTAssertEqual(try PostgresServer.integers(readOnly.url, "id", of: "people"), [1, 2, 3, 4], "and not on the read-only one")

        let planned = try TestSupport.winnow(["plan", job, "--database", hosts + "?target_session_attrs=read-only"])
        XCTAssertEqual(planned.status, 0, planned.stderr)
        XCTAssertTrue(planned.stdout.contains("2 duplicate groups"), "the plan read the read-only server: \(planned.stdout)")

        let none = try TestSupport.winnow(
            ["plan", job, "--database", "host=127.0.0.1,127.0.0.1 port=1,\(readOnly.port) user=postgres target_session_attrs=read-write"])
        XCTAssertEqual(none.status, 66, none.stderr)
        XCTAssertTrue(none.stderr.contains("127.0.0.1:1"), none.stderr)
        XCTAssertTrue(none.stderr.contains("connection refused"), none.stderr)
        XCTAssertTrue(none.stderr.contains("the server is read-only (target_session_attrs=read-write)"), none.stderr)
    }
}
