import Foundation
import WinnowBackends
import WinnowCore
import WinnowTestSupport
import XCTest

@testable import WinnowPostgres

/// The trusted batch (a rule that only deletes, without a journal or with the typed one): it locks the winners,
/// deletes the losers by the tuple ids discovery read and compares both with the row versions
/// discovery ranked afterwards. Where anything differs the server rolls the whole statement
/// back and the decided batch, which compares first, takes the groups: the survivors and the
/// counts are those of a batch that ranked its groups as they are now.
extension PostgresDecidedBatchTests {
    var unjournaled: String { "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], archive: false}\nbatch: {size: 2}\n" }

    /// The trusted batches applied and missed by the run of `body`.
    func trusts(_ body: () throws -> Void) rethrows -> (applied: Int, missed: Int) {
        let (applied, missed) = (PostgresBatch.trustsApplied, PostgresBatch.trustsMissed)
        try body()
        return (PostgresBatch.trustsApplied - applied, PostgresBatch.trustsMissed - missed)
    }

    func testUnchangedBatchesTrustTheDecision() throws {
        let url = try load()
        let partial = PostgresBatch.decisionsPartial
        var summary: RunSummary?
        let trusted = try trusts { summary = try run(url, unjournaled).0 }
        XCTAssertEqual(trusted.applied, 3, "three batches of two groups")
        XCTAssertEqual(trusted.missed, 0)
        XCTAssertEqual(PostgresBatch.decisionsPartial - partial, 1, "(e), whose rows tie, left to the fused statement")
        XCTAssertEqual(try ids(url), [1, 4, 6, 8, 11])
        XCTAssertEqual(summary?.counts.deleted, 7)
        XCTAssertEqual(summary?.counts.groups, 5)
        XCTAssertEqual(summary?.counts.skipped, 0)
        XCTAssertEqual(try PostgresServer.runCounts(url), [[7, 5, 3]], "deleted, groups, batches: the run's row as the batches left it")
    }

    /// A loser updated after discovery (it wins now): the trusted batch of its groups fails and
    /// is rolled back, the decided batch ranks them again; the rule's later batches compare
    /// first.
    func testAChangedLoserRollsTheTrustedBatchBack() throws {
        let url = try load()
        var summary: RunSummary?
        let trusted = try trusts {
            summary = try run(url, unjournaled) { other in
                try other.execute("UPDATE public.t SET created = 0 WHERE id = 10")  // d: 10 wins now
            }.0
        }
        XCTAssertEqual(trusted.applied, 1, "(a, b); then (c, d) missed, and (e) was not tried")
        XCTAssertEqual(trusted.missed, 1)
        XCTAssertEqual(try ids(url), [1, 4, 6, 10, 11], "c's loser 7 is deleted once, not twice")
        XCTAssertEqual(summary?.counts.deleted, 7)
        XCTAssertEqual(summary?.counts.groups, 5)
        XCTAssertEqual(try PostgresServer.runCounts(url), [[7, 5, 3]])
    }

    /// A loser deleted, the table vacuumed, and a row of another group inserted at its tuple
    /// id: the trusted batch's delete takes that row, finds it is not the loser discovery read,
    /// and the server rolls the delete back. The new row stays.
    func testARowAtALosersTupleIDIsNotDeleted() throws {
        let url = try load()
        var tids: [String?] = []
        var summary: RunSummary?
        let trusted = try trusts {
            summary = try run(url, unjournaled) { other in
                tids.append(try other.value("SELECT ctid::text FROM public.t WHERE id = 10").string)
                try other.execute("DELETE FROM public.t WHERE id = 10")
                try other.execute("VACUUM public.t")
                try other.execute("INSERT INTO public.t VALUES (99, 'z', 1)")
                tids.append(try other.value("SELECT ctid::text FROM public.t WHERE id = 99").string)
            }.0
        }
        XCTAssertEqual(tids.count, 2)
        XCTAssertEqual(tids.first, tids.last, "the new row took the loser's tuple id (the case under test)")
        XCTAssertEqual(trusted.missed, 1)
        XCTAssertEqual(try ids(url), [1, 4, 6, 8, 11, 99])
        XCTAssertEqual(summary?.counts.deleted, 6)
    }

    /// A winner deleted by another session: its group's trusted batch fails (the winner is not
    /// there to lock), and the group ranks again as it is now.
    func testADeletedWinnerRollsTheTrustedBatchBack() throws {
        let url = try load()
        var summary: RunSummary?
        let trusted = try trusts {
            summary = try run(url, unjournaled) { other in try other.execute("DELETE FROM public.t WHERE id = 1") }.0
        }
        XCTAssertEqual(trusted.missed, 1)
        XCTAssertEqual(trusted.applied, 0, "the later batches compare first")
        XCTAssertEqual(try ids(url), [2, 4, 6, 8, 11], "a: 2 wins now")
        XCTAssertEqual(summary?.counts.deleted, 6)
        XCTAssertEqual(summary?.counts.groups, 5)
    }

    /// A winner that another session holds locked only waits, and its row version is the one
    /// discovery ranked: the trusted batch applies once the lock is gone.
    func testALockedWinnerIsWaitedForAndTrusted() throws {
        let url = try load()
        let lock = try PostgresServer.RowLock(url, "SELECT id FROM public.t WHERE id = 4 FOR UPDATE")
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { lock.release() }
        var summary: RunSummary?
        let trusted = try trusts { summary = try run(url, unjournaled).0 }
        XCTAssertEqual(trusted.applied, 3)
        XCTAssertEqual(trusted.missed, 0)
        XCTAssertEqual(try ids(url), [1, 4, 6, 8, 11])
        XCTAssertEqual(summary?.counts.deleted, 7)
    }

    /// With the journal in the table's own column types, a trusted batch writes its journal
    /// rows in the same statement: the batch that missed leaves none of them (its groups are
    /// journaled once, by the decided batch), and `restore` gives every row back.
    func testATrustedBatchThatMissesLeavesNoJournalRows() throws {
        let url = try load()
        var summary: RunSummary?
        let trusted = try trusts {
            summary = try run(url, journaled) { other in
                try other.execute("UPDATE public.t SET created = 0 WHERE id = 10")  // d: 10 wins now
            }.0
        }
        XCTAssertEqual(trusted.applied, 1, "(a, b)")
        XCTAssertEqual(trusted.missed, 1, "(c, d)")
        XCTAssertEqual(try ids(url), [1, 4, 6, 10, 11])
        XCTAssertEqual(
            try recordedGroups(url),
            ["[2] -> [1]", "[3] -> [1]", "[5] -> [4]", "[7] -> [6]", "[8] -> [10]", "[9] -> [10]", "[12] -> [11]"])
        let restore = try TestSupport.winnow(["restore", "--run", "\(summary?.runID ?? 0)", "--database", url])
        XCTAssertEqual(restore.status, 0, restore.stderr)
        XCTAssertEqual(try ids(url), Array(1...12))
    }
}
