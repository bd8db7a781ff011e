import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// A rule whose merges are all `sum`, `min` or `max` of integers: its stretches of merges delete
/// every loser in their rowids, also one whose winner a later stretch merges, keeping that
/// loser's values in `winnow_given_merges` (``GivenMergesRecord``) until then, so that no second
/// pass over the table deletes the losers the stretches left (docs/reference.md section 4). These
/// tests hold it to what the batches by group give: when every stretch runs, when a run is killed
/// after any of them (or amid merging the kept values into their winners), when another
/// connection commits between two, and through `restore`.
final class GivenMergesTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory() }
    override func tearDownWithError() throws {
        DedupeExecutor.givesLosersAhead = true
        DedupeExecutor.settlePiece = 2000
        DedupeExecutor.afterSettlePiece = nil
        try? FileManager.default.removeItem(at: dir)
    }

    /// Merges that may give losers ahead: a sum, and a minimum that ties move.
    static let merge = "{visits: sum, created_at: min}"

    static func job(size: Int = 20, merge: String = GivenMergesTests.merge) -> String {
        ScenarioKit.customersJob(size: size, merge: merge)
    }

    /// 6,000 scattered customers (``ScenarioKit/scatteredCustomersSQL(customers:orders:seed:createdAt:alsoCreate:)``), a `notes` table for another connection.
    func makeStore(_ name: String = "store.sqlite") throws -> String {
        let path = dir.appendingPathComponent(name).path
        try TestSupport.makeDatabase(
            at: path,
            sql: ScenarioKit.scatteredCustomersSQL(
                customers: 6000, orders: 6000, seed: 11, createdAt: 0..<40,
                alsoCreate: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"))
        return path
    }

    /// The job on a copy of `path` in one batch: every group settled whole.
    func byGroup(_ path: String, merge: String = GivenMergesTests.merge) throws -> String {
        let reference = dir.appendingPathComponent("reference-\(UUID().uuidString).sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: reference)
        try ScenarioKit.run(Self.job(size: 100_000, merge: merge), db: reference)
        return reference
    }

    /// Runs `body` with the stretches ahead starting at 10 rows or winners (the merges of the
    /// 2,000 groups then take three stretches: 10, 640 and the rest).
    @discardableResult
    func withSmallStretches<T>(start: Int = 10, _ body: () throws -> T) rethrows -> T {
        let before = DedupeExecutor.aheadStart
        DedupeExecutor.aheadStart = start
        defer { DedupeExecutor.aheadStart = before }
        return try body()
    }

    /// A copy of the store as a run killed right after its first stretch of merges leaves it
    /// (its stretches ahead starting at `start`), copied once that stretch has committed. The
    /// lock in the copy is this live process's; as a killed run's would be, it is gone.
    func stoppedAfterFirstStretch(_ path: String, start: Int = 10, name: String = "after-first.sqlite") throws -> String {
        var stopped: String?
        try withSmallStretches(start: start) {
            try ScenarioKit.run(Self.job(), db: path) { event in
                guard case .batch(let report) = event, report.counts.updated > 0, stopped == nil else { return }
                let copy = self.dir.appendingPathComponent(name).path
                try? FileManager.default.copyItem(atPath: path, toPath: copy)
                try? ScenarioKit.execute(copy, "DELETE FROM winnow_lock")
                stopped = copy
            }
        }
        return try XCTUnwrap(stopped)
    }

    /// The rows of `winnow_given_merges` for `customers` (0 where the table is missing).
    func givenRows(_ path: String) throws -> Int {
        guard try ScenarioKit.int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'winnow_given_merges'") > 0 else { return 0 }
        return try ScenarioKit.int(path, "SELECT count(*) FROM winnow_given_merges")
    }

    /// The visits a store holds for its customers, as a later run will merge them: those in the
    /// table, less those of losers still there whose values a merge took (their winner still
    /// there), plus the given losers' kept for a winner whose merge has not come (it is still
    /// there, and its run did not record it as taking losers).
    func visitsToCome(_ path: String) throws -> Int {
        let inTable = try ScenarioKit.int(path, "SELECT sum(visits) FROM customers")
        let taken = try ScenarioKit.takenInt(
            path,
            """
            SELECT coalesce(sum(c.visits), 0) FROM customers AS c WHERE c.id IN (
              SELECT m.loser FROM temp.taken AS m
              WHERE m.tbl = 'customers' AND EXISTS (SELECT 1 FROM customers AS w WHERE w.id = m.winner))
            """)
        return inTable - taken + (try ScenarioKit.givenIntegers(path, table: "customers", column: "visits"))
    }

    func testTheStretchesGiveLosersAheadLeaveNoSecondPassAndEndAsByGroup() throws {
        let path = try makeStore()
        let reference = try byGroup(path)
        let twoPasses = dir.appendingPathComponent("two-passes.sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: twoPasses)
        var (given, mergeStretches, afterMerges) = (0, 0, 0)
        let summary = try withSmallStretches {
            try ScenarioKit.run(Self.job(), db: path) { event in
                guard case .batch(let report) = event else { return }
                if report.counts.updated > 0 {
                    mergeStretches += 1
                    given = max(given, (try? self.givenRows(path)) ?? 0)
                } else if mergeStretches > 0 {
                    afterMerges += 1
                }
            }
        }
        XCTAssertGreaterThan(mergeStretches, 2, "the merges took several stretches")
        XCTAssertGreaterThan(given, 0, "stretches kept the values of losers they gave ahead")
        XCTAssertEqual(afterMerges, 0, "no batch followed the stretches of merges: they deleted every loser")
        XCTAssertEqual(try givenRows(path), 0, "the record is empty once every winner is merged")
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        // The same rule with two passes: the same end, and its second pass deleted losers.
        DedupeExecutor.givesLosersAhead = false
        var secondPass = 0
        var merged = false
        let other = try withSmallStretches {
            try ScenarioKit.run(Self.job(), db: twoPasses) { event in
                guard case .batch(let report) = event else { return }
                if report.counts.updated > 0 { merged = true } else if merged, report.counts.deleted > 0 { secondPass += 1 }
            }
        }
        XCTAssertGreaterThan(secondPass, 0)
        XCTAssertEqual(try givenRows(twoPasses), 0)
        XCTAssertEqual(try TestSupport.contentDump(twoPasses), try TestSupport.contentDump(reference))
        XCTAssertEqual(other.counts.deleted, summary.counts.deleted)
        XCTAssertEqual(other.counts.updated, summary.counts.updated)
    }

    /// A run killed right after any of its stretches of merges (each copied as it committed):
    /// no visit is lost or counted twice in between, and the next run ends as an uninterrupted
    /// one, each loser and merge counted once over both runs, the record empty.
    func testARunKilledAfterAnyStretchThatGaveLosersAheadFinishesLikeAnUninterruptedRun() throws {
        let path = try makeStore()
        let reference = try byGroup(path)
        let total = try ScenarioKit.int(path, "SELECT sum(visits) FROM customers")
        var copies: [String] = []
        let first = try withSmallStretches {
            try ScenarioKit.run(Self.job(), db: path) { event in
                guard case .batch(let report) = event, report.counts.updated > 0 else { return }
                let copy = self.dir.appendingPathComponent("after-stretch-\(copies.count + 1).sqlite").path
                try? FileManager.default.copyItem(atPath: path, toPath: copy)
                // (The lock in the copy is this live process's: as a killed run's would be, it is gone.)
                try? ScenarioKit.execute(copy, "DELETE FROM winnow_lock")
                copies.append(copy)
            }
        }
        XCTAssertGreaterThan(copies.count, 2)
        var gaveAhead = 0
        for copy in copies {
            if try givenRows(copy) > 0 { gaveAhead += 1 }
            XCTAssertEqual(try visitsToCome(copy), total, "\(copy): no visit lost or counted twice")
            let before = try ScenarioKit.rows(copy, "SELECT coalesce(sum(deleted), 0), coalesce(sum(updated), 0) FROM winnow_runs")[0]
            let second = try ScenarioKit.run(Self.job(), db: copy)
            XCTAssertEqual(try TestSupport.contentDump(copy), try TestSupport.contentDump(reference), copy)
            XCTAssertEqual(Int.fromDatabaseValue(before[0])! + second.counts.deleted, first.counts.deleted, copy)
            XCTAssertEqual(try givenRows(copy), 0, copy)
            XCTAssertEqual(try ScenarioKit.int(copy, "SELECT count(*) FROM winnow_taken_losers"), 0, copy)
        }
        XCTAssertGreaterThan(gaveAhead, 1, "copies held values given ahead")
    }

    /// Two runs in a row killed after their first stretch of merges: the second merges the
    /// values the first kept into their winners, recording those winners as taking the given
    /// losers, and then gives ahead more losers of some of the same winners before it is
    /// killed. Those values are still to come: a winner recorded as taking losers by the run
    /// that kept them is merged only where the record holds its own given losers (its stretch
    /// came, or that run merged them after another connection's commit), not where it holds
    /// the losers of an earlier run's values. The third run ends as an uninterrupted one.
    func testTwoRunsKilledInARowAfterGivingLosersAheadLoseNoValue() throws {
        let path = try makeStore()
        let reference = try byGroup(path)
        let total = try ScenarioKit.int(path, "SELECT sum(visits) FROM customers")
        let first = try stoppedAfterFirstStretch(path, start: 100)
        XCTAssertGreaterThan(try givenRows(first), 0)
        let second = try stoppedAfterFirstStretch(first, start: 100, name: "after-second.sqlite")
        XCTAssertGreaterThan(try givenRows(second), 0)
        XCTAssertGreaterThan(try keptAgainForSettledWinners(second), 0, "the second run kept values for winners it settled")
        XCTAssertEqual(try visitsToCome(second), total, "no visit lost or counted twice")
        try ScenarioKit.run(Self.job(), db: second)
        XCTAssertEqual(try TestSupport.contentDump(second), try TestSupport.contentDump(reference))
        XCTAssertEqual(try givenRows(second), 0)
    }

    /// How many winners the latest run kept values for and also recorded as taking losers
    /// that are none of those values' losers.
    func keptAgainForSettledWinners(_ path: String) throws -> Int {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.inDatabase { db in
            guard let run = try Int64.fetchOne(db, sql: "SELECT max(id) FROM winnow_runs") else { return 0 }
            var kept: [Int64: Set<Int64>] = [:]
            for row in try GivenMergesRecord.rows(db, table: "customers") where row.runID == run {
                for entry in row.entries { kept[entry.winner, default: []].formUnion(entry.losers) }
            }
            var found = Set<Int64>()
            for (_, runID, pair) in try TakenLosersRecord.all(db, table: "customers") where runID == run {
                if let losers = kept[pair.winner], !losers.contains(pair.loser) { found.insert(pair.winner) }
            }
            return found.count
        }
    }

    /// A run that merges kept values into their winners is killed after its first transaction
    /// of them (a copy): the next run merges only the rest, and ends as an uninterrupted run.
    func testARunKilledAmidMergingTheKeptValuesMergesNoneTwice() throws {
        let path = try makeStore()
        let reference = try byGroup(path)
        let total = try ScenarioKit.int(path, "SELECT sum(visits) FROM customers")
        // Killed after its first stretch of merges.
        let first = try stoppedAfterFirstStretch(path, start: 100)
        XCTAssertGreaterThan(try givenRows(first), 0)
        // The next run, killed after its first piece of the kept values.
        DedupeExecutor.settlePiece = 10
        let amid = dir.appendingPathComponent("amid-settle.sqlite").path
        var pieces = 0
        DedupeExecutor.afterSettlePiece = { _ in
            pieces += 1
            guard pieces == 1 else { return }
            try? FileManager.default.copyItem(atPath: first, toPath: amid)
            try? ScenarioKit.execute(amid, "DELETE FROM winnow_lock")
        }
        try ScenarioKit.run(Self.job(), db: first)
        DedupeExecutor.afterSettlePiece = nil
        XCTAssertGreaterThan(pieces, 2, "the kept values took several transactions")
        XCTAssertEqual(try TestSupport.contentDump(first), try TestSupport.contentDump(reference))
        XCTAssertEqual(
            try ScenarioKit.int(amid, "SELECT count(*) FROM winnow_given_merges WHERE settled_to IS NOT NULL"), 1,
            "the copy notes how far the merging of kept values got")
        XCTAssertEqual(try visitsToCome(amid), total)
        try ScenarioKit.run(Self.job(), db: amid)
        XCTAssertEqual(try TestSupport.contentDump(amid), try TestSupport.contentDump(reference))
        XCTAssertEqual(try givenRows(amid), 0)
    }

    /// Another connection commits after the first stretch of merges: the stretches stop, the
    /// values given ahead go to their winners, and the batches by group settle the rest; the
    /// end is the one batches by group give, the note kept.
    func testACommitAfterAStretchThatGaveLosersAheadEndsAsByGroup() throws {
        let path = try makeStore()
        let reference = try byGroup(path)
        try ScenarioKit.execute(reference, "INSERT INTO notes (body) VALUES ('written meanwhile')")
        let other = try DatabaseQueue(path: path)
        defer { try? other.close() }
        var wrote = false
        var givenAtCommit = 0
        try withSmallStretches(start: 100) {
            try ScenarioKit.run(Self.job(), db: path) { event in
                guard case .batch(let report) = event, report.counts.updated > 0, !wrote else { return }
                givenAtCommit = (try? self.givenRows(path)) ?? 0
                try? other.write { db in try db.execute(sql: "INSERT INTO notes (body) VALUES ('written meanwhile')") }
                wrote = true
            }
        }
        XCTAssertGreaterThan(givenAtCommit, 0)
        XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference))
        XCTAssertEqual(try givenRows(path), 0)
        XCTAssertEqual(try ScenarioKit.rows(path, "PRAGMA foreign_key_check").count, 0)
    }

    /// docs/reference.md section 5: `restore` of a run killed after a stretch that gave losers
    /// ahead puts them back and forgets their kept values; the next run ends as an
    /// uninterrupted run.
    func testRestoreOfARunThatGaveLosersAheadPutsThemBackAndForgetsTheirValues() throws {
        let path = try makeStore()
        let original = try ScenarioKit.userState(path)
        let reference = try byGroup(path)
        let copy = try stoppedAfterFirstStretch(path)
        XCTAssertGreaterThan(try givenRows(copy), 0)
        let runID = try XCTUnwrap(try ScenarioKit.column(copy, "SELECT max(id) FROM winnow_runs", as: Int64.self).first ?? nil)
        _ = try Restorer.restore(database: copy, runID: runID)
        XCTAssertEqual(try ScenarioKit.userState(copy), original)
        XCTAssertEqual(try givenRows(copy), 0)
        try ScenarioKit.run(Self.job(), db: copy)
        XCTAssertEqual(try TestSupport.contentDump(copy), try TestSupport.contentDump(reference))
    }

    /// docs/reference.md section 4: `plan` never changes a byte, also of a database holding
    /// values a killed run kept for winners whose merge had not come (a dry run goes through
    /// merging them into their winners, and writes none).
    func testPlanOfARunStoppedWithKeptValuesWritesNothing() throws {
        let path = try makeStore()
        let stopped = try stoppedAfterFirstStretch(path)
        XCTAssertGreaterThan(try givenRows(stopped), 0)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: stopped))
        let planned = try ScenarioKit.plan(Self.job(), db: stopped)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: stopped)), bytes, "plan writes nothing")
        XCTAssertGreaterThan(planned.counts.deleted, 0)
    }

    /// `plan` of a database a killed run left with kept values counts what the next run does:
    /// the winners that merging those values updates too (a dry run of that merging), and the
    /// same losers and re-pointed children.
    func testPlanOfARunStoppedWithKeptValuesCountsWhatTheRunDoes() throws {
        let path = try makeStore()
        let stopped = try stoppedAfterFirstStretch(path)
        XCTAssertGreaterThan(try givenRows(stopped), 0)
        let planned = try ScenarioKit.plan(Self.job(), db: stopped)
        let ran = try ScenarioKit.run(Self.job(), db: stopped)
        XCTAssertGreaterThan(ran.counts.updated, 0)
        XCTAssertEqual(planned.counts.updated, ran.counts.updated, "winners updated")
        XCTAssertEqual(planned.counts.deleted, ran.counts.deleted, "losers deleted")
        XCTAssertEqual(planned.counts.repointed, ran.counts.repointed, "children re-pointed")
    }

    /// A record of kept values that cannot be read stops the run with an internal error (exit
    /// 70, docs/reference.md section 5) before any row changes, and the record stays for a look.
    func testAnUnreadableRecordOfKeptValuesStopsTheRunAndChangesNothing() throws {
        let path = try makeStore()
        let stopped = try stoppedAfterFirstStretch(path)
        try ScenarioKit.execute(
            stopped, "UPDATE winnow_given_merges SET entries = x'80' WHERE rowid = (SELECT min(rowid) FROM winnow_given_merges)")
        let before = try ScenarioKit.userState(stopped)
        XCTAssertThrowsError(try ScenarioKit.run(Self.job(), db: stopped)) { error in
            guard case WinnowError.internal(let message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("winnow_given_merges"), message)
        }
        XCTAssertEqual(try ScenarioKit.userState(stopped), before)
        XCTAssertGreaterThan(try givenRows(stopped), 0)
    }

    /// Where a merge could end otherwise in two steps than in one, nothing is given ahead: a
    /// merge of text (`fill_null`), or a sum over a REAL value.
    func testMergesThatDependOnTheirOrderGiveNothingAhead() throws {
        for (merge, change) in [
            ("{visits: sum, phone: fill_null}", nil), ("{visits: sum}", "UPDATE customers SET visits = 2.5 WHERE id = 4321"),
        ] as [(String, String?)] {
            let path = try makeStore("store-\(UUID().uuidString).sqlite")
            if let change { try ScenarioKit.execute(path, change) }
            let reference = try byGroup(path, merge: merge)
            var given = 0
            var merged = false
            var secondPass = 0
            try withSmallStretches {
                try ScenarioKit.run(Self.job(merge: merge), db: path) { event in
                    guard case .batch(let report) = event else { return }
                    given = max(given, (try? self.givenRows(path)) ?? 0)
                    if report.counts.updated > 0 { merged = true } else if merged, report.counts.deleted > 0 { secondPass += 1 }
                }
            }
            XCTAssertEqual(given, 0, merge)
            XCTAssertGreaterThan(secondPass, 0, merge)
            XCTAssertEqual(try TestSupport.contentDump(path), try TestSupport.contentDump(reference), merge)
        }
    }
}

final class GivenMergesRecordTests: XCTestCase {
    func testEntriesReadBackAsAppended() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var record = GivenMergesRecord()
            var expected: [GivenMergesRecord.Entry] = []
            var winner = Int64.random(in: -1000...1000, using: &rng)
            for _ in 0..<Int.random(in: 0..<40, using: &rng) {
                winner += Int64.random(in: 0...5000, using: &rng)
                let values: [SQLValue] = (0..<3).map { _ in
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0: return .null
                    case 1: return .integer(Int64.random(in: Int64.min...Int64.max, using: &rng))
                    case 2: return .real(Double.random(in: -1e300...1e300, using: &rng))
                    default: return .integer(Int64.random(in: -3...3, using: &rng))
                    }
                }
                let losers = (0..<Int.random(in: 0..<4, using: &rng)).map { _ in Int64.random(in: Int64.min...Int64.max, using: &rng) }
                record.append(winner: winner, losers: losers, values: values)
                expected.append(GivenMergesRecord.Entry(winner: winner, losers: losers, values: values))
            }
            XCTAssertEqual(GivenMergesRecord.entries(record.packed, columns: 3), expected)
            XCTAssertEqual(record.count, expected.count)
        }
    }

    func testABlobCutShortOrOfAnotherWidthIsRefused() {
        var record = GivenMergesRecord()
        record.append(winner: 1_000_000, losers: [999_000, 1_000_300], values: [.integer(300), .null])
        record.append(winner: 1_000_007, losers: [1], values: [.integer(-2), .real(0.5)])
        let bytes = record.packed
        XCTAssertNotNil(GivenMergesRecord.entries(bytes, columns: 2))
        // (Cut between two entries, a blob is one of fewer entries.)
        for cut in 1..<bytes.count {
            XCTAssertNotEqual(GivenMergesRecord.entries(Array(bytes.prefix(cut)), columns: 2), GivenMergesRecord.entries(bytes, columns: 2))
        }
        XCTAssertNil(GivenMergesRecord.entries(bytes, columns: 3))
    }

    /// The fold a stretch keeps given values with is the resolver's merge, value for value and
    /// type for type: integers, NULLs, sums that overflow, and any other value or strategy.
    func testTheFoldOfGivenValuesIsTheResolversMerge() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let values: [SQLValue] = (0..<Int.random(in: 0..<6, using: &rng)).map { _ in
                switch Int.random(in: 0..<10, using: &rng) {
                case 0, 1: return .null
                case 2: return .integer(Int64.random(in: (Int64.max - 5)...Int64.max, using: &rng))
                case 3: return .integer(Int64.random(in: Int64.min...(Int64.min + 5), using: &rng))
                case 4: return .real(1.0)
                case 5: return .text("7")
                default: return .integer(Int64.random(in: -9...9, using: &rng))
                }
            }
            for strategy in [MergeStrategy.sum, .min, .max, .longest, .fillNull] {
                let folded = DedupeExecutor.fold(strategy, values)
                let merged = MergeResolver.merge(strategy, values)
                XCTAssertTrue(ValueOrder.identical(folded, merged), "\(strategy) of \(values): \(folded), not \(merged)")
            }
        }
    }

    func testTheColumnsReadBack() {
        let text = GivenMergesRecord.columnsText([(.sum, "visits"), (.max, "odd \"name\"")])
        let columns = GivenMergesRecord.columns(text)
        XCTAssertEqual(columns?.map(\.strategy), [.sum, .max])
        XCTAssertEqual(columns?.map(\.name), ["visits", "odd \"name\""])
        XCTAssertNil(GivenMergesRecord.columns("[[\"average\", \"visits\"]]"))
    }
}
