import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

// MARK: - Helpers shared by the scenario test files (DedupeEngine, Determinism, RestoreHistory, CLI)

// MARK: - Engine scenarios through the library API

final class DedupeEngineTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("DedupeEngine")
    }

    override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    func db(_ sql: String, name: String = "db.sqlite") throws -> String {
        try TestSupport.makeDatabase(at: dir.appendingPathComponent(name).path, sql: sql)
    }

    func ids(_ db: String, _ table: String = "people", _ pk: String = "id") throws -> [Int64] {
        try ScenarioKit.column(db, "SELECT \(pk) FROM \(table) ORDER BY \(pk)", as: Int64.self).map { $0! }
    }

    // MARK: winner order

    static let peopleSQL = """
        CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created_at INTEGER, name TEXT);
        INSERT INTO people VALUES (1, 'a@x', 30, 'one'), (2, 'a@x', 10, 'two'), (3, 'a@x', 20, 'three'), (4, 'b@x', 5, 'solo');
        """

    func testWinnerAscendingKeepsSmallestValue() throws {
        let path = try db(Self.peopleSQL)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: people
                key: email
                winner:
                  - created_at: asc
            """, db: path)
        XCTAssertEqual(try ids(path), [2, 4])
        XCTAssertEqual(summary.counts.groups, 1)
        XCTAssertEqual(summary.counts.deleted, 2)
        XCTAssertEqual(summary.status, "completed")
    }

    func testWinnerDescendingKeepsLargestValue() throws {
        let path = try db(Self.peopleSQL)
        try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: people
                key: email
                winner:
                  - created_at: desc
            """, db: path)
        XCTAssertEqual(try ids(path), [1, 4])
    }

    func testSecondWinnerTermBreaksTiesOfFirst() throws {
        let path = try db(
            """
            CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created_at INTEGER, name TEXT);
            INSERT INTO people VALUES (1, 'a', 10, 'm'), (2, 'a', 10, 'z'), (3, 'a', 10, 'a'), (4, 'a', 11, 'zz');
            """)
        try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: people
                key: email
                winner:
                  - created_at: asc
                  - name: desc
            """, db: path)
        XCTAssertEqual(try ids(path), [2])
    }

    static let nullTimesSQL = """
        CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created_at INTEGER, name TEXT);
        INSERT INTO people VALUES (1, 'a', NULL, 'n'), (2, 'a', 7, 's'), (3, 'a', 5, 'f'), (4, 'a', NULL, 'm'),
                                  (5, 'c', NULL, 'b'), (6, 'c', NULL, 'a');
        """

    func testEarliestIgnoresNullTimes() throws {
        let path = try db(Self.nullTimesSQL)
        try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: people
                key: email
                winner: {earliest: created_at}
            """, db: path)
        // Group a: 5 is the earliest known time; group c: all NULL, so content decides (name 'a').
        XCTAssertEqual(try ids(path), [3, 6])
    }

    func testLatestIgnoresNullTimes() throws {
        let path = try db(Self.nullTimesSQL)
        try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: people
                key: email
                winner: {latest: created_at}
            """, db: path)
        XCTAssertEqual(try ids(path), [2, 6])
    }

    func testAscendingTermUsesSQLiteOrderWithNullsFirst() throws {
        let path = try db(Self.nullTimesSQL)
        try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: people
                key: email
                winner:
                  - created_at: asc
            """, db: path)
        // NULL sorts first in SQLite; among the two NULL rows of group a, content (name 'm' < 'n') decides.
        XCTAssertEqual(try ids(path), [4, 6])
    }

    func testMostCompleteWinsThenContent() throws {
        let path = try db(
            """
            CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, phone TEXT, city TEXT, zip TEXT);
            INSERT INTO people VALUES
              (1, 'a', NULL, NULL, NULL), (2, 'a', 'p', NULL, 'z'), (3, 'a', 'p', 'c', NULL),
              (4, 'b', NULL, NULL, NULL), (5, 'b', 'p', 'c', 'z'), (6, 'b', 'p', NULL, NULL);
            """)
        try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: people
                key: email
                winner: most_complete
            """, db: path)
        // a: 2 and 3 tie on completeness; city NULL (row 2) sorts before 'c'. b: 5 has every column.
        XCTAssertEqual(try ids(path), [2, 5])
    }

    func testContentTieBreakColumnByColumnInTableOrder() throws {
        let path = try db(
            """
            CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, x, y);
            INSERT INTO t VALUES (1, 'k', 2, 1), (2, 'k', 1, 9), (3, 'k', 1, NULL),
                                 (4, 'm', '4', 0), (5, 'm', 5, 0),
                                 (6, 'n', X'00', 0), (7, 'n', 'zzz', 0);
            """)
        try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: t
                key: k
            """, db: path)
        // k: x=1 beats x=2, then y NULL beats 9. m: numbers sort before text. n: text before blob.
        XCTAssertEqual(try ids(path, "t"), [3, 5, 7])
    }

    func testContentTieBreakIsBinaryEvenWithNocaseColumn() throws {
        let path = try db(
            """
            CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, x TEXT COLLATE NOCASE);
            INSERT INTO t VALUES (1, 'k', 'b'), (2, 'k', 'B');
            """)
        try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: k\n", db: path)
        // 'B' (0x42) < 'b' (0x62) in binary order; a NOCASE tie would fall to the primary key.
        XCTAssertEqual(try ids(path, "t"), [2])
    }

    func testPrimaryKeyBreaksTiesNotRowid() throws {
        let path = try db(
            """
            CREATE TABLE tags (code TEXT PRIMARY KEY, k TEXT, v INTEGER);
            INSERT INTO tags VALUES ('b', 'k', 1);
            INSERT INTO tags VALUES ('a', 'k', 1);
            INSERT INTO tags VALUES ('c', 'k', 1);
            """)
        try ScenarioKit.run("version: 1\ndedupe:\n  - entity: tags\n    key: k\n", db: path)
        XCTAssertEqual(try ScenarioKit.column(path, "SELECT code FROM tags", as: String.self), ["a"])
    }

    func testIdenticalContentKeepsLowestIntegerPrimaryKey() throws {
        let path = try db(
            """
            CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v INTEGER);
            INSERT INTO t VALUES (9, 'k', 1);
            INSERT INTO t VALUES (3, 'k', 1);
            INSERT INTO t VALUES (5, 'k', 1);
            """)
        try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: k\n", db: path)
        XCTAssertEqual(try ids(path, "t"), [3])
    }

    // MARK: normalisation, NULLs and composite keys

    func testNormalizeTrimLowercaseIsUnicodeAware() throws {
        let path = try db(
            """
            CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT);
            INSERT INTO people VALUES (1, ' ÉMILE '), (2, 'émile'), (3, 'Émile'), (4, 'emile'), (5, 'ÖSTERREICH'), (6, 'österreich');
            """)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: people
                key: name
                normalize: [trim, lowercase]
            """, db: path)
        XCTAssertEqual(summary.counts.groups, 2)
        XCTAssertEqual(summary.counts.deleted, 3)
        // 'emile' (no accent) is a different key; the winners are the smallest contents.
        XCTAssertEqual(try ids(path), [1, 4, 5])
    }

    static let nullKeySQL = """
        CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT);
        INSERT INTO t VALUES (1, 'x', NULL), (2, 'x', NULL), (3, 'x', 'y'), (4, 'x', 'y'), (5, NULL, NULL), (6, NULL, NULL);
        """

    func testNullsDistinctNeverGroupsNullKeyParts() throws {
        let path = try db(Self.nullKeySQL)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: t
                key: [a, b]
                nulls: distinct
            """, db: path)
        XCTAssertEqual(summary.counts.groups, 1)
        XCTAssertEqual(summary.counts.deleted, 1)
        XCTAssertEqual(try ids(path, "t"), [1, 2, 3, 5, 6])
    }

    func testNullsEqualMatchesNullWithNull() throws {
        let path = try db(Self.nullKeySQL)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: t
                key: [a, b]
                nulls: equal
            """, db: path)
        XCTAssertEqual(summary.counts.groups, 3)
        XCTAssertEqual(summary.counts.deleted, 3)
        XCTAssertEqual(try ids(path, "t"), [1, 3, 5])
    }

    static let separatorSQL = """
        CREATE TABLE c (id INTEGER PRIMARY KEY, a TEXT, b TEXT);
        INSERT INTO c VALUES (1, 'ab', 'c'), (2, 'a', 'bc'), (3, 'ab', 'c'), (4, 'a|b', 'c'), (5, 'a', 'b|c'),
                             (6, 'a,b', 'c'), (7, 'a', 'b,c'), (8, 'a' || char(31) || 'b', 'c'), (9, 'a', 'b' || char(31) || 'c'),
                             (10, 'a' || char(1), 'bc'), (11, 'a', char(1) || 'bc'), (12, '', 'abc'), (13, 'abc', '');
        """

    func testCompositeKeyIsSeparatorSafe() throws {
        let path = try db(Self.separatorSQL)
        let summary = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: c\n    key: [a, b]\n", db: path)
        XCTAssertEqual(summary.counts.groups, 1)
        XCTAssertEqual(try ids(path, "c"), [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])
    }

    func testHashedCompositeKeyIsSeparatorSafe() throws {
        let path = try db(Self.separatorSQL)
        let summary = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: c\n    key: [a, b]\n    hash: true\n", db: path)
        XCTAssertEqual(summary.counts.groups, 1)
        XCTAssertEqual(try ids(path, "c"), [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])
    }

    /// A random table of mixed-type keys; the same table deduplicated with and without `hash`.
    func hashVersusPlain(seed: UInt64, pool: [String], nulls: String, normalize: String) throws {
        var rng = SeededGenerator(seed: seed)
        var inserts: [String] = []
        for id in 1...120 {
            let a = pool[Int(rng.next() % UInt64(pool.count))]
            let b = pool[Int(rng.next() % UInt64(pool.count))]
            inserts.append("(\(id), \(a), \(b), \(rng.next() % 5))")
        }
        let sql = "CREATE TABLE g (id INTEGER PRIMARY KEY, a, b, v INTEGER);\nINSERT INTO g VALUES \(inserts.joined(separator: ", "));"
        let plainDB = try db(sql, name: "plain-\(seed)-\(nulls).sqlite")
        let hashDB = try db(sql, name: "hash-\(seed)-\(nulls).sqlite")
        let rule = """
            version: 1
            dedupe:
              - entity: g
                key: [a, b]
                nulls: \(nulls)
                normalize: \(normalize)
                winner:
                  - v: desc
            """
        let plain = try ScenarioKit.run(rule, db: plainDB)
        let hashed = try ScenarioKit.run(rule + "\n    hash: true", db: hashDB)
        XCTAssertGreaterThan(plain.counts.groups, 0)
        XCTAssertEqual(plain.counts, hashed.counts, "seed \(seed), nulls \(nulls)")
        XCTAssertEqual(try TestSupport.contentDump(plainDB), try TestSupport.contentDump(hashDB), "seed \(seed), nulls \(nulls)")
    }

    func testHashGivesSameGroupsAsPlainKey() throws {
        let pool = ["NULL", "1", "'1'", "'x'", "'X'", "' x'", "X'78'", "'ab'", "'a'", "'b'", "''", "'É'", "'é'", "2.5"]
        for seed in UInt64(1)...3 {
            for nulls in ["distinct", "equal"] {
                try hashVersusPlain(seed: seed, pool: pool, nulls: nulls, normalize: "[trim, lowercase]")
            }
        }
    }

    /// INTEGER 1 and REAL 1.0 are the same key for SQLite's grouping (they compare equal), so a
    /// hashed key must group them the same way.
    func testHashGroupsIntegerAndEqualRealLikePlainKey() throws {
        try hashVersusPlain(seed: 7, pool: ["1", "1.0", "2", "2.0", "'a'"], nulls: "distinct", normalize: "[trim]")
    }

    // MARK: hash_column

    static let hashColumnSQL = """
        CREATE TABLE h (id INTEGER PRIMARY KEY, email TEXT, name TEXT, kh TEXT);
        INSERT INTO h VALUES (1, 'A@x', 'n', NULL), (2, 'a@x', 'N', NULL), (3, NULL, 'n', 'bogus'), (4, 'b@x', NULL, NULL),
                             (5, 'c@x', 'm', 'stale'), (6, 'd@x', 'm', NULL);
        """

    static let hashColumnJob = """
        version: 1
        dedupe:
          - entity: h
            key: [email, name]
            normalize: [lowercase]
            hash: true
            hash_column: kh
            nulls: NULLS
        """

    /// The hash each row should carry, computed by winnow's own SQL function on a fresh connection.
    func expectedHashes(_ path: String, nullsEqual: Bool) throws -> [[DatabaseValue]] {
        let queue = try DatabaseOpener.open(path: path, mode: .readOnly)
        defer { try? queue.close() }
        return try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT id, winnow_hash(\(nullsEqual ? 1 : 0), winnow_lower(email), winnow_lower(name)) FROM h ORDER BY id"
            )
            .map { Array($0.databaseValues) }
        }
    }

    func testHashColumnIsFilledForEveryRowAndNullForNullKeyParts() throws {
        let path = try db(Self.hashColumnSQL)
        let summary = try ScenarioKit.run(Self.hashColumnJob.replacingOccurrences(of: "NULLS", with: "distinct"), db: path)
        XCTAssertEqual(summary.counts.deleted, 1)
        XCTAssertEqual(try ids(path, "h"), [1, 3, 4, 5, 6])
        let stored = try ScenarioKit.rows(path, "SELECT id, kh FROM h ORDER BY id")
        XCTAssertEqual(stored, try expectedHashes(path, nullsEqual: false))
        let hashes: [String?] = stored.map { row -> String? in String.fromDatabaseValue(row[1]) }
        XCTAssertNil(hashes[1], "NULL email: no hash under nulls: distinct (the stale 'bogus' must go)")
        XCTAssertNil(hashes[2], "NULL name: no hash under nulls: distinct")
        for index in [0, 3, 4] {
            let hash = try XCTUnwrap(hashes[index])
            XCTAssertEqual(hash.count, 64)
            XCTAssertTrue(hash.allSatisfy { "0123456789abcdef".contains($0) }, hash)
        }
        XCTAssertEqual(Set([hashes[0], hashes[3], hashes[4]]).count, 3)
        // Nothing is stale any more: a second run stores nothing and finds nothing.
        let again = try ScenarioKit.run(Self.hashColumnJob.replacingOccurrences(of: "NULLS", with: "distinct"), db: path)
        XCTAssertEqual(again.counts.hashed, 0)
        XCTAssertEqual(again.counts.deleted, 0)
    }

    func testHashColumnUnderNullsEqualHashesNullKeyParts() throws {
        let path = try db(Self.hashColumnSQL)
        try ScenarioKit.run(Self.hashColumnJob.replacingOccurrences(of: "NULLS", with: "equal"), db: path)
        let stored = try ScenarioKit.rows(path, "SELECT id, kh FROM h ORDER BY id")
        XCTAssertEqual(stored, try expectedHashes(path, nullsEqual: true))
        XCTAssertFalse(stored.contains { $0[1].isNull }, "every row has a hash under nulls: equal")
    }

    func testHashColumnFollowsNewRowsOnLaterRuns() throws {
        let path = try db(Self.hashColumnSQL)
        let job = Self.hashColumnJob.replacingOccurrences(of: "NULLS", with: "distinct")
        try ScenarioKit.run(job, db: path)
        try ScenarioKit.execute(
            path, "INSERT INTO h VALUES (20, 'E@x', 'q', NULL), (21, 'e@x', 'Q', 'wrong'); UPDATE h SET kh = 'tampered' WHERE id = 6")
        let summary = try ScenarioKit.run(job, db: path)
        XCTAssertEqual(summary.counts.deleted, 1)
        XCTAssertGreaterThanOrEqual(summary.counts.hashed, 2, "at least the new winner and the tampered row")
        XCTAssertEqual(try ScenarioKit.rows(path, "SELECT id, kh FROM h ORDER BY id"), try expectedHashes(path, nullsEqual: false))
    }

    // MARK: merge

    func testEveryMergeStrategyIsAppliedToTheWinner() throws {
        let path = try db(
            """
            CREATE TABLE m (id INTEGER PRIMARY KEY, k TEXT, created INTEGER, phone TEXT, visits INTEGER, lo INTEGER, hi INTEGER,
                            note TEXT, tags TEXT, score REAL);
            INSERT INTO m VALUES
              (1, 'a', 1, NULL,  2,    5, 5, 'ab',   'x', 1.5),
              (2, 'a', 2, '111', 3,    3, 9, 'abcd', 'y', 2.25),
              (3, 'a', 3, '222', NULL, 4, 1, 'wxyz', 'x', NULL),
              (4, 'b', 1, '999', 1,    1, 1, 'q',    'w', NULL),
              (5, 'b', 2, '888', 1,    1, 1, NULL,   'z', NULL),
              (6, 'c', 1, '777', 4,    4, 4, 'same', 's', 1.0),
              (7, 'c', 2, NULL,  NULL, NULL, NULL, NULL, NULL, NULL);
            """)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: m
                key: k
                winner:
                  - created: asc
                merge:
                  phone: fill_null
                  visits: sum
                  lo: min
                  hi: max
                  note: longest
                  tags: concat
                  score: sum
            """, db: path)
        let rows = try ScenarioKit.rows(path, "SELECT id, phone, visits, lo, hi, note, tags, score FROM m ORDER BY id")
        XCTAssertEqual(rows.count, 3)
        XCTAssertEqual(
            rows[0],
            [
                1.databaseValue, "111".databaseValue, 5.databaseValue, 3.databaseValue, 9.databaseValue,
                "abcd".databaseValue, "x, y".databaseValue, (3.75).databaseValue,
            ])
        // fill_null keeps a winner's own value; NULLs take no part in sum, longest and concat.
        XCTAssertEqual(
            rows[1],
            [
                4.databaseValue, "999".databaseValue, 2.databaseValue, 1.databaseValue, 1.databaseValue,
                "q".databaseValue, "w, z".databaseValue, DatabaseValue.null,
            ])
        // A group whose losers add nothing leaves the winner untouched.
        XCTAssertEqual(
            rows[2],
            [
                6.databaseValue, "777".databaseValue, 4.databaseValue, 4.databaseValue, 4.databaseValue,
                "same".databaseValue, "s".databaseValue, (1.0).databaseValue,
            ])
        XCTAssertEqual(summary.counts.updated, 2)
        XCTAssertEqual(summary.counts.deleted, 4)
        XCTAssertEqual(try ScenarioKit.column(path, "SELECT typeof(visits) FROM m WHERE id = 1", as: String.self), ["integer"])
    }

    func testFillNullTakesFirstNonNullLoserInWinnerOrder() throws {
        let path = try db(
            """
            CREATE TABLE m (id INTEGER PRIMARY KEY, k TEXT, rank INTEGER, phone TEXT);
            INSERT INTO m VALUES (1, 'a', 4, '4th'), (2, 'a', 1, NULL), (3, 'a', 3, '3rd'), (4, 'a', 2, NULL);
            """)
        try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: m
                key: k
                winner:
                  - rank: asc
                merge:
                  phone: fill_null
            """, db: path)
        XCTAssertEqual(try ScenarioKit.rows(path, "SELECT id, phone FROM m"), [[2.databaseValue, "3rd".databaseValue]])
    }

    /// concat joins the distinct non-empty values; an empty winner value adds nothing.
    func testConcatIgnoresEmptyWinnerValue() throws {
        let path = try db(
            """
            CREATE TABLE m (id INTEGER PRIMARY KEY, k TEXT, tags TEXT);
            INSERT INTO m VALUES (1, 'a', ''), (2, 'a', 'z');
            """)
        try ScenarioKit.run(
            "version: 1\ndedupe:\n  - entity: m\n    key: k\n    winner:\n      - id: asc\n    merge:\n      tags: concat\n", db: path)
        XCTAssertEqual(try ScenarioKit.rows(path, "SELECT id, tags FROM m"), [[1.databaseValue, "z".databaseValue]])
    }

    // MARK: references

    func testRepointMovesChildrenAndCascadeTakesNothing() throws {
        let path = try db(
            """
            CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id) ON DELETE CASCADE, total INTEGER);
            CREATE TABLE notes (id INTEGER PRIMARY KEY, about INTEGER, FOREIGN KEY (about) REFERENCES customers ON DELETE CASCADE);
            INSERT INTO customers VALUES (1, 'a'), (2, 'a'), (3, 'a'), (4, 'b'), (5, 'b');
            INSERT INTO orders VALUES (10, 1, 100), (11, 2, 200), (12, 3, 300), (13, 3, 301), (14, 5, 500), (15, 4, 400);
            INSERT INTO notes VALUES (20, 2), (21, 5), (22, NULL);
            """)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: customers
                key: email
                references: repoint
            """, db: path)
        XCTAssertEqual(try ids(path, "customers"), [1, 4])
        XCTAssertEqual(
            try ScenarioKit.rows(path, "SELECT id, customer_id FROM orders ORDER BY id"),
            [[10, 1], [11, 1], [12, 1], [13, 1], [14, 4], [15, 4]].map { $0.map(\.databaseValue) })
        XCTAssertEqual(
            try ScenarioKit.rows(path, "SELECT id, about FROM notes ORDER BY id"),
            [[20.databaseValue, 1.databaseValue], [21.databaseValue, 4.databaseValue], [22.databaseValue, .null]])
        XCTAssertEqual(summary.counts.repointed, 6)
        XCTAssertEqual(summary.counts.deleted, 3)
        XCTAssertEqual(summary.counts.childrenDeleted, 0)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
    }

    func testLinkTableCollisionDeletesTheCollidingChildRow() throws {
        let path = try db(
            """
            CREATE TABLE playlists (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE tracks (id INTEGER PRIMARY KEY, title TEXT);
            CREATE TABLE playlist_track (playlist_id INTEGER NOT NULL REFERENCES playlists(id) ON DELETE CASCADE,
                                         track_id INTEGER NOT NULL REFERENCES tracks(id),
                                         PRIMARY KEY (playlist_id, track_id));
            INSERT INTO playlists VALUES (1, 'Mix'), (2, 'Mix'), (3, 'Mix'), (4, 'Other');
            INSERT INTO tracks VALUES (10, 't10'), (11, 't11'), (12, 't12'), (13, 't13');
            INSERT INTO playlist_track VALUES (1, 10), (1, 11), (2, 11), (2, 12), (3, 12), (3, 13), (3, 10), (4, 10);
            """)
        let summary = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: playlists\n    key: name\n", db: path)
        XCTAssertEqual(try ids(path, "playlists"), [1, 4])
        XCTAssertEqual(
            try ScenarioKit.rows(path, "SELECT playlist_id, track_id FROM playlist_track ORDER BY 1, 2"),
            [[1, 10], [1, 11], [1, 12], [1, 13], [4, 10]].map { $0.map(\.databaseValue) })
        XCTAssertEqual(summary.counts.repointed, 2)
        XCTAssertEqual(summary.counts.childrenDeleted, 3)
        XCTAssertEqual(summary.counts.deleted, 2)
    }

    func testChinookPlaylistsMergeTheirTracks() throws {
        let path = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        let pairsSQL = "SELECT DISTINCT p.Name, pt.TrackId FROM PlaylistTrack pt JOIN Playlist p USING (PlaylistId) ORDER BY 1, 2"
        let before = try ScenarioKit.rows(path, pairsSQL)
        let otherTables = ["Track", "Album", "Invoice", "InvoiceLine", "Customer"]
        let otherBefore = try otherTables.map { try ScenarioKit.int(path, "SELECT count(*) FROM \($0)") }
        let summary = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: Playlist\n    key: Name\n", db: path)
        XCTAssertEqual(summary.counts.groups, 4)
        XCTAssertEqual(summary.counts.deleted, 4)
        XCTAssertEqual(try ids(path, "Playlist", "PlaylistId"), [1, 2, 3, 4, 5, 9, 11, 12, 13, 14, 15, 16, 17, 18])
        XCTAssertEqual(try ScenarioKit.rows(path, pairsSQL), before, "every playlist name keeps exactly its tracks")
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM PlaylistTrack WHERE PlaylistId IN (6, 7, 8, 10)"), 0)
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM PlaylistTrack"), before.count)
        XCTAssertEqual(try otherTables.map { try ScenarioKit.int(path, "SELECT count(*) FROM \($0)") }, otherBefore)
        XCTAssertEqual(summary.counts.repointed + summary.counts.childrenDeleted, 3290 + 213)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
    }

    func testChinookEmployeesRepointCustomersAndSelfReferences() throws {
        let path = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        let customers = try ScenarioKit.int(path, "SELECT count(*) FROM Customer")
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: Employee
                key: Title
                winner:
                  - EmployeeId: desc
            """, db: path)
        XCTAssertEqual(try ids(path, "Employee", "EmployeeId"), [1, 2, 5, 6, 8])
        XCTAssertEqual(
            try ScenarioKit.rows(path, "SELECT SupportRepId, count(*) FROM Customer GROUP BY 1"),
            [[5.databaseValue, customers.databaseValue]])
        XCTAssertEqual(summary.counts.repointed, 41)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
    }

    func testSelfReferenceFromWinnerToLoserIsRepointed() throws {
        let path = try db(
            """
            CREATE TABLE staff (id INTEGER PRIMARY KEY, name TEXT, manager_id INTEGER REFERENCES staff(id));
            INSERT INTO staff VALUES (1, 'x', 2), (2, 'x', NULL), (3, 'y', 2), (4, 'y', 1);
            """)
        let summary = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: staff\n    key: name\n    winner:\n      - id: asc\n", db: path)
        XCTAssertEqual(
            try ScenarioKit.rows(path, "SELECT id, manager_id FROM staff ORDER BY id"),
            [[1, 1], [3, 1]].map { $0.map(\.databaseValue) })
        XCTAssertEqual(summary.counts.deleted, 2)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
    }

    func testForeignKeyToNonPrimaryUniqueColumnIsRepointed() throws {
        let path = try db(
            """
            CREATE TABLE accounts (id INTEGER PRIMARY KEY, code TEXT UNIQUE, email TEXT);
            CREATE TABLE logins (id INTEGER PRIMARY KEY, account_code TEXT REFERENCES accounts(code) ON DELETE CASCADE);
            INSERT INTO accounts VALUES (1, 'A-1', 'a@x'), (2, 'A-2', 'A@X'), (3, 'B-1', 'b@x');
            INSERT INTO logins VALUES (10, 'A-2'), (11, 'A-1'), (12, 'B-1');
            """)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: accounts
                key: email
                normalize: [lowercase]
                winner:
                  - id: asc
            """, db: path)
        XCTAssertEqual(try ids(path, "accounts"), [1, 3])
        XCTAssertEqual(
            try ScenarioKit.rows(path, "SELECT id, account_code FROM logins ORDER BY id"),
            [[10.databaseValue, "A-1".databaseValue], [11.databaseValue, "A-1".databaseValue], [12.databaseValue, "B-1".databaseValue]])
        XCTAssertEqual(summary.counts.repointed, 1)
    }

    func awkwardIdentifiers(weird: String, yamlWeird: String) throws {
        let quoted = "\"" + weird.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        let path = try db(
            """
            CREATE TABLE "select" ("from" INTEGER PRIMARY KEY, "group" TEXT, \(quoted) INTEGER, "order by" TEXT);
            CREATE TABLE "child table" (id INTEGER PRIMARY KEY, "parent ref" INTEGER REFERENCES "select"("from"));
            INSERT INTO "select" VALUES (1, 'g', 1, 'x'), (2, 'G', 2, NULL), (3, 'h', 3, 'y'), (4, 'h', 2, 'z');
            INSERT INTO "child table" VALUES (1, 2), (2, 4);
            """)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: select
                key: group
                normalize: [lowercase]
                hash: true
                winner:
                  - \(yamlWeird): desc
                merge:
                  order by: fill_null
            """, db: path)
        XCTAssertEqual(summary.counts.deleted, 2)
        XCTAssertEqual(
            try ScenarioKit.rows(path, #"SELECT "from", "order by" FROM "select" ORDER BY 1"#),
            [[2.databaseValue, "x".databaseValue], [3.databaseValue, "y".databaseValue]])
        XCTAssertEqual(try ScenarioKit.column(path, #"SELECT "parent ref" FROM "child table" ORDER BY id"#, as: Int64.self), [2, 3])
    }

    func testKeywordAndSpacedIdentifiersAreQuoted() throws {
        try awkwardIdentifiers(weird: "weird col", yamlWeird: "weird col")
    }

    /// An identifier holding a double quote must be quoted by doubling it.
    func testIdentifierWithDoubleQuoteIsQuoted() throws {
        try awkwardIdentifiers(weird: "we\"ird col", yamlWeird: "'we\"ird col'")
    }

    func testIdentifiersMatchCaseInsensitively() throws {
        let path = try db(Self.peopleSQL)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: PEOPLE
                key: EMAIL
                winner:
                  - Created_At: asc
            """, db: path)
        XCTAssertEqual(summary.counts.deleted, 2)
        XCTAssertEqual(try ids(path), [2, 4])
    }

    func testRestrictRefusesWith65AndChangesNothing() throws {
        let path = try db(
            """
            CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, visits INTEGER, kh TEXT);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id) ON DELETE CASCADE);
            CREATE TABLE other (id INTEGER PRIMARY KEY, k TEXT);
            INSERT INTO customers VALUES (1, 'a', 1, NULL), (2, 'a', 2, NULL), (3, 'b', 3, NULL), (4, 'b', 4, NULL);
            INSERT INTO orders VALUES (10, 2);
            INSERT INTO other VALUES (1, 'z'), (2, 'z');
            """)
        let before = try ScenarioKit.userState(path)
        ScenarioKit.expectExit(65) {
            try ScenarioKit.run(
                """
                version: 1
                dedupe:
                  - entity: other
                    key: k
                  - entity: customers
                    key: email
                    hash: true
                    hash_column: kh
                    merge:
                      visits: sum
                    references: restrict
                """, db: path)
        }
        XCTAssertEqual(try ScenarioKit.userState(path), before)
    }

    func testRestrictAllowsUnreferencedLosers() throws {
        let path = try db(
            """
            CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id));
            INSERT INTO customers VALUES (1, 'a'), (2, 'a');
            INSERT INTO orders VALUES (10, 1);
            """)
        try ScenarioKit.run("version: 1\ndedupe:\n  - entity: customers\n    key: email\n    references: restrict\n", db: path)
        XCTAssertEqual(try ids(path, "customers"), [1])
    }

    func testReferencedByRepointsCoreDataBooks() throws {
        let path = try ScenarioKit.copyDataset("coredata-bookmigration-v1.sqlite", into: dir)
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM ZBOOK WHERE ZUSER = 3"), 4)
        let summary = try ScenarioKit.run(
            """
            version: 1
            dedupe:
              - entity: ZUSER
                key: ZUSERID
                winner:
                  - Z_PK: asc
                referenced_by: [ZBOOK.ZUSER]
            """, db: path)
        XCTAssertEqual(try ids(path, "ZUSER", "Z_PK"), [1])
        XCTAssertEqual(try ScenarioKit.column(path, "SELECT DISTINCT ZUSER FROM ZBOOK", as: Int64.self), [1])
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM ZBOOK"), 4)
        XCTAssertEqual(summary.counts.repointed, 4)
        XCTAssertEqual(summary.counts.deleted, 2)
    }

    func testReferencedByWithRestrictRefuses() throws {
        let path = try ScenarioKit.copyDataset("coredata-bookmigration-v1.sqlite", into: dir)
        let before = try ScenarioKit.userState(path)
        ScenarioKit.expectExit(65) {
            try ScenarioKit.run(
                """
                version: 1
                dedupe:
                  - entity: ZUSER
                    key: ZUSERID
                    winner:
                      - Z_PK: asc
                    references: restrict
                    referenced_by: [ZBOOK.ZUSER]
                """, db: path)
        }
        XCTAssertEqual(try ScenarioKit.userState(path), before)
    }

    // MARK: guards

    func testMaxDeletePercentRefusesAndChangesNothing() throws {
        let path = try db(
            """
            CREATE TABLE a (id INTEGER PRIMARY KEY, k TEXT);
            CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT);
            INSERT INTO a VALUES (1, 'x'), (2, 'x');
            INSERT INTO t VALUES (1, 'p'), (2, 'p'), (3, 'p'), (4, 'q'), (5, 'q'), (6, 'q'), (7, 'r'), (8, 's'), (9, 't'), (10, 'u');
            """)
        let before = try ScenarioKit.userState(path)
        // t would lose 4 of 10 rows (40 %); the guard is on the second rule, yet the first is not run either.
        ScenarioKit.expectExit(65) {
            try ScenarioKit.run(
                """
                version: 1
                dedupe:
                  - entity: a
                    key: k
                  - entity: t
                    key: k
                    max_delete_percent: 39.5
                """, db: path)
        }
        XCTAssertEqual(try ScenarioKit.userState(path), before)
        let summary = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: k\n    max_delete_percent: 40\n", db: path)
        XCTAssertEqual(summary.counts.deleted, 4, "exactly the limit is allowed")
    }

    // MARK: batches

    func makeGroups(_ n: Int, name: String = "db.sqlite") throws -> String {
        var values: [String] = []
        for g in 0..<n { for r in 0..<3 { values.append("(\(g * 3 + r + 1), 'k\(g)', \(r))") } }
        values.append("(1000, 'single', 0)")
        return try db(
            """
            CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v INTEGER);
            INSERT INTO t VALUES \(values.joined(separator: ", "));
            """, name: name)
    }

    func testBatchSizeOneCommitsOneBatchPerGroup() throws {
        let n = 7
        let path = try makeGroups(n)
        var reports: [BatchReport] = []
        var visible: [Int] = []
        let summary = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: k\n", db: path, batchSize: 1) { event in
            guard case let .batch(report) = event else { return }
            reports.append(report)
            // Another connection sees the batch: it is committed when it is reported.
            visible.append((try? ScenarioKit.int(path, "SELECT count(*) FROM t")) ?? -1)
        }
        XCTAssertEqual(summary.counts.batches, n)
        XCTAssertEqual(summary.counts.groups, n)
        XCTAssertEqual(summary.counts.deleted, 2 * n)
        XCTAssertEqual(reports.count, n)
        XCTAssertEqual(reports.map(\.counts.groups), Array(repeating: 1, count: n))
        XCTAssertEqual(visible, (1...n).map { 3 * n + 1 - 2 * $0 })
        let run = try ScenarioKit.rows(path, "SELECT status, batches, groups, deleted FROM winnow_runs ORDER BY id DESC LIMIT 1")
        XCTAssertEqual(run, [["completed".databaseValue, n.databaseValue, n.databaseValue, (2 * n).databaseValue]])
        XCTAssertEqual(try ScenarioKit.intOverJournal(path, "SELECT count(DISTINCT batch) FROM {entries}"), n)
    }

    /// Beside another writer (a commit by another connection between discovery and the first
    /// batch), the first batch takes an eighth of `batch.size` and the sizer grows the next ones
    /// from its time, so a size too large for `max_transaction_ms` never holds SQLite's lock
    /// past it before the sizer has a time to go by; without such a commit the first batch
    /// takes the whole size. Both runs settle every group.
    func testFirstBatchBesideAnotherWriterIsAnEighthOfTheSize() throws {
        var survivors: [[Int64]] = []
        for besideWriter in [false, true] {
            let n = 200
            let path = try makeGroups(n, name: "beside-\(besideWriter).sqlite")
            var groups: [Int] = []
            let summary = try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: k\n", db: path, batchSize: 80) { event in
                switch event {
                case .ruleStarted where besideWriter:
                    // A row of its own key: nothing for the rule, but a commit since discovery.
                    try? ScenarioKit.execute(path, "INSERT INTO t VALUES (5000, 'lonely', 0)")
                case let .batch(report):
                    groups.append(report.counts.groups)
                default:
                    break
                }
            }
            XCTAssertEqual(groups.first, besideWriter ? 10 : 80, "beside a writer: \(besideWriter)")
            XCTAssertEqual(groups.max(), 80, "beside a writer: \(besideWriter)")
            XCTAssertEqual(groups.reduce(0, +), n)
            XCTAssertEqual(summary.counts.deleted, 2 * n)
            XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM t"), n + 1 + (besideWriter ? 1 : 0))
            survivors.append(try ids(path, "t").filter { $0 != 5000 })
        }
        // The contract: survivors depend only on the rows, not on the batch size.
        XCTAssertEqual(survivors[0], survivors[1])
    }

    /// Runs `job` in batches of one group while another connection runs `sql` once, right after
    /// the first batch commits (so every later batch finds the data changed since discovery).
    @discardableResult
    func runWritingAfterFirstBatch(
        _ job: String, db path: String, _ sql: String, file: StaticString = #filePath, line: UInt = #line
    ) throws -> RunSummary {
        var wrote = false
        let summary = try ScenarioKit.run(job, db: path, batchSize: 1) { event in
            guard case .batch = event, !wrote else { return }
            wrote = true
            try? ScenarioKit.execute(path, sql)
        }
        XCTAssertTrue(wrote, "the other connection wrote between batches", file: file, line: line)
        return summary
    }

    /// Losers are taken as found only while no other connection has committed since the
    /// discovery; after another writer's commit every batch looks its losers up again: a loser
    /// whose key changed, and the losers of a winner that is gone, are skipped, not deleted.
    func testAnotherWritersCommitMidRunMakesLaterBatchesRevalidate() throws {
        let n = 7
        let path = try makeGroups(n)
        let summary = try runWritingAfterFirstBatch(
            "version: 1\ndedupe:\n  - entity: t\n    key: k\n", db: path,
            "UPDATE t SET k = 'moved' WHERE id = 5; DELETE FROM t WHERE id = 7")
        XCTAssertEqual(summary.counts.skipped, 3)
        XCTAssertEqual(summary.counts.deleted, 2 * n - 3)
        let left = try ScenarioKit.column(path, "SELECT id FROM t WHERE id IN (4, 5, 8, 9) ORDER BY id", as: Int.self)
        XCTAssertEqual(left, [4, 5, 8, 9])
    }

    /// Another connection makes a discovered winner later than its loser before their batch:
    /// the batch decides on the rows as they are then (as on PostgreSQL), so the former loser
    /// wins, the former winner goes, and its child is re-pointed, with and without an index on
    /// the reference (without one, the map must cover the former winner too).
    func testWinnerTermChangedAfterDiscoveryDecidesAsItIsNow() throws {
        for indexed in [true, false] {
            let path = try db(
                """
                CREATE TABLE c (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL);
                CREATE TABLE o (id INTEGER PRIMARY KEY, cid INTEGER REFERENCES c(id));
                INSERT INTO c VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 1), (4, 'b', 2);
                INSERT INTO o VALUES (1, 3), (2, 4), (3, 1), (4, 2);
                \(indexed ? "CREATE INDEX o_cid ON o (cid);" : "")
                """, name: "later-\(indexed).sqlite")
            let job = "version: 1\ndedupe:\n  - entity: c\n    key: email\n    winner:\n      - created: asc\n"
            try runWritingAfterFirstBatch(job, db: path, "UPDATE c SET created = 9 WHERE id = 3")
            XCTAssertEqual(try ids(path, "c"), [1, 4], "indexed: \(indexed)")
            XCTAssertEqual(try ScenarioKit.column(path, "SELECT cid FROM o ORDER BY id", as: Int64.self), [4, 4, 1, 1])
            XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
        }
    }

    /// Three rows tie on the winner term; the one the discovery ranked second moves to another
    /// key before their batch. The last still ties the first, and the group still gets its
    /// winner from the content (name 'a'), not from the discovery's arbitrary order.
    func testTiedGroupSettlesByContentAfterItsMiddleRowMoved() throws {
        let path = try db(
            """
            CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, created INTEGER, name TEXT);
            INSERT INTO t VALUES (1, 'g1', 1, 'x'), (2, 'g1', 2, 'x'),
                                 (10, 'g2', 5, 'z'), (11, 'g2', 5, 'm'), (12, 'g2', 5, 'a');
            """)
        let job = "version: 1\ndedupe:\n  - entity: t\n    key: k\n    winner:\n      - created: asc\n"
        try runWritingAfterFirstBatch(job, db: path, "UPDATE t SET k = 'moved' WHERE id = 11")
        XCTAssertEqual(try ids(path, "t"), [1, 11, 12])
    }

    /// A rule that only deletes takes its losers by position, so a group's losers fall in
    /// several batches, and it still does once another connection has committed
    /// (``DedupeExecutor/staysByPosition``). A batch that makes a loser the winner deletes the
    /// former winner and files the group's later losers under the new one, instead of leaving
    /// a later batch a loser whose winner is gone (a duplicate kept).
    func testGroupSplitByPositionFollowsItsNewWinnerAfterAnotherCommit() throws {
        // Three groups interleaved (a, b, c, a, b, c, ...), four rows each, earliest first.
        let values = (1...12).map { id in "(\(id), '\(["a", "b", "c"][(id - 1) % 3])', \(id))" }
        let path = try db(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, created INTEGER); INSERT INTO t VALUES \(values.joined(separator: ", "));")
        let job = "version: 1\ndedupe:\n  - entity: t\n    key: k\n    winner:\n      - created: asc\n"
        // Batches hold the losers of about one group: three positions. The first deletes 4, 5
        // and 6; then row 8 becomes the earliest of group b: the second batch deletes 7, 9 and
        // the former winner 2, the third 10, 12 and 11, compared with 8.
        let summary = try runWritingAfterFirstBatch(job, db: path, "UPDATE t SET created = 0 WHERE id = 8")
        XCTAssertEqual(try ids(path, "t"), [1, 3, 8])
        XCTAssertEqual(summary.counts.skipped, 0)
        XCTAssertEqual(summary.counts.deleted, 9)
        XCTAssertEqual(summary.counts.groups, 3)
    }

    /// Discovery counts the keys first and filters the window by them where few rows are
    /// duplicates, and windows every row where most are: both find exactly the groups the
    /// window alone finds, under the key columns' own collations (NOCASE here) and with NULL key
    /// parts never grouped.
    func testGroupedCountFilterAndWholeWindowFindTheSameGroups() throws {
        for (name, distinctKeys) in [("few", 900), ("most", 60)] {
            var values: [String] = []
            for id in 1...1000 {
                let key = (id * 7919) % distinctKeys
                let email = id % 97 == 0 ? "NULL" : "'\(id % 2 == 0 ? "User" : "user")\(key)@x'"
                let tag = id % 89 == 0 ? "NULL" : "'t\(key % 3)'"
                values.append("(\(id), \(email), \(tag), \((id * 104_729) % 1000))")
            }
            let path = try db(
                """
                CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT COLLATE NOCASE, tag TEXT, created INTEGER);
                INSERT INTO t VALUES \(values.joined(separator: ", "));
                """, name: "\(name).sqlite")
            let expected = try ScenarioKit.column(
                path,
                """
                SELECT id FROM t WHERE id NOT IN (SELECT id FROM (SELECT id, row_number() OVER
                  (PARTITION BY email, tag ORDER BY created, id) AS rn FROM t WHERE email IS NOT NULL AND tag IS NOT NULL) WHERE rn > 1)
                ORDER BY id
                """, as: Int64.self)
            let summary = try ScenarioKit.run(
                "version: 1\ndedupe:\n  - entity: t\n    key: [email, tag]\n    winner:\n      - created: asc\n", db: path, batchSize: 7)
            XCTAssertEqual(try ids(path, "t"), expected, name)
            XCTAssertEqual(summary.counts.deleted, 1000 - expected.count, name)
            XCTAssertGreaterThan(summary.counts.deleted, name == "few" ? 50 : 800, name)
        }
    }

    /// The estimate before the grouped count (tables of `estimateFromRows` rows and more, here
    /// lowered to reach the small tables), which discovery by SQLite's window runs (the sorted
    /// read has no count before it; both are run here): where most rows are duplicates the sample
    /// skips the count, where few are the count runs and filters; either way the run keeps
    /// exactly the rows the window over every row keeps.
    func testDuplicateShareEstimateChoosesAPathAndEveryPathFindsTheSameGroups() throws {
        let saved = DedupeExecutor.estimateFromRows
        DedupeExecutor.estimateFromRows = 100
        defer {
            DedupeExecutor.estimateFromRows = saved
            DedupeExecutor.discoversSorted = true
        }
        for (name, distinctKeys, skips) in [("few", 3800, false), ("most", 400, true)] {
            for sorted in [false, true] {
                DedupeExecutor.discoversSorted = sorted
                var values: [String] = []
                for id in 1...4000 {
                    let key = (id * 7919) % distinctKeys
                    let email = id % 97 == 0 ? "NULL" : "'user\(key)@x'"
                    values.append("(\(id), \(email), \((id * 104_729) % 4000))")
                }
                let setup = """
                    CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT, created INTEGER);
                    INSERT INTO t VALUES \(values.joined(separator: ", "));
                    """
                let path = try db(setup, name: "\(name)-\(sorted).sqlite")
                let job = try ScenarioKit.job("version: 1\ndedupe:\n  - {entity: t, key: email, winner: [{created: asc}]}\n")
                let sample = try DatabaseOpener.open(path: path, mode: .readOnly).inDatabase { db -> Row in
                    let rule = try JobRunner.compile(job, db)[0]
                    let executor = DedupeExecutor(db: db, rule: rule, writer: DryRunWriter(), settings: job.batch)
                    XCTAssertTrue(executor.countsKeysFirst)
                    return try Row.fetchOne(db, sql: executor.duplicateShareSQL())!
                }
                let (sampledRows, inGroups): (Int, Int) = (sample[0], sample[1])
                XCTAssertGreaterThan(sampledRows, 4000 / DedupeExecutor.sampledKeys / 3, "\(name): about a sixteenth of the rows")
                XCTAssertLessThan(sampledRows, 4000 / DedupeExecutor.sampledKeys * 3, name)
                XCTAssertEqual(
                    DedupeExecutor.skipsGroupedCount(sampledRows: sampledRows, sampledInGroups: inGroups), skips, "\(name): \(sample)")
                let expected = try ScenarioKit.column(
                    path,
                    """
                    SELECT id FROM t WHERE id NOT IN (SELECT id FROM (SELECT id, row_number() OVER
                      (PARTITION BY email ORDER BY created, id) AS rn FROM t WHERE email IS NOT NULL) WHERE rn > 1)
                    ORDER BY id
                    """, as: Int64.self)
                let summary = try ScenarioKit.run(
                    "version: 1\ndedupe:\n  - entity: t\n    key: email\n    winner:\n      - created: asc\n", db: path, batchSize: 97)
                XCTAssertEqual(try ids(path, "t"), expected, name)
                XCTAssertEqual(summary.counts.deleted, 4000 - expected.count, name)
            }
        }
    }

    /// `winnow_bucket` puts the tuples SQLite groups together byte for byte in one bucket (1 and
    /// 1.0 alike), tells types apart, and spreads keys evenly.
    func testBucketFunctionFollowsGroupingAndSpreads() throws {
        try DatabaseQueue().inDatabase { db in
            try SQLFunctions.register(on: db)
            func bucket(_ sql: String) throws -> Int64 { try Int64.fetchOne(db, sql: "SELECT winnow_bucket(\(sql))")! }
            XCTAssertEqual(try bucket("1"), try bucket("1.0"))
            XCTAssertEqual(try bucket("'a', 2"), try bucket("'a', 2.0"))
            XCTAssertNotEqual(try bucket("1"), try bucket("'1'"))
            XCTAssertNotEqual(try bucket("'ab', 'c'"), try bucket("'a', 'bc'"))
            XCTAssertNotEqual(try bucket("x'61'"), try bucket("'a'"))
            XCTAssertGreaterThanOrEqual(try bucket("NULL"), 0)
            let spread = try Row.fetchAll(
                db,
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 16000)
                    SELECT winnow_bucket('user' || i || '@example.com') % 16 AS b, count(*) FROM n GROUP BY b
                    """)
            XCTAssertEqual(spread.count, 16)
            for row in spread {
                let count: Int = row[1]
                XCTAssertTrue((800...1200).contains(count), "bucket \(row[0] as DatabaseValue): \(count) of 16,000")
            }
        }
    }

    func testBatchSizeFromJobFile() throws {
        let path = try makeGroups(5)
        let summary = try ScenarioKit.run(
            """
            version: 1
            batch:
              size: 2
            dedupe:
              - entity: t
                key: k
            """, db: path)
        XCTAssertEqual(summary.counts.batches, 3)
        XCTAssertEqual(summary.counts.groups, 5)
    }

    // MARK: plan and check

    func testPlanChangesNoByteAndPredictsRun() throws {
        let path = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        let job = "version: 1\ndedupe:\n  - entity: Playlist\n    key: Name\n"
        let bytes = try TestSupport.fileBytes(path)
        let plan = try ScenarioKit.plan(job, db: path)
        XCTAssertEqual(try TestSupport.fileBytes(path), bytes, "plan wrote to the database")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-journal"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-wal"))
        let run = try ScenarioKit.run(job, db: path)
        var planned = plan.counts
        var done = run.counts
        XCTAssertGreaterThan(planned.childrenDeleted, 0)
        planned.batches = 0
        done.batches = 0
        XCTAssertEqual(planned, done)
        XCTAssertEqual(plan.status, "planned")
        XCTAssertTrue(plan.dryRun)
    }

    /// A rule that only deletes is batched by position, so a group's losers lie in several
    /// batches; `plan --verbose` (every sample) still shows each group once, with all its losers,
    /// and its rows as they are.
    func testEveryGroupIsSampledOnceWhenItsLosersSpanBatches() throws {
        // 40 groups of 4 rows, each group's rows far apart (ids i, i + 40, i + 80, i + 120).
        var sql = "CREATE TABLE p (id INTEGER PRIMARY KEY, k TEXT, n INTEGER);\n"
        for id in 1...160 { sql += "INSERT INTO p VALUES (\(id), 'k\((id - 1) % 40)', \(id));\n" }
        let path = try db(sql)
        let job = try ScenarioKit.job("version: 1\ndedupe:\n  - entity: p\n    key: k\n    winner:\n      - n: asc\n")
        let plan = try SQLiteBackend.plan(job, options: RunOptions(database: path, batchSize: 5, sampleLimit: nil))
        let rule = try XCTUnwrap(plan.rules.first)
        XCTAssertEqual(rule.counts.groups, 40)
        XCTAssertEqual(rule.counts.deleted, 120)
        XCTAssertGreaterThan(rule.counts.batches, 1)
        XCTAssertEqual(rule.samples.count, 40, "each group once")
        XCTAssertEqual(Set(rule.samples.map(\.winner.stored)).count, 40)
        for sample in rule.samples {
            XCTAssertEqual(sample.losers.count, 3, "\(sample.winner.stored): every loser, also those of other batches")
            XCTAssertEqual(sample.rows.count, 4)
            XCTAssertEqual(sample.rows.first?.row, sample.winner)
        }
        XCTAssertEqual(Set(rule.samples.flatMap(\.losers).map(\.stored)).count, 120)
    }

    func testPlanPredictsMergesRepointsAndHashes() throws {
        let path = try db(
            """
            CREATE TABLE c (id INTEGER PRIMARY KEY, email TEXT, visits INTEGER, phone TEXT, kh TEXT);
            CREATE TABLE o (id INTEGER PRIMARY KEY, cid INTEGER REFERENCES c(id));
            INSERT INTO c VALUES (1, 'A', 1, NULL, NULL), (2, 'a', 2, '5', NULL), (3, 'b', 1, NULL, NULL), (4, 'B ', 1, NULL, NULL),
                                 (5, NULL, 1, NULL, 'x'), (6, 'c', 1, NULL, NULL);
            INSERT INTO o VALUES (1, 2), (2, 3), (3, 3), (4, 6);
            """)
        let job = """
            version: 1
            dedupe:
              - entity: c
                key: email
                normalize: [trim, lowercase]
                hash: true
                hash_column: kh
                merge:
                  visits: sum
                  phone: fill_null
            """
        let bytes = try TestSupport.fileBytes(path)
        let plan = try ScenarioKit.plan(job, db: path)
        XCTAssertEqual(try TestSupport.fileBytes(path), bytes)
        let run = try ScenarioKit.run(job, db: path)
        XCTAssertEqual(plan.counts.groups, run.counts.groups)
        XCTAssertEqual(plan.counts.deleted, run.counts.deleted)
        XCTAssertEqual(plan.counts.updated, run.counts.updated)
        XCTAssertEqual(plan.counts.repointed, run.counts.repointed)
        XCTAssertEqual(plan.counts.hashed, run.counts.hashed)
        XCTAssertEqual(run.counts.groups, 2)
        XCTAssertEqual(run.counts.deleted, 2)
        XCTAssertEqual(run.counts.updated, 2)
        XCTAssertEqual(run.counts.repointed, 3)
        XCTAssertGreaterThanOrEqual(run.counts.hashed, 4, "at least the surviving keyed rows and the NULL-key row's stale value")
        XCTAssertNil(try ScenarioKit.column(path, "SELECT kh FROM c WHERE id = 5", as: String.self).first ?? nil)
    }

    func testCheckFindsDuplicatesBeforeAndNoneAfterRun() throws {
        let path = try ScenarioKit.copyDataset("chinook.sqlite", into: dir)
        let job = "version: 1\ndedupe:\n  - entity: Playlist\n    key: Name\n  - entity: Customer\n    key: [State]\n    nulls: distinct\n"
        let bytes = try TestSupport.fileBytes(path)
        let before = try ScenarioKit.check(job, db: path)
        XCTAssertEqual(try TestSupport.fileBytes(path), bytes, "check wrote to the database")
        XCTAssertEqual(before.status, "duplicates")
        XCTAssertEqual(before.rules[0].counts.groups, 4)
        XCTAssertEqual(before.rules[0].counts.deleted, 4)
        let customerStates = try ScenarioKit.rows(
            path, "SELECT State FROM Customer WHERE State IS NOT NULL GROUP BY State HAVING count(*) > 1")
        XCTAssertEqual(before.rules[1].counts.groups, customerStates.count)
        let plan = try ScenarioKit.plan(job, db: path)
        XCTAssertEqual(before.counts.groups, plan.counts.groups)
        XCTAssertEqual(before.counts.deleted, plan.counts.deleted)
        try ScenarioKit.run(job, db: path)
        let after = try ScenarioKit.check(job, db: path)
        XCTAssertEqual(after.status, "clean")
        XCTAssertEqual(after.counts.groups, 0)
        XCTAssertEqual(after.counts.deleted, 0)
        // Customers with a NULL state are never duplicates under nulls: distinct.
        XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM Customer WHERE State IS NULL"), 29)
    }

    func testUnknownColumnIsInvalidJob() throws {
        let path = try db("CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'a');")
        let before = try ScenarioKit.userState(path)
        ScenarioKit.expectExit(65) { try ScenarioKit.run("version: 1\ndedupe:\n  - entity: t\n    key: nope\n", db: path) }
        ScenarioKit.expectExit(65) { _ = try ScenarioKit.plan("version: 1\ndedupe:\n  - entity: nope\n    key: k\n", db: path) }
        ScenarioKit.expectExit(65) {
            _ = try ScenarioKit.check("version: 1\ndedupe:\n  - entity: t\n    key: k\n    winner:\n      - zz: asc\n", db: path)
        }
        XCTAssertEqual(try ScenarioKit.userState(path), before)
    }
}
