import Foundation
import WinnowBackends
import WinnowCore
import WinnowPostgres
import WinnowTestSupport
import XCTest

/// Promises of the contract that the PostgreSQL backend must keep too: the lock (75, and a
/// dead holder never blocks), plan writes nothing, a password never appears, a database that
/// is not there is 66.
final class PostgresContractTests: XCTestCase {
    static let examples = TestSupport.repositoryRoot.appendingPathComponent("examples")
    static var exampleJob: String { TestSupport.repositoryRoot.appendingPathComponent("jobs/example.yaml").path }

    func loadContacts(_ url: String) throws {
        let dir = try TestSupport.scratchDirectory()
        let copy = dir.appendingPathComponent("contacts.sqlite").path
        try FileManager.default.copyItem(atPath: Self.examples.appendingPathComponent("contacts.sqlite").path, toPath: copy)
        try PostgresServer.reset(url)
        try PostgresServer.load(copy, into: url)
    }

    /// Another session holds the run lock (its advisory lock and the lock row): 75, nothing
    /// changed; once it lets go, the run goes through.
    func testLockHeldByAnotherSessionExits75() throws {
        let url = try PostgresServer.require()
        try loadContacts(url)
        let before = try PostgresServer.rows(url, tables: ["contacts", "orders", "contact_tags"])
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            try? PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in
                try session.writeTransaction {
                    try Bookkeeping.install(session)
                    try RunLock.take(session, runID: nil)
                }
                holding.signal()
                release.wait()
            }
        }
        holder.start()
        XCTAssertEqual(holding.wait(timeout: .now() + 10), .success)
        let locked = try TestSupport.winnow(["run", Self.exampleJob, "--database", url])
        XCTAssertEqual(locked.status, 75, locked.stderr)
        XCTAssertEqual(
            try PostgresServer.rows(url, tables: ["contacts", "orders", "contact_tags"]), before, "a refused run changes nothing")
        release.signal()
        while !holder.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(try TestSupport.winnow(["run", Self.exampleJob, "--database", url]).status, 0)
    }

    /// A lock row left by a run on another host whose session is gone (no advisory lock) is
    /// abandoned: the next run takes it over at once.
    func testAbandonedLockRowIsTakenOver() throws {
        let url = try PostgresServer.require()
        try loadContacts(url)
        try BackendRouter().withSession(url, mode: .readWrite(create: false)) { session in
            try session.writeTransaction {
                try Bookkeeping.install(session)
                try session.execute(
                    """
                    INSERT INTO winnow.winnow_lock (id, run_id, pid, process_start, host, acquired_at)
                    VALUES (1, NULL, 4242, NULL, 'elsewhere.example', '2024-01-01T00:00:00Z')
                    """)
            }
        }
        let run = try TestSupport.winnow(["run", Self.exampleJob, "--database", url])
        XCTAssertEqual(run.status, 0, run.stderr)
    }

    /// A run killed on this host before it changed a row leaves its lock row and a run marked
    /// running; the restore of it is refused (nothing to restore) and clears that lock, as a run
    /// would, on PostgreSQL as on SQLite.
    func testRefusedRestoreClearsTheLockOfADeadRun() throws {
        let url = try PostgresServer.require()
        try loadContacts(url)
        let deadPid: Int32 = 999_999
        try XCTSkipIf(kill(deadPid, 0) == 0, "pid \(deadPid) exists on this machine")
        let runID = try BackendRouter().withSession(url, mode: .readWrite(create: false)) { session -> Int64 in
            var id: Int64 = 0
            try session.writeTransaction {
                try Bookkeeping.install(session)
                id =
                    try session.value(
                        """
                        INSERT INTO winnow.winnow_runs (command, job, started_at, status, archive)
                        VALUES ('run', 'example.yaml', '2024-01-01T00:00:00Z', 'running', 1) RETURNING id
                        """
                    ).int64 ?? 0
                try session.execute(
                    """
                    INSERT INTO winnow.winnow_lock (id, run_id, pid, process_start, host, acquired_at)
                    VALUES (1, ?, ?, NULL, ?, '2024-01-01T00:00:00Z')
                    """, [SQLValue(id), SQLValue(Int(deadPid)), SQLValue(ProcessIdentity.current.host)])
            }
            return id
        }
        let tables = ["contacts", "orders", "contact_tags"]
        let before = try PostgresServer.rows(url, tables: tables)
        let refused = try TestSupport.winnow(["restore", "--database", url, "--run", String(runID)])
        XCTAssertEqual(refused.status, 65, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("changed no rows"), refused.stderr)
        XCTAssertEqual(try PostgresServer.rows(url, tables: tables), before, "a refused restore changes no user row")
        try BackendRouter().withSession(url, mode: .readOnly) { session in
            XCTAssertEqual(try session.value("SELECT count(*) FROM winnow.winnow_lock").int, 0, "the dead run's lock is cleared")
            XCTAssertEqual(
                try session.value("SELECT status FROM winnow.winnow_runs WHERE id = ?", [SQLValue(runID)]).string, "interrupted")
            XCTAssertEqual(try session.value("SELECT count(*) FROM winnow.winnow_runs").int, 1, "a refused restore records no run")
        }
    }

    /// `plan`, even with a pending migration rehearsed in an open transaction, leaves no trace:
    /// same rows, same schema, no winnow schema.
    func testPlanChangesNothing() throws {
        let url = try PostgresServer.require()
        let dir = try TestSupport.scratchDirectory()
        let copy = dir.appendingPathComponent("crm.sqlite").path
        try FileManager.default.copyItem(atPath: Self.examples.appendingPathComponent("crm-v1.sqlite").path, toPath: copy)
        try PostgresServer.reset(url)
        try PostgresServer.load(copy, into: url)
        let tables = try BackendRouter().withSession(url, mode: .readOnly) { try $0.inspect().tables.map(\.name) }
        let rows = try PostgresServer.rows(url, tables: tables)
        let schema = try TestSupport.winnow(["schema", "inspect", "--database", url]).stdout
        let job = TestSupport.repositoryRoot.appendingPathComponent("jobs/crm-migrate.yaml").path
        let plan = try TestSupport.winnow(["plan", job, "--database", url])
        XCTAssertEqual(plan.status, 0, plan.stderr)
        XCTAssertTrue(plan.stdout.contains("rename table people to contacts"), plan.stdout)
        XCTAssertEqual(try PostgresServer.rows(url, tables: tables), rows)
        XCTAssertEqual(try TestSupport.winnow(["schema", "inspect", "--database", url]).stdout, schema)
        let winnowSchema = try BackendRouter().withSession(url, mode: .readOnly) {
            try $0.value("SELECT count(*) FROM pg_namespace WHERE nspname = 'winnow'").int
        }
        XCTAssertEqual(winnowSchema, 0, "plan created no bookkeeping")
    }

    /// What SQLite rebuilds a table for, PostgreSQL alters in place: `plan` and `run` say so
    /// (text and json), never "rebuild table".
    func testStepsAreNamedAsPostgreSQLRunsThem() throws {
        let url = try PostgresServer.require()
        try PostgresServer.reset(url)
        try PostgresServer.load(Self.examples.appendingPathComponent("crm-v1.sqlite").path, into: url)
        let job = TestSupport.repositoryRoot.appendingPathComponent("jobs/crm-migrate.yaml").path
        let plan = try TestSupport.winnow(["plan", job, "--database", url])
        XCTAssertEqual(plan.status, 0, plan.stderr)
        XCTAssertTrue(plan.stdout.contains("alter table contacts: make email NOT NULL"), plan.stdout)
        let run = try TestSupport.winnow(["run", job, "--database", url, "--format", "json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let steps = run.stdout.split(separator: "\n").compactMap { line -> [String: Any]? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return object["event"] as? String == "migration" ? object : nil
        }
        XCTAssertFalse(steps.isEmpty, run.stdout)
        XCTAssertTrue(
            steps.contains { ($0["summary"] as? String)?.hasPrefix("alter table contacts: make email NOT NULL") == true }, run.stdout)
        for step in steps {
            XCTAssertEqual(step["rebuild"] as? Bool, false, "\(step)")
            XCTAssertFalse((step["summary"] as? String ?? "").contains("rebuild table"), "\(step)")
        }
        XCTAssertFalse((plan.stdout + run.stdout).contains("rebuild table"))
    }

    /// A unique index the migration adds over a key that rows would still share once the
    /// job's rules ran is refused before anything changes (exit 65, the index named, no INVALID
    /// index left); with a rule for that key the run deduplicates, then builds the index.
    func testUniqueIndexOverKeysTheRulesLeaveIsRefusedFirst() throws {
        let (url, dir, _) = try PostgresServer.engines(
            "u.sqlite",
            sql: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT, name TEXT);
                INSERT INTO t VALUES (1, 'a', 'x'), (2, 'a', 'x'), (3, 'b', 'z'), (4, 'c', 'w'), (5, 'c', 'v'), (6, NULL, 'n'), (7, NULL, 'n');
                """)
        _ = try TestSupport.writeFile(
            """
            version: 2
            tables:
              t:
                columns:
                - {name: id, type: integer, primary_key: true}
                - {name: email, type: text}
                - {name: name, type: text}
                indexes:
                - {name: t_email, columns: [email], unique: true}
            """, to: dir.appendingPathComponent("schema.yaml").path)
        func job(_ name: String, _ rules: String) throws -> String {
            try TestSupport.writeFile("version: 1\nschema: schema.yaml\n\(rules)", to: dir.appendingPathComponent(name).path)
        }
        func state() throws -> (ids: [Int], indexes: [String]) {
            try BackendRouter().withSession(url, mode: .readOnly) { session in
                (
                    try session.rows("SELECT id FROM public.t ORDER BY id").compactMap { $0.values.first?.int },
                    try session.rows("SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename = 't' ORDER BY 1")
                        .compactMap { $0.values.first?.string }
                )
            }
        }
        let before = try state()
        // No rule: 'a' and 'c' repeat (two NULLs do not collide in a unique index).
        let bare = try TestSupport.winnow(["run", try job("bare.yaml", ""), "--database", url])
        XCTAssertEqual(bare.status, 65, bare.stderr)
        XCTAssertTrue(bare.stderr.contains("cannot create unique index t_email on t(email): 4 rows in 2 group(s) share a key"), bare.stderr)
        XCTAssertEqual(try state().ids, before.ids)
        XCTAssertEqual(try state().indexes, before.indexes, "no index, valid or INVALID, is left")
        XCTAssertEqual(try TestSupport.winnow(["plan", try job("bare.yaml", ""), "--database", url]).status, 65)
        // A rule on another key leaves the 'c' pair: still refused, and said so.
        let other = try TestSupport.winnow([
            "run", try job("other.yaml", "dedupe:\n  - {entity: t, key: [email, name]}\n"), "--database", url,
        ])
        XCTAssertEqual(other.status, 65, other.stderr)
        XCTAssertTrue(other.stderr.contains("2 rows in 1 group(s) share a key that the job's dedupe rules leave"), other.stderr)
        XCTAssertEqual(try state().ids, before.ids)
        // A rule for the key: duplicates go, then the index is built.
        let keyed = try TestSupport.winnow(["run", try job("keyed.yaml", "dedupe:\n  - {entity: t, key: email}\n"), "--database", url])
        XCTAssertEqual(keyed.status, 0, keyed.stderr)
        XCTAssertEqual(try state().ids, [1, 3, 5, 6, 7])
        XCTAssertEqual(try state().indexes, ["t_email", "t_pkey"])
    }

    /// A schema file written for SQLite describes the same table loaded into PostgreSQL without
    /// drift: `real` is SQLite's 8-byte float (`double precision`), `blob` is `bytea`, and an
    /// explicit NOT NULL on a composite primary key's columns is what PostgreSQL's key already
    /// implies. A `real` column the migration adds is a `double precision` (values keep their
    /// 8 bytes, as on SQLite); `float4` still asks for a 4-byte one.
    func testSQLiteSchemaFileTypesAndKeyNullabilityMatchWithoutDrift() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "s.sqlite",
            sql: """
                CREATE TABLE link (a INTEGER NOT NULL, b INTEGER NOT NULL, weight REAL NOT NULL, raw BLOB, PRIMARY KEY (a, b));
                INSERT INTO link VALUES (1, 2, 0.1, x'00ff'), (2, 3, 2.5, NULL);
                """)
        let columns = """
                - {name: a, type: integer, nullable: false, primary_key: true}
                - {name: b, type: integer, nullable: false, primary_key: true}
                - {name: weight, type: real, nullable: false}
                - {name: raw, type: blob}
            """
        _ = try TestSupport.writeFile(
            "version: 1\ntables:\n  link:\n    columns:\n\(columns)\n", to: dir.appendingPathComponent("v1.yaml").path)
        let same = try TestSupport.writeFile("version: 1\nschema: v1.yaml\n", to: dir.appendingPathComponent("same.yaml").path)
        for engine in [data, url] {
            let check = try TestSupport.winnow(["check", same, "--database", engine])
            XCTAssertEqual(check.status, 0, "\(engine): \(check.stdout)\(check.stderr)")
        }
        _ = try TestSupport.writeFile(
            "version: 2\ntables:\n  link:\n    columns:\n\(columns)\n    - {name: score, type: real}\n    - {name: small, type: float4}\n",
            to: dir.appendingPathComponent("v2.yaml").path)
        let grow = try TestSupport.writeFile("version: 1\nschema: v2.yaml\n", to: dir.appendingPathComponent("grow.yaml").path)
        let plan = try TestSupport.winnow(["plan", grow, "--database", url])
        XCTAssertEqual(plan.status, 0, plan.stderr)
        XCTAssertFalse(plan.stdout.contains("NOT NULL"), "no step for the key's columns: \(plan.stdout)")
        XCTAssertEqual(try TestSupport.winnow(["run", grow, "--database", url]).status, 0)
        XCTAssertEqual(try TestSupport.winnow(["check", grow, "--database", url]).status, 0)
        let types = try BackendRouter().withSession(url, mode: .readOnly) { session in
            try session.rows(
                "SELECT column_name::text, data_type::text FROM information_schema.columns WHERE table_name = 'link' ORDER BY ordinal_position"
            ).map { "\($0.values[0].string ?? ""): \($0.values[1].string ?? "")" }
        }
        XCTAssertEqual(
            types, ["a: integer", "b: integer", "weight: double precision", "raw: bytea", "score: double precision", "small: real"])
    }

    /// A run killed while it made a column NOT NULL leaves its helper constraint behind, not
    /// yet validated or validated: the next run takes the step up again and converges (the
    /// column NOT NULL, NULLs filled, no helper constraint left), instead of failing on a
    /// constraint that already exists.
    func testNotNullStepLeftHalfwayByAKilledRunIsTakenUp() throws {
        let url = try PostgresServer.require()
        let dir = try TestSupport.scratchDirectory()
        let data = dir.appendingPathComponent("items.sqlite").path
        try TestSupport.makeDatabase(
            at: data,
            sql: """
                CREATE TABLE items (id INTEGER PRIMARY KEY, note TEXT);
                INSERT INTO items VALUES (1, 'a'), (2, NULL), (3, 'c');
                """)
        _ = try TestSupport.writeFile(
            """
            version: 2
            tables:
              items:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: note, type: text, nullable: false, default: "-"}
            """, to: dir.appendingPathComponent("schema.yaml").path)
        let job = try TestSupport.writeFile("version: 1\nschema: schema.yaml\n", to: dir.appendingPathComponent("job.yaml").path)
        let leftovers = [
            "ALTER TABLE public.items ADD CONSTRAINT winnow_nn_items_note CHECK (note IS NOT NULL) NOT VALID",
            "UPDATE public.items SET note = '-' WHERE note IS NULL; ALTER TABLE public.items ADD CONSTRAINT winnow_nn_items_note CHECK (note IS NOT NULL)",
        ]
        for leftover in leftovers {
            try PostgresServer.reset(url)
            try PostgresServer.load(data, into: url)
            try BackendRouter().withSession(url, mode: .readWrite(create: false)) { session in
                for sql in leftover.components(separatedBy: "; ") { try session.execute(sql) }
            }
            let run = try TestSupport.winnow(["run", job, "--database", url])
            XCTAssertEqual(run.status, 0, "\(leftover): \(run.stderr)")
            XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", url]).status, 0, leftover)
            let state = try BackendRouter().withSession(url, mode: .readOnly) { session in
                (
                    try session.value(
                        "SELECT is_nullable::text FROM information_schema.columns WHERE table_name = 'items' AND column_name = 'note'"
                    )
                    .string,
                    try session.value("SELECT count(*) FROM pg_constraint WHERE conname = 'winnow_nn_items_note'").int,
                    try session.rows("SELECT note FROM public.items ORDER BY id").map { $0.values[0].string ?? "NULL" }
                )
            }
            XCTAssertEqual(state.0, "NO", leftover)
            XCTAssertEqual(state.1, 0, "the helper constraint is gone: \(leftover)")
            XCTAssertEqual(state.2, ["a", "-", "c"], leftover)
        }
    }

    /// A password in `--database` never reaches the output (text or json) or the history.
    func testPasswordNeverAppears() throws {
        let url = try PostgresServer.require()
        try loadContacts(url)
        guard let withPassword = url.range(of: "://").map({ url.replacingCharacters(in: $0, with: "://") }),
            let at = withPassword.firstIndex(of: "@")
        else { return XCTFail("\(url) has no user") }
        let secret = "s3cr3t-pw"
        let secretURL = String(withPassword[..<at]) + ":\(secret)" + String(withPassword[at...])
        for args in [
            ["run", Self.exampleJob, "--database", secretURL], ["check", Self.exampleJob, "--database", secretURL, "--format", "json"],
            ["history", "--database", secretURL], ["history", "--database", secretURL, "--format", "json"],
            ["plan", Self.exampleJob, "--database", secretURL, "--format", "json"],
        ] {
            let result = try TestSupport.winnow(args)
            XCTAssertEqual(result.status, 0, "\(args): \(result.stderr)")
            XCTAssertFalse(result.stdout.contains(secret) || result.stderr.contains(secret), "\(args[0]) printed the password")
        }
    }

    /// A database that does not exist on a server that answers: 66, the server named.
    func testMissingDatabaseExits66() throws {
        let url = try PostgresServer.require()
        let location = try PostgresLocation.parse(url)
        let missing = "postgresql://\(location.user)@\(location.host):\(location.port)/winnow_no_such_db"
        let result = try TestSupport.winnow(["check", Self.exampleJob, "--database", missing])
        XCTAssertEqual(result.status, 66, result.stderr)
        XCTAssertTrue(result.stderr.contains("winnow_no_such_db") && result.stderr.contains("does not exist"), result.stderr)
    }
}
