import Foundation
import GRDB
import WinnowTestSupport
import XCTest

/// A SQLite file's journal mode belongs to every program that opens it: a writing run leaves it
/// as it found it, and switches a rollback-journal file to WAL only when the job asks for it
/// (`sqlite: {journal_mode: wal}`). Through the built executable.
final class JournalModeScenarioTests: CLITestCase {
    static let schema = """
        version: 2
        tables:
          people:
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: email, type: text}
              - {name: visits, type: integer}
              - {name: note, type: text}
        """

    /// `groups` groups of three people sharing an e-mail, in a rollback-journal (delete) file.
    @discardableResult
    func makeData(_ name: String = "db.sqlite", groups: Int = 30) throws -> String {
        try TestSupport.makeDatabase(
            at: path(name),
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, visits INTEGER);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(groups * 3))
                INSERT INTO people SELECT i, 'p' || (i % \(groups)) || '@example.com', i FROM n;
                """)
    }

    /// `merges`: the rule merges `visits`. The slow runs below (one group per batch, with a
    /// pause) only delete: a rule that merges applies its merges, and deletes most losers with
    /// them, in stretches that `max_transaction_ms` alone bounds, a few on a table this small.
    func job(_ extra: String = "", database: String = "db.sqlite", merges: Bool = true) -> String {
        """
        version: 1
        database: \(database)
        schema: schema.yaml
        dedupe:
          - entity: people
            key: email\(merges ? "\n    merge: {visits: sum}" : "")
            archive: true
        \(extra)
        """
    }

    func mode(_ db: String) throws -> String? {
        try ScenarioKit.column(db, "PRAGMA journal_mode", as: String.self).first ?? nil
    }

    func siblings(_ db: String) throws -> [String] {
        let name = URL(fileURLWithPath: db).lastPathComponent
        return try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(name + "-") }.sorted()
    }

    /// A run that migrates, deduplicates and journals, then a restore: the file is in the
    /// rollback journal before and after, with no -wal or -shm file beside it.
    func testWritingRunAndRestoreLeaveARollbackJournalFileAsFound() throws {
        let db = try makeData()
        try write("schema.yaml", Self.schema)
        try write("job.yaml", job())
        XCTAssertEqual(try mode(db), "delete")
        let run = try winnow(["run", "job.yaml", "--format", "json"], expect: 0)
        let summary = try XCTUnwrap(run.stdout.split(separator: "\n").compactMap(json).last)
        XCTAssertEqual(summary["deleted"] as? Int, 60)
        XCTAssertEqual(summary["migration_steps"] as? Int, 1)
        XCTAssertEqual(try mode(db), "delete", "the run left the journal mode as it found it")
        XCTAssertEqual(try siblings(db), [], "no -wal, -shm or -journal file beside the database")
        try winnow(["restore", "--database", "db.sqlite", "--run", "1"], expect: 0)
        XCTAssertEqual(try mode(db), "delete")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people"), 90)
        XCTAssertEqual(try siblings(db), [])
    }

    /// Between its batches a run keeps the `-journal` file, its header zeroed (SQLite's
    /// `persist` mode, for winnow's connection only), instead of deleting it after every
    /// commit. An application committing beside it in the default mode reads that file as no
    /// journal, writes its own in it and deletes it; its row survives, the file stays sound, and
    /// the run leaves no journal behind.
    func testARunKeepsAZeroedJournalBetweenItsBatchesBesideAnotherWriter() throws {
        let db = try makeData(groups: 60)
        try write("schema.yaml", Self.schema)
        try write("job.yaml", job("batch: {size: 1, pause_ms: 40}", merges: false))
        let run = try SpawnedWinnow(["run", "job.yaml", "--format", "json"], in: dir).start()
        XCTAssertTrue(run.waitForOutput("\"event\":\"batch\"", count: 3, timeout: 60), "the run never got to its batches")
        // Between two batches (the pauses are most of the run) the journal is there, zeroed.
        var zeroed = 0
        let journal = dir.appendingPathComponent("db.sqlite-journal")
        for _ in 0..<40 where run.isRunning {
            if let bytes = try? Data(contentsOf: journal), bytes.count >= 28, bytes.prefix(28).allSatisfy({ $0 == 0 }) { zeroed += 1 }
            Thread.sleep(forTimeInterval: 0.01)
        }
        XCTAssertGreaterThan(zeroed, 0, "no zeroed journal seen between the batches")
        // The application's own commit, in the default mode, between the run's batches. Like
        // any application beside a writer it waits for a lock held at the moment it opens
        // (winnow's commit): without a busy timeout its first read failed now and then on a
        // loaded machine.
        var config = Configuration()
        config.busyMode = .timeout(10)
        let app = try DatabaseQueue(path: db, configuration: config)
        try app.write { try $0.execute(sql: "INSERT INTO people (id, email, visits) VALUES (1000, 'app@example.com', 7)") }
        XCTAssertEqual(try app.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }, "delete")
        try app.close()
        let outcome = run.wait()
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        XCTAssertEqual(try ScenarioKit.column(db, "PRAGMA integrity_check", as: String.self), ["ok"])
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT visits FROM people WHERE email = 'app@example.com'"), 7)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people"), 61)
        XCTAssertEqual(try siblings(db), [], "the run leaves no journal behind")
    }

    /// A file the application keeps in WAL stays in WAL (nothing is switched back either).
    func testFileFoundInWALStaysInWAL() throws {
        let db = try makeData()
        let queue = try DatabaseQueue(path: db)
        _ = try queue.writeWithoutTransaction { try String.fetchOne($0, sql: "PRAGMA journal_mode = WAL") }
        try queue.close()
        try write("schema.yaml", Self.schema)
        try write("job.yaml", job())
        try winnow(["run", "job.yaml"], expect: 0)
        XCTAssertEqual(try mode(db), "wal")
    }

    /// The job asks for WAL: the run switches the file, which stays in WAL; the next run and
    /// `check` work on it as on any WAL file.
    func testJobAskingForWALSwitchesTheFileForGood() throws {
        let db = try makeData()
        try write("schema.yaml", Self.schema)
        try write("job.yaml", job("sqlite:\n  journal_mode: wal"))
        try winnow(["validate", "job.yaml"], expect: 0)
        try winnow(["plan", "job.yaml"], expect: 0)
        XCTAssertEqual(try mode(db), "delete", "plan changes nothing")
        try winnow(["run", "job.yaml"], expect: 0)
        XCTAssertEqual(try mode(db), "wal")
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM people"), 30)
        try winnow(["run", "job.yaml"], expect: 0)
        try winnow(["check", "job.yaml"], expect: 0)
        XCTAssertEqual(try mode(db), "wal")
    }

    /// Only WAL can be asked for; anything else is refused with its place in the file.
    func testUnknownJournalModeIsRefusedWithItsPlace() throws {
        try makeData()
        try write("schema.yaml", Self.schema)
        try write("job.yaml", job("sqlite:\n  journal_mode: memory"))
        let result = try winnow(["validate", "job.yaml"], expect: 65)
        XCTAssertTrue(result.stderr.contains("job.yaml:10:17"), result.stderr)
        XCTAssertTrue(result.stderr.contains("unknown journal mode 'memory'; expected one of wal"), result.stderr)
    }

    /// A run killed in the middle of its batches in a rollback-journal file: the file opens
    /// clean (SQLite rolls the hot journal back), is still in the rollback journal, and the next
    /// run ends where an uninterrupted run ends.
    func testRunKilledInARollbackJournalFileLeavesItUsable() throws {
        let db = try makeData(groups: 150)
        let reference = try makeData("reference.sqlite", groups: 150)
        try write("schema.yaml", Self.schema)
        try write("job.yaml", job("batch: {size: 1, pause_ms: 5}", merges: false))
        try write("reference.yaml", job("batch: {size: 1, pause_ms: 5}", database: "reference.sqlite", merges: false))

        let run = try SpawnedWinnow(["run", "job.yaml", "--format", "json"], in: dir).start()
        XCTAssertTrue(run.waitForOutput("\"event\":\"batch\"", count: 10, timeout: 60), "the run never got to its batches")
        kill(run.pid, SIGKILL)
        let killed = run.wait()
        XCTAssertTrue(killed.signaled, "the run ended before it was killed: \(killed.stderr)")

        XCTAssertEqual(try ScenarioKit.column(db, "PRAGMA integrity_check", as: String.self), ["ok"])
        XCTAssertEqual(try mode(db), "delete")
        // A hot journal is rolled back and removed by the first connection. A kill that lands
        // after the journal file was created and before its header was written leaves a
        // journal SQLite does not treat as hot (empty, or a zero first byte): it is ignored and
        // overwritten by the next write, so only that kind may remain.
        for sibling in try siblings(db) {
            XCTAssertEqual(sibling, "db.sqlite-journal", "no -wal or -shm file beside a rollback-journal file")
            let bytes = try Data(contentsOf: dir.appendingPathComponent(sibling))
            XCTAssertEqual(bytes.first ?? 0, 0, "a journal left after the file was opened is not hot")
        }
        let people = try ScenarioKit.int(db, "SELECT count(*) FROM people")
        XCTAssertLessThan(people, 450, "some batches committed")
        XCTAssertGreaterThan(people, 150, "not all of them")

        // Larger batches from here on: the result does not depend on them.
        try winnow(["run", "job.yaml", "--batch-size", "50"], expect: 0)
        try winnow(["run", "reference.yaml", "--batch-size", "50"], expect: 0)
        XCTAssertEqual(try mode(db), "delete")
        XCTAssertEqual(try siblings(db), [], "a run leaves no journal beside the file")
        let rows = "SELECT id, email, visits, note FROM people ORDER BY id"
        XCTAssertEqual(try ScenarioKit.rows(db, rows), try ScenarioKit.rows(reference, rows))
    }
}
