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
            XCTAssertEqual(try ScenarioKit.takenInt(vacuumed, "SELECT count(*) FROM temp.taken"), 0, "merge: \(merge)")

            _ = try ScenarioKit.run(yaml, db: vacuumed, batchSize: 5)
            XCTAssertEqual(try rows(vacuumed), try rows(quiet), "merge: \(merge)")
        }
    }

    /// 3,000 customers (an `INTEGER PRIMARY KEY`) in 1,000 groups of 2 to 4 and rows alone, in a
    /// shuffled order, and orders that reference them through a foreign key with no index, in
    /// a table without an `INTEGER PRIMARY KEY` whose rowids have gaps (every third order
    /// deleted), so that a `VACUUM` numbers them afresh.
    func makeCustomersAndOrders(_ path: String) throws {
        var seed: UInt64 = 11
        func next() -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(seed >> 33)
        }
        var keys: [String] = []
        for g in 0..<1000 { keys += Array(repeating: "k\(g)", count: 2 + next() % 3) }
        while keys.count < 3000 { keys.append("solo\(keys.count)") }
        for i in stride(from: keys.count - 1, to: 0, by: -1) { keys.swapAt(i, next() % (i + 1)) }
        let customers = keys.enumerated().map { "(\($0 + 1), '\($1)', \(next() % 1_000_000))" }
        let orders = (0..<9000).map { "(\(1 + next() % keys.count), \($0))" }
        try TestSupport.makeDatabase(
            at: path,
            sql: """
                CREATE TABLE customers (id INTEGER PRIMARY KEY, k TEXT NOT NULL, created INTEGER NOT NULL);
                CREATE TABLE orders (customer_id INTEGER REFERENCES customers(id), n INTEGER NOT NULL);
                INSERT INTO customers VALUES \(customers.joined(separator: ", "));
                INSERT INTO orders VALUES \(orders.joined(separator: ", "));
                DELETE FROM orders WHERE n % 3 = 0;
                """)
    }

    /// Each order by its number, with the key and creation time of the customer it points at
    /// (nothing where it points at no row), and the customers: what an uninterrupted run and an
    /// interrupted one must agree on, whatever rowids the orders have.
    func ordersAndCustomers(_ path: String) throws -> [String] {
        try ScenarioKit.column(
            path,
            """
            SELECT 'o ' || o.n || ' ' || coalesce(c.k || ' ' || c.created, 'nothing') FROM orders AS o
            LEFT JOIN customers AS c ON c.id = o.customer_id
            UNION ALL SELECT 'c ' || id || ' ' || k || ' ' || created FROM customers ORDER BY 1
            """, as: String.self
        ).map { $0 ?? "" }
    }

    /// The children re-pointed ahead of the batches are named by the child table's rowids,
    /// and so is the map of those the batches re-point: another connection's `VACUUM` after the
    /// first transaction renumbers the orders (their table has no `INTEGER PRIMARY KEY` and no
    /// index), while the customers keep theirs. The run stops at its next write transaction
    /// (exit 75, naming the orders' table) with no order pointing at no customer and every
    /// order still on a customer of its key; the next run ends as an uninterrupted one. (The
    /// batches re-point a mapped child only where it still holds its loser, and roll back on
    /// a count that differs, so the content stays right even past such a `VACUUM`; the stop
    /// keeps the run from going on by rowids that name other rows, in its journal too.)
    func testAVacuumThatRenumbersTheChildrenStopsTheRunAndTheNextRunFinishesIt() throws {
        let dir = try TestSupport.scratchDirectory()
        let yaml =
            "version: 1\ndedupe:\n  - entity: customers\n    key: k\n    winner:\n      - created: asc\n    references: repoint\n    archive: true\n"
            + "batch:\n  max_transaction_ms: 3\n"
        let quiet = dir.appendingPathComponent("quiet.sqlite").path
        let vacuumed = dir.appendingPathComponent("vacuumed.sqlite").path
        try makeCustomersAndOrders(quiet)
        try makeCustomersAndOrders(vacuumed)
        let keyOfOrder = Dictionary(
            uniqueKeysWithValues: try ScenarioKit.column(
                quiet, "SELECT o.n || ' ' || c.k FROM orders AS o JOIN customers AS c ON c.id = o.customer_id", as: String.self
            ).map { line -> (String, String) in
                let parts = (line ?? "").split(separator: " ")
                return (String(parts[0]), String(parts[1]))
            })
        _ = try ScenarioKit.run(yaml, db: quiet, batchSize: 5)
        // The orders on a customer that the run deletes.
        let kept = try ScenarioKit.column(quiet, "SELECT id FROM customers", as: Int.self).compactMap { $0 }
        let onLosers = "SELECT count(*) FROM orders WHERE customer_id NOT IN (\(kept.map(String.init).joined(separator: ", ")))"
        let onLosersBefore = try ScenarioKit.int(vacuumed, onLosers)

        var transactions = 0
        var renumbered: (before: Int?, after: Int?) = (nil, nil)
        var onLosersAtVacuum: Int?
        XCTAssertThrowsError(
            try ScenarioKit.run(yaml, db: vacuumed, batchSize: 5) { event in
                guard case .batch = event else { return }
                transactions += 1
                guard transactions == 1 else { return }
                onLosersAtVacuum = try? ScenarioKit.int(vacuumed, onLosers)
                let last = "SELECT max(rowid) FROM orders"
                renumbered.before = try? ScenarioKit.int(vacuumed, last)
                do {
                    try DatabaseQueue(path: vacuumed).writeWithoutTransaction { try $0.execute(sql: "VACUUM") }
                } catch {
                    XCTFail("VACUUM: \(error)")
                }
                renumbered.after = try? ScenarioKit.int(vacuumed, last)
            }
        ) { error in
            guard case let .locked(message) = error as? WinnowError else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("orders has no INTEGER PRIMARY KEY"), message)
            XCTAssertFalse(message.contains("customers has"), message)
        }
        XCTAssertEqual(transactions, 1, "no transaction after the VACUUM")
        let (before, after) = (try XCTUnwrap(renumbered.before), try XCTUnwrap(renumbered.after))
        XCTAssertLessThan(after, before, "the VACUUM moved orders to lower rowids (the case under test)")
        // The VACUUM came between two stretches of the orders: some of the losers' orders had
        // been re-pointed, some had not.
        let atVacuum = try XCTUnwrap(onLosersAtVacuum)
        XCTAssertGreaterThan(atVacuum, 0)
        XCTAssertLessThan(atVacuum, onLosersBefore)

        // What the stopped run left: every order on an existing customer of its own key.
        let stopped = try ScenarioKit.column(
            vacuumed, "SELECT o.n || ' ' || coalesce(c.k, '-') FROM orders AS o LEFT JOIN customers AS c ON c.id = o.customer_id",
            as: String.self
        ).map { line -> (String, String) in
            let parts = (line ?? "").split(separator: " ")
            return (String(parts[0]), String(parts[1]))
        }
        XCTAssertEqual(stopped.count, keyOfOrder.count)
        XCTAssertEqual(stopped.filter { keyOfOrder[$0.0] != $0.1 }.count, 0, "an order lost its customer or moved to another key")
        XCTAssertGreaterThan(
            try ScenarioKit.int(vacuumed, "SELECT count(*) FROM customers"), try ScenarioKit.int(quiet, "SELECT count(*) FROM customers"),
            "the run was not stopped before its end")

        _ = try ScenarioKit.run(yaml, db: vacuumed, batchSize: 5)
        XCTAssertEqual(try ordersAndCustomers(vacuumed), try ordersAndCustomers(quiet))
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
