import Foundation
import WinnowBackends
import WinnowCore
import WinnowPostgres
import WinnowTestSupport
import XCTest

/// `run` keeps discovery's groups on the server (a temporary table) and each batch ranks its
/// rows again as they are then: rows another session changed or deleted between discovery and
/// the batch decide as they are now, never as discovery saw them.
final class PostgresChangedAfterDiscoveryTests: XCTestCase {
    func load(_ url: String) throws {
        let dir = try TestSupport.scratchDirectory()
        let path = dir.appendingPathComponent("t.sqlite").path
        try PostgresServer.reset(
            url, loading: path,
            sql: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, created INTEGER NOT NULL);
                INSERT INTO t VALUES (1, 'a', 1), (2, 'a', 2), (3, 'a', 3), (4, 'b', 1), (5, 'b', 2), (6, 'c', 1), (7, 'c', 2),
                                     (8, 'd', 1), (9, 'd', 2), (10, 'd', 3);
                """)
    }

    func ids(_ url: String) throws -> [Int] { try PostgresServer.integers(url, "id", of: "t") }

    /// Runs `yaml` on `url`; another session runs `change` after discovery, before the first batch.
    func runChangingAfterDiscovery(
        _ url: String, _ yaml: String, file: StaticString = #filePath, line: UInt = #line,
        change: @escaping (any DatabaseSession) throws -> Void
    ) throws -> RunSummary {
        let job = try JobLoader.decode(yaml: yaml, file: "job.yaml", baseDirectory: nil)
        var changed = false
        var failure: String?
        let summary = try JobRunner.run(job, options: RunOptions(database: url), backend: BackendRouter()) { event in
            guard case .ruleStarted = event, !changed else { return }
            changed = true
            do {
                try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { try change($0) }
            } catch {
                failure = "\(error)"
            }
        }
        XCTAssertNil(failure, file: file, line: line)
        XCTAssertTrue(changed, "the rows were changed between discovery and the batches", file: file, line: line)
        return summary
    }

    func testBatchesDecideOnRowsAsTheyAreNow() throws {
        let url = try PostgresServer.require()
        try load(url)
        let summary = try runChangingAfterDiscovery(
            url, "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], archive: true}\nbatch: {size: 2}\n"
        ) { other in
            try other.execute("DELETE FROM public.t WHERE id = 1")  // group a loses its winner...
            try other.execute("UPDATE public.t SET k = 'z' WHERE id = 3")  // ...and a member: 2 is alone
            try other.execute("UPDATE public.t SET created = 9 WHERE id = 6")  // group c: 7 wins now
            try other.execute("DELETE FROM public.t WHERE id = 9")  // group d: 8 still wins over 10
        }
        XCTAssertEqual(try ids(url), [2, 3, 4, 7, 8], "b keeps 4, c keeps 7 (its new winner), d keeps 8; a and the moved row untouched")
        XCTAssertEqual(summary.counts.deleted, 3)
        XCTAssertEqual(summary.counts.skipped, 3, "discovery planned 6 losers; 1, 3 and 9 were gone from their groups")
        // The journal undoes exactly what the run deleted.
        let restore = try TestSupport.winnow(["restore", "--run", "\(summary.runID ?? 0)", "--database", url])
        XCTAssertEqual(restore.status, 0, restore.stderr)
        XCTAssertEqual(try ids(url), [2, 3, 4, 5, 6, 7, 8, 10])
    }

    /// Each batch is one statement the server commits on its own, with the run's progress row
    /// in it: a batch held up by another session's row lock gives up after the batch's lock
    /// timeout (exit 75), taking nothing of its groups with it, while the batch before it stays
    /// committed and counted; once the lock is gone a rerun finishes the job.
    func testBatchBlockedByAnotherSessionsLockGivesUpAndKeepsWhatWasCommitted() throws {
        let url = try PostgresServer.require()
        try load(url)
        let job = try JobLoader.decode(
            yaml:
                "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], archive: false}\nbatch: {size: 2, max_transaction_ms: 100}\n",
            file: "job.yaml", baseDirectory: nil)
        // Group d (the second batch's) has a loser locked by another session.
        let lock = try PostgresServer.RowLock(url, "SELECT id FROM public.t WHERE id = 10 FOR UPDATE")
        defer { lock.release() }
        let started = Date()
        XCTAssertThrowsError(try JobRunner.run(job, options: RunOptions(database: url), backend: BackendRouter())) { error in
            guard case let .locked(message) = error as? WinnowError else { return XCTFail("not a lock failure: \(error)") }
            XCTAssertTrue(message.contains("lock"), message)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "the batch gave up after its lock timeout")
        XCTAssertEqual(try ids(url), [1, 4, 6, 7, 8, 9, 10], "groups a and b committed in the first batch; c and d untouched")
        XCTAssertEqual(
            try PostgresServer.runCounts(url), [[3, 2, 1]],
            "the run's row counts the committed batch (deleted, groups, batches), nothing of the one given up")
        lock.release()
        let summary = try JobRunner.run(job, options: RunOptions(database: url), backend: BackendRouter())
        XCTAssertEqual(try ids(url), [1, 4, 6, 8])
        XCTAssertEqual(summary.counts.deleted, 3)
        XCTAssertEqual(try PostgresServer.runCounts(url).last, [3, 2, 1])
    }

    /// Batches fetch their rows by the tuple id discovery saw: a row deleted meanwhile whose
    /// tuple id a new row took after a VACUUM is not taken for the member (the primary key is
    /// compared), and the new row, with the group's key and the best winner terms, is left for
    /// the next run.
    func testTupleIDTakenByAnotherRowIsNotAMember() throws {
        let url = try PostgresServer.require()
        try load(url)
        let job = try JobLoader.decode(
            yaml: "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}]}\nbatch: {size: 2}\n",
            file: "job.yaml", baseDirectory: nil)
        var tids: (old: String?, new: String?) = (nil, nil)
        var failure: String?
        let summary = try JobRunner.run(job, options: RunOptions(database: url), backend: BackendRouter()) { event in
            guard case .ruleStarted = event, tids.old == nil else { return }
            do {
                try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { other in
                    tids.old = try other.value("SELECT ctid::text FROM public.t WHERE id = 2").string
                    try other.execute("DELETE FROM public.t WHERE id = 2")
                    try other.execute("VACUUM public.t")
                    try other.execute("INSERT INTO public.t VALUES (11, 'a', 0)")
                    tids.new = try other.value("SELECT ctid::text FROM public.t WHERE id = 11").string
                }
            } catch {
                failure = "\(error)"
            }
        }
        XCTAssertNil(failure)
        XCTAssertNotNil(tids.old)
        XCTAssertEqual(tids.new, tids.old, "the new row took the deleted member's tuple id (the case under test)")
        XCTAssertEqual(try ids(url), [1, 4, 6, 8, 11], "group a keeps 1 (3 goes); the new row 11 is not one of discovery's members")
        XCTAssertEqual(summary.counts.deleted, 5)
        XCTAssertEqual(summary.counts.skipped, 1, "2 was gone")
    }

    /// A batch ranks its rows by the key they hold now: a member that another session moved
    /// into another group of the same batch (and made its best row) competes there, so the key
    /// ends with one row, the best as it is now, and the group it left keeps its other row.
    func testRowMovedIntoAnotherGroupOfTheBatchRanksThere() throws {
        let url = try PostgresServer.require()
        try load(url)
        let summary = try runChangingAfterDiscovery(
            url, "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}]}\nbatch: {size: 2}\n"
        ) { other in
            // Discovery put 5 in group b (with 4), batched with group a (1, 2, 3).
            try other.execute("UPDATE public.t SET k = 'a', created = 0 WHERE id = 5")
        }
        XCTAssertEqual(try ids(url), [4, 5, 6, 8], "a keeps 5 (now its best row), b keeps 4, c keeps 6, d keeps 8: one row per key")
        XCTAssertEqual(summary.counts.deleted, 6)
        XCTAssertEqual(summary.counts.skipped, 0, "every loser discovery planned was deleted")
    }

    /// `max_delete_percent` reads discovery's counts, which `run` now takes from the groups it
    /// keeps on the server: over the limit nothing changes (exit 65), under it the run goes.
    func testMaxDeletePercentCountsTheGroupsKeptOnTheServer() throws {
        let url = try PostgresServer.require()
        try load(url)
        let dir = try TestSupport.scratchDirectory()
        func job(_ percent: Int) throws -> String {
            try TestSupport.writeFile(
                "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], max_delete_percent: \(percent)}\n",
                to: dir.appendingPathComponent("job\(percent).yaml").path)
        }
        let refused = try TestSupport.winnow(["run", try job(50), "--database", url])
        XCTAssertEqual(refused.status, 65, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("would delete 6 of 10 rows (60.0%)"), refused.stderr)
        XCTAssertEqual(try ids(url), Array(1...10), "nothing was changed")
        let allowed = try TestSupport.winnow(["run", try job(60), "--database", url])
        XCTAssertEqual(allowed.status, 0, allowed.stderr)
        XCTAssertEqual(try ids(url), [1, 4, 6, 8])
    }

    /// Two rules on one table in one run (each its own discovery table, the second seeing what
    /// the first left), then a second run in the same process that finds nothing.
    func testTwoRulesOnOneTableThenARerun() throws {
        let url = try PostgresServer.require()
        try load(url)
        let job = try JobLoader.decode(
            yaml: """
                version: 1
                dedupe:
                  - {entity: t, key: k, winner: [{created: desc}]}
                  - {entity: t, key: created}
                batch: {size: 1}
                """, file: "job.yaml", baseDirectory: nil)
        let first = try JobRunner.run(job, options: RunOptions(database: url), backend: BackendRouter())
        // Rule 1 keeps the latest of each key (3, 5, 7, 10); rule 2 then keeps one per `created`
        // among them, by content ('a' before 'd', 'b' before 'c'): 3 and 5.
        XCTAssertEqual(first.counts.deleted, 6 + 2)
        XCTAssertEqual(try ids(url), [3, 5])
        let again = try JobRunner.run(job, options: RunOptions(database: url), backend: BackendRouter())
        XCTAssertEqual(again.counts.deleted, 0)
    }
}
