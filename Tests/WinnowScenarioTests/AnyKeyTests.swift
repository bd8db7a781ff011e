import Foundation
import GRDB
import WinnowTestSupport
import XCTest

/// `key: {any: [...]}` on SQLite, through the executable: rows that share any of several keys
/// are one group (connected components), NULLs never link, similarity links only inside a
/// block, `max_group_size` refuses before anything is written, and `restore` is exact.
final class AnyKeyTests: CLITestCase {
    /// The linked people of ``AnyKeyFixture/people``.
    static let people = AnyKeyFixture.people

    static func job(_ extra: String = "", keys: String? = nil) -> String {
        """
        version: 1
        database: db.sqlite
        dedupe:
          - entity: people
            key:
              any:
        \(keys ?? AnyKeyFixture.keys)
            winner:
              - id: asc
            merge:
              visits: sum
            archive: true
        \(extra)
        """
    }

    func ids(_ db: String = "db.sqlite") throws -> [Int64] {
        try DatabaseQueue(path: path(db)).read { try Int64.fetchAll($0, sql: "SELECT id FROM people ORDER BY id") }
    }

    func testRowsSharingAnyKeyAreOneGroupAndRestoreIsExact() throws {
        try TestSupport.makeDatabase(at: path("db.sqlite"), sql: Self.people)
        let before = try TestSupport.contentDump(path("db.sqlite"))
        try write("job.yaml", Self.job())
        let plan = try winnow(["plan", "job.yaml"], expect: 0)
        XCTAssertTrue(plan.stdout.contains("2 duplicate groups, 3 rows to delete"), plan.stdout)
        // Per key, the rows it adds to groups beyond the keys before it; which key linked
        // each loser, and to which row.
        XCTAssertTrue(plan.stdout.contains("keys: email (trim, lowercase) links 1 row; phone 1 more; name + born 1 more"), plan.stdout)
        XCTAssertTrue(plan.stdout.contains("largest groups: 3, 2 rows (max_group_size 50)"), plan.stdout)
        XCTAssertTrue(plan.stdout.contains("linked: id 2 to id 1 by email (trim, lowercase)"), plan.stdout)
        XCTAssertTrue(plan.stdout.contains("linked: id 3 to id 2 by phone"), plan.stdout)
        XCTAssertTrue(plan.stdout.contains("linked: id 5 to id 4 by name + born"), plan.stdout)
        let json = try winnow(["plan", "job.yaml", "--format", "json"], expect: 0)
        let rule = try XCTUnwrap(
            (json.stdout.split(separator: "\n").compactMap(self.json).first { $0["event"] as? String == "summary" }?["rules"]
                as? [[String: Any]])?.first)
        XCTAssertEqual((rule["links"] as? [[String: Any]])?.compactMap { $0["rows"] as? Int }, [1, 1, 1])
        let samples = try XCTUnwrap(rule["sample_groups"] as? [[String: Any]])
        let links = samples.flatMap { ($0["linked_by"] as? [[String: Any]]) ?? [] }
        XCTAssertEqual(
            links.map { "\($0["row"] ?? "") \($0["key"] ?? "") \($0["to"] ?? "")" },
            [
                "2 email (trim, lowercase) 1", "3 phone 2", "5 name + born 4",
            ])
        try winnow(["run", "job.yaml"], expect: 0)
        // 1~2 by e-mail and 2~3 by phone: one group; 4~5 by name and birth date; 6, 7, 8 alone
        // (7 and 8 share only a NULL phone).
        XCTAssertEqual(try ids(), [1, 4, 6, 7, 8])
        let (visits, orders) = try DatabaseQueue(path: path("db.sqlite")).read { db in
            (
                try Int64.fetchAll(db, sql: "SELECT visits FROM people ORDER BY id"),
                try Int64.fetchAll(db, sql: "SELECT person_id FROM orders ORDER BY id")
            )
        }
        XCTAssertEqual(visits, [7, 24, 32, 64, 128])
        XCTAssertEqual(orders, [1, 1, 4, 7, 8])
        try winnow(["check", "job.yaml"], expect: 0)
        try winnow(["restore", "job.yaml", "--run", "1"], expect: 0)
        XCTAssertEqual(try TestSupport.contentDump(path("db.sqlite"))["people"], before["people"])
        XCTAssertEqual(try TestSupport.contentDump(path("db.sqlite"))["orders"], before["orders"])
    }

    /// A later run links again from the rows as they are: a new row that shares a key with each
    /// of two groups' survivors joins them into one, and its winner takes the other's orders.
    func testANewRowThatLinksTwoGroupsJoinsThemOnTheNextRun() throws {
        try TestSupport.makeDatabase(at: path("db.sqlite"), sql: Self.people)
        try write("job.yaml", Self.job())
        try winnow(["run", "job.yaml"], expect: 0)
        XCTAssertEqual(try ids(), [1, 4, 6, 7, 8])
        // Row 9 shares 1's e-mail and 4's name and birth date.
        try DatabaseQueue(path: path("db.sqlite")).write { db in
            try db.execute(sql: "INSERT INTO people VALUES (9, 'ANN@x.org', NULL, 'Dan', '1970-05-05', 256)")
        }
        try winnow(["run", "job.yaml"], expect: 0)
        XCTAssertEqual(try ids(), [1, 6, 7, 8])
        let (visits, orders) = try DatabaseQueue(path: path("db.sqlite")).read { db in
            (
                try Int64.fetchOne(db, sql: "SELECT visits FROM people WHERE id = 1"),
                try Int64.fetchAll(db, sql: "SELECT person_id FROM orders ORDER BY id")
            )
        }
        XCTAssertEqual(visits, 7 + 24 + 256)
        XCTAssertEqual(orders, [1, 1, 1, 7, 8])
    }

    /// The order of the alternatives changes nothing about the groups.
    func testTheGroupsDoNotDependOnTheOrderOfTheAlternatives() throws {
        try TestSupport.makeDatabase(at: path("db.sqlite"), sql: Self.people)
        try write(
            "job.yaml",
            Self.job(
                keys: """
                            - [name, born]
                            - phone
                            - {columns: [email], normalize: [trim, lowercase]}
                    """))
        try winnow(["run", "job.yaml"], expect: 0)
        XCTAssertEqual(try ids(), [1, 4, 6, 7, 8])
    }

    /// A group larger than max_group_size refuses the run before anything is written: exit 65,
    /// the guard and some of the group's key values named.
    func testMaxGroupSizeRefusesTheRunAndNamesTheGroup() throws {
        try TestSupport.makeDatabase(at: path("db.sqlite"), sql: Self.people)
        let before = try TestSupport.contentDump(path("db.sqlite"))
        try write("job.yaml", Self.job().replacingOccurrences(of: "    archive: true", with: "    archive: true\n    max_group_size: 2"))
        let run = try winnow(["run", "job.yaml"], expect: 65)
        XCTAssertTrue(run.stderr.contains("max_group_size 2"), run.stderr)
        XCTAssertTrue(run.stderr.contains("the keys link 3 rows into one group"), run.stderr)
        XCTAssertTrue(run.stderr.contains("'ann@x.org'"), run.stderr)
        XCTAssertEqual(try TestSupport.contentDump(path("db.sqlite"))["people"], before["people"])
        XCTAssertEqual(try TestSupport.contentDump(path("db.sqlite"))["orders"], before["orders"])
        // A plan says the same; a check reports it as a finding (duplicates: exit 1).
        try winnow(["plan", "job.yaml"], expect: 65)
        let check = try winnow(["check", "job.yaml"], expect: 1)
        XCTAssertTrue(check.stdout.contains("max_group_size"), check.stdout)
    }

    /// Similarity links rows only inside a block (equal on its columns), never across blocks.
    func testSimilarityLinksInsideABlockOnly() throws {
        try TestSupport.makeDatabase(
            at: path("db.sqlite"),
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, ssn TEXT, given TEXT, surname TEXT, born TEXT);
                INSERT INTO people VALUES
                    (1, '111', 'jonathan', 'smith', '1980-01-01'),
                    (2, '222', 'jonathon', 'smith', '1980-01-01'),
                    (3, '333', 'jonathan', 'smith', '1980-01-02'),
                    (4, '444', 'mary', 'smith', '1980-01-01'),
                    (5, '555', 'JONATHAN', 'SMYTH', '1980-01-01'),
                    (6, '111', NULL, NULL, '1999-12-31');
                """)
        try write(
            "job.yaml",
            """
            version: 1
            database: db.sqlite
            dedupe:
              - entity: people
                key:
                  any:
                    - ssn
                    - columns: [born]
                      normalize: lowercase
                      similar: {columns: [given, surname], jaro_winkler: 0.9}
                winner: [{id: asc}]
                archive: true
            """)
        try winnow(["run", "job.yaml"], expect: 0)
        // 2 and 5 are close to 1 on the same day ("jonathan smyth" after lowercase); 3 is born
        // another day; 4 is far; 6 shares 1's ssn.
        XCTAssertEqual(try ids(), [1, 3, 4])
    }

    func testLevenshteinCountsEdits() throws {
        try TestSupport.makeDatabase(
            at: path("db.sqlite"),
            sql: """
                CREATE TABLE items (id INTEGER PRIMARY KEY, code TEXT, maker TEXT, name TEXT);
                INSERT INTO items VALUES (1, 'a', 'acme', 'widget'), (2, 'b', 'acme', 'widgte'), (3, 'c', 'acme', 'wodgte'),
                    (4, 'd', 'acme', 'gadget'), (5, 'e', 'other', 'widget'), (6, 'a', 'zeta', 'zzz');
                """)
        try write(
            "job.yaml",
            """
            version: 1
            database: db.sqlite
            dedupe:
              - entity: items
                key:
                  any:
                    - code
                    - {columns: [maker], similar: {columns: name, levenshtein: 2}}
                winner: [{id: asc}]
            """)
        try winnow(["run", "job.yaml"], expect: 0)
        // widget -> widgte: 2 edits (linked); widgte -> wodgte: 1 (chained); gadget is 2 from
        // widget... "widget"/"gadget": w->g, i->a: 2 edits, linked too. 5 is another maker;
        // 6 shares 1's code.
        let left = try DatabaseQueue(path: path("db.sqlite")).read { try Int64.fetchAll($0, sql: "SELECT id FROM items ORDER BY id") }
        XCTAssertEqual(left, [1, 5])
    }

    /// Determinism: the same logical rows, inserted in other orders (other ids), in other batch
    /// sizes, end with the same surviving content.
    func testSurvivorsDependOnlyOnTheRows() throws {
        for seed: UInt64 in [1, 2, 3, 4] {
            var random = SplitMix64(seed: seed)
            let rows = Self.generatedPeople(&random)
            var dumps: [[String]] = []
            for (peer, batch) in [(0, 1000), (1, 1), (2, 3), (3, 7)] {
                var order = Array(rows.indices)
                if peer > 0 { order.shuffle(using: &random) }
                let name = "peer\(seed)-\(peer).sqlite"
                try TestSupport.makeDatabase(
                    at: path(name),
                    sql: AnyKeyFixture.generatedTable
                        + order.enumerated().map { position, index in
                            "INSERT INTO people VALUES (\(peer * 1000 + position * 3 + 1), \(rows[index]));"
                        }.joined())
                try write("peer.yaml", AnyKeyFixture.generatedJob(batch: batch))
                try winnow(["run", "peer.yaml", "--database", path(name)], expect: 0)
                dumps.append(
                    try DatabaseQueue(path: path(name)).read { db in
                        try String.fetchAll(
                            db, sql: "SELECT quote(email) || quote(phone) || quote(name) || quote(born) || quote(created) FROM people"
                        )
                        .sorted()
                    })
            }
            XCTAssertLessThan(dumps[0].count, rows.count, "seed \(seed): nothing was linked")
            for dump in dumps.dropFirst() { XCTAssertEqual(dump, dumps[0], "seed \(seed)") }
        }
    }

    /// FEBRL's person records (shared/datasets/febrl3.sqlite, with a visits table added):
    /// rec_id is the ground truth, never a key. The exact keys of jobs/febrl-people.yaml catch
    /// at least 97% of the 3,000 copies, the similarity of jobs/febrl-people-similar.yaml at least
    /// 98%; no row of another person is merged; every visit follows its person; restore is exact.
    func testFebrlJobsCatchTheCopiesAndNoOneElse() throws {
        let data = TestSupport.repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/datasets/febrl3.sqlite").path
        try XCTSkipUnless(FileManager.default.fileExists(atPath: data), "shared/datasets/febrl3.sqlite is not here")
        let visits = try String(
            contentsOf: TestSupport.repositoryRoot.appendingPathComponent("examples/febrl-visits.sql"), encoding: .utf8)
        for (job, least) in [("febrl-people", 2_910), ("febrl-people-similar", 2_940)] {
            let copy = path("\(job).sqlite")
            try FileManager.default.copyItem(atPath: data, toPath: copy)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: copy)
            try DatabaseQueue(path: copy).write { try $0.execute(sql: visits) }
            let before = try TestSupport.contentDump(copy)
            // Each visit's person, by the ground truth, before the run.
            let person = "substr(rec_id, 5, instr(substr(rec_id, 5), '-') - 1)"
            let visitedBefore = try DatabaseQueue(path: copy).read { db in
                try String.fetchAll(
                    db, sql: "SELECT v.id || ':' || \(person) FROM visits AS v JOIN people AS p ON p.id = v.person_id ORDER BY v.id")
            }
            let jobPath = TestSupport.repositoryRoot.appendingPathComponent("jobs/\(job).yaml").path
            try winnow(["run", jobPath, "--database", copy], expect: 0)
            let (same, wrong, visitedAfter) = try DatabaseQueue(path: copy).read { db in
                try db.execute(sql: "ATTACH DATABASE ? AS o", arguments: [data])
                let pairs = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT sum(w.p = l.p), sum(w.p <> l.p) FROM (\(try ScenarioKit.groupPairs(db))) AS g
                        JOIN (SELECT id, \(person) AS p FROM o.people) AS w ON w.id = g.winner
                        JOIN (SELECT id, \(person) AS p FROM o.people) AS l ON l.id = g.loser
                        """)
                let visited = try String.fetchAll(
                    db,
                    sql: "SELECT v.id || ':' || \(person) FROM visits AS v JOIN people AS p ON p.id = v.person_id ORDER BY v.id")
                return (pairs?[0] as Int? ?? 0, pairs?[1] as Int? ?? -1, visited)
            }
            XCTAssertGreaterThanOrEqual(same, least, job)
            XCTAssertEqual(wrong, 0, job)
            XCTAssertEqual(visitedAfter, visitedBefore, "\(job): a visit lost its person")
            try winnow(["restore", jobPath, "--database", copy, "--run", "1"], expect: 0)
            let after = try TestSupport.contentDump(copy)
            XCTAssertEqual(after["people"], before["people"], job)
            XCTAssertEqual(after["visits"], before["visits"], job)
        }
    }

    /// Rows as SQL value lists (email, phone, name, born, created): few distinct values, so
    /// that keys chain, with NULLs and case and space variants.
    static func generatedPeople(_ random: inout SplitMix64) -> [String] {
        func pick(_ items: [String]) -> String { items[Int(random.next() % UInt64(items.count))] }
        let emails = ["'a@x'", "' A@X'", "'b@x'", "'B@x '", "'c@x'", "NULL", "NULL", "'d@x'"]
        let phones = ["'1'", "'2'", "'3'", "NULL", "NULL", "NULL", "'4'"]
        let names = ["'jon'", "'john'", "'joan'", "'mary'", "'marie'", "NULL"]
        let born = ["'1'", "'2'", "NULL"]
        return (0..<(20 + Int(random.next() % 20))).map { _ in
            "\(pick(emails)), \(pick(phones)), \(pick(names)), \(pick(born)), \(random.next() % 5)"
        }
    }
}
