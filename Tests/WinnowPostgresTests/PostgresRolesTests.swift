import Foundation
import WinnowCore
import WinnowPostgres
import WinnowTestSupport
import XCTest

/// The roles people connect as: a read-only role plans and checks; a role that owns the tables
/// but is no superuser runs; a table under row-level security that the role does not bypass is
/// refused unless `--allow-row-security`; a hot standby plans and checks, refuses a run before
/// writing anything, and several hosts with `target_session_attrs=read-write` find the primary.
final class PostgresRolesTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        _ = try PostgresServer.require()
        dir = try TestSupport.scratchDirectory("Roles")
    }

    override func tearDownWithError() throws { if let dir { try? FileManager.default.removeItem(at: dir) } }

    func execute(_ url: String, _ statements: [String]) throws {
        try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in
            for statement in statements { try session.execute(statement) }
        }
    }

    func job() throws -> String {
        try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: people, key: email, winner: [{id: asc}]}\n", to: dir.appendingPathComponent("job.yaml").path)
    }

    static let people = [
        "CREATE TABLE people (id integer PRIMARY KEY, email text)",
        "INSERT INTO people VALUES (1, 'a@x'), (2, 'a@x'), (3, 'b@x'), (4, 'b@x')",
    ]

    func testReadOnlyRolePlansAndChecksAndAnOwnerRuns() throws {
        let server = try ThrowawayServer()
        defer { server.remove() }
        try execute(
            server.url,
            Self.people + [
                "CREATE ROLE reader LOGIN", "GRANT SELECT ON people TO reader",
                "CREATE ROLE keeper LOGIN", "ALTER TABLE people OWNER TO keeper", "GRANT CREATE ON DATABASE postgres TO keeper",
            ])
        let job = try job()
        let reader = try PostgresServer.connect(server.url, as: "reader")
        let planned = try TestSupport.winnow(["plan", job, "--database", reader])
        XCTAssertEqual(planned.status, 0, planned.stderr)
        XCTAssertTrue(planned.stdout.contains("2 duplicate groups"), planned.stdout)
        XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", reader]).status, 1, "check finds the duplicates")
        let refused = try TestSupport.winnow(["run", job, "--database", reader])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertEqual(
            try PostgresServer.integers(server.url, "id", of: "people"), [1, 2, 3, 4], "a role that may only read changed nothing")

        let ran = try TestSupport.winnow(["run", job, "--database", try PostgresServer.connect(server.url, as: "keeper")])
        XCTAssertEqual(ran.status, 0, ran.stderr)
        XCTAssertEqual(try PostgresServer.integers(server.url, "id", of: "people"), [1, 3])
    }

    func testRowLevelSecurityThatTheRoleDoesNotBypassIsRefused() throws {
        let server = try ThrowawayServer()
        defer { server.remove() }
        try execute(
            server.url,
            Self.people + [
                "CREATE ROLE app LOGIN", "GRANT SELECT, UPDATE, DELETE ON people TO app", "GRANT CREATE ON DATABASE postgres TO app",
                "ALTER TABLE people ENABLE ROW LEVEL SECURITY", "CREATE POLICY visible ON people USING (id <> 2)",
            ])
        let job = try job()
        let app = try PostgresServer.connect(server.url, as: "app")
        for command in ["plan", "check", "run"] {
            let refused = try TestSupport.winnow([command, job, "--database", app])
            XCTAssertEqual(refused.status, 65, "\(command): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains("'people' is under row-level security"), refused.stderr)
            XCTAssertTrue(refused.stderr.contains("--allow-row-security"), refused.stderr)
        }
        XCTAssertEqual(try PostgresServer.integers(server.url, "id", of: "people"), [1, 2, 3, 4])
        // The superuser bypasses it: the same job is no refusal there.
        XCTAssertEqual(try TestSupport.winnow(["plan", job, "--database", server.url]).status, 0)
        // Those who mean it: the rule sees what the policy shows (row 2 is hidden, so 'a@x' has no group).
        let allowed = try TestSupport.winnow(["run", job, "--database", app, "--allow-row-security"])
        XCTAssertEqual(allowed.status, 0, allowed.stderr)
        XCTAssertEqual(try PostgresServer.integers(server.url, "id", of: "people"), [1, 2, 3])
    }

    func testStandbyPlansAndChecksRefusesARunAndSeveralHostsFindThePrimary() throws {
        let primary = try ThrowawayServer()
        defer { primary.remove() }
        try execute(primary.url, Self.people)
        let standby = try primary.standby()
        defer { standby.remove() }
        // The standby has replayed the table.
        var replayed = false
        for _ in 0..<50 where !replayed {
            replayed = (try? PostgresServer.integers(standby.url, "id", of: "people")) == [1, 2, 3, 4]
            if !replayed { Thread.sleep(forTimeInterval: 0.2) }
        }
        XCTAssertTrue(replayed)
        let job = try job()
        let planned = try TestSupport.winnow(["plan", job, "--database", standby.url])
        XCTAssertEqual(planned.status, 0, planned.stderr)
        XCTAssertTrue(planned.stdout.contains("2 duplicate groups"), planned.stdout)
        XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", standby.url]).status, 1)
        let refused = try TestSupport.winnow(["run", job, "--database", standby.url])
        XCTAssertEqual(refused.status, 66, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("is a standby (in recovery) and takes no writes"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("target_session_attrs=read-write"), refused.stderr)

        let both = "postgresql://postgres@127.0.0.1:\(standby.port),127.0.0.1:\(primary.port)/postgres?target_session_attrs=read-write"
        let ran = try TestSupport.winnow(["run", job, "--database", both])
        XCTAssertEqual(ran.status, 0, ran.stderr)
        XCTAssertEqual(try PostgresServer.integers(primary.url, "id", of: "people"), [1, 3])
    }
}
