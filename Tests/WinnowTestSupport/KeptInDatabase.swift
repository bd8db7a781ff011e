import Foundation
import XCTest

/// Scenarios of what winnow keeps in a database (`show`, `history`, `restore`'s records,
/// `prune`, `uninstall`), through the built executable, written once and run on SQLite
/// (`WinnowScenarioTests`) and on PostgreSQL (`WinnowPostgresTests`) with the same data, the
/// same jobs and the same expected output.
package struct KeptInDatabase {
    /// The database as the executable takes it: a file path or a postgresql:// URL.
    package var database: String
    /// The scratch folder the executable runs in (job files are written there).
    package var dir: URL
    /// Empties the database and loads it from SQLite SQL (the same rows on both engines).
    package var load: (_ sql: String) throws -> Void
    /// Runs one statement on the database; `{winnow}` in it names winnow's schema prefix
    /// (nothing on SQLite, `winnow.` on PostgreSQL).
    package var execute: (_ sql: String) throws -> Void
    /// One integer from a query (same `{winnow}` prefix).
    package var integer: (_ sql: String) throws -> Int
    /// The database's schema (every object, winnow's too) and every row of every table, as
    /// text in a canonical order: equal snapshots, equal databases.
    package var snapshot: () throws -> [String]

    package init(
        database: String, dir: URL, load: @escaping (String) throws -> Void, execute: @escaping (String) throws -> Void,
        integer: @escaping (String) throws -> Int, snapshot: @escaping () throws -> [String]
    ) {
        self.database = database
        self.dir = dir
        self.load = load
        self.execute = execute
        self.integer = integer
        self.snapshot = snapshot
    }

    /// People with an e-mail key, two duplicate pairs (one by case and space), and their orders.
    package static let people = """
        CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, name TEXT, phone TEXT, visits INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER NOT NULL REFERENCES people(id), total INTEGER NOT NULL);
        CREATE INDEX orders_person ON orders (person_id);
        INSERT INTO people VALUES (1, 'ann@x.org', 'Ann', NULL, 1), (2, ' ANN@x.org', 'Ann B', '555-0100', 2),
            (3, 'bob@x.org', 'Bob', NULL, 1), (4, 'bob@x.org', 'Bobby', NULL, 3), (5, 'cy@x.org', 'Cy', NULL, 1);
        INSERT INTO orders VALUES (10, 2, 100), (11, 4, 50), (12, 5, 7), (13, 1, 9);
        """

    package static func job(archive: Bool = true, extra: String = "") -> String {
        """
        version: 1
        dedupe:
          - entity: people
            key: email
            normalize: [trim, lowercase]
            winner:
              - id: asc
            merge:
              phone: fill_null
              visits: sum
            references: repoint
            archive: \(archive)
        \(extra)
        """
    }

    /// `winnow show` of the run of ``job(archive:extra:)`` on ``people``, times masked.
    package static let shownRun = """
        Run 1: run of job.yaml, completed, started <time> UTC, <s>
        total: 2 duplicate groups, 2 rows deleted, 2 updated, 2 references re-pointed in 1 batch

        rule       table   key                      groups  deleted  updated  repointed  children deleted
        dedupe[0]  people  email (trim, lowercase)       2        2        2          2                 0

        dedupe[0] people by email (trim, lowercase): 2 groups (changed values: before the run -> now)
          group email ' ANN@x.org': kept id 1; deleted id 2
            updated id 1: phone NULL -> '555-0100', visits 1 -> 3
          group email 'bob@x.org': kept id 3; deleted id 4
            updated id 3: visits 1 -> 4
          re-pointed child rows:
            orders id 10: person_id 2 -> 1
            orders id 11: person_id 4 -> 3

        journal (what `winnow restore --run 1` puts back):
        table   rows deleted  rows changed
        orders             0             2
        people             2             2

        """

    /// Times and durations vary from run to run.
    package static func masked(_ text: String) -> String {
        var text = text
        for (pattern, replacement) in [(#"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"#, "<time>"), (#"\d+(\.\d+)? (s|min|ms)\b"#, "<s>")] {
            text = text.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
        }
        return text
    }

    @discardableResult
    package func winnow(
        _ arguments: [String], expect: Int32, file: StaticString = #filePath, line: UInt = #line
    ) throws
        -> TestSupport.Result
    {
        let result = try TestSupport.winnow(arguments, in: dir)
        XCTAssertEqual(
            result.status, expect, "winnow \(arguments.joined(separator: " "))\nstdout: \(result.stdout)\nstderr: \(result.stderr)",
            file: file, line: line)
        return result
    }

    package func json(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// The journal entries of run `run` as `show` counts them per table (deleted and changed
    /// rows), whichever journal table holds them (PostgreSQL keeps a rule's deleted losers in
    /// their own column types).
    package func journalEntries(run: Int) throws -> Int {
        let shown = json(try winnow(["show", "--run", "\(run)", "--format", "json", "--database", database], expect: 0).stdout)
        let tables = shown.last?["journal"] as? [[String: Any]] ?? []
        return tables.reduce(0) { $0 + ($1["deleted"] as? Int ?? 0) + ($1["updated"] as? Int ?? 0) }
    }

    package func writeJob(_ text: String, name: String = "job.yaml") throws {
        try TestSupport.writeFile(text, to: dir.appendingPathComponent(name).path)
    }

    /// Moves a run's start and end `days` days into the past.
    package func age(run: Int, days: Int) throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let then = formatter.string(from: Date().addingTimeInterval(-Double(days) * 86_400))
        try execute("UPDATE {winnow}winnow_runs SET started_at = '\(then)', finished_at = '\(then)' WHERE id = \(run)")
    }

    // MARK: show

    /// `show` lists per rule the groups (key values), the kept and deleted rows, the merged
    /// columns and the re-pointed children, in text and in JSON.
    package func showListsGroupsRowsAndChildren() throws {
        try load(Self.people)
        try writeJob(Self.job())
        let args = ["--database", database]
        try winnow(["run", "job.yaml"] + args, expect: 0)
        let text = try winnow(["show", "--run", "1"] + args, expect: 0).stdout
        XCTAssertEqual(Self.masked(text), Self.shownRun)
        let object = try XCTUnwrap(json(try winnow(["show", "--run", "1", "--format", "json"] + args, expect: 0).stdout).first)
        XCTAssertEqual(object["rows"] as? String, "listed")
        let rule = try XCTUnwrap((object["rules"] as? [[String: Any]])?.first)
        XCTAssertEqual(rule["key_columns"] as? [String], ["email"])
        let groups = try XCTUnwrap(rule["groups"] as? [[String: Any]])
        XCTAssertEqual(groups.count, 2)
        XCTAssertEqual(groups[0]["key"] as? [String: String], ["email": " ANN@x.org"])
        XCTAssertEqual((groups[0]["kept"] as? [String: Any])?["id"] as? Int, 1)
        let deleted = try XCTUnwrap((groups[0]["deleted"] as? [[String: Any]])?.first)
        XCTAssertEqual((deleted["row"] as? [String: Any])?["id"] as? Int, 2)
        let values = try XCTUnwrap(deleted["values"] as? [String: Any])
        XCTAssertEqual(values["name"] as? String, "Ann B", "JSON carries every deleted row's values")
        XCTAssertEqual(values["phone"] as? String, "555-0100")
        let changes = try XCTUnwrap((groups[0]["updated"] as? [String: Any])?["changes"] as? [[String: Any]])
        XCTAssertEqual(changes.map { $0["column"] as? String }, ["phone", "visits"])
        XCTAssertTrue(changes[0]["before"] is NSNull)
        XCTAssertEqual(changes[0]["now"] as? String, "555-0100")
        XCTAssertEqual(changes[1]["now"] as? Int, 3)
        let repointed = try XCTUnwrap(rule["repointed"] as? [[String: Any]])
        XCTAssertEqual(repointed.map { ($0["row"] as? [String: Any])?["id"] as? Int }, [10, 11])
        XCTAssertEqual(repointed.map { $0["table"] as? String }, ["orders", "orders"])
    }

    /// Text lists the first 10 groups of a rule and says how many more; `--verbose` and JSON
    /// list all of them.
    package func showListsTheFirstGroupsUnlessVerbose() throws {
        let rows = (1...12).flatMap { n in ["(\(2 * n - 1), 'p\(n)@x.org', 'A', NULL, 1)", "(\(2 * n), 'p\(n)@x.org', 'B', NULL, 1)"] }
        try load(
            """
            CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, name TEXT, phone TEXT, visits INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER NOT NULL REFERENCES people(id), total INTEGER NOT NULL);
            INSERT INTO people VALUES \(rows.joined(separator: ", "));
            """)
        try writeJob(Self.job())
        let args = ["--database", database]
        try winnow(["run", "job.yaml"] + args, expect: 0)
        let short = try winnow(["show", "--run", "1"] + args, expect: 0).stdout
        XCTAssertEqual(short.components(separatedBy: "\n  group ").count - 1, 10, short)
        XCTAssertTrue(short.contains("  group email 'p1@x.org': kept id 1; deleted id 2"), short)
        XCTAssertTrue(short.contains("... 2 more groups (--verbose lists all)"), short)
        // The rows the groups not listed deleted are their losers, not duplicate child rows.
        XCTAssertFalse(short.contains("duplicate child rows deleted"), short)
        let long = try winnow(["show", "--run", "1", "--verbose"] + args, expect: 0).stdout
        XCTAssertEqual(long.components(separatedBy: "\n  group ").count - 1, 12, long)
        XCTAssertTrue(long.contains("  group email 'p12@x.org': kept id 23; deleted id 24"), long)
        XCTAssertFalse(long.contains("more groups"), long)
        let object = try XCTUnwrap(json(try winnow(["show", "--run", "1", "--format", "json"] + args, expect: 0).stdout).first)
        XCTAssertEqual(((object["rules"] as? [[String: Any]])?.first?["groups"] as? [Any])?.count, 12)
    }

    /// Text without `--verbose` lists the head of what `--verbose` lists: the first 10 groups
    /// with their merges, then the first 10 re-pointed child rows, of a run of 30 groups in
    /// batches of 3 (each batch's journal holds other groups' rows and children).
    package func showWithoutVerboseListsTheHeadOfTheVerboseListing() throws {
        let people = (1...30).flatMap { n in
            [
                "(\(3 * n - 2), 'p\(n)@x.org', 'A', NULL, 1)", "(\(3 * n - 1), ' P\(n)@x.org', 'B', '555-\(n)', 2)",
                "(\(3 * n), 'q\(n)@x.org', 'C', NULL, 1)",
            ]
        }
        let orders = (1...90).map { n in "(\(100 + n), \((n * 37) % 90 + 1), \(n))" }
        try load(
            """
            CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, name TEXT, phone TEXT, visits INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER NOT NULL REFERENCES people(id), total INTEGER NOT NULL);
            CREATE INDEX orders_person ON orders (person_id);
            INSERT INTO people VALUES \(people.joined(separator: ", "));
            INSERT INTO orders VALUES \(orders.joined(separator: ", "));
            """)
        try writeJob(Self.job(extra: "batch: {size: 3}"))
        let args = ["--database", database]
        try winnow(["run", "job.yaml"] + args, expect: 0)
        func listing(_ text: String) -> (groups: [String], repointed: [String]) {
            let lines = text.split(separator: "\n").map(String.init)
            let groups = lines.filter { $0.hasPrefix("  group ") || $0.hasPrefix("    updated ") }
            let start = lines.firstIndex(of: "  re-pointed child rows:").map { $0 + 1 } ?? lines.count
            let repointed = lines[start...].prefix { $0.hasPrefix("    ") && !$0.hasPrefix("    ...") }
            return (groups, Array(repointed))
        }
        let short = listing(try winnow(["show", "--run", "1"] + args, expect: 0).stdout)
        let long = listing(try winnow(["show", "--run", "1", "--verbose"] + args, expect: 0).stdout)
        XCTAssertEqual(long.groups.count, 60, "30 groups, each with its merge")
        XCTAssertEqual(long.repointed.count, 30)
        XCTAssertEqual(short.groups, Array(long.groups.prefix(20)))
        XCTAssertEqual(short.repointed, Array(long.repointed.prefix(10)))
    }

    /// A run with `archive: false` kept no journal: `show` gives its counts and says why it
    /// lists no rows.
    package func showOfARunWithoutJournalSaysSo() throws {
        try load(Self.people)
        try writeJob(Self.job(archive: false))
        let args = ["--database", database]
        try winnow(["run", "job.yaml"] + args, expect: 0)
        let text = try winnow(["show", "--run", "1"] + args, expect: 0).stdout
        XCTAssertTrue(text.contains("total: 2 duplicate groups, 2 rows deleted"), text)
        XCTAssertTrue(text.contains("rows: not listed: the run did not journal them (archive: false)"), text)
        XCTAssertFalse(text.contains("group email"), text)
        let object = try XCTUnwrap(json(try winnow(["show", "--run", "1", "--format", "json"] + args, expect: 0).stdout).first)
        XCTAssertEqual(object["rows"] as? String, "not_journaled")
    }

    // MARK: history

    /// A restore refused before it starts (no such run, a restore of a restore) records
    /// nothing and takes no run id; a completed restore records what it put back, and
    /// `history` shows it.
    package func refusedRestoresLeaveNoTraceAndRestoresCount() throws {
        try load(Self.people)
        try writeJob(Self.job())
        let args = ["--database", database]
        try winnow(["run", "job.yaml"] + args, expect: 0)
        try winnow(["restore", "--run", "99"] + args, expect: 64)
        try winnow(["restore", "--run", "1"] + args, expect: 0)
        try winnow(["restore", "--run", "2"] + args, expect: 64)
        try winnow(["restore", "--run", "1"] + args, expect: 65)
        let entries = json(try winnow(["history", "--format", "json"] + args, expect: 0).stdout)
        XCTAssertEqual(entries.map { $0["run_id"] as? Int }, [2, 1], "only the run and the restore are recorded")
        XCTAssertEqual(entries[0]["command"] as? String, "restore")
        XCTAssertEqual(entries[0]["reinserted"] as? Int, 2)
        XCTAssertEqual(entries[0]["reverted"] as? Int, 4)
        let text = try winnow(["history"] + args, expect: 0).stdout
        XCTAssertTrue(text.contains("- (restores run 1: 2 rows re-inserted, 4 rows reverted)"), text)
        XCTAssertFalse(text.contains("refused"), text)
        try winnow(["run", "job.yaml"] + args, expect: 0)
        XCTAssertEqual(
            json(try winnow(["history", "--format", "json", "--limit", "1"] + args, expect: 0).stdout).first?["run_id"] as? Int, 3,
            "the next run takes the next id: the refusals took none")
    }

    /// A database whose bookkeeping an earlier winnow wrote (without the restore counts, the
    /// prune mark, the group records and the journal's rule): `history` and `show` read it as
    /// it is (read-only), and the next run or restore adds what it lacks.
    package func earlierBookkeepingIsReadThenUpgraded() throws {
        try load(Self.people)
        try writeJob(Self.job())
        let args = ["--database", database]
        try winnow(["run", "job.yaml"] + args, expect: 0)
        for statement in [
            "ALTER TABLE {winnow}winnow_runs DROP COLUMN reinserted", "ALTER TABLE {winnow}winnow_runs DROP COLUMN reverted",
            "ALTER TABLE {winnow}winnow_runs DROP COLUMN pruned_at", "ALTER TABLE {winnow}winnow_run_rules DROP COLUMN key_columns",
            "ALTER TABLE {winnow}winnow_journal DROP COLUMN rule", "DROP TABLE {winnow}winnow_run_groups",
        ] {
            try execute(statement)
        }
        let before = try snapshot()
        XCTAssertEqual(json(try winnow(["history", "--format", "json"] + args, expect: 0).stdout).count, 1)
        let shown = try winnow(["show", "--run", "1"] + args, expect: 0).stdout
        XCTAssertTrue(shown.contains("rows: the groups were not recorded"), shown)
        XCTAssertTrue(shown.contains("people             2             2"), shown)
        XCTAssertEqual(try snapshot(), before, "history and show change nothing")
        try winnow(["restore", "--run", "1"] + args, expect: 0)
        let entries = json(try winnow(["history", "--format", "json"] + args, expect: 0).stdout)
        XCTAssertEqual(entries.first?["reinserted"] as? Int, 2)
        try execute("INSERT INTO people VALUES (6, 'cy@x.org', 'Cy 2', NULL, 1)")
        try winnow(["run", "job.yaml"] + args, expect: 0)
        XCTAssertTrue(
            try winnow(["show", "--run", "3"] + args, expect: 0).stdout.contains("group email 'cy@x.org': kept id 5; deleted id 6"))
    }

    // MARK: prune

    /// `prune --older-than DAYS` deletes the journal of the runs older than that; `history`
    /// shows them pruned, `restore` of one refuses (65) saying so, `show` lists no rows; a
    /// newer run keeps its journal and restores.
    package func pruneOlderThanKeepsNewerRuns() throws {
        try load(Self.people)
        try writeJob(Self.job())
        let args = ["--database", database]
        try winnow(["run", "job.yaml"] + args, expect: 0)
        try execute("INSERT INTO people VALUES (6, 'cy@x.org', 'Cy 2', '555-0199', 1)")
        try winnow(["run", "job.yaml"] + args, expect: 0)
        try age(run: 1, days: 40)
        let before = try journalEntries(run: 1)
        XCTAssertGreaterThan(before, 0)
        let pruned = try winnow(["prune", "--older-than", "30", "--format", "json"] + args, expect: 0).stdout
        let report = try XCTUnwrap(json(pruned).first)
        XCTAssertEqual(report["runs"] as? [Int], [1])
        XCTAssertEqual(report["entries"] as? Int, before)
        XCTAssertEqual(try journalEntries(run: 1), 0)
        XCTAssertEqual(try integer("SELECT count(*) FROM {winnow}winnow_run_groups WHERE run_id = 1"), 0)
        XCTAssertGreaterThan(try journalEntries(run: 2), 0)
        let history = try winnow(["history"] + args, expect: 0).stdout
        XCTAssertTrue(history.contains("job.yaml (journal pruned "), history)
        let entries = json(try winnow(["history", "--format", "json"] + args, expect: 0).stdout)
        XCTAssertTrue(entries.first { $0["run_id"] as? Int == 1 }?["pruned_at"] is String)
        XCTAssertTrue(entries.first { $0["run_id"] as? Int == 2 }?["pruned_at"] is NSNull)
        let refused = try winnow(["restore", "--run", "1"] + args, expect: 65)
        XCTAssertTrue(refused.stderr.contains("its journal was pruned"), refused.stderr)
        let shown = try winnow(["show", "--run", "1"] + args, expect: 0).stdout
        XCTAssertTrue(shown.contains("rows: not listed: the run's journal was pruned"), shown)
        try winnow(["prune", "--older-than", "30"] + args, expect: 0)
        XCTAssertEqual(json(try winnow(["history", "--format", "json"] + args, expect: 0).stdout).count, 2, "prune records no run")
        try winnow(["restore", "--run", "2"] + args, expect: 0)
        XCTAssertEqual(try integer("SELECT count(*) FROM people WHERE id = 6"), 1, "the newer run was restored")
    }

    /// `prune --run ID` prunes one run whatever its age; a second prune of it, of a restore, or
    /// of no such run says so; `--older-than` and `--run` go together with neither missing.
    package func pruneOneRun() throws {
        try load(Self.people)
        try writeJob(Self.job())
        let args = ["--database", database]
        try winnow(["run", "job.yaml"] + args, expect: 0)
        let text = try winnow(["prune", "--run", "1"] + args, expect: 0).stdout
        XCTAssertTrue(text.contains("journal entries deleted; the journal of 1 run (1) is gone"), text)
        XCTAssertEqual(try journalEntries(run: 1), 0)
        XCTAssertTrue(try winnow(["prune", "--run", "1"] + args, expect: 0).stdout.contains("already pruned"))
        try winnow(["prune", "--run", "7"] + args, expect: 64)
        try winnow(["prune"] + args, expect: 64)
        try winnow(["prune", "--run", "1", "--older-than", "3"] + args, expect: 64)
        try winnow(["restore", "--run", "1"] + args, expect: 65)
    }

    /// `journal: {keep_days: N}` makes every run prune the journal of runs older than N days,
    /// and say so.
    package func keepDaysPrunesOnEveryRun() throws {
        try load(Self.people)
        try writeJob(Self.job(extra: "journal:\n  keep_days: 30\n"))
        let args = ["--database", database]
        try winnow(["validate", "job.yaml"], expect: 0)
        try winnow(["run", "job.yaml"] + args, expect: 0)
        try execute("INSERT INTO people VALUES (6, 'cy@x.org', 'Cy 2', NULL, 1)")
        try age(run: 1, days: 31)
        let run = try winnow(["run", "job.yaml", "--format", "json"] + args, expect: 0).stdout
        let summary = try XCTUnwrap(json(run).last)
        XCTAssertEqual(
            summary["notes"] as? [String], ["journal: keep_days 30: pruned 6 entries of 1 run (1); those runs can no longer be restored"])
        XCTAssertEqual(try journalEntries(run: 1), 0)
        XCTAssertGreaterThan(try journalEntries(run: 2), 0)
        try winnow(["restore", "--run", "1"] + args, expect: 65)
    }

    // MARK: uninstall

    /// On a table without duplicates, an incremental run installs winnow's tables and
    /// triggers; `uninstall --yes` removes every one of them in one go and leaves the schema
    /// and the rows exactly as they were before the run. Without `--yes` (no terminal to ask
    /// on) it removes nothing (64); `--dry-run` lists and removes nothing.
    package func uninstallLeavesTheDatabaseAsBeforeTheRun() throws {
        try load(
            """
            CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, name TEXT);
            CREATE INDEX people_email ON people (email);
            INSERT INTO people VALUES (1, 'ann@x.org', 'Ann'), (2, 'bob@x.org', 'Bob');
            """)
        try writeJob("version: 1\ndedupe:\n  - entity: people\n    key: email\n    incremental: true\n")
        let args = ["--database", database]
        let before = try snapshot()
        try winnow(["run", "job.yaml"] + args, expect: 0)
        try execute("INSERT INTO people VALUES (3, 'cy@x.org', 'Cy')")
        try execute("DELETE FROM people WHERE id = 3")
        XCTAssertNotEqual(try snapshot(), before, "the run installed its tables and triggers")
        try winnow(["uninstall"] + args, expect: 64)
        let listed = try winnow(["uninstall", "--dry-run"] + args, expect: 0).stdout
        XCTAssertTrue(listed.contains("nothing removed: --dry-run"), listed)
        XCTAssertTrue(listed.contains("winnow_track_insert_people"), listed)
        XCTAssertTrue(listed.contains("winnow_runs (1 row)"), listed)
        let removed = try winnow(["uninstall", "--yes"] + args, expect: 0).stdout
        XCTAssertTrue(removed.contains("removed:"), removed)
        XCTAssertEqual(try snapshot(), before, "schema and rows as they were before the run")
        XCTAssertTrue(try winnow(["uninstall", "--yes"] + args, expect: 0).stdout.contains("nothing to remove"))
        try winnow(["history"] + args, expect: 0)
    }
}
