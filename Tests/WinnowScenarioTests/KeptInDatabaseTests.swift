import Foundation
import GRDB
import WinnowCore
import WinnowTestSupport
import XCTest

/// What winnow keeps in a SQLite file: `show` lists what a run changed, `history` records no
/// refused restore and counts a restore's rows, `prune` and `journal: keep_days` delete old
/// journal entries, `uninstall` removes every trace. The same scenarios run on PostgreSQL in
/// `PostgresKeptInDatabaseTests`.
final class KeptInDatabaseTests: CLITestCase {
    var scenario: KeptInDatabase {
        let file = path("data.sqlite")
        return KeptInDatabase(
            database: file, dir: dir,
            load: { sql in
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
                try TestSupport.makeDatabase(at: file, sql: sql)
            },
            execute: { sql in try ScenarioKit.execute(file, sql.replacingOccurrences(of: "{winnow}", with: "")) },
            integer: { sql in try ScenarioKit.int(file, sql.replacingOccurrences(of: "{winnow}", with: "")) },
            snapshot: {
                // Every object of the file (winnow's too) with its SQL, and every user table's rows.
                let schema = try ScenarioKit.rows(file, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
                    .map { "\($0)" }
                let rows = try TestSupport.contentDump(file).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
                return schema + rows
            })
    }

    func testShowListsGroupsRowsAndChildren() throws { try scenario.showListsGroupsRowsAndChildren() }

    func testShowListsTheFirstGroupsUnlessVerbose() throws { try scenario.showListsTheFirstGroupsUnlessVerbose() }

    func testShowWithoutVerboseListsTheHeadOfTheVerboseListing() throws { try scenario.showWithoutVerboseListsTheHeadOfTheVerboseListing() }

    func testShowOfARunWithoutJournalSaysSo() throws { try scenario.showOfARunWithoutJournalSaysSo() }

    func testRefusedRestoresLeaveNoTraceAndRestoresCount() throws { try scenario.refusedRestoresLeaveNoTraceAndRestoresCount() }

    func testPruneOlderThanKeepsNewerRuns() throws { try scenario.pruneOlderThanKeepsNewerRuns() }

    func testEarlierBookkeepingIsReadThenUpgraded() throws { try scenario.earlierBookkeepingIsReadThenUpgraded() }

    func testPruneOneRun() throws { try scenario.pruneOneRun() }

    func testKeepDaysPrunesOnEveryRun() throws { try scenario.keepDaysPrunesOnEveryRun() }

    func testUninstallLeavesTheDatabaseAsBeforeTheRun() throws { try scenario.uninstallLeavesTheDatabaseAsBeforeTheRun() }

    /// A prune deletes a run's entries a few thousand per transaction, and every one of them.
    func testPruneDeletesALargeJournalWhole() throws {
        let rows = (1...2600).map { "(\($0), 'same\($0 % 2)@x.org', 'n\($0)', NULL, 1)" }
        try scenario.load(
            """
            CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, name TEXT, phone TEXT, visits INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER NOT NULL REFERENCES people(id), total INTEGER NOT NULL);
            INSERT INTO people VALUES \(rows.joined(separator: ", "));
            """)
        try write("job.yaml", KeptInDatabase.job())
        try winnow(["run", "job.yaml", "--database", path("data.sqlite")], expect: 0)
        let entries = try ScenarioKit.intOverJournal(path("data.sqlite"), "SELECT count(*) FROM {entries}")
        XCTAssertGreaterThan(entries, 2000, "more entries than one prune transaction takes")
        let report = try winnow(["prune", "--run", "1", "--format", "json", "--database", path("data.sqlite")], expect: 0).stdout
        XCTAssertEqual(json(Substring(report.trimmingCharacters(in: .whitespacesAndNewlines)))?["entries"] as? Int, entries)
        XCTAssertEqual(try ScenarioKit.intOverJournal(path("data.sqlite"), "SELECT count(*) FROM {entries}"), 0)
        XCTAssertEqual(try ScenarioKit.intOverJournal(path("data.sqlite"), "SELECT count(*) FROM {groups}"), 0)
    }

    /// `journal:` is checked like the rest of a job: located errors, exit 65.
    func testJournalSectionIsValidated() throws {
        try write("neg.yaml", "version: 1\njournal:\n  keep_days: -1\n")
        let negative = try winnow(["validate", "neg.yaml"], expect: 65)
        XCTAssertTrue(negative.stderr.contains("neg.yaml:3:14:"), negative.stderr)
        try write("key.yaml", "version: 1\njournal:\n  keep: 3\n")
        let unknown = try winnow(["validate", "key.yaml"], expect: 65)
        XCTAssertTrue(unknown.stderr.contains("key.yaml:3:3:"), unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("keep_days"), unknown.stderr)
        try write("ok.yaml", "version: 1\njournal:\n  keep_days: 30\n")
        try winnow(["validate", "ok.yaml"], expect: 0)
    }

    /// While a run holds the lock, uninstall and prune exit 75 and change nothing.
    func testUninstallAndPruneWaitForTheRunLock() throws {
        let file = path("data.sqlite")
        try scenario.load(KeptInDatabase.people)
        try write("job.yaml", KeptInDatabase.job())
        try winnow(["run", "job.yaml", "--database", file], expect: 0)
        try ScenarioKit.execute(
            file,
            "INSERT INTO winnow_lock (id, run_id, pid, process_start, host, acquired_at) VALUES (1, NULL, ?, NULL, ?, '2024-01-01T00:00:00Z')",
            arguments: [ProcessInfo.processInfo.processIdentifier, ProcessIdentity.current.host])
        let bytes = try TestSupport.fileBytes(file)
        try winnow(["uninstall", "--yes", "--database", file], expect: 75)
        try winnow(["prune", "--run", "1", "--database", file], expect: 75)
        XCTAssertEqual(try TestSupport.fileBytes(file), bytes, "refused by the lock: nothing changed")
        try ScenarioKit.execute(file, "DELETE FROM winnow_lock")
        try winnow(["uninstall", "--yes", "--database", file], expect: 0)
        XCTAssertEqual(try ScenarioKit.int(file, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'winnow%'"), 0)
    }
}
