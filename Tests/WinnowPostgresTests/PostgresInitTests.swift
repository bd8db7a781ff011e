import Foundation
import WinnowBackends
import WinnowCore
import WinnowTestSupport
import XCTest

/// `winnow init` on a server, through the executable: the same candidates as on SQLite (the same
/// starter job, database line aside), a job that names the server, and a starter that keeps what
/// the application adds later.
final class PostgresInitTests: XCTestCase {
    static let sql = """
        CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, name TEXT, phone TEXT, created_at TEXT);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES people(id), total INTEGER);
        CREATE TABLE tags (id INTEGER PRIMARY KEY, name TEXT);
        INSERT INTO people VALUES
            (1, 'ann@x.org', 'Ann', '555', '2024-03-01'), (2, 'Ann@X.org ', 'Ann', '555', '2024-01-01'),
            (3, 'bob@x.org', 'Bob', '556', '2024-02-01'), (4, 'bob@x.org', 'Bob B.', NULL, '2024-02-02'),
            (5, 'cy@x.org', 'Cy', '555', '2024-01-05');
        INSERT INTO orders VALUES (1, 1, 10), (2, 2, 20), (3, 4, 30), (4, 5, 40);
        INSERT INTO tags VALUES (1, 'red'), (2, 'red'), (3, 'blue');
        """

    /// The job without the lines that name where it came from and where it points.
    static func portable(_ job: String) -> String {
        job.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("database:") && !$0.hasPrefix("# Starter job written") && !$0.hasPrefix("schema:") }
            .filter { !$0.hasPrefix("# with `winnow plan") }
            .joined(separator: "\n")
    }

    func testInitProposesTheSameStarterJobOnBothEngines() throws {
        let (url, dir, data) = try PostgresServer.engines("people.sqlite", sql: Self.sql)
        defer { try? FileManager.default.removeItem(at: dir) }
        let sqlite = try TestSupport.winnow(["init", "--database", data, "--job", "lite.yaml", "--schema", "lite-schema.yaml"], in: dir)
        XCTAssertEqual(sqlite.status, 0, sqlite.stderr)
        let server = try TestSupport.winnow(["init", "--database", url, "--format", "json"], in: dir)
        XCTAssertEqual(server.status, 0, server.stderr)
        // Named after the database, not after the URL's last characters.
        let job = try String(contentsOf: dir.appendingPathComponent("jobs/postgres.yaml"), encoding: .utf8)
        let lite = try String(contentsOf: dir.appendingPathComponent("lite.yaml"), encoding: .utf8)
        XCTAssertTrue(job.contains("database: \"\(url)\"\n"), "the job names the server as given: \(job)")
        XCTAssertEqual(Self.portable(job), Self.portable(lite))
        XCTAssertTrue(job.contains("  - entity: people\n    key: email\n    normalize: [trim, lowercase]"), job)
        XCTAssertTrue(job.contains("  - entity: tags\n    key: name"), job)
        let summary = try JSONSerialization.jsonObject(with: Data(server.stdout.utf8)) as? [String: Any]
        let tables = (summary?["tables"] as? [[String: Any]])?.compactMap { $0["table"] as? String }
        XCTAssertEqual(tables, ["orders", "people", "tags"], server.stdout)

        // The job it wrote plans and runs as it is, on the server it names.
        let jobPath = dir.appendingPathComponent("jobs/postgres.yaml").path
        let plan = try TestSupport.winnow(["plan", jobPath], in: dir)
        XCTAssertEqual(plan.status, 0, plan.stderr)
        let run = try TestSupport.winnow(["run", jobPath], in: dir)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(try PostgresServer.integers(url, "id", of: "people"), [2, 3, 5])
        XCTAssertEqual(try PostgresServer.integers(url, "person_id", of: "orders"), [2, 2, 3, 5], "orders follow their winner")
    }

    /// A password in the URL never reaches the job file (it is shared and committed).
    func testInitLeavesThePasswordOutOfTheJob() throws {
        let url = try PostgresServer.require()
        try PostgresServer.reset(url)
        let dir = try TestSupport.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        guard let at = url.range(of: "@"), let scheme = url.range(of: "://") else { return XCTFail("unexpected URL \(url)") }
        let user = url[scheme.upperBound..<at.lowerBound]
        let withPassword = url.replacingCharacters(in: scheme.upperBound..<at.lowerBound, with: "\(user):sekrit")
        let result = try TestSupport.winnow(["init", "--database", withPassword, "--job", "j.yaml", "--schema", "s.yaml"], in: dir)
        XCTAssertEqual(result.status, 0, result.stderr)
        let job = try String(contentsOf: dir.appendingPathComponent("j.yaml"), encoding: .utf8)
        let schema = try String(contentsOf: dir.appendingPathComponent("s.yaml"), encoding: .utf8)
        XCTAssertFalse((job + schema + result.stdout + result.stderr).contains("sekrit"))
        XCTAssertTrue(job.contains("database: \"\(url)\"  # the password: PGPASSWORD or ~/.pgpass"), job)
    }

    /// The starter job, run after someone adds an index and a column, keeps both; `plan` and
    /// `run` say so, `check` reports them as drift with the counts `plan` gives.
    func testStarterJobKeepsAnIndexAndAColumnAddedLater() throws {
        let (url, dir, _) = try PostgresServer.engines("people.sqlite", sql: Self.sql)
        defer { try? FileManager.default.removeItem(at: dir) }
        XCTAssertEqual(try TestSupport.winnow(["init", "--database", url], in: dir).status, 0)
        try BackendRouter().withSession(url, mode: .readWrite(create: false)) { session in
            try session.execute("CREATE INDEX my_idx ON public.orders (person_id)")
            try session.execute("ALTER TABLE public.people ADD COLUMN rating integer")
            try session.execute("UPDATE public.people SET rating = id * 10")
        }
        let job = dir.appendingPathComponent("jobs/postgres.yaml").path
        let plan = try TestSupport.winnow(["plan", job], in: dir)
        XCTAssertEqual(plan.status, 0, plan.stderr)
        XCTAssertTrue(plan.stdout.contains("kept: index my_idx on orders"), plan.stdout)
        XCTAssertTrue(plan.stdout.contains("kept: column people.rating"), plan.stdout)
        func counts(_ command: String, _ expect: Int32) throws -> [Int] {
            let result = try TestSupport.winnow([command, job, "--format", "json"], in: dir)
            XCTAssertEqual(result.status, expect, result.stderr)
            let summary = result.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.first { $0["event"] as? String == "summary" }
            return ["groups", "deleted", "repointed"].map { summary?[$0] as? Int ?? -1 }
        }
        XCTAssertEqual(try counts("check", 1), try counts("plan", 0))
        let run = try TestSupport.winnow(["run", job], in: dir)
        XCTAssertEqual(run.status, 0, run.stderr)
        try BackendRouter().withSession(url, mode: .readOnly) { session in
            XCTAssertNotNil(try session.row("SELECT 1 FROM pg_indexes WHERE indexname = 'my_idx'"), "the index is kept")
            XCTAssertEqual(try session.value("SELECT sum(rating) FROM public.people").int, 100, "the column keeps its values")
        }
        let check = try TestSupport.winnow(["check", job], in: dir)
        XCTAssertEqual(check.status, 1, check.stderr)
        XCTAssertTrue(check.stdout.contains("people.rating: column is not in the schema file (kept by a run"), check.stdout)

        // Named under dropped_indexes, the index goes, on the server as on SQLite.
        let schemaPath = dir.appendingPathComponent("schemas/postgres.yaml").path
        let schema = try String(contentsOfFile: schemaPath, encoding: .utf8)
        let listed = schema.replacingOccurrences(of: "  orders:\n", with: "  orders:\n    dropped_indexes: [my_idx]\n")
        XCTAssertNotEqual(listed, schema)
        try TestSupport.writeFile(listed, to: schemaPath)
        let dropped = try TestSupport.winnow(["run", job, "--verbose"], in: dir)
        XCTAssertEqual(dropped.status, 0, dropped.stderr)
        XCTAssertTrue(dropped.stdout.contains("drop index my_idx on orders"), dropped.stdout)
        try BackendRouter().withSession(url, mode: .readOnly) { session in
            XCTAssertNil(try session.row("SELECT 1 FROM pg_indexes WHERE indexname = 'my_idx'"), "the listed index is dropped")
            XCTAssertEqual(try session.value("SELECT sum(rating) FROM public.people").int, 100)
        }
    }
}
