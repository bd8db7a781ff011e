import Foundation
import GRDB
import XCTest
import Yams

@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// What an operator meets at a terminal, in cron and in CI, through the built executable:
/// `--max-duration`, `check`'s reports (quiet, guards, GitHub annotations, folders), `show`,
/// `history` and `schema inspect` with a job file, restore refusals that say why, `validate`
/// against a database, and usage errors.
final class OperatorTests: CLITestCase {
    /// `people`: `groups` keys with three rows each (two losers per group).
    @discardableResult
    func makePeople(groups: Int, name: String = "data.sqlite") throws -> String {
        var sql =
            "CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, visits INTEGER);\nCREATE INDEX people_email ON people (email);\n"
        var id = 1
        for g in 0..<groups {
            for v in 0..<3 {
                sql += "INSERT INTO people VALUES (\(id), 'p\(g)@x', \(v));\n"
                id += 1
            }
        }
        return try TestSupport.makeDatabase(at: path(name), sql: sql)
    }

    static let job = """
        version: 1
        database: data.sqlite
        dedupe:
          - entity: people
            key: email
            archive: true
            merge:
              visits: sum
        """

    // MARK: --max-duration

    /// A run out of time stops after the batch in flight (status `stopped`, exit 0); the next run
    /// continues, and the end state equals an uninterrupted run's.
    func testMaxDurationStopsCleanlyAndTheNextRunContinues() throws {
        try makePeople(groups: 3000)
        try makePeople(groups: 3000, name: "reference.sqlite")
        try write("job.yaml", Self.job)
        let first = try winnow(["run", "job.yaml", "--batch-size", "10", "--max-duration", "0.05", "--format", "json"], expect: 0)
        let summary = first.stdout.split(separator: "\n").compactMap(json).last { $0["event"] as? String == "summary" }
        XCTAssertEqual(summary?["status"] as? String, "stopped", first.stdout)
        let deleted = summary?["deleted"] as? Int ?? 0
        XCTAssertGreaterThan(deleted, 0, "the first batch always goes")
        XCTAssertLessThan(deleted, 6000, "it stopped before the end")
        XCTAssertEqual(
            try ScenarioKit.int(path("data.sqlite"), "SELECT count(*) FROM people"), 9000 - deleted, "what it reported is committed")
        let history = try winnow(["history", "job.yaml", "--format", "json"], expect: 0)
        XCTAssertEqual(json(history.stdout.split(separator: "\n")[0])?["status"] as? String, "stopped")

        try winnow(["run", "job.yaml", "--batch-size", "10"], expect: 0)
        try winnow(["run", "job.yaml", "--batch-size", "10", "--database", "reference.sqlite"], expect: 0)
        XCTAssertEqual(try TestSupport.contentDump(path("data.sqlite")), try TestSupport.contentDump(path("reference.sqlite")))
        try winnow(["check", "job.yaml"], expect: 0)
    }

    func testMaxDurationMustBePositive() throws {
        try makePeople(groups: 2)
        try write("job.yaml", Self.job)
        try winnow(["run", "job.yaml", "--max-duration", "0"], expect: 64)
        try winnow(["run", "job.yaml", "--max-duration", "soon"], expect: 64)
    }

    // MARK: check

    func testCheckQuietPrintsTheFindingsLineOnlyWhenItFindsSomething() throws {
        try makePeople(groups: 4)
        try write("job.yaml", Self.job)
        let dirty = try winnow(["check", "job.yaml", "--quiet"], expect: 1)
        XCTAssertEqual(dirty.stdout, "job.yaml: FAIL: 4 duplicate groups (8 extra rows) left under the job's rules\n")
        try winnow(["run", "job.yaml", "--quiet"], expect: 0)
        let clean = try winnow(["check", "job.yaml", "--quiet"], expect: 0)
        XCTAssertEqual(clean.stdout, "")
    }

    /// A delete guard that would refuse the run is reported by `check` (exit 1, naming the
    /// guard), not turned into a refusal of the check itself.
    func testCheckReportsATrippedGuardInsteadOfRefusing() throws {
        try makePeople(groups: 10)
        try write(
            "job.yaml",
            """
            version: 1
            database: data.sqlite
            dedupe:
              - entity: people
                key: email
                max_delete_percent: 10
            """)
        let text = try winnow(["check", "job.yaml"], expect: 1)
        XCTAssertTrue(text.stdout.contains("max_delete_percent"), text.stdout)
        XCTAssertTrue(text.stdout.contains("FAIL: 10 duplicate groups"), text.stdout)
        let junit = try winnow(["check", "job.yaml", "--format", "junit"], expect: 1)
        XCTAssertTrue(junit.stdout.contains("<failure"), junit.stdout)
        XCTAssertTrue(junit.stdout.contains("max_delete_percent"), junit.stdout)
        try winnow(["run", "job.yaml"], expect: 65)
    }

    /// `--format github`: one `::error` per failing rule at the rule's line of the job file, and
    /// per drift finding at the schema file's line.
    func testCheckGithubAnnotationsPointAtTheRuleAndTheSchemaLines() throws {
        try makePeople(groups: 2)
        try write(
            "schema.yaml",
            """
            version: 1
            tables:
              people:
                columns:
                  - {name: id, type: INTEGER, primary_key: true}
                  - {name: email, type: TEXT}
                  - {name: visits, type: INTEGER}
                  - {name: phone, type: TEXT}
                indexes:
                  - {name: people_email, columns: [email], unique: false}
            """)
        try write(
            "job.yaml",
            """
            version: 1
            database: data.sqlite
            schema: schema.yaml
            dedupe:
              - entity: people
                key: email
            """)
        let result = try winnow(["check", "job.yaml", "--format", "github"], expect: 1)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, result.stdout)
        XCTAssertTrue(lines[0].hasPrefix("::error file=job.yaml,line=5,"), lines[0])
        XCTAssertTrue(lines[1].hasPrefix("::error file=schema.yaml,line=8,"), lines[1])
        XCTAssertTrue(lines[1].contains("people.phone: missing column"), lines[1])

        // The rule's line is where its `entity:` is, wherever the rule sits in the file.
        try write(
            "plain.yaml",
            """
            version: 1
            database: data.sqlite

            dedupe:
              - entity: people
                key: email
            """)
        let dupes = try winnow(["check", "plain.yaml", "--format", "github"], expect: 1)
        XCTAssertTrue(dupes.stdout.hasPrefix("::error file=plain.yaml,line=5,"), dupes.stdout)
        XCTAssertTrue(dupes.stdout.contains("2 duplicate groups"), dupes.stdout)
        try winnow(["run", "plain.yaml"], expect: 0)
        let clean = try winnow(["check", "plain.yaml", "--format", "github"], expect: 0)
        XCTAssertEqual(clean.stdout, "")
    }

    func testCheckTakesAFolderOfJobs() throws {
        try makePeople(groups: 2)
        try FileManager.default.createDirectory(atPath: path("jobs"), withIntermediateDirectories: true)
        try write("jobs/a.yaml", Self.job.replacingOccurrences(of: "database: data.sqlite", with: "database: ../data.sqlite"))
        try write(
            "jobs/b.yml",
            "version: 1\ndatabase: ../data.sqlite\ndedupe:\n  - entity: people\n    key: [email, visits]\n")
        try write("jobs/notes.txt", "not a job")
        let result = try winnow(["check", "jobs", "--format", "junit"], expect: 1)
        XCTAssertEqual(result.stdout.components(separatedBy: "<testsuite ").count - 1, 2, result.stdout)
        XCTAssertTrue(result.stdout.contains("a.yaml") && result.stdout.contains("b.yml"), result.stdout)
        try FileManager.default.createDirectory(atPath: path("empty"), withIntermediateDirectories: true)
        try winnow(["check", "empty"], expect: 64)
    }

    // MARK: show, history, schema inspect

    func testShowListsWhatARunChangedPerRuleAndPerTable() throws {
        try makePeople(groups: 3)
        try write("job.yaml", Self.job)
        try winnow(["run", "job.yaml"], expect: 0)
        let text = try winnow(["show", "job.yaml", "--run", "1"], expect: 0)
        XCTAssertTrue(text.stdout.contains("Run 1: run of job.yaml, completed"), text.stdout)
        let ruleLine = text.stdout.split(separator: "\n").first { $0.hasPrefix("dedupe[0]") }.map(String.init) ?? ""
        XCTAssertEqual(ruleLine.split(separator: " ").map(String.init), ["dedupe[0]", "people", "email", "3", "6", "3", "0", "0"])
        let journal = text.stdout.split(separator: "\n").first { $0.hasPrefix("people ") }.map(String.init) ?? ""
        XCTAssertEqual(journal.split(separator: " ").map(String.init), ["people", "6", "3"], text.stdout)

        let object = json(try winnow(["show", "--database", "data.sqlite", "--run", "1", "--format", "json"], expect: 0).stdout.dropLast())
        let rules = object?["rules"] as? [[String: Any]]
        XCTAssertEqual(rules?.first?["deleted"] as? Int, 6)
        XCTAssertEqual(rules?.first?["updated"] as? Int, 3)
        XCTAssertEqual((object?["journal"] as? [[String: Any]])?.first?["table"] as? String, "people")
        try winnow(["show", "job.yaml", "--run", "9"], expect: 64)
    }

    /// Runs `winnow ARGUMENTS` whole, then into `| head -c 100`, and asserts that its output is
    /// far more than a pipe holds (64 KiB, so that writes go on after head has left) and that
    /// winnow then stops with exit 74, not killed by SIGPIPE.
    func assertExits74IntoAClosedPipe(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let whole = try winnow(arguments, expect: 0)
        XCTAssertGreaterThan(whole.stdout.utf8.count, 100_000, arguments.joined(separator: " "), file: file, line: line)
        let piped = try TestSupport.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", #""$0" "$@" | head -c 100 > /dev/null; echo "${PIPESTATUS[0]}""#, TestSupport.executable.path] + arguments,
            in: dir)
        XCTAssertEqual(
            piped.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "74", "\(arguments): \(piped.stderr)", file: file, line: line)
    }

    /// A reader that goes away in the middle of `show` (`| head`): winnow stops with exit 74,
    /// whether the listing is written whole (text) or in pieces (JSON).
    func testShowIntoAClosedPipeExits74() throws {
        try makePeople(groups: 1500)
        try write("job.yaml", Self.job)
        try winnow(["run", "job.yaml"], expect: 0)
        for format in [["--verbose"], ["--format", "json"]] {
            try assertExits74IntoAClosedPipe(["show", "job.yaml", "--run", "1"] + format)
        }
    }

    /// The summary written group by group (`plan --verbose`, in text and JSON) stops at a closed
    /// pipe with the contract's 74, as `show` does, and the database is left as it was.
    func testPlanIntoAClosedPipeExits74() throws {
        try makePeople(groups: 1500)
        try write("job.yaml", Self.job)
        for format in [["--verbose"], ["--verbose", "--format", "json"]] {
            try assertExits74IntoAClosedPipe(["plan", "job.yaml"] + format)
        }
        XCTAssertEqual(try ScenarioKit.int(path("data.sqlite"), "SELECT count(*) FROM people"), 4500, "a plan changes nothing")
    }

    func testHistoryIsAnAlignedTableWithDurations() throws {
        try makePeople(groups: 3)
        try write("job.yaml", Self.job)
        try winnow(["run", "job.yaml"], expect: 0)
        try winnow(["run", "job.yaml"], expect: 0)
        let lines = try winnow(["history", "job.yaml"], expect: 0).stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3)
        XCTAssertTrue(lines[0].hasPrefix("run  command  status     started (UTC)"), lines[0])
        // Every row's columns start where the header's do.
        let jobColumn = lines[0].range(of: "job")!.lowerBound.utf16Offset(in: lines[0])
        for line in lines.dropFirst() {
            XCTAssertEqual(line.range(of: "job.yaml")?.lowerBound.utf16Offset(in: line), jobColumn, line)
            XCTAssertTrue(line.contains(" s "), "a duration: \(line)")
        }
    }

    func testSchemaInspectJSONLoadsBackAsTheSameSchema() throws {
        try makePeople(groups: 1)
        try write("job.yaml", Self.job)
        let yaml = try winnow(["schema", "inspect", "job.yaml"], expect: 0).stdout
        let json = try winnow(["schema", "inspect", "--database", "data.sqlite", "--format", "json"], expect: 0).stdout
        XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], json)
        try write("inspected.yaml", yaml)
        try write("inspected.json", json)
        XCTAssertEqual(try SchemaLoader.load(path: path("inspected.json")), try SchemaLoader.load(path: path("inspected.yaml")))
    }

    func testCommandsTakingADatabaseRefuseAFileThatIsNotThere() throws {
        try makePeople(groups: 1)
        for command in [["history"], ["show", "--run", "1"], ["schema", "inspect"], ["restore", "--run", "1"]] {
            let result = try winnow(command + ["nope.yaml"], expect: 64)
            XCTAssertTrue(result.stderr.contains("'nope.yaml' is not a job file"), result.stderr)
        }
    }

    // MARK: restore

    /// A run that only migrated has nothing to restore: refused (65), not marked restored, and
    /// the message says schema changes are never undone.
    func testRestoreOfAMigrationOnlyRunIsRefusedAndSaysWhy() throws {
        try makePeople(groups: 0)
        try write(
            "schema.yaml",
            """
            version: 2
            tables:
              people:
                columns:
                  - {name: id, type: INTEGER, primary_key: true}
                  - {name: email, type: TEXT}
                  - {name: visits, type: INTEGER}
                  - {name: phone, type: TEXT}
                indexes:
                  - {name: people_email, columns: [email], unique: false}
            """)
        try write("job.yaml", "version: 1\ndatabase: data.sqlite\nschema: schema.yaml\n")
        try winnow(["run", "job.yaml"], expect: 0)
        let refused = try winnow(["restore", "job.yaml", "--run", "1"], expect: 65)
        XCTAssertTrue(refused.stderr.contains("schema changes are never undone"), refused.stderr)
        let runs = try winnow(["history", "job.yaml", "--format", "json"], expect: 0).stdout.split(separator: "\n").compactMap(json)
        XCTAssertEqual(runs.last?["restored_by"] as? NSNull, NSNull(), "the migration run is not marked restored")
        XCTAssertEqual(runs.map { $0["command"] as? String }, ["run"], "a restore refused before it starts records nothing")
    }

    /// Restoring a run whose rows a later run changed names the later run to restore first.
    func testRestoreBlockedByALaterRunNamesIt() throws {
        try TestSupport.makeDatabase(
            at: path("data.sqlite"),
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, name TEXT, visits INTEGER);
                INSERT INTO people VALUES (1, 'a@x', 'Ann', 1), (2, 'a@x', 'Ann', 2), (3, 'b@x', 'Ann', 4);
                """)
        try write(
            "by-email.yaml",
            "version: 1\ndatabase: data.sqlite\ndedupe:\n  - entity: people\n    key: email\n    archive: true\n    merge: {visits: sum}\n")
        try write(
            "by-name.yaml",
            """
            version: 1
            database: data.sqlite
            dedupe:
              - entity: people
                key: name
                archive: true
                winner:
                  - visits: desc
            """)
        try winnow(["run", "by-email.yaml"], expect: 0)  // run 1: row 1 keeps visits 3, row 2 goes
        try winnow(["run", "by-name.yaml"], expect: 0)  // run 2: row 3 (visits 4) wins, row 1 goes
        let blocked = try winnow(["restore", "--database", "data.sqlite", "--run", "1"], expect: 65)
        XCTAssertTrue(blocked.stderr.contains("restore run 2 first"), blocked.stderr)
        try winnow(["restore", "--database", "data.sqlite", "--run", "2"], expect: 0)
        try winnow(["restore", "--database", "data.sqlite", "--run", "1"], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(path("data.sqlite"), "SELECT count(*) FROM people"), 3)
    }

    // MARK: validate, usage, errors

    func testValidateWithADatabaseChecksTheRulesAgainstIt() throws {
        try makePeople(groups: 1)
        try write("job.yaml", "version: 1\ndedupe:\n  - entity: people\n    key: emial\n")
        try winnow(["validate", "job.yaml"], expect: 0)
        let checked = try winnow(["validate", "job.yaml", "--database", "data.sqlite"], expect: 65)
        XCTAssertTrue(checked.stderr.contains("emial"), checked.stderr)
        try write("good.yaml", "version: 1\ndedupe:\n  - entity: people\n    key: email\n")
        let good = try winnow(["validate", "good.yaml", "--database", "data.sqlite"], expect: 0)
        XCTAssertTrue(good.stdout.contains("checked against data.sqlite"), good.stdout)
    }

    func testBareWinnowIsAUsageError() throws {
        let result = try winnow([], expect: 64)
        XCTAssertTrue(result.stderr.contains("USAGE"), result.stderr)
        try winnow(["--help"], expect: 0)
    }

    func testJSONErrorEventsCarryTheFileLineAndColumn() throws {
        try write("job.yaml", "version: 1\ndedupe:\n  - entity: people\n    kee: email\n")
        let result = try winnow(["validate", "job.yaml", "--format", "json"], expect: 65)
        let error = result.stdout.split(separator: "\n").compactMap(json).first { $0["event"] as? String == "error" }
        XCTAssertEqual(error?["file"] as? String, "job.yaml", result.stdout)
        XCTAssertEqual(error?["line"] as? Int, 3, "the first error in file order: the rule without its key")
        XCTAssertNotNil(error?["column"] as? Int, result.stdout)
    }

    /// Only `check` offers junit and github in its help, and only `check` accepts them.
    func testOnlyCheckOffersItsReportFormats() throws {
        let plan = try winnow(["plan", "--help"], expect: 0).stdout
        XCTAssertFalse(plan.contains("junit"), plan)
        XCTAssertTrue(try winnow(["check", "--help"], expect: 0).stdout.contains("junit"))
        try winnow(["plan", "job.yaml", "--format", "junit"], expect: 64)
    }

    // MARK: plan --save / run --plan

    func testRunAppliesTheSavedPlanWhileNothingChanged() throws {
        try makePeople(groups: 5)
        try write("job.yaml", Self.job)
        let plan = try winnow(["plan", "job.yaml", "--save", "reviewed.plan"], expect: 0)
        XCTAssertTrue(plan.stdout.contains("winnow run job.yaml --plan reviewed.plan"), plan.stdout)
        let saved = try SavedPlan.load(path: path("reviewed.plan"))
        XCTAssertEqual(saved.fingerprints.targetSchema, "none")
        let run = try winnow(["run", "job.yaml", "--plan", "reviewed.plan", "--format", "json"], expect: 0)
        let summary = run.stdout.split(separator: "\n").compactMap(json).last
        XCTAssertEqual(summary?["deleted"] as? Int, 10)
        XCTAssertEqual(summary?["status"] as? String, "completed")
        // Applied once: the duplicates it approved are gone, so it no longer matches.
        let again = try winnow(["run", "job.yaml", "--plan", "reviewed.plan"], expect: 65)
        XCTAssertTrue(again.stderr.contains("the duplicates changed"), again.stderr)
    }

    /// Anything the plan depends on changes -> refused with what changed, nothing written to
    /// the user's tables, the refusal recorded.
    func testRunRefusesAPlanWhoseDatabaseOrJobChanged() throws {
        let db = try makePeople(groups: 5)
        try write("job.yaml", Self.job)
        try winnow(["plan", "job.yaml", "--save", "reviewed.plan"], expect: 0)
        try ScenarioKit.execute(db, "INSERT INTO people VALUES (100, 'p0@x', 7)")
        let before = try ScenarioKit.userState(db)
        let refused = try winnow(["run", "job.yaml", "--plan", "reviewed.plan"], expect: 65)
        XCTAssertTrue(refused.stderr.contains("the duplicates changed"), refused.stderr)
        XCTAssertEqual(try ScenarioKit.userState(db), before, "nothing changed")
        let history = try winnow(["history", "job.yaml", "--format", "json"], expect: 0)
        XCTAssertEqual(json(history.stdout.split(separator: "\n")[0])?["status"] as? String, "refused")

        try winnow(["plan", "job.yaml", "--save", "reviewed.plan"], expect: 0)
        try write("job.yaml", Self.job + "\n    max_delete_percent: 90\n")
        let edited = try winnow(["run", "job.yaml", "--plan", "reviewed.plan"], expect: 65)
        XCTAssertTrue(edited.stderr.contains("the job file changed"), edited.stderr)

        try winnow(["plan", "job.yaml", "--save", "reviewed.plan"], expect: 0)
        try ScenarioKit.execute(db, "ALTER TABLE people ADD COLUMN note TEXT")
        let altered = try winnow(["run", "job.yaml", "--plan", "reviewed.plan"], expect: 65)
        XCTAssertTrue(altered.stderr.contains("the database's schema changed"), altered.stderr)
    }

    func testPlanFileErrors() throws {
        try makePeople(groups: 1)
        try write("job.yaml", Self.job)
        try write("bogus.plan", "{\"format\": \"something else\"}")
        try winnow(["run", "job.yaml", "--plan", "bogus.plan"], expect: 65)
        try winnow(["run", "job.yaml", "--plan", "missing.plan"], expect: 66)
        try winnow(["plan", "job.yaml", "--save", "reviewed.plan"], expect: 0)
        try winnow(["run", "job.yaml", "job.yaml", "--plan", "reviewed.plan"], expect: 64)
        try winnow(["run", "job.yaml", "--plan", "reviewed.plan", "--dry-run"], expect: 64)
    }

    // MARK: plan samples, every error at once

    /// `plan --verbose` keeps the groups beyond the first 1,000 in a temporary file; where it
    /// cannot make one, the command ends with the contract's I/O code (74) and a JSON error
    /// event that names the folder, and prints no partial summary. With the folder there, it
    /// lists every group.
    func testPlanVerboseWithoutATemporaryFolderExits74() throws {
        try makePeople(groups: 1_100)
        try write("job.yaml", Self.job)
        let missing = path("no-such-folder")
        let failed = try TestSupport.winnow(
            ["plan", "job.yaml", "--verbose", "--format", "json"], in: dir, environment: ["TMPDIR": missing])
        XCTAssertEqual(failed.status, 74, failed.stderr)
        let error = failed.stdout.split(separator: "\n").compactMap(json).last
        XCTAssertEqual(error?["event"] as? String, "error", failed.stdout)
        XCTAssertEqual(error?["exit_code"] as? Int, 74)
        XCTAssertTrue((error?["message"] as? String ?? "").contains(missing), failed.stdout)
        XCTAssertFalse(failed.stdout.contains("\"event\":\"summary\""), "no partial summary")

        try FileManager.default.createDirectory(atPath: missing, withIntermediateDirectories: true)
        let listed = try TestSupport.winnow(["plan", "job.yaml", "--verbose"], in: dir, environment: ["TMPDIR": missing])
        XCTAssertEqual(listed.status, 0, listed.stderr)
        XCTAssertEqual(listed.stdout.split(separator: "\n").filter { $0.hasPrefix("  group ") }.count, 1_100)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: missing), [], "the file is gone from its folder")
    }

    /// A plan shows each sample group's rows side by side (the kept one marked), the merge's
    /// before and after, and the children that move; JSON carries the same as JSON values.
    func testPlanShowsGroupsSideBySide() throws {
        try TestSupport.makeDatabase(
            at: path("data.sqlite"),
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, visits INTEGER, note TEXT);
                CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES people(id));
                CREATE INDEX orders_person ON orders (person_id);
                INSERT INTO people VALUES (1, 'a@x', 2, NULL), (2, 'a@x', 5, 'vip');
                INSERT INTO orders VALUES (10, 2), (11, 2);
                """)
        try write(
            "job.yaml",
            "version: 1\ndatabase: data.sqlite\ndedupe:\n  - entity: people\n    key: email\n    winner:\n      - id: asc\n    merge:\n      visits: sum\n      note: fill_null\n"
        )
        let text = try winnow(["plan", "job.yaml"], expect: 0).stdout
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        // Rows are named by the rowid's alias column, as `show` names them.
        XCTAssertTrue(lines.contains { $0.hasPrefix("id") && $0.contains("email") && $0.contains("visits") }, text)
        XCTAssertTrue(lines.contains { $0.split(separator: " ") == ["keep", "1", "'a@x'", "2", "NULL"] }, text)
        XCTAssertTrue(lines.contains { $0.split(separator: " ") == ["delete", "2", "'a@x'", "5", "'vip'"] }, text)
        XCTAssertTrue(lines.contains("merge: visits 2 -> 7"), text)
        XCTAssertTrue(lines.contains("merge: note NULL -> 'vip' (from id 2)"), text)
        XCTAssertTrue(lines.contains("re-point: 2 rows of orders.person_id from id 2 to id 1"), text)

        let json = try winnow(["plan", "job.yaml", "--format", "json"], expect: 0).stdout
        let summary = json.split(separator: "\n").compactMap(self.json).last
        let sample = ((summary?["rules"] as? [[String: Any]])?.first?["sample_groups"] as? [[String: Any]])?.first
        XCTAssertEqual(sample?["key"] as? [String], ["a@x"])
        let rows = sample?["rows"] as? [[String: Any]]
        XCTAssertEqual(rows?.map { $0["keep"] as? Bool }, [true, false])
        XCTAssertEqual(rows?.map { $0["row"] as? Int }, [1, 2])
        XCTAssertEqual(sample?["identity"] as? [String], ["id"])
        XCTAssertTrue((rows?[0]["values"] as? [Any])?.contains { $0 is NSNull } ?? false, "NULL is JSON null")
        let merge = sample?["merge"] as? [[String: Any]]
        XCTAssertEqual(merge?.first?["after"] as? Int, 7)
        XCTAssertEqual((sample?["repoint"] as? [[String: Any]])?.first?["rows"] as? Int, 2)
    }

    /// Every error of a job file in one pass: each rule and section is read even after an error.
    func testEveryErrorOfAFileIsReportedAtOnce() throws {
        try write(
            "job.yaml",
            """
            version: 1
            batch:
              size: -5
            dedupe:
              - entity: people
                kee: email
              - entity: people
                key: email
                winner: newest
            """)
        let result = try winnow(["validate", "job.yaml"], expect: 65)
        XCTAssertTrue(result.stderr.contains("job.yaml:3:"), result.stderr)
        XCTAssertTrue(result.stderr.contains("job.yaml:6:"), result.stderr)
        XCTAssertTrue(result.stderr.contains("job.yaml:9:"), result.stderr)
        // The unknown `kee` and the missing `key` are both reported, in file order.
        XCTAssertTrue(result.stderr.contains("(4 errors)"), result.stderr)
        let places = result.stderr.split(separator: "\n").compactMap { line in
            line.split(separator: ":").dropFirst().first.flatMap { Int($0) }
        }
        XCTAssertEqual(places, places.sorted(), result.stderr)
        try write(
            "schema.yaml",
            """
            version: 1
            tables:
              a:
                columns: []
              b:
                columns:
                  - {name: id, type: INTEGER, primary_key: maybe}
            """)
        // Inside one rule too: an unknown key, a bad NULL policy and a bad merge strategy.
        try write(
            "rule.yaml",
            """
            version: 1
            dedupe:
              - entity: people
                key: email
                colour: blue
                nulls: sometimes
                merge:
                  visits: average
            """)
        let rule = try winnow(["validate", "rule.yaml"], expect: 65)
        XCTAssertTrue(
            rule.stderr.contains("rule.yaml:5:") && rule.stderr.contains("rule.yaml:6:") && rule.stderr.contains("rule.yaml:8:"),
            rule.stderr)
        XCTAssertTrue(rule.stderr.contains("(3 errors)"), rule.stderr)
        let schema = try winnow(["validate", "schema.yaml"], expect: 65)
        XCTAssertTrue(schema.stderr.contains("(2 errors)"), schema.stderr)
        // Inside one table too: two bad columns and an index over a missing column.
        try write(
            "table.yaml",
            """
            version: 1
            tables:
              t:
                columns:
                  - {name: id, type: INTEGER, primary_key: maybe}
                  - {name: a, type: TEXT, nullable: perhaps}
                indexes:
                  - {name: t_b, columns: [b], unique: false}
            """)
        let table = try winnow(["validate", "table.yaml"], expect: 65)
        XCTAssertTrue(table.stderr.contains("(3 errors)"), table.stderr)
    }

    /// A seed that names a folder is a missing seed database (66), not an I/O error (74): found
    /// by the fuzzer (`from: ..`).
    func testSeedFromAFolderIsNotFound() throws {
        try makePeople(groups: 1)
        try FileManager.default.createDirectory(atPath: path("seeds"), withIntermediateDirectories: true)
        try write("job.yaml", "version: 1\ndatabase: data.sqlite\nseed:\n  name: s\n  from: seeds\n  tables: [people]\n")
        let plan = try winnow(["plan", "job.yaml"], expect: 66)
        XCTAssertTrue(plan.stderr.contains("is a directory"), plan.stderr)
        try winnow(["run", "job.yaml"], expect: 66)
    }

    /// `check --format junit` over several jobs (duplicates, clean, drift) is valid JUnit: one
    /// suite per job, one case per rule and per drift finding, counts that match.
    func testJUnitReportIsValidAgainstTheSchema() throws {
        try makePeople(groups: 3)
        try makePeople(groups: 0, name: "clean.sqlite")
        try write("dirty.yaml", Self.job)
        try write("clean.yaml", Self.job.replacingOccurrences(of: "data.sqlite", with: "clean.sqlite"))
        try write(
            "schema.yaml",
            "version: 1\ntables:\n  people:\n    columns:\n      - {name: id, type: INTEGER, primary_key: true}\n      - {name: email, type: TEXT}\n"
        )
        try write("drift.yaml", "version: 1\ndatabase: clean.sqlite\nschema: schema.yaml\n")
        let result = try winnow(["check", "dirty.yaml", "clean.yaml", "drift.yaml", "--format", "junit"], expect: 1)
        XCTAssertEqual(JUnitSchema.violations(result.stdout), [], result.stdout)
        XCTAssertEqual(result.stdout.components(separatedBy: "<testsuite ").count - 1, 3)
        XCTAssertEqual(result.stdout.components(separatedBy: "<failure ").count - 1, 2, "dirty's rule and drift's schema")
        // The validator itself rejects what CI servers reject.
        XCTAssertFalse(
            JUnitSchema.violations("<testsuites><testsuite name=\"a\" tests=\"2\"><testcase name=\"x\"/></testsuite></testsuites>").isEmpty)
        XCTAssertFalse(JUnitSchema.violations("<testsuites><testcase name=\"x\"/></testsuites>").isEmpty)
        XCTAssertFalse(JUnitSchema.violations("<testsuite tests=\"1\"><testcase name=\"x\"/></testsuite>").isEmpty)
    }

    /// Where nobody watches (output to a pipe or a file: cron), a run prints one line; with
    /// --verbose the detail and each phase's time; with --quiet nothing.
    func testRunPrintsOneLineWhereNobodyWatches() throws {
        try makePeople(groups: 3)
        try write("job.yaml", Self.job)
        try makePeople(groups: 3, name: "second.sqlite")
        let line = try winnow(["run", "job.yaml"], expect: 0).stdout
        XCTAssertEqual(line.split(separator: "\n").count, 1, line)
        XCTAssertTrue(line.hasPrefix("run 1 of job.yaml on "), line)
        XCTAssertTrue(line.contains(": completed: 3 duplicate groups, 6 rows deleted"), line)
        let verbose = try winnow(["run", "job.yaml", "--database", "second.sqlite", "--verbose"], expect: 0).stdout
        XCTAssertTrue(verbose.contains("dedupe[0] people by email"), verbose)
        XCTAssertTrue(verbose.contains("timings:") && verbose.contains("discovery of dedupe[0] people"), verbose)
        XCTAssertEqual(try winnow(["run", "job.yaml", "--quiet"], expect: 0).stdout, "")
    }

    // MARK: shapes and promises the new commands touch

    /// customers, two of three rows duplicates after lowercase, and orders pointing at them
    /// through a declared foreign key without an index.
    @discardableResult
    func makeCustomers(_ count: Int, name: String) throws -> String {
        try TestSupport.makeDatabase(
            at: path(name),
            sql: """
                CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, created_at INTEGER NOT NULL, visits INTEGER NOT NULL);
                CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), amount INTEGER);
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(count) - 1)
                INSERT INTO customers (email, created_at, visits)
                SELECT CASE i % 3 WHEN 0 THEN 'u' || (i / 3) || '@x.org' WHEN 1 THEN 'U' || (i / 3) || '@x.org' ELSE 'u' || (i / 3) || '@X.ORG' END,
                       1000 + (i * 7919) % 100003, i % 5
                FROM s ORDER BY (i * 2654435761) % 4294967311;
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(count) - 1)
                INSERT INTO orders (customer_id, amount) SELECT 1 + (i * 48271) % \(count), i FROM s;
                """)
    }

    static let customersJob = ScenarioKit.customersJob(size: 7, merge: "{visits: sum}", database: "data.sqlite")

    /// --max-duration on heavy duplication, tiny batches, merges and an unindexed reference:
    /// every stopped run leaves the references whole, the runs together end where one run does,
    /// and restoring them newest first gives back the original rows.
    func testRepeatedlyStoppedRunsOnHeavyShapesConvergeAndRestore() throws {
        let db = try makeCustomers(3000, name: "data.sqlite")
        try makeCustomers(3000, name: "reference.sqlite")
        try write("job.yaml", Self.customersJob)
        let original = try ScenarioKit.userState(db)
        var runs = 0
        var stopped = 0
        while runs < 200 {
            runs += 1
            let result = try winnow(["run", "job.yaml", "--max-duration", "0.02", "--format", "json"], expect: 0)
            let status = result.stdout.split(separator: "\n").compactMap(json).last?["status"] as? String
            XCTAssertEqual(try ScenarioKit.rows(db, "PRAGMA foreign_key_check").count, 0, "run \(runs) left dangling orders")
            if status == "completed" { break }
            XCTAssertEqual(status, "stopped")
            stopped += 1
        }
        XCTAssertGreaterThan(stopped, 0, "the limit stopped at least one run")
        print("[Operator] heavy shape: \(runs) runs, \(stopped) stopped by --max-duration 0.02")
        try winnow(["run", "job.yaml", "--database", "reference.sqlite"], expect: 0)
        XCTAssertEqual(try TestSupport.contentDump(db, includeRowIDs: true), try TestSupport.contentDump(path("reference.sqlite")))
        for run in stride(from: runs, through: 1, by: -1) {
            let restored = try TestSupport.winnow(["restore", "job.yaml", "--run", String(run)], in: dir)
            // The last run may have found nothing left to do (nothing to restore): refused, not done.
            XCTAssertTrue(restored.status == 0 || (run == runs && restored.status == 65), restored.stderr)
        }
        XCTAssertEqual(try ScenarioKit.userState(db), original, "\(runs) runs (\(stopped) stopped) restored newest first")
    }

    /// An incremental rule stopped between batches keeps its change log: the next run still
    /// finds every duplicate the inserts made.
    func testStoppedIncrementalRuleKeepsItsChangeLog() throws {
        let db = try makePeople(groups: 0)
        try makePeople(groups: 0, name: "reference.sqlite")
        let job = "version: 1\ndatabase: data.sqlite\ndedupe:\n  - entity: people\n    key: email\n    incremental: true\n"
        try write("job.yaml", job)
        try winnow(["run", "job.yaml"], expect: 0)
        try winnow(["run", "job.yaml", "--database", "reference.sqlite"], expect: 0)
        for target in [db, path("reference.sqlite")] {
            try ScenarioKit.execute(
                target,
                """
                WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 5999)
                INSERT INTO people (email, visits) SELECT 'n' || (i % 2000) || '@x', i FROM s
                """)
        }
        let first = try winnow(["run", "job.yaml", "--batch-size", "5", "--max-duration", "0.02", "--format", "json"], expect: 0)
        XCTAssertEqual(first.stdout.split(separator: "\n").compactMap(json).last?["status"] as? String, "stopped")
        try winnow(["run", "job.yaml"], expect: 0)
        try winnow(["run", "job.yaml", "--database", "reference.sqlite"], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people"), 2000)
        XCTAssertEqual(try TestSupport.contentDump(db), try TestSupport.contentDump(path("reference.sqlite")))
    }

    /// docs/reference.md section 5: `validate`, `plan` and `check` never change a byte of the database
    /// file; nor do the new read-only paths (validate --database, plan --save, a check whose
    /// guard would refuse, show, history and schema inspect with a job file, init).
    func testReadOnlyCommandsNeverChangeAByte() throws {
        let db = try makeCustomers(300, name: "data.sqlite")
        try write("job.yaml", Self.customersJob)
        try winnow(["run", "job.yaml", "--max-duration", "0.001"], expect: 0)  // a history to show
        try DatabaseQueue(path: db).writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try write(
            "guarded.yaml", Self.customersJob.replacingOccurrences(of: "archive: true", with: "archive: true\n    max_delete_percent: 1"))
        let bytes = try TestSupport.fileBytes(db)
        try winnow(["validate", "job.yaml", "--database", "data.sqlite"], expect: 0)
        try winnow(["plan", "job.yaml", "--save", "p.plan", "--verbose"], expect: 0)
        try winnow(["check", "guarded.yaml", "--format", "junit"], expect: 1)
        try winnow(["check", "job.yaml", "--format", "github"], expect: 1)
        try winnow(["show", "job.yaml", "--run", "1", "--format", "json"], expect: 0)
        try winnow(["history", "job.yaml"], expect: 0)
        try winnow(["schema", "inspect", "job.yaml", "--format", "json"], expect: 0)
        try winnow(["init", "--database", "data.sqlite"], expect: 0)
        XCTAssertEqual(try TestSupport.fileBytes(db), bytes)
        let wal = db + "-wal"
        let walBytes = FileManager.default.fileExists(atPath: wal) ? try TestSupport.fileBytes(wal).count : 0
        XCTAssertEqual(walBytes, 0, "nothing in a WAL either")
    }
}
