import Foundation
import WinnowBackends
import WinnowCore
import WinnowTestSupport
import XCTest

/// Crash scenarios written once and run on both engines: the same SQLite data (loaded into
/// PostgreSQL for the second), the same job, SIGKILL at several points of a run (timed from an
/// uninterrupted run of the same job on the same engine), then a rerun. Each engine must lose
/// nothing, converge (`run` exits 0, then `check` exits 0) and end with the same rows as the
/// other engine and as an uninterrupted run.
final class CrossEngineCrashTests: XCTestCase {
    /// One scenario on every engine: the rows each engine ends with after kills at `fractions`
    /// of an uninterrupted run's time, compared across engines and with the uninterrupted run.
    /// With `analyze`, each PostgreSQL copy's tables are analyzed first (its statistics then say
    /// whether discovery decides a delete-only rule's batches).
    func converge(
        template: String, job: String, tables: [String], fractions: [Double], dir: URL, analyze: Bool = false,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        func prepare(_ engine: CrossEngine) throws -> String {
            let location = try engine.prepare(template, dir)
            if analyze, engine.name == "postgresql" {
                try BackendRouter().withSession(location, mode: .readWrite(create: false)) { session in
                    for table in tables { try session.execute("ANALYZE \(session.dialect.table(table))") }
                }
            }
            return location
        }
        var results: [String: [String: [String]]] = [:]
        for engine in try CrossEngine.all() {
            // The uninterrupted run: its time places the kills, its rows are the reference.
            let clean = try prepare(engine)
            let started = Date()
            let first = try TestSupport.winnow(["run", job, "--database", clean, "--quiet"])
            let seconds = Date().timeIntervalSince(started)
            XCTAssertEqual(first.status, 0, "\(engine.name): \(first.stderr)", file: file, line: line)
            let expected = try PostgresServer.rows(clean, tables: tables)
            var kills = 0
            for fraction in fractions {
                let location = try prepare(engine)
                let process = Process()
                process.executableURL = TestSupport.executable
                process.arguments = ["run", job, "--database", location, "--quiet"]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                Thread.sleep(forTimeInterval: max(0.05, seconds * fraction))
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                let killed = process.terminationReason == .uncaughtSignal
                if killed { kills += 1 }
                let history = try TestSupport.winnow(["history", "--database", location])
                print(
                    "[CrossEngineCrash] \(engine.name): uninterrupted run \(String(format: "%.2f", seconds)) s; kill at \(fraction): \(killed ? "killed" : "finished first"); \(history.stdout.split(separator: "\n").dropFirst().map { $0.split(separator: " ", omittingEmptySubsequences: true).prefix(9).joined(separator: " ") }.joined(separator: " | "))"
                )
                let rerun = try TestSupport.winnow(["run", job, "--database", location])
                XCTAssertEqual(rerun.status, 0, "\(engine.name), kill at \(fraction): \(rerun.stderr)", file: file, line: line)
                let check = try TestSupport.winnow(["check", job, "--database", location])
                XCTAssertEqual(check.status, 0, "\(engine.name), kill at \(fraction): \(check.stdout)", file: file, line: line)
                XCTAssertEqual(try engine.invalidIndexes(location), 0, "\(engine.name): an INVALID index was left", file: file, line: line)
                XCTAssertEqual(
                    try PostgresServer.rows(location, tables: tables), expected,
                    "\(engine.name), kill at \(fraction) (\(killed ? "killed" : "finished first")): not the rows of an uninterrupted run",
                    file: file, line: line)
            }
            XCTAssertGreaterThan(kills, 0, "\(engine.name): no kill landed before the run finished", file: file, line: line)
            results[engine.name] = expected
        }
        XCTAssertEqual(results["sqlite"], results["postgresql"], "the engines keep different rows", file: file, line: line)
    }

    /// Merges, a normaliser, the journal and re-pointed children, in batches of 25 groups.
    func testKillsDuringDedupeBatches() throws {
        try killCustomersRule(merge: true)
    }

    /// A rule without merges or references (on PostgreSQL each batch is one statement that
    /// locks, ranks, journals and deletes by tuple id), a normaliser and the journal, in batches
    /// of 25 groups.
    func testKillsDuringOneStatementBatches() throws {
        try killCustomersRule(merge: false)
    }

    /// The same with the table analyzed: on PostgreSQL discovery decides the batches (each
    /// applies discovery's ranking to its unchanged rows, in one statement).
    func testKillsDuringDecidedBatches() throws {
        try killCustomersRule(merge: false, analyze: true)
    }

    /// 9,000 customers in 3,000 groups by lower(email), deduplicated in batches of 25 groups
    /// with the journal on, killed at three points on each engine. With `merge`, the rule sums
    /// `visits` and re-points 6,000 orders (indexed); without, there is no child table.
    func killCustomersRule(merge: Bool, analyze: Bool = false) throws {
        let dir = try TestSupport.scratchDirectory()
        let orders = """
            CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), total INTEGER);
            CREATE INDEX orders_customer ON orders (customer_id);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6000)
            INSERT INTO orders SELECT i, 1 + (i * 7) % 9000, i FROM n;
            """
        let template = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("template.sqlite").path,
            sql: """
                CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL, visits INTEGER NOT NULL);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 9000)
                INSERT INTO customers SELECT i, CASE WHEN i % 2 = 0 THEN 'User' ELSE 'user' END || (i % 3000) || '@x', i % 17, i % 5 FROM n;
                \(merge ? orders : "")
                """)
        let job = try TestSupport.writeFile(
            """
            version: 1
            dedupe:
              - entity: customers
                key: email
                normalize: [lowercase]
                winner: [{created: asc}]
            \(merge ? "    merge: {visits: sum}\n" : "")    archive: true
            batch: {size: 25}
            """, to: dir.appendingPathComponent("job.yaml").path)
        let tables = merge ? ["customers", "orders"] : ["customers"]
        try converge(template: template, job: job, tables: tables, fractions: [0.3, 0.6, 0.9], dir: dir, analyze: analyze)
    }

    /// A migration killed on its way: a column made NOT NULL with a default (a rebuild on SQLite,
    /// a batched fill and a validated constraint on PostgreSQL), a new column and a new index.
    func testKillsDuringMigrationSteps() throws {
        let dir = try TestSupport.scratchDirectory()
        let template = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("template.sqlite").path,
            sql: """
                CREATE TABLE items (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, note TEXT);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60000)
                INSERT INTO items SELECT i, i % 97, CASE WHEN i % 3 = 0 THEN NULL ELSE 'n' || i END FROM n;
                """)
        _ = try TestSupport.writeFile(
            """
            version: 2
            tables:
              items:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: k, type: integer, nullable: false}
                  - {name: note, type: text, nullable: false, default: "-"}
                  - {name: seen, type: integer}
                indexes:
                  - {name: items_k, columns: [k]}
            """, to: dir.appendingPathComponent("schema.yaml").path)
        let job = try TestSupport.writeFile(
            "version: 1\nschema: schema.yaml\nbatch: {size: 500, max_transaction_ms: 20}\n", to: dir.appendingPathComponent("job.yaml").path
        )
        try converge(template: template, job: job, tables: ["items"], fractions: [0.2, 0.5, 0.8], dir: dir)
    }
}
