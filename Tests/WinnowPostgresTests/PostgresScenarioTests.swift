import Foundation
import GRDB
import WinnowBackends
import WinnowCore
import WinnowTestSupport
import XCTest

/// The same jobs on PostgreSQL and SQLite: same exit codes, same survivors, exact restores.
final class PostgresScenarioTests: XCTestCase {
    /// A server that cannot be reached: exit 66, the server named, the password never printed.
    func testUnreachableServerExits66WithoutTheSecret() throws {
        let result = try TestSupport.winnow(
            [
                "check", TestSupport.repositoryRoot.appendingPathComponent("jobs/example.yaml").path, "--database",
                "postgresql://ann:s3cret@127.0.0.1:1/app",
            ])
        XCTAssertEqual(result.status, 66, result.stderr)
        XCTAssertTrue(result.stderr.contains("127.0.0.1:1"), result.stderr)
        XCTAssertFalse(result.stderr.contains("s3cret") || result.stdout.contains("s3cret"), result.stderr)
    }

    func testJobFileWithAPasswordIsRefused() throws {
        let dir = try TestSupport.scratchDirectory()
        let job = try TestSupport.writeFile(
            "version: 1\ndatabase: postgresql://ann:s3cret@db/app\ndedupe:\n  - {entity: t, key: a}\n",
            to: dir.appendingPathComponent("j.yaml").path)
        let result = try TestSupport.winnow(["validate", job])
        XCTAssertEqual(result.status, 65, result.stderr)
        XCTAssertTrue(result.stderr.contains("PGPASSWORD"), result.stderr)
        XCTAssertFalse(result.stderr.contains("s3cret"), result.stderr)
    }

    struct Case {
        var job: String
        var data: String
        var restorable: Bool
        var checkAfter: Int32 = 0
        var runStatus: Int32 = 0
        /// SQL run on the SQLite copy before it is loaded (child tables a job needs).
        var prepare: String? = nil
    }

    static let datasets = TestSupport.repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/datasets")

    static var cases: [Case] {
        let examples = TestSupport.repositoryRoot.appendingPathComponent("examples")
        return [
            Case(job: "example", data: examples.appendingPathComponent("contacts.sqlite").path, restorable: true),
            Case(job: "contacts-by-person", data: examples.appendingPathComponent("contacts.sqlite").path, restorable: true),
            Case(job: "contacts-phone", data: examples.appendingPathComponent("contacts.sqlite").path, restorable: false),
            Case(
                job: "contacts-restrict", data: examples.appendingPathComponent("contacts.sqlite").path, restorable: false, checkAfter: 1,
                runStatus: 65),
            Case(job: "crm-migrate", data: examples.appendingPathComponent("crm-v1.sqlite").path, restorable: false),
            Case(job: "chinook-playlists", data: datasets.appendingPathComponent("chinook.sqlite").path, restorable: true),
            Case(job: "coredata-users", data: datasets.appendingPathComponent("coredata-bookmigration-v1.sqlite").path, restorable: true),
            Case(
                job: "febrl-people", data: datasets.appendingPathComponent("febrl3.sqlite").path, restorable: true,
                prepare: examples.appendingPathComponent("febrl-visits.sql").path),
            Case(
                job: "febrl-people-similar", data: datasets.appendingPathComponent("febrl3.sqlite").path, restorable: true,
                prepare: examples.appendingPathComponent("febrl-visits.sql").path),
        ]
    }

    /// Every job of jobs/ on the same data in both engines: check fails before and passes after,
    /// the rows left are the same, and restore gives the loaded rows back exactly.
    func testEveryJobGivesTheSameSurvivorsOnBothEngines() throws {
        let url = try PostgresServer.require()
        for c in Self.cases {
            guard FileManager.default.fileExists(atPath: c.data) else { continue }
            let dir = try TestSupport.scratchDirectory("\(#function)-\(c.job)")
            let copy = dir.appendingPathComponent("db.sqlite").path
            try FileManager.default.copyItem(atPath: c.data, toPath: copy)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: copy)
            if let prepare = c.prepare {
                let sql = try String(contentsOfFile: prepare, encoding: .utf8)
                try DatabaseQueue(path: copy).write { try $0.execute(sql: sql) }
            }
            try PostgresServer.reset(url)
            try PostgresServer.load(copy, into: url)
            let job = TestSupport.repositoryRoot.appendingPathComponent("jobs/\(c.job).yaml").path
            let tables = try DatabaseQueue(path: copy).read { db in
                try String.fetchAll(
                    db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'winnow_%'"
                )
            }
            let loaded = try PostgresServer.rows(url, tables: tables)
            XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", url]).status, 1, c.job)
            let pg = try TestSupport.winnow(["run", job, "--database", url])
            XCTAssertEqual(pg.status, c.runStatus, "\(c.job): \(pg.stderr)")
            XCTAssertEqual(try TestSupport.winnow(["run", job, "--database", copy]).status, c.runStatus, c.job)
            XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", url]).status, c.checkAfter, c.job)
            let allTables = try DatabaseQueue(path: copy).read { db in
                try String.fetchAll(
                    db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'winnow_%'"
                )
            }
            let onPostgres = try PostgresServer.rows(url, tables: allTables)
            let onSQLite = try PostgresServer.rows(copy, tables: allTables)
            for table in allTables {
                XCTAssertEqual(onPostgres[table], onSQLite[table], "\(c.job): \(table) differs between the engines")
            }
            guard c.restorable else { continue }
            let restore = try TestSupport.winnow(["restore", "--run", "1", "--database", url])
            XCTAssertEqual(restore.status, 0, "\(c.job): \(restore.stderr)")
            XCTAssertEqual(try PostgresServer.rows(url, tables: tables), loaded, "\(c.job): restore is not exact")
        }
    }

    /// Property: a rule with several keys (case-folded e-mail, phone, similar names inside one
    /// birth date) keeps the same rows on both engines, whatever the order the rows were
    /// inserted in and the batch size.
    func testAnyKeysSameSurvivorsOnBothEnginesWhateverTheOrder() throws {
        let url = try PostgresServer.require()
        for seed: UInt64 in [1, 2, 3] {
            var random = SplitMix64(seed: seed)
            func pick(_ items: [String]) -> String { items[Int(random.next() % UInt64(items.count))] }
            let rows = (0..<(25 + Int(random.next() % 20))).map { _ in
                [
                    pick(["'a@x'", "' A@X'", "'b@x'", "'B@x '", "'c@x'", "NULL", "NULL", "'Émile@x'", "'émile@X'"]),
                    pick(["'1'", "'2'", "'3'", "NULL", "NULL", "NULL"]), pick(["'jon'", "'john'", "'joan'", "'marie'", "'Zoë'", "NULL"]),
                    pick(["'1'", "'2'", "NULL"]), String(random.next() % 4),
                ].joined(separator: ", ")
            }
            let dir = try TestSupport.scratchDirectory("\(#function)-\(seed)")
            func database(_ name: String, order: [Int]) throws -> String {
                let statements = order.enumerated().map { "INSERT INTO people VALUES (\($0 * 5 + 1), \(rows[$1]));" }
                return try TestSupport.makeDatabase(
                    at: dir.appendingPathComponent(name).path,
                    sql: AnyKeyFixture.generatedTable + statements.joined())
            }
            let inOrder = try database("in-order.sqlite", order: Array(rows.indices))
            let shuffled = try database("shuffled.sqlite", order: rows.indices.shuffled(using: &random))
            try PostgresServer.reset(url)
            try PostgresServer.load(inOrder, into: url)
            let job = try TestSupport.writeFile(AnyKeyFixture.generatedJob(batch: 2), to: dir.appendingPathComponent("job.yaml").path)
            for database in [url, inOrder, shuffled] {
                let result = try TestSupport.winnow(["run", job, "--database", database])
                XCTAssertEqual(result.status, 0, result.stderr)
            }
            let onPostgres = try PostgresServer.rows(url, tables: ["people"])["people"] ?? []
            XCTAssertLessThan(onPostgres.count, rows.count, "seed \(seed): nothing was linked")
            XCTAssertEqual(onPostgres, try PostgresServer.rows(inOrder, tables: ["people"])["people"], "seed \(seed)")
            // Another order gives other ids, the same surviving content.
            let content = { (location: String) in
                try PostgresServer.rows(location, tables: ["people"], keep: { $1.name != "id" })["people"]?.sorted() ?? []
            }
            XCTAssertEqual(try content(shuffled), try content(url), "seed \(seed)")
        }
    }

    /// `key: {any: ...}` on PostgreSQL as on SQLite: plan's JSON names which key linked each
    /// loser to which row, and a group over max_group_size refuses the run (exit 65, guard
    /// `max_group_size`, nothing changed).
    func testAnyKeysPlanLinksAndGroupSizeRefusal() throws {
        let url = try PostgresServer.require()
        let dir = try TestSupport.scratchDirectory()
        try PostgresServer.reset(url, loading: dir.appendingPathComponent("db.sqlite").path, sql: AnyKeyFixture.people)
        let loaded = try PostgresServer.rows(url, tables: ["people", "orders"])
        let job = """
            version: 1
            dedupe:
              - entity: people
                key:
                  any:
            \(AnyKeyFixture.keys)
                winner: [{id: asc}]

            """
        let plain = try TestSupport.writeFile(job, to: dir.appendingPathComponent("job.yaml").path)
        let plan = try TestSupport.winnow(["plan", plain, "--database", url, "--format", "json"])
        XCTAssertEqual(plan.status, 0, plan.stderr)
        let summary = plan.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.first { $0["event"] as? String == "summary" }
        let rule = (summary?["rules"] as? [[String: Any]])?.first
        let links = ((rule?["sample_groups"] as? [[String: Any]]) ?? []).flatMap { ($0["linked_by"] as? [[String: Any]]) ?? [] }
        XCTAssertEqual(
            links.map { "\($0["row"] ?? "") \($0["key"] ?? "") \($0["to"] ?? "")" },
            ["2 email (trim, lowercase) 1", "3 phone 2", "5 name + born 4"])
        let limited = try TestSupport.writeFile(job + "    max_group_size: 2\n", to: dir.appendingPathComponent("limited.yaml").path)
        let run = try TestSupport.winnow(["run", limited, "--database", url, "--format", "json"])
        XCTAssertEqual(run.status, 65, run.stderr)
        XCTAssertTrue((run.stdout + run.stderr).contains("\"guard\":\"max_group_size\""), run.stdout + run.stderr)
        XCTAssertEqual(try PostgresServer.rows(url, tables: ["people", "orders"]), loaded)
    }

    /// Survivorship per attribute: `latest`, `prefer` and `most_frequent` give the winner the
    /// same values on both engines, plan names the row each value comes from, and restore puts
    /// the rows back exactly.
    func testPickedMergesAreTheSameOnBothEnginesAndRestore() throws {
        let url = try PostgresServer.require()
        let dir = try TestSupport.scratchDirectory()
        let copy = try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("db.sqlite").path,
            sql: """
                CREATE TABLE c (id INTEGER PRIMARY KEY, email TEXT, phone TEXT, city TEXT, source TEXT, updated_at TEXT, tier TEXT, n INTEGER);
                INSERT INTO c VALUES (1, 'a@x', '111', 'Oslo', 'web', '2024-01-01', 'gold', 1),
                    (2, 'a@x', NULL, 'Bergen', 'crm', '2024-03-01', 'silver', 2), (3, 'a@x', '222', NULL, 'import', '2024-05-01', 'silver', 2),
                    (4, 'a@x', '333', 'Rome', NULL, NULL, NULL, 3), (5, 'b@x', '9', 'Paris', 'import', '2023-01-01', 'x', NULL),
                    (6, 'b@x', NULL, NULL, 'web', '2025-01-01', NULL, 7);
                """)
        try PostgresServer.reset(url)
        try PostgresServer.load(copy, into: url)
        let loaded = try PostgresServer.rows(url, tables: ["c"])
        let job = try TestSupport.writeFile(
            """
            version: 1
            dedupe:
              - entity: c
                key: email
                winner: [{id: asc}]
                merge:
                  phone: {latest: updated_at}
                  city: {prefer: {column: source, order: [crm, web, import]}}
                  tier: most_frequent
                  n: most_frequent
            """, to: dir.appendingPathComponent("job.yaml").path)
        for database in [url, copy] {
            let plan = try TestSupport.winnow(["plan", job, "--database", database])
            XCTAssertTrue(plan.stdout.contains("merge: phone '111' -> '222' (from id 3)"), plan.stdout)
            XCTAssertTrue(plan.stdout.contains("merge: city 'Oslo' -> 'Bergen' (from id 2)"), plan.stdout)
            let run = try TestSupport.winnow(["run", job, "--database", database])
            XCTAssertEqual(run.status, 0, run.stderr)
        }
        let onPostgres = try PostgresServer.rows(url, tables: ["c"])
        XCTAssertEqual(onPostgres, try PostgresServer.rows(copy, tables: ["c"]))
        let kept = try BackendRouter().withSession(url, mode: .readOnly) { session in
            try session.rows("SELECT phone, city, tier, n FROM c ORDER BY id").map { $0.values.map { $0.string ?? "NULL" } }
        }
        XCTAssertEqual(kept, [["222", "Bergen", "silver", "2"], ["9", "Paris", "x", "7"]])
        XCTAssertEqual(try TestSupport.winnow(["restore", "--run", "1", "--database", url]).status, 0)
        XCTAssertEqual(try PostgresServer.rows(url, tables: ["c"]), loaded)
        XCTAssertEqual(try TestSupport.winnow(["restore", "--run", "1", "--database", copy]).status, 0)
        XCTAssertEqual(try PostgresServer.rows(copy, tables: ["c"]), loaded)
    }

    /// A job's `sqlite:` section (WAL for a SQLite file) is ignored by PostgreSQL: the same job
    /// file runs on both engines, with the same survivors, and the SQLite copy ends in WAL.
    func testSQLiteSectionRunsUnchangedOnPostgreSQL() throws {
        let url = try PostgresServer.require()
        let dir = try TestSupport.scratchDirectory()
        let copy = dir.appendingPathComponent("db.sqlite").path
        try FileManager.default.copyItem(
            atPath: TestSupport.repositoryRoot.appendingPathComponent("examples/contacts.sqlite").path, toPath: copy)
        try PostgresServer.reset(url)
        try PostgresServer.load(copy, into: url)
        let job = try TestSupport.writeFile(
            "version: 1\nsqlite:\n  journal_mode: wal\ndedupe:\n  - entity: contacts\n    key: email\n    normalize: [trim, lowercase]\n",
            to: dir.appendingPathComponent("job.yaml").path)
        let pg = try TestSupport.winnow(["run", job, "--database", url])
        XCTAssertEqual(pg.status, 0, pg.stderr)
        let sqlite = try TestSupport.winnow(["run", job, "--database", copy])
        XCTAssertEqual(sqlite.status, 0, sqlite.stderr)
        XCTAssertEqual(try PostgresServer.rows(url, tables: ["contacts"]), try PostgresServer.rows(copy, tables: ["contacts"]))
        XCTAssertEqual(try DatabaseQueue(path: copy).read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }, "wal")
    }

    /// Property: generated rows with Unicode keys (case, NFKC forms, every kind of white space,
    /// non-ASCII digits, dotted capital I, final sigma, ties on the winner order) end with the
    /// same survivors, merges and re-pointed children on both engines, for several seeds.
    func testGeneratedUnicodeDataSameSurvivorsOnBothEngines() throws {
        let url = try PostgresServer.require()
        let bases = [
            "émile@example.fr", "ΣΟΦΙΑ@example.gr", "İstanbul@example.tr", "straße@example.de", "ＦＵＬＬ@example.jp", "ﬁne@example.com",
            "kafka@example.cz", "Ǆemal@example.ba", "ﬀ@example.org", "zoë@example.nl",
        ]
        let spaces = ["", " ", "\u{00A0}", "\u{3000}", "\t", "\u{2009}"]
        for seed: UInt64 in [1, 2, 3] {
            var random = SplitMix64(seed: seed)
            let dir = try TestSupport.scratchDirectory("\(#function)-\(seed)")
            let path = dir.appendingPathComponent("gen.sqlite").path
            let queue = try DatabaseQueue(path: path)
            try queue.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, phone TEXT, score INTEGER, note TEXT, seen TEXT);
                        CREATE TABLE visits (id INTEGER PRIMARY KEY, person_id INTEGER NOT NULL REFERENCES people(id), n INTEGER);
                        CREATE INDEX visits_person ON visits (person_id);
                        CREATE TABLE tags (person_id INTEGER NOT NULL REFERENCES people(id), tag TEXT NOT NULL, PRIMARY KEY (person_id, tag));
                        """)
                for id in 1...300 {
                    var email = bases[Int(random.next() % UInt64(bases.count))]
                    switch random.next() % 4 {
                    case 0: email = email.uppercased()
                    case 1: email = email.lowercased()
                    case 2: email = email.decomposedStringWithCompatibilityMapping
                    default: break
                    }
                    email = spaces[Int(random.next() % 6)] + email + spaces[Int(random.next() % 6)]
                    let nullEmail = random.next() % 20 == 0
                    let phone = "+\(random.next() % 3) \u{0661}\u{0662}-\(random.next() % 5)"
                    try db.execute(
                        sql: "INSERT INTO people VALUES (?, ?, ?, ?, ?, ?)",
                        arguments: [
                            id, nullEmail ? nil : email, phone, Int(random.next() % 4),
                            random.next() % 3 == 0 ? nil : "n\(random.next() % 5)",
                            "2024-0\(1 + random.next() % 3)",
                        ])
                    for _ in 0..<Int(random.next() % 3) {
                        try db.execute(sql: "INSERT INTO visits (person_id, n) VALUES (?, ?)", arguments: [id, Int(random.next() % 100)])
                    }
                    for tag in ["a", "b", "c"] where random.next() % 2 == 0 {
                        try db.execute(sql: "INSERT INTO tags VALUES (?, ?)", arguments: [id, tag])
                    }
                }
            }
            try queue.close()
            let job = try TestSupport.writeFile(
                """
                version: 1
                dedupe:
                  - entity: people
                    key: email
                    normalize: [nfkc, trim, collapse_whitespace, lowercase]
                    winner:
                      - score: desc
                    merge:
                      note: concat
                      score: sum
                      seen: max
                    archive: true
                  - entity: people
                    key: [phone, seen]
                    hash: true
                    normalize:
                      phone: [nfkc, digits_only]
                    nulls: equal
                    winner: most_complete
                    archive: true
                batch:
                  size: 7
                """, to: dir.appendingPathComponent("job.yaml").path)
            try PostgresServer.reset(url)
            try PostgresServer.load(path, into: url)
            let tables = ["people", "visits", "tags"]
            let loaded = try PostgresServer.rows(url, tables: tables)
            let pg = try TestSupport.winnow(["run", job, "--database", url])
            XCTAssertEqual(pg.status, 0, pg.stderr)
            let lite = try TestSupport.winnow(["run", job, "--database", path])
            XCTAssertEqual(lite.status, 0, lite.stderr)
            let onPostgres = try PostgresServer.rows(url, tables: tables)
            let onSQLite = try PostgresServer.rows(path, tables: tables)
            for table in tables { XCTAssertEqual(onPostgres[table], onSQLite[table], "seed \(seed): \(table) differs") }
            XCTAssertLessThan(onPostgres["people"]?.count ?? 0, 300, "seed \(seed): the data has duplicates")
            XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", url]).status, 0)
            XCTAssertEqual(try TestSupport.winnow(["restore", "--run", "1", "--database", url]).status, 0)
            XCTAssertEqual(try PostgresServer.rows(url, tables: tables), loaded, "seed \(seed): restore is not exact")
        }
    }

    /// A key column under a case-blind (nondeterministic) collation groups as SQLite's BINARY
    /// does, byte by byte: `A@x` and `a@x` are two keys on both engines, in discovery and in
    /// the batches alike, and `check` counts the same one group (a normaliser is how a job asks
    /// for case-blind keys).
    func testKeysGroupByBytesWhateverTheColumnsCollation() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "c.sqlite",
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL);
                INSERT INTO people VALUES (1, 'A@x', 1), (2, 'a@x', 2), (3, 'a@x', 3), (4, 'B@y', 4), (5, 'b@Y', 5);
                """)
        let created = try BackendRouter().withSession(url, mode: .readWrite(create: false)) { session -> Bool in
            do {
                try session.execute(
                    "CREATE COLLATION public.winnow_test_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
            } catch {
                return false
            }
            try session.execute("ALTER TABLE public.people ALTER COLUMN email TYPE text COLLATE public.winnow_test_ci")
            // The collation is case-blind: the server itself sees one key where SQLite sees two.
            XCTAssertEqual(try session.value("SELECT count(DISTINCT email) FROM public.people").int, 2)
            return true
        }
        guard created else { throw XCTSkip("this server has no ICU collations") }
        let job = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: people, key: email, winner: [{created: asc}], archive: false}\nbatch: {size: 1}\n",
            to: dir.appendingPathComponent("job.yaml").path)
        for engine in [data, url] {
            let before = try TestSupport.winnow(["check", job, "--database", engine, "--format", "json"])
            XCTAssertEqual(before.status, 1, "\(engine): \(before.stdout)\(before.stderr)")
            XCTAssertTrue(before.stdout.contains("\"groups\":1"), "\(engine): one group of duplicates: \(before.stdout)")
            let run = try TestSupport.winnow(["run", job, "--database", engine])
            XCTAssertEqual(run.status, 0, "\(engine): \(run.stderr)")
            XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", engine]).status, 0, engine)
        }
        let survivors = try [data, url].map { try PostgresServer.integers($0, "id", of: "people") }
        XCTAssertEqual(survivors[0], [1, 2, 4, 5], "SQLite: only the two byte-equal a@x rows are duplicates")
        XCTAssertEqual(survivors[1], survivors[0], "PostgreSQL keeps the same rows")
    }

    /// `run --plan` applies the saved plan on PostgreSQL as on SQLite: the plan's dry pass runs
    /// first in the same session, and the run then finds every group it approved (two rules on
    /// one table, the second counting without the first's losers in the plan).
    func testRunAppliesTheSavedPlanOnBothEngines() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "two-keys.sqlite",
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, phone TEXT, created INTEGER NOT NULL);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400)
                INSERT INTO people SELECT i, 'e' || (i % 150), 'p' || (i % 70), i FROM n;
                """)
        let job = try TestSupport.writeFile(
            """
            version: 1
            dedupe:
              - {entity: people, key: email, winner: [{created: asc}]}
              - {entity: people, key: phone, winner: [{created: asc}]}
            batch: {size: 7}

            """,
            to: dir.appendingPathComponent("job.yaml").path)
        let plain = dir.appendingPathComponent("plain.sqlite").path
        try FileManager.default.copyItem(atPath: data, toPath: plain)
        XCTAssertEqual(try TestSupport.winnow(["run", job, "--database", plain]).status, 0)
        let expected = try PostgresServer.integers(plain, "id", of: "people")
        XCTAssertLessThan(expected.count, 150, "both rules delete")
        for engine in [data, url] {
            let saved = dir.appendingPathComponent("approved.plan").path
            let plan = try TestSupport.winnow(["plan", job, "--database", engine, "--save", saved, "--format", "json"])
            XCTAssertEqual(plan.status, 0, "\(engine): \(plan.stderr)")
            let run = try TestSupport.winnow(["run", job, "--database", engine, "--plan", saved, "--format", "json"])
            XCTAssertEqual(run.status, 0, "\(engine): \(run.stderr)")
            XCTAssertTrue(run.stdout.contains("\"deleted\":\(400 - expected.count)"), "\(engine): \(run.stdout.suffix(300))")
            XCTAssertEqual(try PostgresServer.integers(engine, "id", of: "people"), expected, "\(engine): the survivors of a plain run")
            let again = try TestSupport.winnow(["run", job, "--database", engine, "--plan", saved])
            XCTAssertEqual(again.status, 65, "\(engine): applied once: \(again.stderr)")
        }
    }

    /// Groups are numbered on the server in key order, not primary-key order: with two-column
    /// keys (NULL parts under `nulls: equal`), a composite primary key whose order differs from
    /// the keys' and batches of two groups, no group is split or merged across batches. (A
    /// composite primary key also ends the winner order by its columns, not as one expression.)
    func testGroupsNumberedByKeyStayWholeAcrossBatches() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "pairs.sqlite",
            sql: """
                CREATE TABLE pairs (a INTEGER NOT NULL, b TEXT NOT NULL, k1 TEXT, k2 INTEGER, created INTEGER NOT NULL, PRIMARY KEY (a, b));
                INSERT INTO pairs VALUES
                    (1, 'a', 'z', 1, 30), (5, 'c', 'z', 1, 10), (9, 'x', 'z', 1, 20),
                    (2, 'b', 'a', NULL, 5), (7, 'q', 'a', NULL, 4),
                    (3, 'z', NULL, NULL, 7), (8, 'm', NULL, NULL, 8),
                    (4, 'd', 'a', 1, 2), (6, 'e', 'a', 1, 1),
                    (10, 'n', 'm', 2, 1), (11, 'o', 'Z', 1, 1);
                """)
        let job = try TestSupport.writeFile(
            """
            version: 1
            dedupe:
              - {entity: pairs, key: [k1, k2], nulls: equal, winner: [{created: asc}], archive: false}
            batch: {size: 2}

            """,
            to: dir.appendingPathComponent("job.yaml").path)
        for engine in [data, url] {
            // plan keeps its groups on the client, in the full order: the same four groups.
            let plan = try TestSupport.winnow(["plan", job, "--database", engine, "--format", "json"])
            XCTAssertEqual(plan.status, 0, "\(engine): \(plan.stderr)")
            XCTAssertTrue(plan.stdout.contains("\"deleted\":5"), "\(engine): plan: \(plan.stdout)")
            let run = try TestSupport.winnow(["run", job, "--database", engine, "--format", "json"])
            XCTAssertEqual(run.status, 0, "\(engine): \(run.stderr)")
            XCTAssertTrue(run.stdout.contains("\"groups\":4"), "\(engine): four groups: \(run.stdout)")
            XCTAssertTrue(run.stdout.contains("\"deleted\":5"), "\(engine): five losers: \(run.stdout)")
        }
        let survivors = try [data, url].map { try PostgresServer.integers($0, "a", of: "pairs") }
        XCTAssertEqual(survivors[0], [3, 5, 6, 7, 10, 11], "SQLite: the earliest row of each key survives")
        XCTAssertEqual(survivors[1], survivors[0], "PostgreSQL keeps the same rows")
    }

    /// Children pointing at the parent's key and children pointing at another unique column of
    /// it are re-pointed alike on both engines (the first reached by the losers' keys, the second
    /// through the parent rows), over several batches, and restore gives every row back.
    func testChildrenOfTheKeyAndOfAnotherUniqueColumnAreRepointedAlike() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "codes.sqlite",
            sql: """
                CREATE TABLE accounts (id INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, email TEXT, created INTEGER NOT NULL);
                CREATE TABLE logins (id INTEGER PRIMARY KEY, account_code TEXT REFERENCES accounts(code), at INTEGER);
                CREATE TABLE notes (id INTEGER PRIMARY KEY, account_id INTEGER REFERENCES accounts(id), body TEXT);
                CREATE INDEX notes_account ON notes (account_id);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60)
                INSERT INTO accounts SELECT i, 'c' || i, 'user' || (i % 20) || '@x', 100 - i FROM n;
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 90)
                INSERT INTO logins SELECT i, 'c' || (1 + (i * 7) % 60), i FROM n;
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 90)
                INSERT INTO notes SELECT i, 1 + (i * 11) % 60, 'n' || i FROM n;
                """)
        let job = try TestSupport.writeFile(
            """
            version: 1
            dedupe:
              - {entity: accounts, key: email, winner: [{created: asc}], archive: true}
            batch: {size: 4}

            """, to: dir.appendingPathComponent("job.yaml").path)
        let tables = ["accounts", "logins", "notes"]
        let loaded = try PostgresServer.rows(url, tables: tables)
        for engine in [data, url] {
            // docs/reference.md section 1: plan gives the counts the run then has (both re-pointing paths).
            for command in ["plan", "run"] {
                let result = try TestSupport.winnow([command, job, "--database", engine, "--format", "json"])
                XCTAssertEqual(result.status, 0, "\(engine) \(command): \(result.stderr)")
                XCTAssertTrue(result.stdout.contains("\"deleted\":40"), "\(engine) \(command): \(result.stdout)")
                // 61 logins and 61 notes point at the losers (accounts 1-40).
                XCTAssertTrue(
                    result.stdout.split(separator: "\n").last?.contains("\"repointed\":122,") == true,
                    "\(engine) \(command): every login and note of a loser moves: \(result.stdout)")
            }
        }
        let onSQLite = try PostgresServer.rows(data, tables: tables)
        XCTAssertEqual(try PostgresServer.rows(url, tables: tables), onSQLite)
        let winners = Set((41...60).map { "c\($0)" })
        XCTAssertEqual(onSQLite["logins"]?.filter { !winners.contains(String($0.split(separator: "|")[1])) }, [], "logins point at winners")
        let restore = try TestSupport.winnow(["restore", "--run", "1", "--database", url])
        XCTAssertEqual(restore.status, 0, restore.stderr)
        XCTAssertEqual(try PostgresServer.rows(url, tables: tables), loaded, "restore is exact")
    }

    /// A primary key of an array type (PostgreSQL only) is refused before anything is read or
    /// written, naming the column (its batches would look rows up by arrays of keys; the server
    /// had answered "operator does not exist: integer[] = integer", exit 74).
    func testArrayPrimaryKeyIsRefusedClearly() throws {
        let url = try PostgresServer.require()
        try PostgresServer.reset(url)
        try BackendRouter().withSession(url, mode: .readWrite(create: false)) { session in
            try session.execute("CREATE TABLE public.parts (id integer[] PRIMARY KEY, code text, made integer NOT NULL)")
            try session.execute("INSERT INTO public.parts VALUES ('{1,1}', 'a', 3), ('{1,2}', 'a', 1), ('{3,1}', 'c', 1)")
        }
        let dir = try TestSupport.scratchDirectory()
        let job = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: parts, key: code, winner: [{made: asc}]}\n", to: dir.appendingPathComponent("job.yaml").path)
        for command in ["plan", "run"] {
            let result = try TestSupport.winnow([command, job, "--database", url])
            XCTAssertEqual(result.status, 65, "\(command): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("'parts' has a primary key of an array type (id integer[])"), result.stderr)
        }
        XCTAssertEqual(try PostgresServer.integers(url, "made", of: "parts"), [1, 1, 3], "nothing was changed")
    }

    /// `plan` names a group's rows by the table's own identity: an `INTEGER PRIMARY KEY` on
    /// SQLite and a primary key on PostgreSQL print the same lines (PostgreSQL had numbered the
    /// rows itself and called them rowids).
    func testPlanNamesRowsTheSameWayOnBothEngines() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "named.sqlite",
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL);
                INSERT INTO people VALUES (10, 'a', 3), (20, 'a', 1), (30, 'b', 1), (40, 'b', 2), (50, 'c', 1);
                CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES people(id));
                INSERT INTO orders VALUES (1, 10), (2, 10), (3, 40);
                """)
        let job = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: people, key: email, winner: [{created: asc}]}\n",
            to: dir.appendingPathComponent("job.yaml").path)
        let outputs = try [data, url].map { engine -> [String] in
            let result = try TestSupport.winnow(["plan", job, "--database", engine])
            XCTAssertEqual(result.status, 0, "\(engine): \(result.stderr)")
            return result.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix("  group") || $0.hasPrefix("     ") }
        }
        XCTAssertTrue(outputs[0].contains("  group 'a': keep id 20; delete id 10"), outputs[0].joined(separator: "\n"))
        XCTAssertTrue(
            outputs[0].contains("      re-point: 2 rows of orders.person_id from id 10 to id 20"), outputs[0].joined(separator: "\n"))
        XCTAssertEqual(outputs[1], outputs[0])
    }

    /// A SQLite `WITHOUT ROWID` table is named, deduplicated, re-pointed and restored by its
    /// primary key as the same table is on PostgreSQL: the same plan lines, the same survivors
    /// and children, and every row back after `restore`, on both engines.
    func testWithoutRowIDTableReadsAndRunsAsOnPostgreSQL() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "keyed.sqlite",
            sql: """
                CREATE TABLE codes (region TEXT NOT NULL, code INTEGER NOT NULL, label TEXT, made INTEGER NOT NULL, visits INTEGER,
                    PRIMARY KEY (region, code)) WITHOUT ROWID;
                INSERT INTO codes VALUES ('eu', 7, 'x', 2, 1), ('us', 3, 'x', 1, NULL), ('eu', 8, 'y', 1, 4), ('us', 9, 'y', 1, 5),
                    ('ca', 1, 'x', 3, 2), ('ca', 2, 'z', 1, 1);
                CREATE TABLE uses (id INTEGER PRIMARY KEY, region TEXT, code INTEGER, FOREIGN KEY (region, code) REFERENCES codes (region, code));
                INSERT INTO uses VALUES (1, 'eu', 7), (2, 'ca', 1), (3, 'us', 9), (4, 'ca', 2);
                """)
        let job = try TestSupport.writeFile(
            """
            version: 1
            dedupe:
              - {entity: codes, key: label, winner: [{made: asc}], merge: {visits: sum}, references: repoint, archive: true}
            batch: {size: 1}
            """, to: dir.appendingPathComponent("job.yaml").path)
        let original = try PostgresServer.rows(data, tables: ["codes", "uses"])
        XCTAssertEqual(try PostgresServer.rows(url, tables: ["codes", "uses"]), original)
        let plans = try [data, url].map { engine -> [String] in
            let result = try TestSupport.winnow(["plan", job, "--database", engine])
            XCTAssertEqual(result.status, 0, "\(engine): \(result.stderr)")
            return result.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix("  group") || $0.hasPrefix("     ") }
        }
        XCTAssertTrue(
            plans[0].contains(
                "  group 'x': keep (region, code) = ('us', 3); delete (region, code) = ('eu', 7), (region, code) = ('ca', 1)"),
            plans[0].joined(separator: "\n"))
        // (Groups come in each engine's batch order: compare them as a set.)
        func groups(_ lines: [String]) -> [String] {
            lines.reduce(into: [String]()) { blocks, line in
                if line.hasPrefix("  group") || blocks.isEmpty { blocks.append(line) } else { blocks[blocks.count - 1] += "\n" + line }
            }.sorted()
        }
        XCTAssertEqual(groups(plans[1]), groups(plans[0]))
        for engine in [data, url] {
            let result = try TestSupport.winnow(["run", job, "--database", engine])
            XCTAssertEqual(result.status, 0, "\(engine): \(result.stderr)")
        }
        let after = try PostgresServer.rows(data, tables: ["codes", "uses"])
        XCTAssertEqual(after["codes"], ["ca|2|z|1|1", "eu|8|y|1|9", "us|3|x|1|3"])
        XCTAssertEqual(after["uses"], ["1|us|3", "2|us|3", "3|eu|8", "4|ca|2"])
        XCTAssertEqual(try PostgresServer.rows(url, tables: ["codes", "uses"]), after)
        for engine in [data, url] {
            let result = try TestSupport.winnow(["restore", "--run", "1", "--database", engine])
            XCTAssertEqual(result.status, 0, "\(engine): \(result.stderr)")
            XCTAssertEqual(try PostgresServer.rows(engine, tables: ["codes", "uses"]), original, engine)
        }
    }

    /// A composite primary key names a row by every column of it, as SQL spells the values, in
    /// the text and in the JSON of `plan`.
    func testPlanNamesRowsByACompositePrimaryKey() throws {
        let url = try PostgresServer.require()
        try PostgresServer.reset(url)
        try BackendRouter().withSession(url, mode: .readWrite(create: false)) { session in
            try session.execute(
                "CREATE TABLE public.codes (region text, code integer, label text, made integer NOT NULL, PRIMARY KEY (region, code))")
            try session.execute("INSERT INTO public.codes VALUES ('eu', 7, 'x', 2), ('us', 3, 'x', 1), ('eu', 8, 'y', 1)")
        }
        let dir = try TestSupport.scratchDirectory()
        let job = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: codes, key: label, winner: [{made: asc}]}\n", to: dir.appendingPathComponent("job.yaml").path
        )
        let text = try TestSupport.winnow(["plan", job, "--database", url])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("  group 'x': keep (region, code) = ('us', 3); delete (region, code) = ('eu', 7)"), text.stdout)
        XCTAssertTrue(text.stdout.contains("region, code  label"), text.stdout)
        let json = try TestSupport.winnow(["plan", job, "--database", url, "--format", "json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let line = try XCTUnwrap(json.stdout.split(separator: "\n").last)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let rule = try XCTUnwrap((object["rules"] as? [[String: Any]])?.first)
        let sample = try XCTUnwrap((rule["sample_groups"] as? [[String: Any]])?.first)
        XCTAssertEqual(sample["identity"] as? [String], ["region", "code"])
        XCTAssertEqual(sample["winner"] as? NSArray, ["us", 3] as NSArray)
        XCTAssertEqual(sample["losers"] as? NSArray, [["eu", 7]] as NSArray)
    }

    /// A restore that a later run blocks is refused before it changes anything, naming that
    /// run, with the same words on both engines (PostgreSQL had named no run); restoring the
    /// later run first, then the earlier one, brings every row back. A later run that changed
    /// only the merged winner (no row it deleted exists again) blocks too: restoring the earlier
    /// run first would put back an image older than the later run's change.
    func testRestoreBlockedByALaterRunNamesItOnBothEngines() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "blocked.sqlite",
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, name TEXT, visits INTEGER);
                INSERT INTO people VALUES (1, 'a@x', 'Ann', 1), (2, 'a@x', 'Ann', 2), (3, 'b@x', 'Ann', 4), (4, 'c@x', 'Bo', 1), (5, 'c@x', 'Bo', 1);
                """)
        let byEmail = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: people, key: email, archive: true, merge: {visits: sum}}\n",
            to: dir.appendingPathComponent("by-email.yaml").path)
        let byName = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: people, key: name, archive: true, winner: [{visits: desc}], merge: {visits: sum}}\n",
            to: dir.appendingPathComponent("by-name.yaml").path)
        let original = try PostgresServer.rows(data, tables: ["people"])
        var refusals: [String] = []
        for engine in [data, url] {
            for job in [byEmail, byName] {
                let result = try TestSupport.winnow(["run", job, "--database", engine])
                XCTAssertEqual(result.status, 0, "\(engine): \(result.stderr)")
            }
            let before = try PostgresServer.rows(engine, tables: ["people"])
            let blocked = try TestSupport.winnow(["restore", "--database", engine, "--run", "1"])
            XCTAssertEqual(blocked.status, 65, "\(engine): \(blocked.stderr)")
            refusals.append(blocked.stderr)
            XCTAssertEqual(try PostgresServer.rows(engine, tables: ["people"]), before, "\(engine): the refused restore changed nothing")
            for run in ["2", "1"] {
                let result = try TestSupport.winnow(["restore", "--database", engine, "--run", run])
                XCTAssertEqual(result.status, 0, "\(engine) run \(run): \(result.stderr)")
            }
            XCTAssertEqual(try PostgresServer.rows(engine, tables: ["people"]), original, engine)
        }
        XCTAssertTrue(
            refusals[0].contains("cannot restore run 1: run 2 changed rows of people that this run changed: restore run 2 first"),
            refusals[0])
        XCTAssertEqual(refusals[1], refusals[0])
    }

    /// The guards checked before a migration refuse the same jobs with the same words on both
    /// engines, and neither engine migrates anything first: a delete share over the limit, and a
    /// new unique index over a key that rows still share once the job's rules ran. A rule with
    /// no guard on a table without a new unique index is not in the way.
    func testGuardsBeforeAMigrationReadTheSameOnBothEngines() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "guards.sqlite",
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, name TEXT, created INTEGER NOT NULL);
                INSERT INTO people VALUES (1, 'a', 'x', 3), (2, 'a', 'y', 1), (3, 'b', 'x', 1), (4, 'c', 'x', 1), (5, 'b', 'w', 2);
                CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
                INSERT INTO notes VALUES (1, 'n'), (2, 'n');
                """)
        let schema = { (index: String) in
            """
            version: 2
            tables:
              notes:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: body, type: text}
              people:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: email, type: text}
                  - {name: name, type: text}
                  - {name: created, type: integer, nullable: false}
                  - {name: source, type: text, default: import}
                indexes:
                  - {name: people_unique, columns: [\(index)], unique: true}
            """
        }
        let cases: [(index: String, rules: String, message: String)] = [
            (
                "email", "  - {entity: people, key: email, winner: [{created: asc}], max_delete_percent: 10}\n",
                "more than max_delete_percent"
            ),
            (
                "name", "  - {entity: people, key: email, winner: [{created: asc}]}\n  - {entity: notes, key: body}\n",
                "cannot create unique index people_unique on people(name): 2 rows in 1 group(s) share a key"
            ),
        ]
        for (index, rules, message) in cases {
            try TestSupport.writeFile(schema(index), to: dir.appendingPathComponent("schema.yaml").path)
            let job = try TestSupport.writeFile(
                "version: 1\nschema: schema.yaml\ndedupe:\n\(rules)", to: dir.appendingPathComponent("job.yaml").path)
            let refusals = try [data, url].map { engine -> String in
                let before = try PostgresServer.rows(engine, tables: ["people", "notes"])
                let result = try TestSupport.winnow(["run", job, "--database", engine])
                XCTAssertEqual(result.status, 65, "\(engine): \(result.stderr)")
                XCTAssertEqual(try PostgresServer.rows(engine, tables: ["people", "notes"]), before, "\(engine): nothing was changed")
                let columns = try BackendRouter().withSession(engine, mode: .readOnly) {
                    try $0.inspect().table(named: "people")?.columns.map(\.name)
                }
                XCTAssertEqual(columns, ["id", "email", "name", "created"], "\(engine): nothing was migrated")
                return result.stderr
            }
            XCTAssertTrue(refusals[0].contains(message), refusals[0])
            XCTAssertTrue(refusals[0].contains("nothing was changed"), refusals[0])
            XCTAssertEqual(refusals[1], refusals[0], index)
        }
    }

    /// A seed that names a directory, a missing file or a table the seed lacks is refused with
    /// the same words on both engines (PostgreSQL had called a directory "no such seed
    /// database"), and nothing is seeded.
    func testSeedRefusalsReadTheSameOnBothEngines() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "target.sqlite", sql: "CREATE TABLE tags (id INTEGER PRIMARY KEY, label TEXT);")
        try TestSupport.makeDatabase(
            at: dir.appendingPathComponent("seed.sqlite").path, sql: "CREATE TABLE tags (id INTEGER PRIMARY KEY, label TEXT);")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("seeds"), withIntermediateDirectories: true)
        let cases: [(from: String, tables: String, message: String)] = [
            ("seeds", "[tags]", "/seeds: is a directory, not a seed database; nothing was changed"),
            ("missing.sqlite", "[tags]", "/missing.sqlite: no such seed database; nothing was changed"),
            ("seed.sqlite", "[tags, colors]", "seed.tables: the seed database has no table 'colors'"),
        ]
        for (from, tables, message) in cases {
            let job = try TestSupport.writeFile(
                "version: 1\nseed:\n  name: base\n  from: \(from)\n  tables: \(tables)\n", to: dir.appendingPathComponent("job.yaml").path)
            let refusals = try [data, url].map { engine -> String in
                let result = try TestSupport.winnow(["run", job, "--database", engine], in: dir)
                XCTAssertNotEqual(result.status, 0, "\(engine): \(result.stderr)")
                XCTAssertEqual(try PostgresServer.integers(engine, "id", of: "tags"), [], "\(engine): nothing was seeded")
                return "\(result.status) \(result.stderr)"
            }
            XCTAssertTrue(refusals[0].contains(message), refusals[0])
            XCTAssertEqual(refusals[1], refusals[0], from)
        }
    }

    /// Dropping a column that a table constraint names is refused on both engines with the same
    /// words, and nothing changes: PostgreSQL's DROP COLUMN would have dropped the CHECK over
    /// two columns with it (the inspector had described only the key and foreign keys).
    func testDropOfAColumnACheckNamesIsRefusedOnBothEngines() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "check.sqlite",
            sql: """
                CREATE TABLE spans (id INTEGER PRIMARY KEY, lo INTEGER, hi INTEGER, note TEXT, CHECK (lo <= hi));
                INSERT INTO spans VALUES (1, 1, 2, 'a');
                """)
        // scripts/pg-load carries keys and indexes over, not CHECK constraints.
        try BackendRouter().withSession(url, mode: .readWrite(create: false)) { session in
            try session.execute("ALTER TABLE public.spans ADD CHECK (lo <= hi)")
        }
        try TestSupport.writeFile(
            """
            version: 2
            tables:
              spans:
                columns:
                  - {name: id, type: integer, primary_key: true}
                  - {name: lo, type: integer}
                  - {name: note, type: text}
                dropped: [hi]
            """, to: dir.appendingPathComponent("schema.yaml").path)
        let job = try TestSupport.writeFile(
            "version: 1\nschema: schema.yaml\nallow_data_loss: true\n", to: dir.appendingPathComponent("job.yaml").path)
        let refusals = try [data, url].map { engine -> String in
            let result = try TestSupport.winnow(["run", job, "--database", engine])
            XCTAssertEqual(result.status, 65, "\(engine): \(result.stderr)")
            let columns = try BackendRouter().withSession(engine, mode: .readOnly) {
                try $0.inspect().table(named: "spans")?.columns.map(\.name)
            }
            XCTAssertEqual(columns, ["id", "lo", "hi", "note"], engine)
            return result.stderr
        }
        XCTAssertTrue(refusals[0].contains("is named by a table constraint"), refusals[0])
        XCTAssertEqual(refusals[1], refusals[0])
    }

    /// `references: restrict` refuses with the same words on both engines, naming the first
    /// row that would be deleted by its identity (PostgreSQL had named none), and changes
    /// nothing.
    func testRestrictRefusalReadsTheSameOnBothEngines() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "restrict.sqlite",
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL);
                INSERT INTO people VALUES (10, 'a', 3), (20, 'a', 1), (30, 'b', 2), (40, 'b', 1);
                CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES people(id));
                CREATE INDEX orders_person ON orders (person_id);
                INSERT INTO orders VALUES (1, 30), (2, 10), (3, 20);
                """)
        let job = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: people, key: email, winner: [{created: asc}], references: restrict}\n",
            to: dir.appendingPathComponent("job.yaml").path)
        let refusals = try [data, url].map { engine -> String in
            let result = try TestSupport.winnow(["run", job, "--database", engine])
            XCTAssertEqual(result.status, 65, "\(engine): \(result.stderr)")
            XCTAssertEqual(try PostgresServer.integers(engine, "id", of: "people"), [10, 20, 30, 40], engine)
            return result.stderr
        }
        XCTAssertTrue(
            refusals[0].contains(
                "references: restrict, and 2 row(s) of orders.person_id point at rows that would be deleted (first: id 10); nothing was changed"
            ),
            refusals[0])
        XCTAssertEqual(refusals[1], refusals[0])
    }

    /// `max_delete_percent` refuses with the same words on both engines (one guard; the limit
    /// was printed "-0" on PostgreSQL and "0" on SQLite), and neither engine changes a row.
    func testDeleteShareRefusalReadsTheSameOnBothEngines() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "share.sqlite",
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL);
                INSERT INTO people VALUES (1, 'a', 3), (2, 'a', 1), (3, 'b', 1), (4, 'c', 1), (5, 'b', 2), (6, 'd', 1), (7, 'e', 1), (8, 'f', 1);
                """)
        for limit in ["-0.0", "12.5", "24"] {
            let job = try TestSupport.writeFile(
                "version: 1\ndedupe:\n  - {entity: people, key: email, winner: [{created: asc}], max_delete_percent: \(limit)}\n",
                to: dir.appendingPathComponent("job.yaml").path)
            let refusals = try [data, url].map { engine in
                let result = try TestSupport.winnow(["run", job, "--database", engine])
                XCTAssertEqual(result.status, 65, "\(engine): \(result.stderr)")
                return result.stderr
            }
            XCTAssertTrue(refusals[0].contains("would delete 2 of 8 rows (25.0%), more than max_delete_percent"), refusals[0])
            XCTAssertTrue(refusals[0].contains("; nothing was changed"), refusals[0])
            XCTAssertEqual(refusals[1], refusals[0], "limit \(limit)")
        }
        XCTAssertEqual(try PostgresServer.integers(data, "id", of: "people"), Array(1...8))
        XCTAssertEqual(try PostgresServer.integers(url, "id", of: "people"), Array(1...8))
    }
}

/// `incremental: true` on PostgreSQL: triggers log the changed rows, the second run looks only
/// at their groups, and both engines end with the same rows.
final class PostgresIncrementalTests: XCTestCase {
    func testIncrementalRunsMatchSQLite() throws {
        let url = try PostgresServer.require()
        let dir = try TestSupport.scratchDirectory()
        let path = dir.appendingPathComponent("inc.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created_at TEXT, visits INTEGER)")
            try db.execute(sql: "CREATE INDEX people_email ON people (email)")
            for id in 1...500 {
                try db.execute(sql: "INSERT INTO people VALUES (?, ?, ?, ?)", arguments: [id, "u\(id % 300)@x", "2024-\(id % 9)", id % 5])
            }
        }
        try queue.close()
        try PostgresServer.reset(url)
        try PostgresServer.load(path, into: url)
        let job = try TestSupport.writeFile(
            """
            version: 1
            dedupe:
              - entity: people
                key: email
                winner:
                  - created_at: asc
                merge: {visits: sum}
                incremental: true
            """, to: dir.appendingPathComponent("job.yaml").path)
        for location in [url, path] {
            XCTAssertEqual(try TestSupport.winnow(["run", job, "--database", location]).status, 0)
        }
        // New rows: duplicates of kept rows, and an update that makes two rows share a key.
        let changes = [
            "INSERT INTO people (id, email, created_at, visits) VALUES (1001, 'u5@x', '2023-01', 7)",
            "INSERT INTO people (id, email, created_at, visits) VALUES (1002, 'new@x', '2023-02', 1)",
            "INSERT INTO people (id, email, created_at, visits) VALUES (1003, 'new@x', '2023-03', 2)",
            "UPDATE people SET email = 'u7@x' WHERE id = 250",
        ]
        try BackendRouter().withSession(url, mode: .readWrite(create: false)) { session in
            for sql in changes { try session.execute(sql.replacingOccurrences(of: "people", with: "public.people")) }
        }
        try DatabaseQueue(path: path).write { db in for sql in changes { try db.execute(sql: sql) } }
        let plan = try TestSupport.winnow(["plan", job, "--database", url, "--format", "json"])
        XCTAssertEqual(plan.status, 0, plan.stderr)
        XCTAssertTrue(plan.stdout.contains("\"incremental\":true"), "the second pass looks at the logged changes only: \(plan.stdout)")
        for location in [url, path] {
            let second = try TestSupport.winnow(["run", job, "--database", location])
            XCTAssertEqual(second.status, 0, second.stderr)
            XCTAssertTrue(second.stdout.contains("3 duplicate groups"), "\(location): \(second.stdout)")
            XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", location]).status, 0)
        }
        XCTAssertEqual(try PostgresServer.rows(url, tables: ["people"]), try PostgresServer.rows(path, tables: ["people"]))
    }

}
