import Foundation
import WinnowBackends
import WinnowCore
import WinnowTestSupport
import XCTest

@testable import WinnowPostgres

/// The journal of the losers a rule deletes, kept in the table's own column types
/// (`winnow.winnow_journal_rows_<shape>`): `restore` puts every value back as it was, `show`
/// lists the groups from it, `prune` empties it, a later run that deleted the same rows blocks
/// a restore, and a table whose rows cannot be kept that way keeps the `jsonb` journal.
final class PostgresTypedJournalTests: XCTestCase {
    /// Groups by `email`: a@x (1, 2, 3), b@x (4, 5), c@x (6) alone; the oldest `created` wins.
    /// Every column a type whose text form a `jsonb` image would round or respell.
    func load() throws -> String {
        let url = try PostgresServer.require()
        try PostgresServer.reset(url)
        try execute(
            url,
            """
            CREATE TYPE public.mood AS ENUM ('calm', 'busy');
            CREATE TABLE public.people (
                id integer PRIMARY KEY, email text, created integer NOT NULL, amount numeric(12,4), ratio double precision,
                label varchar(5), seen timestamptz, data jsonb, tags integer[], photo bytea, mood public.mood, flag boolean, ident uuid);
            INSERT INTO public.people VALUES
                (1, 'a@x', 1, 1.5, 0.1, 'one', '2026-01-02 03:04:05.123456+00', '{"b": 1, "a": [1.50, null]}', '{1,NULL,3}', '\\x00ff', 'calm', true, '00000000-0000-0000-0000-000000000001'),
                (2, 'a@x', 2, 12345678.1234, 1e-300, 'two', '-infinity', '{"x": "ü\\t"}', '{}', '\\x', 'busy', false, NULL),
                (3, 'a@x', 3, -0.0001, 'NaN', NULL, 'infinity', 'null', NULL, NULL, NULL, NULL, '00000000-0000-0000-0000-000000000003'),
                (4, 'b@x', 1, NULL, -0.0, 'x''y', '2000-02-29 00:00:00+00', '[]', '{-1}', '\\x5c27', 'calm', true, NULL),
                (5, 'b@x', 2, 0, 1.7976931348623157e308, 'Zß', NULL, '"s"', '{2147483647}', '\\x0a0d', 'busy', NULL, NULL),
                (6, 'c@x', 1, 2, 2, 'six', NULL, NULL, NULL, NULL, NULL, NULL, NULL);
            ANALYZE public.people;
            """)
        return url
    }

    static let job = """
        version: 1
        dedupe:
          - entity: people
            key: email
            winner:
              - created: asc
            archive: true
        batch:
          size: 1
        """

    /// Runs `sql`, statement by statement (each ends a line with `;`).
    func execute(_ url: String, _ sql: String) throws {
        try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in
            for statement in sql.components(separatedBy: ";\n") where !statement.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                try session.execute(statement)
            }
        }
    }

    func strings(_ url: String, _ sql: String) throws -> [String] {
        try PostgresBackend().withSession(url, mode: .readOnly) { session in try session.rows(sql).map { $0.values.first?.string ?? "NULL" }
        }
    }

    func integer(_ url: String, _ sql: String) throws -> Int {
        try PostgresBackend().withSession(url, mode: .readOnly) { try $0.value(sql).int ?? -1 }
    }

    /// Every row exactly, in the server's own text form.
    func table(_ url: String) throws -> [String] { try strings(url, "SELECT p::text FROM public.people AS p ORDER BY id") }

    func run(_ url: String, _ yaml: String = job) throws -> TestSupport.Result {
        let dir = try TestSupport.scratchDirectory()
        let file = try TestSupport.writeFile(yaml, to: dir.appendingPathComponent("job.yaml").path)
        return try TestSupport.winnow(["run", file, "--database", url])
    }

    /// The deleted rows go to the typed table only (no `jsonb` entry, no group record); the
    /// restore brings back every value exactly, and `show` names each loser's winner.
    func testARestoreFromTheTypedJournalIsExact() throws {
        let url = try load()
        let original = try table(url)
        let result = try run(url)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try PostgresServer.integers(url, "id", of: "people"), [1, 4, 6])
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal"), 0)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_run_groups"), 0)
        XCTAssertEqual(
            try strings(url, "SELECT relation || ' ' || tbl || ' ' || key FROM winnow.winnow_journal_typed"),
            ["winnow_journal_rows_1 people [\"id\"]"])
        XCTAssertEqual(
            try strings(url, "SELECT id::text || ' -> ' || winnow_w0::text FROM winnow.winnow_journal_rows_1 ORDER BY id"),
            ["2 -> 1", "3 -> 1", "5 -> 4"])
        // Its columns have the table's types (modifier, collation and enum included).
        XCTAssertEqual(
            try strings(
                url,
                "SELECT string_agg(format_type(atttypid, atttypmod), ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'winnow.winnow_journal_rows_1'::regclass AND attnum > 0"
            ),
            [
                "bigint, bigint, bigint, bigint, integer, integer, text, integer, numeric(12,4), double precision, character varying(5), timestamp with time zone, jsonb, integer[], bytea, mood, boolean, uuid"
            ])
        let show = try TestSupport.winnow(["show", "--database", url, "--run", "1"])
        XCTAssertEqual(show.status, 0, show.stderr)
        XCTAssertTrue(show.stdout.contains("group email 'a@x': kept id 1; deleted id 2, id 3"), show.stdout)
        XCTAssertTrue(show.stdout.contains("group email 'b@x': kept id 4; deleted id 5"), show.stdout)
        XCTAssertTrue(show.stdout.contains("people             3             0"), show.stdout)
        let restore = try TestSupport.winnow(["restore", "--database", url, "--run", "1"])
        XCTAssertEqual(restore.status, 0, restore.stderr)
        XCTAssertTrue(restore.stdout.contains("3 rows re-inserted"), restore.stdout)
        XCTAssertEqual(try table(url), original)
    }

    /// After the run, a column added takes its default in the rows put back and every other
    /// value comes back exactly; a column dropped stops the restore before anything changes.
    /// The same on SQLite and on both of PostgreSQL's journals (a rule that merges keeps
    /// `jsonb` images, its merged winner's too), with the same words.
    func testARestoreAfterTheTableChangedReadsTheSameOnBothEngines() throws {
        let (url, dir, data) = try PostgresServer.engines(
            "changed.sqlite",
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL, visits INTEGER NOT NULL, photo BLOB);
                INSERT INTO people VALUES (1, 'a@x', 1, 1, x'00'), (2, 'a@x', 2, 2, x'01'), (3, 'a@x', 3, 4, NULL), (4, 'b@x', 1, 1, x'ff'),
                    (5, 'b@x', 2, 3, NULL), (6, 'c@x', 1, 5, x'');
                """)
        let jobs = [
            "delete": "version: 1\ndedupe:\n  - {entity: people, key: email, winner: [{created: asc}], archive: true}\n",
            "merge":
                "version: 1\ndedupe:\n  - {entity: people, key: email, winner: [{created: asc}], merge: {visits: sum}, archive: true}\n",
        ]
        let original = try PostgresServer.rows(data, tables: ["people"])
        var refusals: [String] = []
        for (name, yaml) in jobs.sorted(by: { $0.key < $1.key }) {
            let job = try TestSupport.writeFile(yaml, to: dir.appendingPathComponent("\(name).yaml").path)
            for engine in ["SQLite", "PostgreSQL"] {
                let target: String
                if engine == "SQLite" {
                    target = dir.appendingPathComponent("\(name).sqlite").path
                    try FileManager.default.copyItem(atPath: data, toPath: target)
                } else {
                    try PostgresServer.reset(url)
                    try PostgresServer.load(data, into: url)
                    target = url
                }
                let alter = { (sql: String) in
                    try BackendRouter().withSession(target, mode: .readWrite(create: false)) {
                        try $0.execute("ALTER TABLE \($0.dialect.table("people")) \(sql)")
                    }
                }
                let label = "\(name) on \(engine)"
                XCTAssertEqual(try TestSupport.winnow(["run", job, "--database", target]).status, 0, label)
                if engine == "PostgreSQL" {
                    // Either rule's losers, with their winners, in the typed journal; the merged
                    // winners' before-images in `jsonb`.
                    XCTAssertEqual(
                        try strings(url, "SELECT id::text || ' -> ' || winnow_w0::text FROM winnow.winnow_journal_rows_1 ORDER BY id"),
                        ["2 -> 1", "3 -> 1", "5 -> 4"], label)
                    XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_run_groups"), 0, label)
                    XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal"), name == "merge" ? 2 : 0, label)
                }
                try alter("ADD COLUMN note TEXT NOT NULL DEFAULT 'new'")
                let restore = try TestSupport.winnow(["restore", "--database", target, "--run", "1"])
                XCTAssertEqual(restore.status, 0, "\(label): \(restore.stderr)")
                XCTAssertEqual(
                    try PostgresServer.rows(target, tables: ["people"]), ["people": original["people"]!.map { $0 + "|new" }.sorted()], label
                )
                XCTAssertEqual(try TestSupport.winnow(["run", job, "--database", target]).status, 0, label)
                try alter("DROP COLUMN photo")
                let before = try PostgresServer.rows(target, tables: ["people"])
                let refused = try TestSupport.winnow(["restore", "--database", target, "--run", "3"])
                XCTAssertEqual(refused.status, 65, "\(label): \(refused.stderr)")
                refusals.append(refused.stderr)
                XCTAssertEqual(try PostgresServer.rows(target, tables: ["people"]), before, label)
            }
        }
        XCTAssertEqual(refusals.count, 4)
        for refusal in refusals {
            XCTAssertTrue(refusal.contains("cannot restore run 3: table 'people' no longer has column 'photo'"), refusal)
        }
    }

    /// A later run that deleted a row this run deleted too (put back in between) blocks the
    /// restore of this run, naming it; `prune` of the later run empties its typed rows.
    func testALaterRunBlocksAndPruneEmptiesTheTypedRows() throws {
        let url = try load()
        XCTAssertEqual(try run(url).status, 0)
        try execute(url, "INSERT INTO public.people (id, email, created) VALUES (2, 'a@x', 9)")
        XCTAssertEqual(try run(url).status, 0)
        let blocked = try TestSupport.winnow(["restore", "--database", url, "--run", "1"])
        XCTAssertEqual(blocked.status, 65, blocked.stderr)
        XCTAssertTrue(
            blocked.stderr.contains("cannot restore run 1: run 2 changed rows of people that this run changed: restore run 2 first"),
            blocked.stderr)
        let prune = try TestSupport.winnow(["prune", "--database", url, "--run", "2"])
        XCTAssertEqual(prune.status, 0, prune.stderr)
        XCTAssertTrue(prune.stdout.contains("1 journal entry deleted"), prune.stdout)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal_rows_1 WHERE winnow_run = 2"), 0)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal_rows_1 WHERE winnow_run = 1"), 3)
        let again = try TestSupport.winnow(["restore", "--database", url, "--run", "2"])
        XCTAssertEqual(again.status, 65)
        XCTAssertTrue(again.stderr.contains("its journal was pruned"), again.stderr)
    }

    /// `prune` deletes a run's typed rows ``JournalPruner/batchSize`` at a time, one short
    /// transaction each, until none is left, and counts them all.
    func testPruneEmptiesATypedJournalLargerThanOneTransaction() throws {
        let url = try PostgresServer.require()
        try PostgresServer.reset(url)
        let losers = JournalPruner.batchSize * 2 + 500
        try execute(
            url,
            """
            CREATE TABLE public.people (id integer PRIMARY KEY, email text, created integer NOT NULL);
            INSERT INTO public.people SELECT g, 'e' || (g % 100), g FROM generate_series(1, \(losers + 100)) AS g;
            ANALYZE public.people;
            """)
        XCTAssertEqual(try run(url, Self.job.replacingOccurrences(of: "size: 1", with: "size: 50")).status, 0)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal_rows_1"), losers)
        let prune = try TestSupport.winnow(["prune", "--database", url, "--run", "1", "--format", "json"])
        XCTAssertEqual(prune.status, 0, prune.stderr)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(prune.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(report["entries"] as? Int, losers)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal_rows_1"), 0)
    }

    /// `uninstall --yes` removes the typed journal's tables and registry with winnow's other
    /// tables and its schema; the user's rows stay as the run left them.
    func testUninstallRemovesTheTypedJournal() throws {
        let url = try load()
        XCTAssertEqual(try run(url).status, 0)
        let survivors = try table(url)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal_rows_1"), 3)
        let listed = try TestSupport.winnow(["uninstall", "--dry-run", "--database", url])
        XCTAssertTrue(listed.stdout.contains("winnow_journal_rows_1 (3 rows)"), listed.stdout)
        XCTAssertTrue(listed.stdout.contains("winnow_journal_typed (1 row)"), listed.stdout)
        XCTAssertEqual(try TestSupport.winnow(["uninstall", "--yes", "--database", url]).status, 0)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = 'winnow'"), 0)
        XCTAssertEqual(try table(url), survivors)
    }

    /// A table too wide for a journal table beside its columns (PostgreSQL allows 1,600) keeps
    /// the `jsonb` journal and restores exactly. Its list of columns is longer than a B-tree
    /// entry may be: the journal shapes are unique by the list's digest, and the constraint an
    /// earlier winnow made on the list itself is dropped when the run installs its tables.
    func testATableTooWideForAJournalTableKeepsTheJsonbJournal() throws {
        let url = try PostgresServer.require()
        try PostgresServer.reset(url)
        let columns = (1...1595).map { "c\($0) integer" }.joined(separator: ", ")
        try execute(
            url,
            """
            CREATE SCHEMA winnow;
            CREATE TABLE winnow.winnow_journal_shapes (
                id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, tbl TEXT NOT NULL, columns TEXT NOT NULL, UNIQUE (tbl, columns));
            CREATE TABLE public.people (id integer PRIMARY KEY, email text, created integer NOT NULL, \(columns));
            INSERT INTO public.people (id, email, created, c1, c1595) VALUES (1, 'a@x', 1, 7, 8), (2, 'a@x', 2, NULL, 9), (3, 'b@x', 1, 1, 1)
            """)
        let original = try table(url)
        XCTAssertEqual(try run(url).status, 0)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal WHERE op = 'delete'"), 1)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename LIKE 'winnow\\_journal\\_rows\\_%'"), 0)
        XCTAssertEqual(
            try integer(url, "SELECT count(*) FROM pg_catalog.pg_constraint WHERE conname = 'winnow_journal_shapes_tbl_columns_key'"), 0)
        XCTAssertEqual(try TestSupport.winnow(["restore", "--database", url, "--run", "1"]).status, 0)
        XCTAssertEqual(try table(url), original)
    }

    /// A table with a column named like winnow's own keeps the `jsonb` journal, and a column
    /// whose type changed since the typed table was made sends the next run there too; both
    /// restore exactly.
    func testTablesTheTypedJournalCannotHoldKeepTheJsonbJournal() throws {
        let url = try load()
        XCTAssertEqual(try run(url).status, 0)
        try execute(
            url,
            "ALTER TABLE public.people ALTER COLUMN amount TYPE numeric(14,6);\nINSERT INTO public.people (id, email, created, amount) VALUES (7, 'c@x', 2, 1.123456)"
        )
        let changed = try table(url)
        XCTAssertEqual(try run(url).status, 0)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal WHERE run_id = 2"), 1)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal_rows_1 WHERE winnow_run = 2"), 0)
        XCTAssertEqual(try TestSupport.winnow(["restore", "--database", url, "--run", "2"]).status, 0)
        XCTAssertEqual(try table(url), changed)

        try execute(url, "ALTER TABLE public.people ADD COLUMN winnow_mark integer")
        XCTAssertEqual(try run(url).status, 0)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal WHERE run_id = 4"), 1)
        XCTAssertEqual(try integer(url, "SELECT count(*) FROM winnow.winnow_journal_typed"), 1)
    }
}
