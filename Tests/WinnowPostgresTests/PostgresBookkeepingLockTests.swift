import Foundation
import WinnowBackends
import WinnowCore
import WinnowPostgres
import WinnowTestSupport
import XCTest

/// A run makes sure winnow's tables are in place before it starts, on a database that almost
/// always has them. It must not then wait for other sessions that read or write those tables
/// (`pg_dump`, `winnow show`, another run's batches on another table), as PostgreSQL makes
/// `CREATE INDEX IF NOT EXISTS` (a `SHARE` lock) and `ALTER TABLE ... DROP CONSTRAINT IF
/// EXISTS` (an `ACCESS EXCLUSIVE` one) wait even where they have nothing to do.
final class PostgresBookkeepingLockTests: XCTestCase {
    let job = "version: 1\ndedupe:\n  - {entity: t, key: k, winner: [{created: asc}], archive: true}\nbatch: {size: 2}\n"

    func writeJob() throws -> String {
        let path = try TestSupport.scratchDirectory().appendingPathComponent("job.yaml").path
        try job.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func integer(_ url: String, _ sql: String) throws -> Int {
        try BackendRouter().withSession(url, mode: .readOnly) { try $0.value(sql).int ?? -1 }
    }

    func testARunStartsBesideSessionsThatReadAndWriteWinnowsTables() throws {
        let url = try PostgresServer.require()
        try PostgresServer.reset(
            url,
            sql: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, created INTEGER NOT NULL);
                INSERT INTO t VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 1), (4, 'b', 2);
                """)
        let path = try writeJob()
        // The first run makes winnow's tables and their indexes.
        let first = try TestSupport.winnow(["run", path, "--database", url])
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertEqual(
            try integer(
                url,
                """
                SELECT count(*) FROM pg_catalog.pg_indexes WHERE schemaname = 'winnow'
                AND indexname IN ('winnow_journal_by_run', 'winnow_run_groups_by_run', 'winnow_journal_shapes_by_digest')
                """), 3)
        try BackendRouter().withSession(url, mode: .readWrite(create: false)) { session in
            try session.execute("INSERT INTO public.t VALUES (5, 'c', 1), (6, 'c', 2)")
        }

        // A reader of every table the install touches, as `pg_dump` holds it for its whole
        // dump, and a writer of them, as another run's open batch does.
        let tables = ["winnow_runs", "winnow_journal", "winnow_journal_shapes", "winnow_run_groups"].map { "winnow.\($0)" }
        let reader = try PostgresServer.RowLock(url, "LOCK TABLE \(tables.joined(separator: ", ")) IN ACCESS SHARE MODE")
        defer { reader.release() }
        let writer = try PostgresServer.RowLock(url, "LOCK TABLE \(tables.joined(separator: ", ")) IN ROW EXCLUSIVE MODE")
        defer { writer.release() }

        let started = Date()
        let second = try TestSupport.winnow(["run", path, "--database", url])
        let seconds = Date().timeIntervalSince(started)
        reader.release()
        writer.release()
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertLessThan(seconds, 4, "the run waited for the other sessions (lock_timeout is 5 s)")
        XCTAssertEqual(try PostgresServer.integers(url, "id", of: "t"), [1, 3, 5])
    }
}
