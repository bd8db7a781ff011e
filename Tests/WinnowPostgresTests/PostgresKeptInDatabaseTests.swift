import Foundation
import WinnowBackends
import WinnowCore
import WinnowPostgres
import WinnowTestSupport
import XCTest

/// What winnow keeps in a PostgreSQL database: the scenarios of `KeptInDatabaseTests` (the
/// same data, jobs and expected output as on SQLite), through the executable.
final class PostgresKeptInDatabaseTests: XCTestCase {
    func scenario() throws -> KeptInDatabase {
        let url = try PostgresServer.require()
        let dir = try TestSupport.scratchDirectory()
        func prefixed(_ sql: String) -> String { sql.replacingOccurrences(of: "{winnow}", with: "winnow.") }
        return KeptInDatabase(
            database: url, dir: dir,
            load: { sql in
                let file = dir.appendingPathComponent("data-\(UUID().uuidString.prefix(8)).sqlite").path
                try PostgresServer.reset(url, loading: file, sql: sql)
            },
            execute: { sql in
                try BackendRouter().withSession(url, mode: .readWrite(create: false)) { try $0.execute(prefixed(sql)) }
            },
            integer: { sql in
                try BackendRouter().withSession(url, mode: .readOnly) { try $0.value(prefixed(sql)).int ?? -1 }
            },
            snapshot: { try Self.snapshot(url) })
    }

    /// The catalog of every schema but the system's (schemas, relations with their kind,
    /// columns with their types and defaults, indexes, constraints, triggers, functions) and
    /// every row of every user table, as text.
    static func snapshot(_ url: String) throws -> [String] {
        try BackendRouter().withSession(url, mode: .readOnly) { session in
            let user = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%' ESCAPE '\\'"
            var lines = try session.rows(
                """
                SELECT 'schema ' || n.nspname FROM pg_catalog.pg_namespace AS n WHERE \(user)
                UNION ALL SELECT 'relation ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text
                    FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace WHERE \(user)
                UNION ALL SELECT 'column ' || n.nspname || '.' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                        || ' ' || a.attnotnull::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
                    FROM pg_catalog.pg_attribute AS a JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
                    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
                    LEFT JOIN pg_catalog.pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                    WHERE \(user) AND a.attnum > 0 AND NOT a.attisdropped
                UNION ALL SELECT 'index ' || pg_get_indexdef(i.indexrelid) FROM pg_catalog.pg_index AS i
                    JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace WHERE \(user)
                UNION ALL SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(k.oid) FROM pg_catalog.pg_constraint AS k
                    JOIN pg_catalog.pg_namespace AS n ON n.oid = k.connamespace WHERE \(user)
                UNION ALL SELECT 'trigger ' || t.tgname || ' on ' || t.tgrelid::regclass::text FROM pg_catalog.pg_trigger AS t WHERE NOT t.tgisinternal
                UNION ALL SELECT 'function ' || p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p
                    JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace WHERE \(user)
                ORDER BY 1
                """
            ).map { $0.values.first?.string ?? "" }
            let tables = try session.rows(
                "SELECT c.relname FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 1"
            ).compactMap { $0.values.first?.string }
            for table in tables {
                lines += try session.rows("SELECT t::text FROM public.\(table.sqlIdentifier) AS t ORDER BY 1").map {
                    "\(table): \($0.values.first?.string ?? "")"
                }
            }
            return lines
        }
    }

    func testShowListsGroupsRowsAndChildren() throws { try scenario().showListsGroupsRowsAndChildren() }

    func testShowListsTheFirstGroupsUnlessVerbose() throws { try scenario().showListsTheFirstGroupsUnlessVerbose() }

    func testShowWithoutVerboseListsTheHeadOfTheVerboseListing() throws {
        try scenario().showWithoutVerboseListsTheHeadOfTheVerboseListing()
    }

    func testShowOfARunWithoutJournalSaysSo() throws { try scenario().showOfARunWithoutJournalSaysSo() }

    func testRefusedRestoresLeaveNoTraceAndRestoresCount() throws { try scenario().refusedRestoresLeaveNoTraceAndRestoresCount() }

    func testPruneOlderThanKeepsNewerRuns() throws { try scenario().pruneOlderThanKeepsNewerRuns() }

    func testEarlierBookkeepingIsReadThenUpgraded() throws { try scenario().earlierBookkeepingIsReadThenUpgraded() }

    func testPruneOneRun() throws { try scenario().pruneOneRun() }

    func testKeepDaysPrunesOnEveryRun() throws { try scenario().keepDaysPrunesOnEveryRun() }

    func testUninstallLeavesTheDatabaseAsBeforeTheRun() throws { try scenario().uninstallLeavesTheDatabaseAsBeforeTheRun() }

    /// A run without merges or references takes the one-statement batch: its groups are
    /// recorded there too.
    func testShowListsTheGroupsOfOneStatementBatches() throws {
        let kept = try scenario()
        try kept.load(KeptInDatabase.people)
        try kept.writeJob("version: 1\ndedupe:\n  - entity: people\n    key: email\n    winner:\n      - id: desc\n")
        try kept.winnow(["run", "job.yaml", "--database", kept.database], expect: 0)
        let text = try kept.winnow(["show", "--run", "1", "--database", kept.database], expect: 0).stdout
        XCTAssertTrue(text.contains("  group email 'bob@x.org': kept id 4; deleted id 3\n"), text)
    }

    /// While another session holds the run lock, uninstall and prune exit 75 and change
    /// nothing; once it lets go, uninstall goes through.
    func testUninstallAndPruneWaitForTheRunLock() throws {
        let kept = try scenario()
        let url = kept.database
        try kept.load(KeptInDatabase.people)
        try kept.writeJob(KeptInDatabase.job())
        try kept.winnow(["run", "job.yaml", "--database", url], expect: 0)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            try? PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in
                try session.writeTransaction { try RunLock.take(session, runID: nil) }
                holding.signal()
                release.wait()
            }
        }
        holder.start()
        XCTAssertEqual(holding.wait(timeout: .now() + 10), .success)
        let before = try Self.snapshot(url)
        try kept.winnow(["uninstall", "--yes", "--database", url], expect: 75)
        try kept.winnow(["prune", "--run", "1", "--database", url], expect: 75)
        XCTAssertEqual(try Self.snapshot(url), before, "refused by the lock: nothing changed")
        release.signal()
        while !holder.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        try kept.winnow(["uninstall", "--yes", "--database", url], expect: 0)
        XCTAssertEqual(try kept.integer("SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = 'winnow'"), 0)
    }
}
