import Foundation
import GRDB
import XCTest

@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// The record of the children re-pointed ahead (`winnow_moved_ahead`): a run killed after a
/// stretch of children, whose loser another connection then takes out of its group, ends as an
/// uninterrupted run with the same change made first.
final class MovedAheadRecordTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    /// 6,000 customers with keys drawn at random (groups of varying size, scattered), one
    /// order each on average, through an index on `orders.customer_id` unless not `indexed`.
    func makeStore(indexed: Bool = true) throws -> String {
        let path = dir.appendingPathComponent("store-\(UUID().uuidString).sqlite").path
        try TestSupport.makeDatabase(
            at: path,
            sql: ScenarioKit.scatteredCustomersSQL(
                customers: 6000, orders: 6000, seed: 11, createdAt: 0..<40,
                alsoCreate: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"))
        if !indexed { try ScenarioKit.execute(path, "DROP INDEX orders_customer") }
        return path
    }

    func copy(_ path: String, _ label: String) throws -> String {
        let copy = dir.appendingPathComponent("\(label)-\(UUID().uuidString).sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        return copy
    }

    /// A copy of `path` whose record's moves are decoded into a table `moves` (the last recorded
    /// for a child), for the checks to read with SQL.
    func decoded(_ path: String) throws -> String {
        let decoded = try copy(path, "decoded")
        let queue = try DatabaseQueue(path: decoded)
        defer { try? queue.close() }
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE moves (child INTEGER PRIMARY KEY, loser INTEGER NOT NULL, winner INTEGER NOT NULL)")
            for blob in try Data.fetchAll(db, sql: "SELECT moves FROM winnow_moved_ahead ORDER BY rowid") {
                for move in try XCTUnwrap(MovedAheadRecord.moves([UInt8](blob))) {
                    try db.execute(sql: "INSERT OR REPLACE INTO moves VALUES (?, ?, ?)", arguments: [move.child, move.loser, move.winner])
                }
            }
        }
        return decoded
    }

    /// A copy of the store as a run of `job` killed right after its first stretch of children
    /// leaves it (the lock, this live process's, removed as a killed run's is taken over), and
    /// the children that stretch re-pointed.
    func stoppedAfterFirstChildrenStretch(_ path: String, job: String) throws -> (path: String, repointed: Int) {
        let stopped = dir.appendingPathComponent("after-children-\(UUID().uuidString).sqlite").path
        let start = DedupeExecutor.aheadStart
        DedupeExecutor.aheadStart = 100
        defer { DedupeExecutor.aheadStart = start }
        var repointed: Int?
        try ScenarioKit.run(job, db: path) { event in
            guard case .batch(let report) = event, repointed == nil, report.counts.repointed > 0, report.counts.deleted == 0
            else { return }
            repointed = report.counts.repointed
            try? FileManager.default.copyItem(atPath: path, toPath: stopped)
            try? ScenarioKit.execute(stopped, "DELETE FROM winnow_lock")
        }
        return (stopped, try XCTUnwrap(repointed, "a stretch of children went ahead"))
    }

    /// Another connection commits after the first stretch's moves are found: the stretches then
    /// go on checking their moves as the rows are now, and record those they apply. A run stopped after the
    /// second stretch, whose loser is then given a key of its own, ends as an uninterrupted run
    /// with that change made first.
    func testMovesAStretchAppliesBesideAnotherWriterAreRecordedAndMovedBackToo() throws {
        let path = try makeStore()
        let job = ScenarioKit.customersJob(size: 20, archive: false)
        let run = try copy(path, "run")
        let stopped = dir.appendingPathComponent("after-two-\(UUID().uuidString).sqlite").path
        let other = try DatabaseQueue(path: run)
        defer { try? other.close() }
        var wrote = false
        AheadBatches.afterFindingMoves = { _ in
            guard !wrote else { return }
            wrote = true
            try other.write { db in try db.execute(sql: "INSERT INTO notes (body) VALUES ('meanwhile')") }
        }
        defer { AheadBatches.afterFindingMoves = nil }
        let start = DedupeExecutor.aheadStart
        DedupeExecutor.aheadStart = 100
        defer { DedupeExecutor.aheadStart = start }
        var stretches: [Int] = []
        try ScenarioKit.run(job, db: run) { event in
            guard case .batch(let report) = event, stretches.count < 2, report.counts.repointed > 0, report.counts.deleted == 0
            else { return }
            stretches.append(report.counts.repointed)
            if stretches.count == 2 {
                try? FileManager.default.copyItem(atPath: run, toPath: stopped)
                try? ScenarioKit.execute(stopped, "DELETE FROM winnow_lock")
            }
        }
        XCTAssertEqual(stretches.count, 2)
        // Every move applied is recorded.
        let record = try decoded(stopped)
        XCTAssertEqual(try ScenarioKit.int(record, "SELECT count(*) FROM moves"), stretches.reduce(0, +))
        XCTAssertEqual(
            try ScenarioKit.int(record, "SELECT count(*) FROM moves AS m JOIN orders AS o ON o.id = m.child AND o.customer_id = m.winner"),
            stretches.reduce(0, +))
        // A loser the second stretch moved (the record's last move).
        let loser = try ScenarioKit.int(record, "SELECT loser FROM moves ORDER BY child DESC LIMIT 1")
        let change = "UPDATE customers SET email = 'moved@elsewhere.org' WHERE id = \(loser)"
        try ScenarioKit.execute(stopped, change)
        let expected = try copy(path, "expected")
        try ScenarioKit.execute(expected, change + "; INSERT INTO notes (body) VALUES ('meanwhile')")
        try ScenarioKit.run(job, db: expected)
        try ScenarioKit.run(job, db: stopped)
        XCTAssertEqual(try TestSupport.contentDump(stopped), try TestSupport.contentDump(expected))
        XCTAssertEqual(try ScenarioKit.int(stopped, "SELECT count(*) FROM winnow_moved_ahead"), 0)
    }

    /// A loser whose children the first stretch moved, that still exists, with its winner and
    /// how many of its children that stretch moved; and the key of a group of three or more
    /// that it is not in.
    func movedLoser(_ stopped: String) throws -> (loser: Int64, winner: Int64, children: Int, otherKey: String) {
        let row = try XCTUnwrap(
            try ScenarioKit.rows(
                try decoded(stopped),
                """
                SELECT m.loser, m.winner, count(*) FROM moves AS m JOIN customers AS c ON c.id = m.loser
                GROUP BY m.loser, m.winner ORDER BY count(*) DESC, m.loser LIMIT 1
                """
            ).first)
        let winner = try XCTUnwrap(Int64.fromDatabaseValue(row[1]))
        let other = try ScenarioKit.rows(
            stopped,
            """
            SELECT lower(email) FROM customers WHERE lower(email) <> (SELECT lower(email) FROM customers WHERE id = \(winner))
            GROUP BY lower(email) HAVING count(*) >= 3 ORDER BY min(id) LIMIT 1
            """)
        return (
            try XCTUnwrap(Int64.fromDatabaseValue(row[0])), winner, try XCTUnwrap(Int.fromDatabaseValue(row[2])),
            try XCTUnwrap(other.first.flatMap { String.fromDatabaseValue($0[0]) })
        )
    }

    func testEachStretchRecordsTheMovesItAppliedAndTheRunEmptiesTheRecordWhenDone() throws {
        let path = try makeStore()
        let job = ScenarioKit.customersJob(size: 20, archive: false)
        let (stopped, repointed) = try stoppedAfterFirstChildrenStretch(try copy(path, "run"), job: job)
        let record = try decoded(stopped)
        XCTAssertEqual(try ScenarioKit.int(stopped, "SELECT count(*) FROM winnow_moved_ahead"), 1, "one row for the stretch")
        XCTAssertEqual(try ScenarioKit.int(record, "SELECT count(*) FROM moves"), repointed)
        XCTAssertEqual(
            try ScenarioKit.int(record, "SELECT count(*) FROM moves AS m JOIN orders AS o ON o.id = m.child AND o.customer_id = m.winner"),
            repointed, "each recorded child points at its recorded winner")
        XCTAssertEqual(
            try ScenarioKit.int(
                record,
                """
                SELECT count(*) FROM moves AS m JOIN orders AS o ON o.id = m.child
                JOIN customers AS l ON l.id = m.loser JOIN customers AS w ON w.id = m.winner
                WHERE lower(l.email) = lower(w.email) AND l.id <> w.id
                """), repointed, "each from a loser to the winner of its group")
        // The next run finishes the job as an uninterrupted one and empties the record.
        try ScenarioKit.run(job, db: stopped)
        XCTAssertEqual(try ScenarioKit.int(stopped, "SELECT count(*) FROM winnow_moved_ahead"), 0)
        let uninterrupted = try copy(path, "uninterrupted")
        try ScenarioKit.run(job, db: uninterrupted)
        XCTAssertEqual(try ScenarioKit.int(uninterrupted, "SELECT count(*) FROM winnow_moved_ahead"), 0)
        XCTAssertEqual(try TestSupport.contentDump(stopped), try TestSupport.contentDump(uninterrupted))
    }

    /// The loser's key changed between the killed run and the next, in three forms: a key of
    /// its own (it stays, with its children), another group's key where it sorts last (its
    /// children go to that group's winner) and where it sorts first (it wins that group).
    func testChildrenOfALoserTakenOutOfItsGroupAfterAKillGoBackToIt() throws {
        // (Without an index on the reference too: its children are mapped for the stretches.)
        for (archive, indexed) in [(false, true), (true, true), (false, false)] {
            let path = try makeStore(indexed: indexed)
            let job = ScenarioKit.customersJob(size: 20, archive: archive)
            let (stopped, _) = try stoppedAfterFirstChildrenStretch(try copy(path, "run"), job: job)
            let moved = try movedLoser(stopped)
            XCTAssertGreaterThan(moved.children, 0)
            // Plan and run of the store as the kill left it, and a run by group (a run that may
            // stop early files its queue by group, as `plan` does): the same counts, one end.
            let (plannedAsLeft, doneAsLeft) = (
                try ScenarioKit.plan(job, db: try copy(stopped, "plan")), try ScenarioKit.run(job, db: try copy(stopped, "as-left"))
            )
            XCTAssertEqual(plannedAsLeft.counts.repointed, doneAsLeft.counts.repointed, "as left: plan counts the run's moves")
            XCTAssertEqual(plannedAsLeft.counts.deleted, doneAsLeft.counts.deleted)
            let byGroup = try copy(stopped, "by-group")
            let doneByGroup = try SQLiteBackend.run(try ScenarioKit.job(job), options: RunOptions(database: byGroup, maxDuration: 3600))
            XCTAssertEqual(doneByGroup.counts.repointed, doneAsLeft.counts.repointed, "as left, by group")
            let whole = try copy(path, "whole")
            try ScenarioKit.run(job, db: whole)
            XCTAssertEqual(try TestSupport.contentDump(byGroup), try TestSupport.contentDump(whole), "as left, by group: as uninterrupted")
            for (label, change) in [
                ("a key of its own", "email = 'moved@elsewhere.org'"),
                ("another group's key, last in it", "email = '\(moved.otherKey)', created_at = 1000"),
                ("another group's key, first in it", "email = '\(moved.otherKey)', created_at = -1"),
            ] {
                let label = "\(label), archive: \(archive), indexed: \(indexed)"
                let changed = try copy(stopped, "changed")
                try ScenarioKit.execute(changed, "UPDATE customers SET \(change) WHERE id = \(moved.loser)")
                // The same change before an uninterrupted run.
                let expected = try copy(path, "expected")
                try ScenarioKit.execute(expected, "UPDATE customers SET \(change) WHERE id = \(moved.loser)")
                try ScenarioKit.run(job, db: expected)
                let bytes = try Data(contentsOf: URL(fileURLWithPath: changed))
                let planned = try ScenarioKit.plan(job, db: changed)
                XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: changed)), bytes, "\(label): plan writes nothing")
                let done = try ScenarioKit.run(job, db: changed)
                XCTAssertEqual(planned.counts.deleted, done.counts.deleted, label)
                // A loser now another winner's: the run moves its children back and then on with
                // its others (two re-pointed rows each), where `plan`, writing nothing, sees them
                // at the old winner still and counts the move back only (docs/reference.md).
                let movedOn = label.hasPrefix("another group's key, last") ? moved.children : 0
                XCTAssertEqual(planned.counts.repointed + movedOn, done.counts.repointed, "\(label): plan counts the run's moves")
                XCTAssertEqual(try TestSupport.contentDump(changed), try TestSupport.contentDump(expected), label)
                XCTAssertEqual(try ScenarioKit.int(changed, "SELECT count(*) FROM winnow_moved_ahead"), 0, label)
                XCTAssertEqual(try ScenarioKit.rows(changed, "PRAGMA foreign_key_check").count, 0, label)
                if label.hasPrefix("a key of its own") {
                    XCTAssertGreaterThanOrEqual(
                        try ScenarioKit.int(changed, "SELECT count(*) FROM orders WHERE customer_id = \(moved.loser)"), moved.children,
                        "\(label): its children are back")
                    XCTAssertEqual(
                        done.counts.repointed - doneAsLeft.counts.repointed, moved.children, "\(label): the moves back are counted")
                    XCTAssertEqual(
                        planned.counts.repointed - plannedAsLeft.counts.repointed, moved.children, "\(label): plan counts them too")
                }
            }
        }
    }

    /// Restoring the second run (archived) puts the children back where the killed run left
    /// them: the moves back are journaled as re-pointed rows.
    func testTheMovesBackAreJournaledAndRestored() throws {
        let path = try makeStore()
        let job = ScenarioKit.customersJob(size: 20, archive: true)
        let (stopped, _) = try stoppedAfterFirstChildrenStretch(try copy(path, "run"), job: job)
        let moved = try movedLoser(stopped)
        try ScenarioKit.execute(stopped, "UPDATE customers SET email = 'moved@elsewhere.org' WHERE id = \(moved.loser)")
        let before = try TestSupport.contentDump(stopped)
        let done = try ScenarioKit.run(job, db: stopped)
        XCTAssertNotEqual(try TestSupport.contentDump(stopped), before)
        _ = try Restorer.restore(database: stopped, runID: try XCTUnwrap(done.runID))
        XCTAssertEqual(try TestSupport.contentDump(stopped), before, "the children the run moved back point at the winner again")
    }

    /// Restoring the stopped run puts its children back and forgets the moves it recorded: the
    /// next run then ends as an uninterrupted one.
    func testRestoreOfTheStoppedRunForgetsItsRecordedMoves() throws {
        let path = try makeStore()
        let original = try ScenarioKit.userState(path)
        let job = ScenarioKit.customersJob(size: 20, archive: true)
        let (stopped, _) = try stoppedAfterFirstChildrenStretch(try copy(path, "run"), job: job)
        XCTAssertGreaterThan(try ScenarioKit.int(stopped, "SELECT count(*) FROM winnow_moved_ahead"), 0)
        let runID = try ScenarioKit.int(stopped, "SELECT max(id) FROM winnow_runs")
        _ = try Restorer.restore(database: stopped, runID: Int64(runID))
        XCTAssertEqual(try ScenarioKit.userState(stopped), original, "restore puts the children back")
        XCTAssertEqual(try ScenarioKit.int(stopped, "SELECT count(*) FROM winnow_moved_ahead"), 0, "and forgets their moves")
        let uninterrupted = try copy(path, "uninterrupted")
        try ScenarioKit.run(job, db: uninterrupted)
        try ScenarioKit.run(job, db: stopped)
        XCTAssertEqual(try TestSupport.contentDump(stopped), try TestSupport.contentDump(uninterrupted))
    }

    /// A child the killed run moved that another connection then points elsewhere is left as
    /// that connection left it.
    func testAChildAnotherConnectionRepointedIsLeftAlone() throws {
        let path = try makeStore()
        let job = ScenarioKit.customersJob(size: 20, archive: false)
        let (stopped, _) = try stoppedAfterFirstChildrenStretch(try copy(path, "run"), job: job)
        let moved = try movedLoser(stopped)
        let child = try ScenarioKit.int(
            try decoded(stopped), "SELECT min(child) FROM moves WHERE loser = \(moved.loser) AND winner = \(moved.winner)")
        // A customer in no group.
        let single = try ScenarioKit.int(
            stopped,
            "SELECT min(id) FROM customers WHERE lower(email) IN (SELECT lower(email) FROM customers GROUP BY 1 HAVING count(*) = 1)")
        let unmoved = try ScenarioKit.int(stopped, "SELECT count(*) FROM orders WHERE customer_id = \(moved.loser)")
        try ScenarioKit.execute(
            stopped,
            """
            UPDATE customers SET email = 'moved@elsewhere.org' WHERE id = \(moved.loser);
            UPDATE orders SET customer_id = \(single) WHERE id = \(child)
            """)
        try ScenarioKit.run(job, db: stopped)
        XCTAssertEqual(try ScenarioKit.int(stopped, "SELECT customer_id FROM orders WHERE id = \(child)"), single)
        XCTAssertEqual(
            try ScenarioKit.int(stopped, "SELECT count(*) FROM orders WHERE customer_id = \(moved.loser)"), unmoved + moved.children - 1,
            "the loser's other moved children are back")
    }

    /// Packed moves read back as they were appended, whatever their rowids (negative, past 32
    /// bits, far apart or adjacent).
    func testPackedMovesReadBackAsAppended() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var record = MovedAheadRecord()
            var moves: [MovedAheadRecord.Move] = []
            var child = Int64.random(in: -1_000_000...1_000_000, using: &rng)
            for _ in 0..<Int.random(in: 1...300, using: &rng) {
                child += [1, 2, 1_000, 1 << 40].randomElement(using: &rng)!
                let move = MovedAheadRecord.Move(
                    child: child, loser: Int64.random(in: Int64.min...Int64.max, using: &rng),
                    winner: [Int64.min, -1, 0, 1, Int64.max, Int64.random(in: -5_000_000...5_000_000, using: &rng)].randomElement(
                        using: &rng)!)
                record.append(child: move.child, loser: move.loser, winner: move.winner)
                moves.append(move)
            }
            XCTAssertEqual(MovedAheadRecord.moves(record.packed), moves)
            XCTAssertEqual(record.count, moves.count)
            // A blob cut inside a value is no record of moves.
            XCTAssertNil(MovedAheadRecord.moves(Array(record.packed.dropLast())))
        }
        // A move of rowids below 64 takes three bytes.
        var small = MovedAheadRecord()
        small.append(child: 5, loser: 7, winner: 9)
        XCTAssertEqual(small.packed.count, 3)
    }
}
