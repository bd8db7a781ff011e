import Foundation
import GRDB
import XCTest

@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// `winnow init` on real databases: what it writes validates, plans and runs, and its rules find
/// the real duplicates (Chinook's playlists, the Core Data store's users); it never overwrites.
final class InitTests: CLITestCase {
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")

    func assertGolden(_ actual: String, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let url = Self.golden.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["WINNOW_UPDATE_GOLDEN"] == "1" {
            try actual.write(to: url, atomically: true, encoding: .utf8)
            return
        }
        XCTAssertEqual(actual, try String(contentsOf: url, encoding: .utf8), "output differs from \(name)", file: file, line: line)
    }

    /// FEBRL's person records: soc_sec_id (strong) and name + birth date both find duplicates,
    /// and the name agrees with soc_sec_id in most of its groups, so `init` proposes both as
    /// `any:`, saying what each adds; its run catches at least 95% of the copies and merges no
    /// row of another person.
    func testFebrlStarterProposesAnyKeysThatCatchTheCopies() throws {
        try XCTSkipUnless(
            FileManager.default.fileExists(atPath: ScenarioKit.datasets.appendingPathComponent("febrl3.sqlite").path),
            "shared/datasets/febrl3.sqlite is not here")
        _ = try ScenarioKit.copyDataset("febrl3.sqlite", into: dir)
        let written = try winnow(["init", "--database", "febrl3.sqlite"], expect: 0)
        XCTAssertTrue(written.stdout.contains("any of (soc_sec_id; given_name + surname + date_of_birth)"), written.stdout)
        let job = try String(contentsOfFile: path("jobs/febrl3.yaml"), encoding: .utf8)
        XCTAssertTrue(job.contains("      any:\n        - soc_sec_id\n        - [given_name, surname, date_of_birth]\n"), job)
        XCTAssertTrue(job.contains("634 of its 768 groups hold one soc_sec_id, 134 hold several"), job)
        XCTAssertTrue(job.contains("soc_sec_id finds 2709, given_name + surname + date_of_birth adds 143 more"), job)
        try winnow(["run", "jobs/febrl3.yaml"], expect: 0)
        let (same, wrong) = try DatabaseQueue(path: path("febrl3.sqlite")).read { db -> (Int, Int) in
            try db.execute(sql: "ATTACH DATABASE ? AS o", arguments: [ScenarioKit.datasets.appendingPathComponent("febrl3.sqlite").path])
            let person = "substr(rec_id, 5, instr(substr(rec_id, 5), '-') - 1)"
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT sum(w.p = l.p), sum(w.p <> l.p) FROM (\(try ScenarioKit.groupPairs(db))) AS g
                    JOIN (SELECT id, \(person) AS p FROM o.people) AS w ON w.id = g.winner
                    JOIN (SELECT id, \(person) AS p FROM o.people) AS l ON l.id = g.loser
                    """)
            return (row?[0] ?? 0, row?[1] ?? -1)
        }
        XCTAssertGreaterThanOrEqual(same, 2_850)
        XCTAssertEqual(wrong, 0)
    }

    func testChinookStarterFindsThePlaylistsAndRuns() throws {
        _ = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        let written = try winnow(["init", "--database", "chinook.sqlite"], expect: 0)
        try assertGolden(written.stdout, "init-chinook.txt")
        let job = try String(contentsOfFile: path("jobs/chinook.yaml"), encoding: .utf8)
        try assertGolden(job, "init-chinook-job.yaml")
        try winnow(["validate", "jobs/chinook.yaml", "schemas/chinook.yaml", "--database", "chinook.sqlite"], expect: 0)
        // The schema it wrote is the database's: no drift; the playlists are the duplicates.
        let check = try winnow(["check", "jobs/chinook.yaml", "--format", "json"], expect: 1)
        let summary = try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any]
        XCTAssertEqual(summary?["status"] as? String, "duplicates")
        let rules = summary?["rules"] as? [[String: Any]] ?? []
        XCTAssertEqual(rules.map { $0["table"] as? String }, ["Playlist"], "only the playlists have duplicates: \(check.stdout)")
        XCTAssertEqual(rules.first?["groups"] as? Int, 4)
        try winnow(["plan", "jobs/chinook.yaml"], expect: 0)
        try winnow(["run", "jobs/chinook.yaml"], expect: 0)
        XCTAssertEqual(
            try ScenarioKit.column(
                path("chinook.sqlite"), "SELECT Name FROM Playlist WHERE Name IN ('Music', 'Movies', 'TV Shows', 'Audiobooks') ORDER BY 1",
                as: String.self),
            ["Audiobooks", "Movies", "Music", "TV Shows"])
        try winnow(["check", "jobs/chinook.yaml"], expect: 0)
    }

    /// The next day someone adds an index (the kind `plan` advises) and the application adds a
    /// column: the starter job keeps both, says so, and `check` reports them as drift with the
    /// same duplicate counts as `plan`. A drop happens only where the schema file names it.
    func testStarterJobKeepsAnIndexAndAColumnAddedLater() throws {
        let db = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        try winnow(["init", "--database", "chinook.sqlite"], expect: 0)
        try ScenarioKit.execute(db, "CREATE INDEX my_idx ON Track (Composer); ALTER TABLE Track ADD COLUMN rating INTEGER")
        try ScenarioKit.execute(db, "UPDATE Track SET rating = TrackId % 5")
        let before = try ScenarioKit.int(db, "SELECT sum(rating) FROM Track")

        let plan = try winnow(["plan", "jobs/chinook.yaml"], expect: 0).stdout
        XCTAssertTrue(plan.contains("kept: index my_idx on Track (not in the schema file; list it under dropped_indexes to drop it)"), plan)
        XCTAssertTrue(plan.contains("kept: column Track.rating (not in the schema file; list it under dropped to drop it)"), plan)
        XCTAssertFalse(plan.contains("drop index"), plan)

        // check counts what plan counts, drift or not (plan: 3503 duplicate playlist tracks).
        func counts(_ args: [String], expect: Int32) throws -> [String: Int] {
            let out = try winnow(args + ["--format", "json"], expect: expect).stdout
            let summary = out.split(separator: "\n").compactMap(json).first { $0["event"] as? String == "summary" }
            let rule = (summary?["rules"] as? [[String: Any]])?.first ?? [:]
            return ["groups", "deleted", "repointed", "children_deleted"].reduce(into: [:]) { $0[$1] = rule[$1] as? Int }
        }
        let planned = try counts(["plan", "jobs/chinook.yaml"], expect: 0)
        XCTAssertEqual(planned["children_deleted"], 3503)
        XCTAssertEqual(try counts(["check", "jobs/chinook.yaml"], expect: 1), planned, "check and plan count the same")
        let junit = try winnow(["check", "jobs/chinook.yaml", "--format", "junit"], expect: 1).stdout
        XCTAssertTrue(junit.contains("3503 duplicate child rows to delete"), junit)

        let run = try winnow(["run", "jobs/chinook.yaml", "--format", "json"], expect: 0).stdout
        let kept = run.split(separator: "\n").compactMap(json).first { $0["event"] as? String == "summary" }?["kept"] as? [[String: Any]]
        XCTAssertEqual(kept?.compactMap { $0["name"] as? String }.sorted(), ["my_idx", "rating"], run)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'my_idx'"), 1, "the index is kept")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT sum(rating) FROM Track"), before, "the column and its values are kept")
        let check = try winnow(["check", "jobs/chinook.yaml"], expect: 1).stdout
        XCTAssertTrue(check.contains("Track.rating: column is not in the schema file (kept by a run"), check)
        XCTAssertTrue(check.contains("index my_idx is not in the schema file (kept by a run"), check)

        // Named under dropped_indexes, the index goes (and nothing else does).
        let schema = try String(contentsOfFile: path("schemas/chinook.yaml"), encoding: .utf8)
        let listed = schema.replacingOccurrences(
            of: "    - {name: IFK_TrackMediaTypeId, columns: [MediaTypeId], unique: false}\n",
            with: "    - {name: IFK_TrackMediaTypeId, columns: [MediaTypeId], unique: false}\n    dropped_indexes: [my_idx]\n")
        XCTAssertNotEqual(listed, schema, "the test edits Track's indexes")
        try TestSupport.writeFile(listed, to: path("schemas/chinook.yaml"))
        let dropped = try winnow(["run", "jobs/chinook.yaml", "--verbose"], expect: 0).stdout
        XCTAssertTrue(dropped.contains("drop index my_idx on Track"), dropped)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'my_idx'"), 0)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT sum(rating) FROM Track"), before)
    }

    /// One index more than the schema file says (drift) must not change what `check` counts:
    /// the same rule gives the same counts in `check` (text, JSON, JUnit) as in `plan`.
    func testCheckCountsWhatPlanCountsWhileTheSchemaDrifts() throws {
        let db = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        try winnow(["init", "--database", "chinook.sqlite"], expect: 0)
        try ScenarioKit.execute(db, "CREATE INDEX extra_idx ON Invoice (BillingCity)")
        let plan = try winnow(["plan", "jobs/chinook.yaml"], expect: 0).stdout
        let line = "4 duplicate groups, 4 rows to delete, 0 to update, 0 references to re-point, 3503 duplicate child rows to delete"
        XCTAssertTrue(plan.contains("  " + line + "\n"), plan)
        let check = try winnow(["check", "jobs/chinook.yaml"], expect: 1).stdout
        XCTAssertTrue(check.contains("  " + line + "\n"), check)
        XCTAssertTrue(check.contains("drift: Invoice: index extra_idx is not in the schema file"), check)
        let junit = try winnow(["check", "jobs/chinook.yaml", "--format", "junit"], expect: 1).stdout
        XCTAssertTrue(junit.contains(line), junit)
    }

    /// A strong key that finds duplicates vetoes a weaker key whose groups it mostly
    /// contradicts (two John Smiths with two e-mails are two people), and the comment says what
    /// was measured.
    func testWeakerKeyThatTheStrongKeyContradictsIsNotProposed() throws {
        try TestSupport.makeDatabase(
            at: path("app.sqlite"),
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, first_name TEXT, last_name TEXT);
                INSERT INTO people VALUES (1, 'a@x', 'John', 'Smith'), (2, 'a@x', 'Jon', 'Smith'), (3, 'b@x', 'John', 'Smith'),
                    (4, 'c@x', 'Mary', 'Jones'), (5, 'd@x', 'Mary', 'Jones'), (6, 'e@x', 'Ann', 'Lee'), (7, 'e@x', 'Ann', 'Lee');
                """)
        try winnow(["init", "--database", "app.sqlite"], expect: 0)
        let job = try String(contentsOfFile: path("jobs/app.yaml"), encoding: .utf8)
        XCTAssertTrue(job.contains("    key: email\n"), job)
        XCTAssertTrue(
            job.contains(
                "# first_name + last_name is not proposed: of its 3 duplicate groups, 1 hold one email and 2 hold two or more, so rows sharing only first_name + last_name may be different records."
            ), job)
        XCTAssertFalse(job.contains("any:"), job)
    }

    func testCoreDataStarterFindsTheUsersAndRepointsTheirBooks() throws {
        _ = try ScenarioKit.copyDataset("coredata-bookmigration-v1.sqlite", into: dir)
        try winnow(
            ["init", "--database", "coredata-bookmigration-v1.sqlite", "--job", "store.yaml", "--schema", "store-schema.yaml"], expect: 0)
        let job = try String(contentsOfFile: path("store.yaml"), encoding: .utf8)
        try assertGolden(job, "init-coredata-job.yaml")
        XCTAssertTrue(job.contains("referenced_by: [ZBOOK.ZUSER]"), job)
        try winnow(["validate", "store.yaml"], expect: 0)
        try winnow(["run", "store.yaml"], expect: 0)
        let db = path("coredata-bookmigration-v1.sqlite")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM ZUSER"), 1)
        XCTAssertEqual(
            try ScenarioKit.int(db, "SELECT count(*) FROM ZBOOK WHERE ZUSER NOT IN (SELECT Z_PK FROM ZUSER)"), 0,
            "every book points at the survivor")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT Z_PK FROM ZUSER"), 1, "the oldest object (lowest Z_PK) wins")
    }

    func testInitNeverOverwritesAndWritesNothingWhenRefused() throws {
        _ = try ScenarioKit.copyDataset("coredata-bookmigration-v1.sqlite", into: dir)
        try FileManager.default.createDirectory(atPath: path("schemas"), withIntermediateDirectories: true)
        try TestSupport.writeFile("mine\n", to: path("schemas/coredata-bookmigration-v1.yaml"))
        let refused = try winnow(["init", "--database", "coredata-bookmigration-v1.sqlite"], expect: 65)
        XCTAssertTrue(refused.stderr.contains("schemas/coredata-bookmigration-v1.yaml exists"), refused.stderr)
        XCTAssertEqual(try String(contentsOfFile: path("schemas/coredata-bookmigration-v1.yaml"), encoding: .utf8), "mine\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("jobs/coredata-bookmigration-v1.yaml")), "nothing written")
        try winnow(["init", "--database", "missing.sqlite"], expect: 66)
        try winnow(["init"], expect: 64)
    }

    /// A database without duplicates gets a job whose rules are all commented out, and that
    /// job still validates and plans.
    func testCleanDatabaseGetsCommentedRulesThatStillPlan() throws {
        try TestSupport.makeDatabase(
            at: path("clean.sqlite"),
            sql: """
                CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT, created_at TEXT);
                INSERT INTO users VALUES (1, 'a@x', '2024-01-01'), (2, 'b@x', '2024-01-02');
                """)
        try winnow(["init", "--database", "clean.sqlite"], expect: 0)
        let job = try String(contentsOfFile: path("jobs/clean.yaml"), encoding: .utf8)
        XCTAssertTrue(job.contains("dedupe: []"), job)
        XCTAssertTrue(job.contains("  #   key: email"), job)
        XCTAssertTrue(job.contains("created_at: asc"), job)
        try winnow(["validate", "jobs/clean.yaml"], expect: 0)
        try winnow(["plan", "jobs/clean.yaml"], expect: 0)
        try winnow(["check", "jobs/clean.yaml"], expect: 0)
    }

    /// Every table is listed: one no rule can deduplicate (its rowid shadowed by columns of
    /// those names) with its rows and the reason, in the summary, the JSON and the job (where it
    /// gets no rule); a WITHOUT ROWID table like any other (named by its primary key); and the
    /// job still validates and runs on the other tables.
    func testTablesNoRuleCanDeduplicateAreListedWithTheReason() throws {
        try TestSupport.makeDatabase(
            at: path("mixed.sqlite"),
            sql: """
                CREATE TABLE odd (rowid TEXT, _rowid_ TEXT, oid TEXT);
                INSERT INTO odd VALUES ('a', 'b', 'c'), ('a', 'b', 'c');
                CREATE TABLE settings (name TEXT PRIMARY KEY, email TEXT, created_at TEXT) WITHOUT ROWID;
                INSERT INTO settings VALUES ('a', 's@x', '2024-01-02'), ('b', 's@x', '2024-01-01');
                CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT, created_at TEXT);
                INSERT INTO users VALUES (1, 'a@x', '2024-01-01'), (2, 'a@x', '2024-01-02');
                """)
        let text = try winnow(["init", "--database", "mixed.sqlite"], expect: 0).stdout
        let odd = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("odd") }, text)
        XCTAssertEqual(odd.split(separator: " ", omittingEmptySubsequences: true).prefix(4), ["odd", "2", "-", "-"], text)
        XCTAssertTrue(odd.hasSuffix("no rule possible (see the job)"), text)
        let settings = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("settings") }, text)
        XCTAssertEqual(settings.split(separator: " ", omittingEmptySubsequences: true), ["settings", "2", "email", "1", "rule"], text)
        let reason =
            "'odd' has columns named rowid, _rowid_ and oid and no INTEGER PRIMARY KEY, so its rowid cannot be named; winnow cannot deduplicate it"
        let job = try String(contentsOfFile: path("jobs/mixed.yaml"), encoding: .utf8)
        XCTAssertTrue(job.contains("  # odd: 2 rows.\n  # No rule can deduplicate it: \(reason)."), job)
        XCTAssertFalse(job.contains("entity: odd"), job)
        XCTAssertTrue(job.contains("  - entity: settings\n    key: email"), job)
        XCTAssertTrue(job.contains("  - entity: users\n    key: email"), job)
        try FileManager.default.removeItem(atPath: path("jobs"))
        try FileManager.default.removeItem(atPath: path("schemas"))
        let json = try winnow(["init", "--database", "mixed.sqlite", "--format", "json"], expect: 0).stdout
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], json)
        let tables = try XCTUnwrap(object["tables"] as? [[String: Any]])
        XCTAssertEqual(tables.map { $0["table"] as? String }, ["odd", "settings", "users"])
        XCTAssertEqual(tables[0]["not_deduplicable"] as? String, reason)
        XCTAssertNil(tables[1]["not_deduplicable"])
        XCTAssertNil(tables[2]["not_deduplicable"])
        try winnow(["run", "jobs/mixed.yaml"], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(path("mixed.sqlite"), "SELECT count(*) FROM users"), 1)
        XCTAssertEqual(try ScenarioKit.rows(path("mixed.sqlite"), "SELECT name FROM settings"), [["b".databaseValue]])
        XCTAssertEqual(try ScenarioKit.int(path("mixed.sqlite"), "SELECT count(*) FROM odd"), 2)
    }

    /// Keys that repeat only after trim + lowercase get the normalisers, and the winner is the
    /// earliest creation time.
    func testNormalisersAreProposedWhenTheyFindMore() throws {
        try TestSupport.makeDatabase(
            at: path("crm.sqlite"),
            sql: """
                CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT, name TEXT, created_at TEXT);
                INSERT INTO contacts VALUES (1, 'Ann@X.org', 'Ann', '2024-03-01'), (2, ' ann@x.org', 'Ann', '2024-01-01'),
                    (3, 'bob@x.org', 'Bob', '2024-01-01');
                """)
        try winnow(["init", "--database", "crm.sqlite"], expect: 0)
        let job = try String(contentsOfFile: path("jobs/crm.yaml"), encoding: .utf8)
        XCTAssertTrue(job.contains("    key: email\n    normalize: [trim, lowercase]"), job)
        XCTAssertTrue(job.contains("    winner:\n      - created_at: asc"), job)
        try winnow(["run", "jobs/crm.yaml"], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(path("crm.sqlite"), "SELECT id FROM contacts WHERE name = 'Ann'"), 2)
    }

    /// The empty Core Data store (every Z_* table, no rows): a starter with no rules that still
    /// validates, plans, runs and checks clean.
    func testEmptyCoreDataStoreGetsAStarterThatRuns() throws {
        _ = try ScenarioKit.copyDataset("coredata-testmodel.sqlite", into: dir)
        try winnow(["init", "--database", "coredata-testmodel.sqlite"], expect: 0)
        try winnow(["validate", "jobs/coredata-testmodel.yaml", "--database", "coredata-testmodel.sqlite"], expect: 0)
        try winnow(["plan", "jobs/coredata-testmodel.yaml"], expect: 0)
        try winnow(["run", "jobs/coredata-testmodel.yaml"], expect: 0)
        try winnow(["check", "jobs/coredata-testmodel.yaml"], expect: 0)
    }

    /// Times and durations vary from run to run; everything else of the output is golden.
    static func masked(_ text: String) -> String {
        var text = text
        for (pattern, replacement) in [
            (#"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"#, "<time>"), (#"\d+\.\d\d s"#, "<s>"), (#"\d+\.\d s"#, "<s>"),
        ] {
            text = text.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
        }
        return text
    }

    /// plan, run, history and show of the bundled example, through the executable, golden.
    func testPlanHistoryAndShowOutputOfTheExample() throws {
        let example = TestSupport.repositoryRoot.appendingPathComponent("examples/contacts.sqlite")
        try FileManager.default.copyItem(at: example, to: dir.appendingPathComponent("contacts.sqlite"))
        let job = try String(
            contentsOf: TestSupport.repositoryRoot.appendingPathComponent("jobs/example.yaml"), encoding: .utf8)
        try TestSupport.writeFile(job, to: path("example.yaml"))
        let args = ["--database", "contacts.sqlite"]
        try assertGolden(Self.masked(try winnow(["plan", "example.yaml"] + args, expect: 0).stdout), "cli-plan.txt")
        try winnow(["run", "example.yaml"] + args, expect: 0)
        try assertGolden(Self.masked(try winnow(["history"] + args, expect: 0).stdout), "cli-history.txt")
        try assertGolden(Self.masked(try winnow(["show", "--run", "1"] + args, expect: 0).stdout), "cli-show.txt")
    }
}
