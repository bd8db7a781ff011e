import Foundation
import GRDB
import WinnowTestSupport
import XCTest

/// Many stores in one call: a generated fleet with clean stores, stores with duplicates, one
/// locked by another run, one corrupt and one that is not a database.
final class FleetTests: CLITestCase {
    static let job = """
        version: 1
        dedupe:
          - entity: people
            key: email
            normalize: [trim, lowercase]
            winner:
              - created_at: asc
            merge: {visits: sum}
            archive: true
        batch: {size: 10}
        """

    /// A store: `rows` people, every third one a duplicate when `duplicates`.
    func makeStore(_ path: String, rows: Int, duplicates: Bool, seed: Int) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created_at INTEGER, visits INTEGER)")
            for i in 1...rows {
                let key = duplicates && i % 3 == 0 ? i - 1 : i
                try db.execute(
                    sql: "INSERT INTO people VALUES (?, ?, ?, ?)",
                    arguments: [i, (i % 2 == 0 ? " User\(key)@X.com" : "user\(key)@x.com"), (i * 7919 + seed) % 100_000, i % 5])
            }
        }
        try queue.close()
    }

    func makeFleet(count: Int, rows: Int) throws -> (locked: String, corrupt: String, notADatabase: String) {
        try FileManager.default.createDirectory(atPath: path("tenants"), withIntermediateDirectories: true)
        for n in 0..<count {
            try makeStore(path(String(format: "tenants/t%03d.sqlite", n)), rows: rows, duplicates: n % 2 == 0, seed: n)
        }
        let locked = path("tenants/t001.sqlite")
        try ScenarioKit.execute(
            locked,
            """
            CREATE TABLE winnow_lock (id INTEGER PRIMARY KEY CHECK (id = 1), run_id INTEGER, pid INTEGER NOT NULL, process_start TEXT,
                host TEXT NOT NULL, acquired_at TEXT NOT NULL);
            """)
        try ScenarioKit.execute(
            locked, "INSERT INTO winnow_lock VALUES (1, NULL, ?, NULL, ?, '2024-01-01T00:00:00Z')",
            arguments: [ProcessInfo.processInfo.processIdentifier, ProcessInfo.processInfo.hostName])
        // Its schema page is garbage: the first read fails, before anything is written.
        let corrupt = path("tenants/t002.sqlite")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: corrupt))
        for i in 100..<4096 { bytes[i] = 0xA5 }
        try bytes.write(to: URL(fileURLWithPath: corrupt))
        let notADatabase = path("tenants/t003.sqlite")
        try "tenant 3 moved away\n".write(toFile: notADatabase, atomically: true, encoding: .utf8)
        return (locked, corrupt, notADatabase)
    }

    /// A fleet's target schema is read once, before any store: a missing file stops `run`,
    /// `plan` and `check` with one error (66), an invalid one with one error (65), no store
    /// touched, not a failure per store.
    func testAFleetReadsItsTargetSchemaOnce() throws {
        try FileManager.default.createDirectory(atPath: path("tenants"), withIntermediateDirectories: true)
        for n in 0..<3 { try makeStore(path("tenants/t\(n).sqlite"), rows: 9, duplicates: true, seed: n) }
        try write("job.yaml", "schema: gone.yaml\n" + Self.job)
        let before = try (0..<3).map { try TestSupport.fileBytes(path("tenants/t\($0).sqlite")) }
        for command in ["run", "plan", "check"] {
            let result = try winnow(
                [command, "job.yaml", "--database", "tenants/*.sqlite", "--continue-on-error", "--format", "json"], expect: 66)
            let lines = result.stdout.split(separator: "\n").compactMap { json($0) }
            XCTAssertEqual(lines.filter { $0["store"] != nil }.count, 0, "\(command): no store ran")
            XCTAssertEqual(lines.count, 1, "\(command): \(result.stdout)")
            XCTAssertTrue((lines.first?["message"] as? String ?? "").contains("gone.yaml: no such file"), "\(command): \(result.stdout)")
        }
        XCTAssertEqual(try (0..<3).map { try TestSupport.fileBytes(path("tenants/t\($0).sqlite")) }, before)
        // An invalid one: 65, once, pointing at the file.
        try write("gone.yaml", "version: 1\ntables: [\n")
        for command in ["run", "plan", "check"] {
            let result = try winnow(
                [command, "job.yaml", "--database", "tenants/*.sqlite", "--continue-on-error", "--format", "json"], expect: 65)
            let lines = result.stdout.split(separator: "\n").compactMap { json($0) }
            XCTAssertEqual(lines.count, 1, "\(command): \(result.stdout)")
            XCTAssertNil(lines.first?["store"], "\(command): no store ran")
            XCTAssertTrue((lines.first?["file"] as? String ?? "").hasSuffix("gone.yaml"), "\(command): \(result.stdout)")
        }
        XCTAssertEqual(try (0..<3).map { try TestSupport.fileBytes(path("tenants/t\($0).sqlite")) }, before)
    }

    func testFleetOfTwoHundredStoresOneCall() throws {
        let bad = try makeFleet(count: 200, rows: 30)
        try write("job.yaml", Self.job)
        let corruptBytes = try TestSupport.fileBytes(bad.corrupt)
        let lockedBytes = try TestSupport.fileBytes(bad.locked)
        let first = try winnow(
            ["run", "job.yaml", "--database", "tenants/*.sqlite", "--parallel", "2", "--continue-on-error", "--format", "json"], expect: 74)
        let lines = first.stdout.split(separator: "\n").compactMap { json($0) }
        let stores = lines.filter { $0["store"] != nil && $0["status"] != nil }
        XCTAssertEqual(stores.count, 200, "one report per store")
        let events = lines.filter { $0["store"] != nil && $0["event"] != nil }
        XCTAssertGreaterThanOrEqual(events.count, 99, "every store's batches, tagged with its path")
        func outcome(_ path: String) -> [String: Any]? { stores.first { ($0["store"] as? String)?.hasSuffix(path) == true } }
        XCTAssertEqual(outcome("t001.sqlite")?["status"] as? String, "locked")
        XCTAssertEqual(outcome("t001.sqlite")?["exit"] as? Int, 75)
        XCTAssertEqual(outcome("t002.sqlite")?["status"] as? String, "failed")
        XCTAssertEqual(outcome("t003.sqlite")?["status"] as? String, "failed")
        XCTAssertEqual(outcome("t003.sqlite")?["exit"] as? Int, 66)
        XCTAssertEqual(stores.filter { $0["status"] as? String == "done" }.count, 197, "every healthy store done")
        let fleet = lines.last?["fleet"] as? [String: Any]
        XCTAssertEqual(fleet?["stores"] as? Int, 200)
        XCTAssertEqual(fleet?["exit"] as? Int, 74)
        XCTAssertGreaterThan(fleet?["deleted"] as? Int ?? 0, 0)
        XCTAssertEqual(try TestSupport.fileBytes(bad.corrupt), corruptBytes, "the corrupt store changed nothing")
        XCTAssertEqual(try TestSupport.fileBytes(bad.locked), lockedBytes, "the locked store changed nothing")
        // A duplicate store is clean now; a clean one was left as it was.
        XCTAssertEqual(try ScenarioKit.int(path("tenants/t000.sqlite"), "SELECT count(*) FROM people"), 20)
        XCTAssertEqual(try ScenarioKit.int(path("tenants/t005.sqlite"), "SELECT count(*) FROM people"), 30)

        // The rerun is a no-op for every healthy store.
        let second = try winnow(
            ["run", "job.yaml", "--database", "tenants/*.sqlite", "--continue-on-error", "--format", "json"], expect: 74)
        let rerun = second.stdout.split(separator: "\n").compactMap { json($0) }.last?["fleet"] as? [String: Any]
        XCTAssertEqual(rerun?["deleted"] as? Int, 0)
        XCTAssertEqual(rerun?["groups"] as? Int, 0)

        // check over the fleet: one JUnit suite per store, valid.
        let check = try winnow(
            ["check", "job.yaml", "--database", "tenants/*.sqlite", "--format", "junit", "--continue-on-error"], expect: 74)
        XCTAssertEqual(JUnitSchema.violations(check.stdout), [])
        XCTAssertEqual(check.stdout.components(separatedBy: "<testsuite ").count - 1, 200)
    }

    func testDefaultStopsStartingStoresAfterAFailureAndCanaryStopsTheRollout() throws {
        _ = try makeFleet(count: 12, rows: 9)
        try write("job.yaml", Self.job)
        let stopped = try winnow(["run", "job.yaml", "--database", "tenants/*.sqlite", "--parallel", "1"], expect: 74)
        XCTAssertTrue(stopped.stdout.contains("not run"), stopped.stdout)
        XCTAssertEqual(try ScenarioKit.int(path("tenants/t011.sqlite"), "SELECT count(*) FROM people"), 9, "not started after the failure")
        try "\(path("tenants/t002.sqlite"))\n\(path("tenants/t010.sqlite"))\n".write(
            toFile: path("list.txt"), atomically: true, encoding: .utf8)
        let canary = try winnow(["run", "job.yaml", "--databases-from", "list.txt", "--canary", "1"], expect: 74)
        XCTAssertTrue(canary.stdout.contains("canary"), canary.stdout)
        XCTAssertEqual(try ScenarioKit.int(path("tenants/t010.sqlite"), "SELECT count(*) FROM people"), 9, "the rollout stopped")
    }

    func testKilledFleetRunLosesNothingAndConverges() throws {
        try FileManager.default.createDirectory(atPath: path("tenants"), withIntermediateDirectories: true)
        for n in 0..<16 { try makeStore(path(String(format: "tenants/t%02d.sqlite", n)), rows: 12000, duplicates: true, seed: n) }
        try write("job.yaml", Self.job)
        let process = Process()
        process.executableURL = TestSupport.executable
        process.arguments = ["run", "job.yaml", "--database", "tenants/*.sqlite", "--parallel", "2", "--quiet"]
        process.currentDirectoryURL = dir
        try process.run()
        Thread.sleep(forTimeInterval: 0.6)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal, "killed mid-fleet (the fleet took less than a second)")
        try winnow(["run", "job.yaml", "--database", "tenants/*.sqlite"], expect: 0)
        try winnow(["check", "job.yaml", "--database", "tenants/*.sqlite"], expect: 0)
        for n in 0..<16 {
            let store = path(String(format: "tenants/t%02d.sqlite", n))
            XCTAssertEqual(try ScenarioKit.int(store, "SELECT count(*) FROM people"), 8000, "t\(n)")
            XCTAssertEqual(
                try ScenarioKit.int(store, "SELECT sum(visits) FROM people"), (1...12000).map { $0 % 5 }.reduce(0, +),
                "t\(n): merges summed once")
            XCTAssertEqual(try ScenarioKit.column(store, "PRAGMA integrity_check", as: String.self), ["ok"], "t\(n)")
        }
    }

    /// `--max-duration` covers the whole fleet: stores started late get what is left (their
    /// first batch), stop cleanly, and the next call finishes them.
    func testMaxDurationCoversTheWholeFleet() throws {
        try FileManager.default.createDirectory(atPath: path("tenants"), withIntermediateDirectories: true)
        for n in 0..<6 { try makeStore(path("tenants/t\(n).sqlite"), rows: 12000, duplicates: true, seed: n) }
        try write("job.yaml", Self.job)
        let limited = try winnow(
            ["run", "job.yaml", "--database", "tenants/*.sqlite", "--parallel", "1", "--max-duration", "0.1", "--format", "json"], expect: 0
        )
        let summaries = limited.stdout.split(separator: "\n").compactMap { json($0) }.compactMap { $0["summary"] as? [String: Any] }
        XCTAssertEqual(summaries.count, 6)
        // In store order (--parallel 1): the first spends the limit; the others start after it.
        let late = summaries.filter { ($0["database"] as? String)?.hasSuffix("t0.sqlite") == false }
        XCTAssertEqual(late.count, 5)
        for summary in late {
            XCTAssertEqual(summary["status"] as? String, "stopped")
            XCTAssertEqual(summary["batches"] as? Int, 1, "a store started after the limit runs its first batch only")
        }
        try winnow(["run", "job.yaml", "--database", "tenants/*.sqlite"], expect: 0)
        try winnow(["check", "job.yaml", "--database", "tenants/*.sqlite"], expect: 0)
    }

    /// `plan --verbose` over a fleet whose stores each list more groups than a plan holds in
    /// memory (the rest go to a temporary file per store): a store's groups are let go once it
    /// is reported, so the fleet holds no file per store, and text shows the groups of each
    /// schema group's first store in the fleet's order, JSON every store's.
    func testVerbosePlanOfAFleetLetsEachStoresGroupsGoOnceReported() throws {
        try FileManager.default.createDirectory(atPath: path("tenants"), withIntermediateDirectories: true)
        // Two schemas (the second with a column more), 1,050 groups of two in each store.
        for (schema, extra) in ["a": "", "b": ", note TEXT"] {
            try TestSupport.makeDatabase(
                at: path("\(schema).sqlite"),
                sql: """
                    CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created_at INTEGER, visits INTEGER\(extra));
                    WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 2099)
                    INSERT INTO people (email, created_at, visits)
                    SELECT CASE i % 2 WHEN 0 THEN 'user' ELSE ' User' END || (i / 2) || '@x.com', (i * 7919) % 100003, i % 5
                    FROM s ORDER BY (i * 2654435761) % 4294967311;
                    """)
        }
        let stores = 60
        for n in 0..<stores {
            try FileManager.default.copyItem(
                atPath: path(n % 3 == 2 ? "b.sqlite" : "a.sqlite"), toPath: path(String(format: "tenants/t%02d.sqlite", n)))
        }
        try write("job.yaml", Self.job)
        // Fewer file descriptors than stores: a fleet that kept each store's file ran out of them
        // (and a store then failed with 66, its job file not opened).
        func plan(_ format: String) throws -> TestSupport.Result {
            try TestSupport.run(
                URL(fileURLWithPath: "/bin/sh"),
                [
                    "-c", "ulimit -n 48 && exec \"$0\" \"$@\"", TestSupport.executable.path, "plan", "job.yaml", "--verbose", "--database",
                    "tenants/*.sqlite", "--parallel", "4", "--format", format,
                ], in: dir)
        }
        let text = try plan("text")
        XCTAssertEqual(text.status, 0, text.stderr + String(text.stdout.suffix(2000)))
        let lines = text.stdout.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.hasPrefix("== schema group") }.count, 2)
        XCTAssertEqual(lines.filter { $0.hasPrefix("  group '") }.count, 2 * 1050, "the groups of two plans")
        let plans = lines.filter { $0.hasPrefix("Plan for job.yaml on ") }
        XCTAssertEqual(plans.count, 2)
        XCTAssertTrue(plans[0].hasSuffix("t00.sqlite (nothing is written)"), String(plans[0]))
        XCTAssertTrue(plans[1].hasSuffix("t02.sqlite (nothing is written)"), String(plans[1]))
        XCTAssertEqual(lines.filter { $0.hasPrefix("  ") && $0.contains("tenants/t") && $0.contains("migration steps") }.count, stores)

        let json = try plan("json")
        XCTAssertEqual(json.status, 0, json.stderr)
        let objects = json.stdout.split(separator: "\n").compactMap { self.json($0) }
        let summaries = objects.compactMap { $0["summary"] as? [String: Any] }
        XCTAssertEqual(summaries.count, stores, "each store's plan")
        for summary in summaries {
            let rules = summary["rules"] as? [[String: Any]]
            XCTAssertEqual((rules?.first?["sample_groups"] as? [Any])?.count, 1050, summary["database"] as? String ?? "")
        }
        XCTAssertEqual((objects.last?["fleet"] as? [String: Any])?["groups"] as? Int, stores * 1050)
    }
}
