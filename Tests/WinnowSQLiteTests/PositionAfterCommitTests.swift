import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestFiles
import WinnowTestSupport

/// A rule that only deletes keeps its batches in stretches of the table after another
/// connection's commit (``DedupeExecutor/staysByPosition``): each batch settles its part of its
/// groups as the rows are then. These tests hold it to what batches by group decide on the same
/// rows: a loser that no longer shares its winner's key stays, the losers of a winner that is
/// gone stay, and of the rows of a group that still share its winner's key only the first by
/// the full winner order stays.
final class PositionAfterCommitTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("PositionAfterCommit")
    }

    override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    struct Row: Equatable {
        var k: String?
        var created: Int
    }

    /// A table of `rows` rows with groups of 2 to 5 rows scattered at random (seeded), the others
    /// with keys of their own; every `created` distinct. Returns the rows and the groups (each
    /// with its members in winner order: `created`, then id).
    /// `orders`: an `orders` table of `rows / 2` rows, each pointing at a row drawn at random
    /// through a declared foreign key (with an index on it where `indexed`), re-pointed by the rule.
    func makeTable(
        _ path: String, rows: Int, seed: UInt64, orders: Bool = false, indexed: Bool = false
    ) throws -> (
        rows: [Int64: Row], groups: [[Int64]]
    ) {
        var random = SplitMix64(seed: seed)
        var ids = Array(Int64(1)...Int64(rows))
        ids.shuffle(using: &random)
        var created = Array(1...rows).map { $0 * 10 }
        created.shuffle(using: &random)
        var table: [Int64: Row] = [:]
        var groups: [[Int64]] = []
        var at = 0
        while at + 5 <= rows / 2 {
            let size = 2 + Int.random(in: 0..<4, using: &random)
            for id in ids[at..<at + size] { table[id] = Row(k: "g\(groups.count)", created: 0) }
            groups.append(Array(ids[at..<at + size]))
            at += size
        }
        for id in ids[at...] { table[id] = Row(k: "u\(id)", created: 0) }
        for id in Int64(1)...Int64(rows) { table[id]!.created = created[Int(id) - 1] }
        groups = groups.map { $0.sorted { (table[$0]!.created, $0) < (table[$1]!.created, $1) } }
        let values = table.keys.sorted().map { "(\($0), '\(table[$0]!.k!)', \(table[$0]!.created))" }
        var sql =
            "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, created INTEGER); INSERT INTO t VALUES \(values.joined(separator: ", "));"
        if orders {
            let children = (1...rows / 2).map { "(\($0), \(Int.random(in: 1...rows, using: &random)))" }
            sql +=
                "CREATE TABLE orders (id INTEGER PRIMARY KEY, tid INTEGER REFERENCES t(id)); INSERT INTO orders VALUES \(children.joined(separator: ", "));"
            if indexed { sql += "CREATE INDEX orders_tid ON orders (tid);" }
        }
        _ = try TestSupport.makeDatabase(at: path, sql: sql)
        return (table, groups)
    }

    /// Another connection's changes after the first batch, drawn at random (seeded): keys
    /// changed to keys of their own or to another group's, rows deleted, `created` made the
    /// earliest or the latest of all, and new rows with a group's key (not found: never touched).
    /// Returns the statements, the rows they change and the rows they delete.
    func changes(_ groups: [[Int64]], count: Int, seed: UInt64, orders: Bool) -> (sql: [String], rows: Set<Int64>, deleted: Set<Int64>) {
        var random = SplitMix64(seed: seed)
        var sql: [String] = []
        var rows = Set<Int64>()
        var deleted = Set<Int64>()
        var next: Int64 = 100_000
        for n in 0..<count {
            let group = groups[Int.random(in: 0..<groups.count, using: &random)]
            let id = group[Int.random(in: 0..<group.count, using: &random)]
            rows.insert(id)
            switch Int.random(in: 0..<6, using: &random) {
            case 0: sql.append("UPDATE t SET k = 'own\(id)' WHERE id = \(id)")
            case 1: sql.append("UPDATE t SET k = 'g\(Int.random(in: 0..<groups.count, using: &random))' WHERE id = \(id)")
            case 2:
                // (With its children, if any: the connection enforces foreign keys.)
                sql.append("DELETE FROM t WHERE id = \(id)")
                if orders { sql[sql.count - 1] = "DELETE FROM orders WHERE tid = \(id); DELETE FROM t WHERE id = \(id)" }
                deleted.insert(id)
            case 3: sql.append("UPDATE t SET created = \(-1000 - n) WHERE id = \(id)")
            case 4: sql.append("UPDATE t SET created = \(10_000_000 + n) WHERE id = \(id)")
            default:
                next += 1
                sql.append("INSERT INTO t VALUES (\(next), (SELECT k FROM t WHERE id = \(id)), \(-5000 - n))")
            }
        }
        return (sql, rows, deleted)
    }

    /// What batches by group keep: for each group found, its winner (where it is still there)
    /// and the losers still there that share its key now; of those the first by `created`, then
    /// id, stays and the others go. Every other row stays.
    /// Also returns each such group's survivor, by its index (none where the winner is gone).
    func expectedSurvivors(_ path: String, groups: [[Int64]]) throws -> (survivors: [Int64], first: [Int: Int64]) {
        let rows = try ScenarioKit.rows(path, "SELECT id, k, created FROM t")
        var now: [Int64: Row] = [:]
        for row in rows {
            now[Int64.fromDatabaseValue(row[0])!] = Row(k: String.fromDatabaseValue(row[1]), created: Int.fromDatabaseValue(row[2])!)
        }
        var gone = Set<Int64>()
        var firsts: [Int: Int64] = [:]
        for (index, group) in groups.enumerated() {
            guard let winner = now[group[0]] else { continue }
            // (A row whose key is NULL shares it with none.)
            let members = group.filter { id in id == group[0] || (winner.k != nil && now[id]?.k == winner.k) }
            let first = members.min { (now[$0]!.created, $0) < (now[$1]!.created, $1) }!
            for id in members where id != first { gone.insert(id) }
            firsts[index] = first
        }
        return (now.keys.filter { !gone.contains($0) }.sorted(), firsts)
    }

    /// Scattered groups, batches of four groups' losers by position, and a burst of changes by
    /// another connection after the first batch: the run keeps exactly what batches by group
    /// keep on the rows as they are after it, and every batch after it still deletes one
    /// stretch of the table (the losers of its rowids, plus a former winner a loser now comes
    /// before), each after the one before. With children (re-pointed ahead where indexed, mapped
    /// where not), each child of a deleted row ends at its group's survivor; and (without
    /// children) `restore` of the run puts back every row it deleted, a winner a loser came
    /// before too, as it was when deleted. Several seeds.
    func testBatchesAfterAnotherCommitStayStretchesAndKeepWhatGroupsKeep() throws {
        let cases: [(seed: UInt64, orders: Bool, indexed: Bool)] = [
            (0x51, false, false), (0x52, false, false), (0x53, true, true), (0x54, true, false), (0x55, true, true), (0x56, true, false),
        ]
        for (seed, orders, indexed) in cases {
            let path = dir.appendingPathComponent("t-\(seed).sqlite").path
            let (_, groups) = try makeTable(path, rows: 1200, seed: seed, orders: orders, indexed: indexed)
            let found = try orders ? ScenarioKit.rows(path, "SELECT id, tid FROM orders ORDER BY id") : []
            let (sql, changed, appDeleted) = changes(groups, count: 60, seed: seed &* 7, orders: orders)
            var wrote = false
            var afterFirst: [Int64] = []
            let summary = try ScenarioKit.run(
                "version: 1\ndedupe:\n  - entity: t\n    key: k\n    archive: true\n    winner:\n      - created: asc\n", db: path,
                batchSize: 4
            ) { event in
                guard case .batch = event, !wrote else { return }
                wrote = true
                afterFirst = (try? ScenarioKit.column(path, "SELECT id FROM t ORDER BY id", as: Int64.self).map { $0! }) ?? []
                for statement in sql { try? ScenarioKit.execute(path, statement) }
            }
            XCTAssertTrue(wrote)
            XCTAssertFalse(afterFirst.isEmpty)
            // The expected survivors from the rows as they were after the changes: rebuild them
            // on a copy of the table taken right after the first batch, with the same changes.
            let model = dir.appendingPathComponent("model-\(seed).sqlite").path
            let (rows, _) = try makeTable(model, rows: 1200, seed: seed, orders: orders, indexed: indexed)
            let firstBatchGone = Set(rows.keys).subtracting(afterFirst)
            if !firstBatchGone.isEmpty {
                try ScenarioKit.execute(model, "DELETE FROM t WHERE id IN (\(firstBatchGone.map(String.init).joined(separator: ", ")))")
            }
            for statement in sql { try? ScenarioKit.execute(model, statement) }
            let (expected, first) = try expectedSurvivors(model, groups: groups)
            let survivors = try ScenarioKit.column(path, "SELECT id FROM t ORDER BY id", as: Int64.self).map { $0! }
            XCTAssertEqual(survivors, expected, "seed \(seed)")
            if orders {
                var groupOf: [Int64: Int] = [:]
                for (index, group) in groups.enumerated() { for id in group { groupOf[id] = index } }
                let kept = Set(survivors)
                var now: [Int64: Int64?] = [:]
                for row in try ScenarioKit.rows(path, "SELECT id, tid FROM orders") {
                    now[Int64.fromDatabaseValue(row[0])!] = Int64.fromDatabaseValue(row[1])
                }
                var moved = 0
                for before in found {
                    let parent = Int64.fromDatabaseValue(before[1])!
                    // (The other connection deleted its rows' children with them.)
                    guard let after = now[Int64.fromDatabaseValue(before[0])!] else { continue }
                    guard !appDeleted.contains(parent) else { continue }
                    let group = groupOf[parent]
                    let expected = kept.contains(parent) ? parent : group.flatMap { first[$0] ?? groups[$0][0] } ?? parent
                    if expected != parent { moved += 1 }
                    XCTAssertEqual(after, expected, "seed \(seed): order \(before[0]) of row \(parent)")
                }
                XCTAssertGreaterThan(moved, 100, "seed \(seed)")
            }
            let before = try ScenarioKit.int(model, "SELECT count(*) FROM t")
            XCTAssertEqual(summary.counts.deleted, firstBatchGone.count + before - survivors.count, "seed \(seed)")
            // Each batch after the first deletes losers of one stretch of rowids, after the
            // last batch's. (Not counted: the rows of the groups the changes touched. There a
            // loser may have come first, become the winner and gone later with a batch that
            // found another row of the group before it, wherever it lies.)
            let winners = Set(groups.map { $0[0] }).union(groups.filter { !changed.isDisjoint(with: $0) }.joined())
            let deleted = try ScenarioKit.rows(
                path,
                "SELECT batch, min(rid), max(rid) FROM (SELECT batch, rid FROM \(try journalEntries(path)) WHERE op = 'delete' AND tbl = 't' AND rid NOT IN (\(winners.map(String.init).joined(separator: ", ")))) GROUP BY batch ORDER BY batch"
            )
            XCTAssertGreaterThan(deleted.count, 10, "seed \(seed)")
            var last: Int64 = .min
            for row in deleted {
                let (low, high) = (Int64.fromDatabaseValue(row[1])!, Int64.fromDatabaseValue(row[2])!)
                XCTAssertGreaterThan(low, last, "seed \(seed): batch \(row[0]) reaches back before the batch before it")
                last = high
            }
            // `restore` puts back every row the run deleted as it was then (a swapped-out winner
            // too, after the other connection's changes): the model's rows, and the first
            // batch's as they were before it. (Not with orders: the other connection deleted
            // some that the run had re-pointed, and `restore` refuses to put those back.)
            guard !orders else { continue }
            _ = try Restorer.restore(database: path, runID: try XCTUnwrap(summary.runID))
            let restored = try ScenarioKit.rows(path, "SELECT id, k, created FROM t ORDER BY id")
            var modelRows = try ScenarioKit.rows(model, "SELECT id, k, created FROM t")
            modelRows += firstBatchGone.map { [$0.databaseValue, rows[$0]!.k.databaseValue, rows[$0]!.created.databaseValue] }
            XCTAssertEqual(restored, modelRows.sorted { Int64.fromDatabaseValue($0[0])! < Int64.fromDatabaseValue($1[0])! }, "seed \(seed)")
        }
    }

    func journalEntries(_ path: String) throws -> String {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return "(\(try queue.read { try ScenarioKit.journalEntries($0) }))"
    }
}
