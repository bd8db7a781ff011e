import Foundation
import WinnowBackends
import WinnowCore
import WinnowTestSupport
import XCTest

@testable import WinnowPostgres

/// A rule whose batches only delete is decided in discovery (each member's rank and the row
/// version it was ranked in); a batch whose members are all unchanged applies that decision,
/// and a batch with a member another session changed, moved or deleted ranks its groups again
/// as they are now. Either way the survivors, the counts and the journal are the same.
final class PostgresDecidedBatchTests: XCTestCase {
    /// Groups a (1, 2, 3), b (4, 5), c (6, 7), d (8, 9, 10) and e (11, 12: the same winner
    /// terms and content, so the primary key decides), the table analyzed (the server's
    /// statistics say whether a key has enough duplicates to decide in discovery).
    func load(analyze: Bool = true) throws -> String {
        let url = try PostgresServer.require()
        try PostgresServer.reset(
            url,
            sql: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, created INTEGER NOT NULL);
                INSERT INTO t VALUES (1, 'a', 1), (2, 'a', 2), (3, 'a', 3), (4, 'b', 1), (5, 'b', 2), (6, 'c', 1), (7, 'c', 2),
                                     (8, 'd', 1), (9, 'd', 2), (10, 'd', 3), (11, 'e', 5), (12, 'e', 5);
                """)
        if analyze { try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { try $0.execute("ANALYZE public.t") } }
        return url
    }

    func ids(_ url: String) throws -> [Int] { try PostgresServer.integers(url, "id", of: "t") }

    /// Each loser and its winner as the runs recorded them (`show` lists them; the typed
    /// journal keeps them beside the rows), by loser.
    func recordedGroups(_ url: String) throws -> [String] {
        try BackendRouter().withSession(url, mode: .readOnly) { session in
            let runs = try session.rows("SELECT id FROM winnow.winnow_runs WHERE command = 'run' ORDER BY id", []).map { try $0.int64(0) }
            // By loser, as numbers are ordered (a shorter key first).
            return try runs.flatMap { try session.groupRecords(runID: $0) }
                .sorted { a, b in (a.loser.stored.count, a.loser.stored) < (b.loser.stored.count, b.loser.stored) }
                .map { "\($0.loser.stored) -> \($0.winner.stored)" }
        }
    }

    /// Runs `yaml`; `change` (another session) runs after discovery, before the first batch.
    func run(_ url: String, _ yaml: String, change: ((any DatabaseSession) throws -> Void)? = nil) throws -> (RunSummary, applied: Int) {
        let job = try JobLoader.decode(yaml: yaml, file: "job.yaml", baseDirectory: nil)
        let before = PostgresBatch.decisionsApplied
        var failure: String?
        var changed = false
        let summary = try JobRunner.run(job, options: RunOptions(database: url), backend: BackendRouter()) { event in
            guard let change, case .ruleStarted = event, !changed else { return }
            changed = true
            do {
                try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { try change($0) }
            } catch {
                failure = "\(error)"
            }
        }
        XCTAssertNil(failure)
        XCTAssertEqual(changed, change != nil)
        return (summary, PostgresBatch.decisionsApplied - before)
    }

    /// Runs `yaml` (`onEvent` hears the run's events), which must end for a lock another
    /// session holds (exit 75).
    func runUntilLocked(_ url: String, _ yaml: String, onEvent: @escaping (RunEvent) -> Void = { _ in }) throws {
        let job = try JobLoader.decode(yaml: yaml, file: "job.yaml", baseDirectory: nil)
        XCTAssertThrowsError(try JobRunner.run(job, options: RunOptions(database: url), backend: BackendRouter(), onEvent: onEvent)) {
            error in
            guard case .locked = error as? WinnowError else { return XCTFail("not a lock failure: \(error)") }
        }
    }

    let journaled = "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], archive: true}\nbatch: {size: 2}\n"

    func testUnchangedBatchesApplyTheDecisionWithTheirJournal() throws {
        let url = try load()
        let partial = PostgresBatch.decisionsPartial
        let (summary, applied) = try run(url, journaled)
        XCTAssertEqual(applied, 3, "three batches of two groups, decided in discovery; (e)'s rows tie, so it ranks in full")
        XCTAssertEqual(PostgresBatch.decisionsPartial - partial, 1, "(e), left to the fused statement")
        XCTAssertEqual(try ids(url), [1, 4, 6, 8, 11], "e's tie goes to the lower key")
        XCTAssertEqual(summary.counts.deleted, 7)
        XCTAssertEqual(summary.counts.groups, 5)
        XCTAssertEqual(summary.counts.skipped, 0)
        XCTAssertEqual(summary.counts.batches, 3)
        XCTAssertEqual(
            try recordedGroups(url), ["[2] -> [1]", "[3] -> [1]", "[5] -> [4]", "[7] -> [6]", "[9] -> [8]", "[10] -> [8]", "[12] -> [11]"])
        let restore = try TestSupport.winnow(["restore", "--run", "\(summary.runID ?? 0)", "--database", url])
        XCTAssertEqual(restore.status, 0, restore.stderr)
        XCTAssertEqual(try ids(url), Array(1...12))
    }

    /// Only the batch whose member changed ranks again; the one after it applies its decision.
    /// A member updated in place (same key) is a changed member too: its new winner terms
    /// make it the winner.
    func testOnlyTheBatchWithAChangedMemberRanksAgain() throws {
        let url = try load()
        let (summary, applied) = try run(url, journaled) { other in
            try other.execute("UPDATE public.t SET created = 0 WHERE id = 10")  // d: 10 wins now
        }
        XCTAssertEqual(applied, 2, "(a, b), and (e) whose rows tie, as decided; (c, d) ranked again")
        XCTAssertEqual(try ids(url), [1, 4, 6, 10, 11])
        XCTAssertEqual(summary.counts.deleted, 7)
        XCTAssertEqual(summary.counts.groups, 5)
        XCTAssertEqual(summary.counts.skipped, 0)
        XCTAssertEqual(
            try recordedGroups(url),
            ["[2] -> [1]", "[3] -> [1]", "[5] -> [4]", "[7] -> [6]", "[8] -> [10]", "[9] -> [10]", "[12] -> [11]"])
    }

    /// A member deleted by another session, and a member that only another session's lock
    /// touched (its row version is the one discovery ranked): the first batch ranks again and
    /// counts the deleted loser as skipped; the lock alone changes no decision.
    func testADeletedMemberRanksAgainAndALockedOneDoesNot() throws {
        let url = try load()
        let (summary, applied) = try run(url, journaled) { other in
            try other.execute("DELETE FROM public.t WHERE id = 3")
            try other.writeTransaction { _ = try other.rows("SELECT id FROM public.t WHERE id IN (7, 9, 12) FOR UPDATE", []) }
        }
        XCTAssertEqual(applied, 2, "(c, d) and (e)")
        XCTAssertEqual(try ids(url), [1, 4, 6, 8, 11])
        XCTAssertEqual(summary.counts.deleted, 6)
        XCTAssertEqual(summary.counts.skipped, 1)
    }

    /// A member deleted and inserted again with the same key, at the same tuple id (after a
    /// VACUUM), is another row version: its batch ranks again, and the new row, now first in
    /// its group, wins.
    func testAMemberInsertedAgainAtItsTupleIDRanksAgain() throws {
        let url = try load()
        var tids: [String?] = []
        let (summary, applied) = try run(url, journaled) { other in
            tids.append(try other.value("SELECT ctid::text FROM public.t WHERE id = 10").string)
            try other.execute("DELETE FROM public.t WHERE id = 10")
            try other.execute("VACUUM public.t")
            try other.execute("INSERT INTO public.t VALUES (10, 'd', 0)")
            tids.append(try other.value("SELECT ctid::text FROM public.t WHERE id = 10").string)
        }
        XCTAssertEqual(tids.count, 2)
        XCTAssertEqual(tids.first, tids.last, "the new row took the old one's tuple id (the case under test)")
        XCTAssertEqual(applied, 2, "(a, b) and (e)")
        XCTAssertEqual(try ids(url), [1, 4, 6, 10, 11], "d keeps the new 10, ranked as it is now")
        XCTAssertEqual(summary.counts.deleted, 7)
    }

    /// Where every batch finds a changed member (a writer touching rows all over the table),
    /// trying each decision would cost every batch its locks twice: after two misses in a row
    /// the next batch ranks straight away, after each further miss twice as many.
    func testDecisionsThatKeepMissingAreTriedLessOften() throws {
        let url = try load()
        let missed = PostgresBatch.decisionsMissed
        let (summary, applied) = try run(
            url, "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}]}\nbatch: {size: 1}\n"
        ) { other in
            try other.execute("UPDATE public.t SET created = created")  // every row a new version
        }
        XCTAssertEqual(applied, 0)
        XCTAssertEqual(PostgresBatch.decisionsMissed - missed, 3, "batches 1, 2 and 4 of 5 tried; 3 and 5 ranked straight away")
        XCTAssertEqual(try ids(url), [1, 4, 6, 8, 11])
        XCTAssertEqual(summary.counts.deleted, 7)
        XCTAssertEqual(summary.counts.batches, 5)
    }

    /// Thirteen groups of two rows, keys k01 ... k13: group n's rows are n (created 1, the
    /// winner) and 100 + n (created 2). `tied`: those groups' rows both created 1, and 100 + n
    /// first in the full order (its note, "a", before n's "b").
    func loadThirteen(tied: Set<Int> = []) throws -> String {
        let url = try PostgresServer.require()
        let rows = (1...13).flatMap { n in
            let key = String(format: "k%02d", n)
            let tied = tied.contains(n)
            return ["(\(n), '\(key)', 1, '\(tied ? "b" : "x")')", "(\(100 + n), '\(key)', \(tied ? 1 : 2), '\(tied ? "a" : "x")')"]
        }
        try PostgresServer.reset(
            url,
            sql: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, created INTEGER NOT NULL, note TEXT);
                INSERT INTO t VALUES \(rows.joined(separator: ", "));
                """)
        try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { try $0.execute("ANALYZE public.t") }
        return url
    }

    /// A batch whose groups changed only here and there applies its decision to the others and
    /// ranks only the changed ones again (k05, whose loser was updated to win, and k09, whose
    /// loser was deleted): the survivors, the counts, the journal and `restore` are those of a
    /// batch that ranked every group. The second batch (k13) is held up by another session's
    /// lock, so the run stops (exit 75) with the first batch's counts in its row.
    func testABatchRanksAgainOnlyItsChangedGroups() throws {
        let url = try loadThirteen()
        let yaml =
            "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], archive: true}\nbatch: {size: 12, max_transaction_ms: 100}\n"
        let lock = try PostgresServer.RowLock(url, "SELECT id FROM public.t WHERE id = 113 FOR UPDATE")
        defer { lock.release() }
        let (applied, partial) = (PostgresBatch.decisionsApplied, PostgresBatch.decisionsPartial)
        var changed = false
        try runUntilLocked(url, yaml) { event in
            guard case .ruleStarted = event, !changed else { return }
            changed = true
            try? PostgresBackend().withSession(url, mode: .readWrite(create: false)) { other in
                try other.execute("UPDATE public.t SET created = 0 WHERE id = 105")
                try other.execute("DELETE FROM public.t WHERE id = 109")
            }
        }
        XCTAssertTrue(changed)
        XCTAssertEqual(PostgresBatch.decisionsApplied - applied, 1)
        XCTAssertEqual(PostgresBatch.decisionsPartial - partial, 1, "the first batch applied its decision to ten groups")
        XCTAssertEqual(try ids(url), Array(1...4) + Array(6...13) + [105, 113])
        XCTAssertEqual(try PostgresServer.runCounts(url), [[11, 11, 1]], "deleted, groups (k09 had no loser left), batches")
        XCTAssertEqual(
            try recordedGroups(url),
            ["[5] -> [105]"] + (1...12).filter { ![5, 9].contains($0) }.map { "[\(100 + $0)] -> [\($0)]" })
        lock.release()
        let restore = try TestSupport.winnow(["restore", "--run", "1", "--database", url])
        XCTAssertEqual(restore.status, 0, restore.stderr)
        XCTAssertEqual(try ids(url), Array(1...13) + (101...113).filter { $0 != 109 })
    }

    /// Discovery ranks by the winner terms alone: a group whose first two rows tie on them
    /// (k07) is left to the fused statement, which ranks it in the full order (the content
    /// decides: 107's note before 7's), and the batch applies its decision to the other groups.
    func testAGroupTiedOnTheWinnerTermsRanksInFull() throws {
        let url = try loadThirteen(tied: [7])
        let partial = PostgresBatch.decisionsPartial
        let (summary, applied) = try run(
            url, "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], archive: false}\nbatch: {size: 13}\n")
        XCTAssertEqual(applied, 1)
        XCTAssertEqual(PostgresBatch.decisionsPartial - partial, 1)
        XCTAssertEqual(try ids(url), Array(1...6) + Array(8...13) + [107])
        XCTAssertEqual(summary.counts.deleted, 13)
        XCTAssertEqual(summary.counts.groups, 13)
    }

    /// Tied groups, however many, do not make a batch give up its decision (only changed ones
    /// do, beyond a quarter of the batch): seven of thirteen tie, the other six are applied.
    func testManyTiedGroupsStillApplyTheRest() throws {
        let url = try loadThirteen(tied: Set(1...7))
        let (missed, partial) = (PostgresBatch.decisionsMissed, PostgresBatch.decisionsPartial)
        let (summary, applied) = try run(
            url, "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], archive: false}\nbatch: {size: 13}\n")
        XCTAssertEqual(applied, 1)
        XCTAssertEqual(PostgresBatch.decisionsPartial - partial, 1)
        XCTAssertEqual(PostgresBatch.decisionsMissed - missed, 0)
        XCTAssertEqual(try ids(url), Array(8...13) + Array(101...107))
        XCTAssertEqual(summary.counts.deleted, 13)
    }

    /// A table keyed by two columns, one of them text: a decided batch compares, deletes and
    /// leaves its groups by the whole key (b3 updated to win, b6 deleted by another session),
    /// and `restore` puts the losers back.
    func testACompositeKeyAppliesAndLeavesGroupsByTheWholeKey() throws {
        let url = try PostgresServer.require()
        let rows = (1...8).flatMap { n in ["('a', \(n), 'g\(n)', 1)", "('b', \(n), 'g\(n)', 2)"] }
        try PostgresServer.reset(
            url,
            sql: """
                CREATE TABLE t (region TEXT NOT NULL, code INTEGER NOT NULL, label TEXT, made INTEGER NOT NULL, PRIMARY KEY (region, code));
                INSERT INTO t VALUES \(rows.joined(separator: ", "));
                """)
        try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { try $0.execute("ANALYZE public.t") }
        let keys: () throws -> [String] = {
            try BackendRouter().withSession(url, mode: .readOnly) { session in
                try session.rows("SELECT region || code FROM public.t ORDER BY 1", []).map { try $0.string(0) }
            }
        }
        let partial = PostgresBatch.decisionsPartial
        let (summary, applied) = try run(
            url, "version: 1\ndedupe:\n  - {entity: t, key: label, winner: [{made: asc}], archive: true}\nbatch: {size: 8}\n"
        ) { other in
            try other.execute("UPDATE public.t SET made = 0 WHERE region = 'b' AND code = 3")
            try other.execute("DELETE FROM public.t WHERE region = 'b' AND code = 6")
        }
        XCTAssertEqual(applied, 1)
        XCTAssertEqual(PostgresBatch.decisionsPartial - partial, 1)
        XCTAssertEqual(try keys(), ["a1", "a2", "a4", "a5", "a6", "a7", "a8", "b3"])
        XCTAssertEqual(summary.counts.deleted, 7)
        let restore = try TestSupport.winnow(["restore", "--run", "\(summary.runID ?? 0)", "--database", url])
        XCTAssertEqual(restore.status, 0, restore.stderr)
        XCTAssertEqual(try keys(), (1...8).map { "a\($0)" } + (1...8).filter { $0 != 6 }.map { "b\($0)" })
    }

    /// A decided batch commits its decision before the fused statement ranks the groups it
    /// left; when that statement then fails (another session holds a lock on the changed row,
    /// exit 75), the run's row still counts what the decided part committed.
    func testTheRunCountsTheDecidedPartWhenTheLeftGroupsFail() throws {
        let url = try loadThirteen()
        var lock: PostgresServer.RowLock?
        defer { lock?.release() }
        let partial = PostgresBatch.decisionsPartial
        try runUntilLocked(
            url,
            "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], archive: false}\nbatch: {size: 13, max_transaction_ms: 100}\n"
        ) { event in
            guard case .ruleStarted = event, lock == nil else { return }
            try? PostgresBackend().withSession(url, mode: .readWrite(create: false)) { other in
                try other.execute("UPDATE public.t SET created = 0 WHERE id = 105")
            }
            lock = try? PostgresServer.RowLock(url, "SELECT id FROM public.t WHERE id = 105 FOR UPDATE")
        }
        XCTAssertNotNil(lock)
        XCTAssertEqual(PostgresBatch.decisionsPartial - partial, 0, "the left groups did not finish")
        XCTAssertEqual(try ids(url), Array(1...13) + [105], "every group's loser gone but k05's")
        XCTAssertEqual(try PostgresServer.runCounts(url), [[12, 12, 1]], "deleted, groups, batches: what was committed")
    }

    /// With more changed groups than a decided batch leaves to the fused statement (four of
    /// twelve), the batch applies nothing of its decision and ranks all its groups again.
    func testABatchWithManyChangedGroupsRanksThemAllAgain() throws {
        let url = try loadThirteen()
        let (missed, partial) = (PostgresBatch.decisionsMissed, PostgresBatch.decisionsPartial)
        let (summary, applied) = try run(
            url, "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], archive: false}\nbatch: {size: 12}\n"
        ) { other in
            try other.execute("UPDATE public.t SET created = 0 WHERE id IN (102, 104, 106, 108)")
        }
        XCTAssertEqual(applied, 1, "the second batch (k13)")
        XCTAssertEqual(PostgresBatch.decisionsMissed - missed, 1)
        XCTAssertEqual(PostgresBatch.decisionsPartial - partial, 0)
        XCTAssertEqual(try ids(url), [1, 3, 5, 7] + Array(9...13) + [102, 104, 106, 108])
        XCTAssertEqual(summary.counts.deleted, 13)
        XCTAssertEqual(summary.counts.groups, 13)
        XCTAssertEqual(summary.counts.batches, 2)
    }

    /// Without the journal, and with batches of one group: the decided path alone.
    func testWithoutTheJournal() throws {
        let url = try load()
        let (summary, applied) = try run(
            url, "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: desc}], archive: false}\nbatch: {size: 1}\n")
        XCTAssertEqual(applied, 5, "every group; e's, whose rows tie on the winner terms, by the fused statement")
        XCTAssertEqual(try ids(url), [3, 5, 7, 10, 11])
        XCTAssertEqual(summary.counts.deleted, 7)
        XCTAssertEqual(summary.counts.batches, 5)
    }

    /// A decided batch held up by another session's row lock gives up after its lock timeout
    /// (exit 75) and takes nothing of its groups with it; the decided batch before it stays
    /// committed and counted in the run's row, which the decided statement itself updated.
    func testADecidedBatchBlockedByALockGivesUpAndKeepsWhatWasCommitted() throws {
        let url = try load()
        // Group d (the second batch's) has a loser locked by another session.
        let lock = try PostgresServer.RowLock(url, "SELECT id FROM public.t WHERE id = 10 FOR UPDATE")
        defer { lock.release() }
        let before = PostgresBatch.decisionsApplied
        try runUntilLocked(
            url,
            "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], archive: false}\nbatch: {size: 2, max_transaction_ms: 100}\n"
        )
        XCTAssertEqual(PostgresBatch.decisionsApplied - before, 1, "the first batch applied its decision")
        XCTAssertEqual(try ids(url), [1, 4, 6, 7, 8, 9, 10, 11, 12], "groups a and b committed; c, d and e untouched")
        XCTAssertEqual(try PostgresServer.runCounts(url), [[3, 2, 1]], "deleted, groups, batches of the committed batch")
        lock.release()
        let (summary, _) = try run(url, "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}]}\nbatch: {size: 2}\n")
        XCTAssertEqual(try ids(url), [1, 4, 6, 8, 11])
        XCTAssertEqual(summary.counts.deleted, 4)
    }

    /// A partitioned table repeats tuple ids across its partitions: a decided batch deletes each
    /// loser by its tuple id and its key, never the row of another partition at the same tuple
    /// id (103 is alone in its group and shares its tuple id with 3, a loser).
    func testAPartitionedTableLosesOnlyItsLosers() throws {
        let url = try PostgresServer.require()
        try PostgresServer.reset(url)
        try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in
            try session.execute("CREATE TABLE public.t (id INTEGER PRIMARY KEY, k TEXT, created INTEGER NOT NULL) PARTITION BY RANGE (id)")
            try session.execute("CREATE TABLE public.t1 PARTITION OF public.t FOR VALUES FROM (0) TO (100)")
            try session.execute("CREATE TABLE public.t2 PARTITION OF public.t FOR VALUES FROM (100) TO (200)")
            try session.execute(
                "INSERT INTO public.t VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 1), (101, 'b', 0), (102, 'a', 5), (103, 'c', 1)")
            try session.execute("ANALYZE public.t")
        }
        let tids = try BackendRouter().withSession(url, mode: .readOnly) { session in
            try session.rows("SELECT ctid::text FROM public.t WHERE id IN (3, 103) ORDER BY id", []).map { try $0.string(0) }
        }
        XCTAssertEqual(tids.count, 2)
        XCTAssertEqual(tids.first, tids.last, "3 and 103 share a tuple id (the case under test)")
        let (summary, applied) = try run(url, "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}]}\n")
        XCTAssertEqual(applied, 1)
        XCTAssertEqual(try ids(url), [1, 101, 103])
        XCTAssertEqual(summary.counts.deleted, 3)
    }

    /// Discovery decides only where the server's statistics say the key makes at least a tenth
    /// of the rows losers: not on a table never analyzed, not on a key with few duplicates.
    func testDiscoveryDecidesOnlyWhereTheStatisticsSayManyDuplicates() throws {
        let yaml = "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}]}\nbatch: {size: 2}\n"
        var url = try load(analyze: false)
        XCTAssertEqual(try run(url, yaml).applied, 0, "no statistics")
        XCTAssertEqual(try ids(url), [1, 4, 6, 8, 11])
        url = try load(analyze: false)
        try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in
            try session.execute("INSERT INTO public.t SELECT g, 'u' || g, 1 FROM generate_series(13, 200) AS g")
            try session.execute("ANALYZE public.t")
        }
        XCTAssertEqual(try run(url, yaml).applied, 0, "7 losers in 200 rows")
        XCTAssertEqual(try ids(url), [1, 4, 6, 8, 11] + Array(13...200))
    }

    /// A rule that merges is not decided in discovery (its batches rank, merge and delete).
    func testARuleThatMergesIsNotDecided() throws {
        let url = try load()
        let (summary, applied) = try run(
            url, "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], merge: {created: max}}\nbatch: {size: 2}\n")
        XCTAssertEqual(applied, 0)
        XCTAssertEqual(try ids(url), [1, 4, 6, 8, 11])
        XCTAssertEqual(summary.counts.deleted, 7)
    }
}
