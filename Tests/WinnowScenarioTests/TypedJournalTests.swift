import Foundation
import GRDB
import WinnowTestSupport
import XCTest

/// SQLite's journal of the losers a rule deletes, kept as the table's own values
/// (`winnow_journal_rows_<shape>`, columns without a declared type): `restore` puts back every
/// value with its storage class and rowid, `show` names each loser's winner from it, a later
/// run that deleted the same row blocks a restore, `prune` empties a run's rows, and a table it
/// cannot hold keeps the encoded journal.
final class TypedJournalTests: CLITestCase {
    /// Groups by `email`: a@x (1, 2, 3), b@x (4, 5), c@x (6) alone; the oldest `created` wins.
    /// Values an affinity would convert, were they copied into columns of the table's types:
    /// text in an INTEGER column, a real in a NUMERIC one, text that looks like a number in a
    /// column without a type, -0.0, a blob, the extremes of integers and doubles.
    static let schema = """
        CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL, i INTEGER, n NUMERIC, r REAL, t TEXT, x, b BLOB);
        INSERT INTO people VALUES
            (1, 'a@x', 1, 'one', 1.5, 2, 'z', '0012', x'00ff'),
            (2, 'a@x', 2, 9223372036854775807, '1e3x', -0.0, '12', 1e-300, x''),
            (3, 'a@x', 3, 2.5, 'abc', 1.7976931348623157e308, NULL, -0.0, NULL),
            (4, 'b@x', 1, NULL, 10, NULL, 'ü\t''', x'0a0d', x'5c27'),
            (5, 'b@x', 2, -9223372036854775808, 0.1, 3, '', '  7 ', 12),
            (6, 'c@x', 1, 0, 0, 0, '0', 0, 0);
        CREATE TABLE tags (name TEXT NOT NULL, owner TEXT NOT NULL, at INTEGER NOT NULL, note, PRIMARY KEY (name, owner)) WITHOUT ROWID;
        INSERT INTO tags VALUES ('a', 'x', 1, 'keep'), ('A', 'x', 2, x'01'), ('b', 'y', 1, 1.25), ('B', 'y', 3, 'zz');
        CREATE TABLE notes (body TEXT, created INTEGER);
        INSERT INTO notes (rowid, body, created) VALUES (10, 'same', 1), (20, 'same', 2), (30, 'other', 1), (40, 'same', 3);
        """

    static let job = """
        version: 1
        dedupe:
          - entity: people
            key: email
            winner:
              - created: asc
            archive: true
          - entity: tags
            key: name
            normalize: [lowercase]
            winner:
              - at: asc
            archive: true
          - entity: notes
            key: body
            winner:
              - created: asc
            archive: true
        batch:
          size: 1
        """

    /// Every row of every user table exactly: rowid (where there is one), then each value's
    /// storage class and bits.
    func exact(_ path: String) throws -> [String] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            var lines: [String] = []
            for (table, select) in [("people", "rowid, *"), ("tags", "*"), ("notes", "rowid, *")] {
                for row in try Row.fetchAll(db, sql: "SELECT \(select) FROM \(table) ORDER BY 1, 2") {
                    lines.append(table + " " + row.databaseValues.map(Self.exact).joined(separator: " | "))
                }
            }
            return lines
        }
    }

    static func exact(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null: return "null"
        case let .int64(v): return "int \(v)"
        case let .double(v): return "real \(v.bitPattern)"
        case let .string(v): return "text \(v.debugDescription)"
        case let .blob(v): return "blob \(v.map { String(format: "%02x", $0) }.joined())"
        }
    }

    func setUpData() throws -> String {
        let data = try TestSupport.makeDatabase(at: path("data.sqlite"), sql: Self.schema)
        try write("job.yaml", Self.job)
        return data
    }

    /// The deleted rows go to the typed tables only (no encoded entry, no group record); the
    /// restore brings back every value and rowid exactly, and `show` names each loser's winner.
    func testARestoreFromTheTypedJournalIsExact() throws {
        let data = try setUpData()
        let original = try exact(data)
        try winnow(["run", "job.yaml", "--database", data], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM winnow_journal"), 0)
        XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM winnow_run_groups"), 0)
        // One table per shape, its columns without a type; each loser beside its winner.
        let journals = try ScenarioKit.rows(
            data, "SELECT m.name, s.tbl FROM sqlite_master AS m JOIN winnow_journal_shapes AS s ON m.name = 'winnow_journal_rows_' || s.id"
        ).map { "\(String.fromDatabaseValue($0[1])!) in \(String.fromDatabaseValue($0[0])!)" }
        XCTAssertEqual(journals.count, 3, "\(journals)")
        for journal in journals {
            let relation = String(journal.split(separator: " ").last!)
            let types = try ScenarioKit.column(
                data, "SELECT type FROM pragma_table_info('\(relation)') WHERE name NOT LIKE 'winnow\\_%' ESCAPE '\\'", as: String.self)
            XCTAssertEqual(Set(types.map { $0 ?? "?" }), [""], journal)
        }
        let peopleJournal = String(journals.first { $0.hasPrefix("people") }!.split(separator: " ").last!)
        XCTAssertEqual(
            try ScenarioKit.column(
                data, "SELECT winnow_rid || ' -> ' || winnow_winner FROM \(peopleJournal) ORDER BY winnow_seq", as: String.self),
            ["2 -> 1", "3 -> 1", "5 -> 4"])
        XCTAssertEqual(
            try ScenarioKit.column(
                data, "SELECT winnow_run || '/' || winnow_rule || '/' || winnow_batch FROM \(peopleJournal) ORDER BY winnow_seq",
                as: String.self),
            ["1/0/1", "1/0/1", "1/0/2"])
        let show = try winnow(["show", "--database", data, "--run", "1"], expect: 0).stdout
        XCTAssertTrue(show.contains("group email 'a@x': kept id 1; deleted id 2, id 3"), show)
        XCTAssertTrue(show.contains("group email 'b@x': kept id 4; deleted id 5"), show)
        XCTAssertTrue(show.contains("group name 'A': kept (name, owner) = ('a', 'x'); deleted (name, owner) = ('A', 'x')"), show)
        XCTAssertTrue(show.contains("group body 'same': kept rowid 10; deleted rowid 20, rowid 40"), show)
        let json = try winnow(["show", "--database", data, "--run", "1", "--format", "json"], expect: 0).stdout
        XCTAssertTrue(json.contains(#"{"deleted":3,"table":"people","updated":0}"#), json)

        let restore = try winnow(["restore", "--database", data, "--run", "1"], expect: 0)
        XCTAssertTrue(restore.stdout.contains("restored: 7 rows re-inserted, 0 rows reverted"), restore.stdout)
        XCTAssertEqual(try exact(data), original)
    }

    /// A table changed after the run: a column added since takes its default in the rows put
    /// back; a journaled column dropped since refuses the restore and changes nothing.
    func testARestoreAfterTheTableChanged() throws {
        let data = try setUpData()
        let original = try exact(data)
        try winnow(["run", "job.yaml", "--database", data], expect: 0)
        try ScenarioKit.execute(data, "ALTER TABLE people ADD COLUMN note TEXT NOT NULL DEFAULT 'new'")
        try winnow(["restore", "--database", data, "--run", "1"], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM people WHERE note = 'new'"), 6)
        try ScenarioKit.execute(data, "ALTER TABLE people DROP COLUMN note")
        XCTAssertEqual(try exact(data), original)

        try winnow(["run", "job.yaml", "--database", data], expect: 0)
        try ScenarioKit.execute(data, "ALTER TABLE people DROP COLUMN b")
        let before = try exact(data)
        let refused = try winnow(["restore", "--database", data, "--run", "3"], expect: 65)
        XCTAssertTrue(refused.stderr.contains("cannot restore run 3: table 'people' no longer has column 'b'"), refused.stderr)
        XCTAssertEqual(try exact(data), before)
    }

    /// A row deleted again after it was put back in by hand makes the restore refuse, naming it,
    /// and change nothing.
    func testARowThatExistsAgainRefusesTheRestore() throws {
        let data = try setUpData()
        try winnow(["run", "job.yaml", "--database", data], expect: 0)
        try ScenarioKit.execute(data, "INSERT INTO tags VALUES ('B', 'y', 9, NULL)")
        let before = try exact(data)
        let refused = try winnow(["restore", "--database", data, "--run", "1"], expect: 65)
        XCTAssertTrue(
            refused.stderr.contains("cannot restore run 1: tags (name, owner) = ('B', 'y') was deleted by that run but exists again"),
            refused.stderr)
        XCTAssertEqual(try exact(data), before)
    }

    /// A later run that deleted a row this run deleted too (put back in between) blocks the
    /// restore of this run, naming it; `prune` of the later run empties its typed rows only.
    func testALaterRunBlocksAndPruneEmptiesTheTypedRows() throws {
        let data = try setUpData()
        try winnow(["run", "job.yaml", "--database", data], expect: 0)
        try ScenarioKit.execute(data, "INSERT INTO people (id, email, created) VALUES (2, 'a@x', 9)")
        try winnow(["run", "job.yaml", "--database", data], expect: 0)
        let blocked = try winnow(["restore", "--database", data, "--run", "1"], expect: 65)
        XCTAssertTrue(
            blocked.stderr.contains("cannot restore run 1: run 2 changed rows of people that this run changed: restore run 2 first"),
            blocked.stderr)
        let kept = "SELECT count(*) FROM {entries} WHERE run_id = "
        XCTAssertEqual(try ScenarioKit.intOverJournal(data, kept + "1"), 7)
        XCTAssertEqual(try ScenarioKit.intOverJournal(data, kept + "2"), 1)
        let prune = try winnow(["prune", "--database", data, "--run", "2"], expect: 0)
        XCTAssertTrue(prune.stdout.contains("1 journal entry deleted"), prune.stdout)
        XCTAssertEqual(try ScenarioKit.intOverJournal(data, kept + "2"), 0)
        XCTAssertEqual(try ScenarioKit.intOverJournal(data, kept + "1"), 7)
        let again = try winnow(["restore", "--database", data, "--run", "2"], expect: 65)
        XCTAssertTrue(again.stderr.contains("its journal was pruned"), again.stderr)
    }

    /// `uninstall --yes` removes the journal tables with winnow's other tables; the user's
    /// tables keep the rows the run left.
    func testUninstallRemovesTheJournalTables() throws {
        let data = try setUpData()
        try winnow(["run", "job.yaml", "--database", data], expect: 0)
        let survivors = try exact(data)
        let listed = try winnow(["uninstall", "--dry-run", "--database", data], expect: 0).stdout
        XCTAssertEqual(
            listed.components(separatedBy: "\n").filter { $0.contains("winnow_journal_rows_") }.count, 3, listed)
        try winnow(["uninstall", "--yes", "--database", data], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'winnow%'"), 0)
        XCTAssertEqual(try exact(data), survivors)
    }

    /// A table with a column named like winnow's own keeps the encoded journal and restores
    /// exactly; a typed table dropped by hand is made again by the next run.
    func testTablesTheTypedJournalCannotHoldKeepTheEncodedJournal() throws {
        let data = try setUpData()
        try ScenarioKit.execute(data, "ALTER TABLE notes ADD COLUMN winnow_mark INTEGER")
        let original = try exact(data)
        try winnow(["run", "job.yaml", "--database", data], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM winnow_journal WHERE op = 'delete'"), 2)
        XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM winnow_run_groups"), 2)
        XCTAssertEqual(
            try ScenarioKit.int(data, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'winnow\\_journal\\_rows\\_%' ESCAPE '\\'"), 2)
        try winnow(["restore", "--database", data, "--run", "1"], expect: 0)
        XCTAssertEqual(try exact(data), original)

        let people = try ScenarioKit.column(
            data,
            "SELECT 'winnow_journal_rows_' || id FROM winnow_journal_shapes WHERE tbl = 'people' AND columns LIKE '[\"id\"%'",
            as: String.self)[0]!
        try ScenarioKit.execute(data, "DROP TABLE \(people)")
        try winnow(["run", "job.yaml", "--database", data], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM \(people) WHERE winnow_run = 3"), 3)
        try winnow(["restore", "--database", data, "--run", "3"], expect: 0)
        XCTAssertEqual(try exact(data), original)
    }

    /// Runs `rule` (a flow mapping) on a new table `wide` of `columns` columns `c1`, `c2`, ...
    /// with three rows, two of them duplicates by `email`; checks what `check` finds in the
    /// run's file, then that `restore` puts back every row exactly.
    func roundTrip(columns: Int, rule: String, check: (String) throws -> Void) throws {
        let names = (1...columns).map { "c\($0)" }
        let data = try TestSupport.makeDatabase(
            at: path("wide\(columns).sqlite"),
            sql: """
                CREATE TABLE wide (id INTEGER PRIMARY KEY, email TEXT, \(names.joined(separator: ", ")));
                INSERT INTO wide (id, email, c1, c\(columns)) VALUES (1, 'a', 1, x'01'), (2, 'a', 2, 'two'), (3, 'b', NULL, 3.5);
                """)
        try write("wide.yaml", "version: 1\ndedupe:\n  - \(rule)\n")
        let original = try TestSupport.contentDump(data)
        try winnow(["run", "wide.yaml", "--database", data], expect: 0)
        try check(data)
        try winnow(["restore", "--database", data, "--run", "1"], expect: 0)
        XCTAssertEqual(try TestSupport.contentDump(data), original)
    }

    /// A table too wide for a journal table of its own (its columns and winnow's past SQLite's
    /// 2,000) keeps the encoded journal, each image packed by several function calls (SQLite
    /// takes at most 127 arguments in one), and restores exactly; at 150 columns the losers go
    /// to a journal table and the merged winner's before-image (more values than one call
    /// takes) to `winnow_journal`.
    func testTablesWiderThanOneFunctionCallOrAJournalTableRestoreExactly() throws {
        try roundTrip(columns: 1995, rule: "{entity: wide, key: email, winner: [{id: asc}], archive: true}") { data in
            XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM winnow_journal WHERE op = 'delete'"), 1)
            XCTAssertEqual(try ScenarioKit.intOverJournal(data, "SELECT count(*) FROM {entries}"), 1)
        }
        try roundTrip(columns: 150, rule: "{entity: wide, key: email, winner: [{id: asc}], merge: {c1: sum}, archive: true}") { data in
            XCTAssertEqual(try ScenarioKit.int(data, "SELECT c1 FROM wide WHERE id = 1"), 3)
            XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM winnow_journal WHERE op = 'update'"), 1)
            XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM winnow_journal WHERE op = 'delete'"), 0)
            XCTAssertEqual(try ScenarioKit.intOverJournal(data, "SELECT count(*) FROM {entries} WHERE op = 'delete'"), 1)
        }
    }

    /// A rule that merges and re-points: the merged winners' and re-pointed children's
    /// before-images stay encoded, the losers go typed; the restore undoes them in the reverse
    /// order of the batches and leaves every table as it was.
    func testARestoreOfMergesAndRepointsFromBothJournalsIsExact() throws {
        let data = try TestSupport.makeDatabase(
            at: path("merge.sqlite"),
            sql: """
                PRAGMA foreign_keys = ON;
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL, visits INTEGER NOT NULL, phone TEXT);
                CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER NOT NULL REFERENCES people(id), total REAL);
                CREATE INDEX orders_person ON orders (person_id);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
                INSERT INTO people SELECT i, 'p' || (i * 7919 % 97), i * 31 % 300, i % 5, CASE WHEN i % 3 = 0 THEN NULL ELSE 'ph' || i END FROM n;
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
                INSERT INTO orders SELECT i, 1 + (i * 13 % 300), i / 7.0 FROM n;
                """)
        try write(
            "merge.yaml",
            """
            version: 1
            dedupe:
              - entity: people
                key: email
                winner:
                  - created: asc
                merge:
                  visits: sum
                  phone: fill_null
                references: repoint
                archive: true
            batch:
              size: 7
            """)
        let original = try TestSupport.contentDump(data)
        try winnow(["run", "merge.yaml", "--database", data], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM people"), 97)
        XCTAssertEqual(try ScenarioKit.int(data, "SELECT count(*) FROM winnow_journal WHERE op = 'delete'"), 0)
        XCTAssertEqual(try ScenarioKit.intOverJournal(data, "SELECT count(*) FROM {entries} WHERE op = 'delete'"), 203)
        XCTAssertGreaterThan(try ScenarioKit.int(data, "SELECT count(*) FROM winnow_journal WHERE op = 'update'"), 97)
        try winnow(["restore", "--database", data, "--run", "1"], expect: 0)
        XCTAssertEqual(try TestSupport.contentDump(data), original)
    }
}
