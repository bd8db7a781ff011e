import Foundation
import GRDB
import WinnowCore
import WinnowSQLite
import WinnowTestSupport
import XCTest

/// `VACUUM` rebuilds a table and renumbers the rowids that no `INTEGER PRIMARY KEY` names, and
/// an application may run it between two of winnow's batches. What winnow found before it names
/// rows by those rowids: the rest of the run must still end with the rows an uninterrupted run
/// leaves, merged values included.
final class VacuumMidRunTests: XCTestCase {
    /// 4,000 groups of 2 to 4 rows and 3,000 rows alone, in a shuffled order, in a table keyed by
    /// text (its rowid has no alias).
    func makeTable(_ path: String) throws {
        var seed: UInt64 = 7
        func next() -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(seed >> 33)
        }
        var rows: [String] = []
        for g in 0..<4000 {
            for _ in 0..<(2 + next() % 3) { rows.append("('c\(rows.count)', 'k\(g)', \(next() % 1_000_000), \(rows.count))") }
        }
        for i in 0..<3000 { rows.append("('c\(rows.count)', 'solo\(i)', \(next() % 1_000_000), \(rows.count))") }
        for i in stride(from: rows.count - 1, to: 0, by: -1) { rows.swapAt(i, next() % (i + 1)) }
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE t (code TEXT NOT NULL, k TEXT, created INTEGER NOT NULL, v INTEGER);
                INSERT INTO t VALUES \(rows.joined(separator: ", "));
                """)
    }

    func rows(_ path: String) throws -> [String] {
        try ScenarioKit.column(path, "SELECT code || ' ' || k || ' ' || created || ' ' || v FROM t ORDER BY code", as: String.self)
            .map { $0 ?? "" }
    }

    /// Each key's rows and the sum of their `v`: a merge by sum keeps the sum, and a deletion
    /// without a merge only takes rows away.
    func perKey(_ path: String) throws -> [String: (rows: Int, sum: Int)] {
        var result: [String: (rows: Int, sum: Int)] = [:]
        for line in try ScenarioKit.column(path, "SELECT k || ' ' || count(*) || ' ' || sum(v) FROM t GROUP BY k", as: String.self) {
            let parts = (line ?? "").split(separator: " ")
            result[String(parts[0])] = (Int(parts[1]) ?? 0, Int(parts[2]) ?? 0)
        }
        return result
    }

    /// With and without a merge, under a limit small enough for many transactions: another
    /// connection runs `VACUUM` after the second, which moves rows to other rowids (the
    /// batches have left gaps). The run stops at its next transaction (exit 75) with what it
    /// committed intact: every key still has a row, a merged key still sums to what it did,
    /// and no row but a merge's winner differs from the original. The next run ends with the
    /// rows of a run nothing interrupted.
    func testAVacuumBetweenBatchesStopsTheRunAndTheNextRunFinishesIt() throws {
        let dir = try TestSupport.scratchDirectory()
        for merge in [false, true] {
            let yaml =
                "version: 1\ndedupe:\n  - entity: t\n    key: k\n    winner:\n      - created: asc\n"
                + (merge ? "    merge:\n      v: sum\n" : "") + "batch:\n  max_transaction_ms: 3\n"
            let quiet = dir.appendingPathComponent("quiet-\(merge).sqlite").path
            let vacuumed = dir.appendingPathComponent("vacuumed-\(merge).sqlite").path
            try makeTable(quiet)
            try makeTable(vacuumed)
            let original = try perKey(quiet)
            let originalRows = Set(try rows(quiet))
            _ = try ScenarioKit.run(yaml, db: quiet, batchSize: 5)

            var transactions = 0
            var renumbered: (before: Int?, after: Int?) = (nil, nil)
            XCTAssertThrowsError(
                try ScenarioKit.run(yaml, db: vacuumed, batchSize: 5) { event in
                    guard case .batch = event else { return }
                    transactions += 1
                    guard transactions == 2 else { return }
                    let last = "SELECT max(rowid) FROM t"
                    renumbered.before = try? ScenarioKit.int(vacuumed, last)
                    do {
                        try DatabaseQueue(path: vacuumed).writeWithoutTransaction { try $0.execute(sql: "VACUUM") }
                    } catch {
                        XCTFail("VACUUM: \(error)")
                    }
                    renumbered.after = try? ScenarioKit.int(vacuumed, last)
                }
            ) { error in
                guard case let .locked(message) = error as? WinnowError else { return XCTFail("merge: \(merge): \(error)") }
                XCTAssertTrue(message.contains("t has no INTEGER PRIMARY KEY"), message)
            }
            XCTAssertEqual(transactions, 2, "merge: \(merge): no batch after the VACUUM")
            let (before, after) = (try XCTUnwrap(renumbered.before), try XCTUnwrap(renumbered.after))
            XCTAssertLessThan(after, before, "merge: \(merge): the VACUUM moved rows to lower rowids (the case under test)")

            let stopped = try perKey(vacuumed)
            XCTAssertEqual(Set(stopped.keys), Set(original.keys), "merge: \(merge): a key lost every row")
            if merge {
                XCTAssertEqual(stopped.filter { original[$0.key]?.sum != $0.value.sum }.count, 0, "a merged sum changed")
            } else {
                XCTAssertTrue(Set(try rows(vacuumed)).isSubset(of: originalRows), "a row changed")
            }
            XCTAssertLessThan(
                stopped.values.map(\.rows).reduce(0, +), original.values.map(\.rows).reduce(0, +), "merge: \(merge): nothing was committed")
            // No merge is left recorded by rowid for the next run to trust.
            XCTAssertEqual(try ScenarioKit.int(vacuumed, "SELECT count(*) FROM winnow_merged_losers"), 0, "merge: \(merge)")

            _ = try ScenarioKit.run(yaml, db: vacuumed, batchSize: 5)
            XCTAssertEqual(try rows(vacuumed), try rows(quiet), "merge: \(merge)")
        }
    }

    /// A run that journals, then a `VACUUM` that gives the deleted rows' rowids to other rows:
    /// `restore` refuses whole (exit 65, nothing changed) and names that cause beside the
    /// other.
    func testARestoreAfterAVacuumThatRenumberedRowsRefusesAndSaysWhy() throws {
        let path = try TestSupport.scratchDirectory().appendingPathComponent("t.sqlite").path
        try makeTable(path)
        let job =
            "version: 1\ndedupe:\n  - entity: t\n    key: k\n    winner:\n      - created: asc\n    merge:\n      v: sum\n"
            + "    archive: true\n"
        _ = try ScenarioKit.run(job, db: path)
        try DatabaseQueue(path: path).writeWithoutTransaction { try $0.execute(sql: "VACUUM") }
        let before = try rows(path)
        let restore = try TestSupport.winnow(["restore", "--run", "1", "--database", path])
        XCTAssertEqual(restore.status, 65, restore.stderr)
        XCTAssertTrue(restore.stderr.contains("was deleted by that run but exists again"), restore.stderr)
        XCTAssertTrue(
            restore.stderr.contains("(or a VACUUM since then gave its rowid to another row: t has no INTEGER PRIMARY KEY)"), restore.stderr)
        XCTAssertEqual(try rows(path), before)
    }
}
