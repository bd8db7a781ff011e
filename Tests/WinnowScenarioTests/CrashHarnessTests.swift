import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// Crash safety ("Nothing lost", parts 1 and 2), docs/reference.md section 5: after any exit other than
/// 0 and 1 — a SIGKILL included — committed batches stay committed, the batch in flight is
/// rolled back, `run` again finishes with the same result as an uninterrupted run, and a killed
/// run never blocks the next one; `restore` of a killed run undoes exactly what it changed.
///
/// The built `winnow` is started with `Process` and killed with SIGKILL at seeded pseudo-random
/// delays drawn from the span of one uninterrupted, timed run (the calibration). Every kill is
/// printed with its scenario seed and delay, so a failure can be replayed:
///
/// - `WINNOW_SOAK_KILLS=N`: at least N kills (default: enough for the CI budget).
/// - `WINNOW_CRASH_SEED=S`: another base seed (scenario k uses seed S + k).
/// - `WINNOW_CRASH_REPLAY=SEED` (with `WINNOW_CRASH_DELAYS=1.25,0.4` to force the delays):
///   run only that scenario of the kill suite.
/// - `WINNOW_CRASH_WORKERS=N`: scenarios run side by side (default: 2, or 1 on one core).
final class CrashHarnessTests: XCTestCase {

    // MARK: - Configuration

    static let env = ProcessInfo.processInfo.environment
    static var isCI: Bool { (env["CI"] ?? "").lowercased() == "true" }
    static func envInt(_ name: String) -> Int? { env[name].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    static var baseSeed: UInt64 {
        guard let text = env["WINNOW_CRASH_SEED"]?.lowercased() else { return 0x5EED_C4A5_0000 }
        if text.hasPrefix("0x") { return UInt64(text.dropFirst(2), radix: 16) ?? 0x5EED_C4A5_0000 }
        return UInt64(text) ?? 0x5EED_C4A5_0000
    }

    /// Kills of the restore test (part 2).
    static var restoreKills: Int {
        guard let soak = envInt("WINNOW_SOAK_KILLS") else { return 4 }
        return max(4, soak / 12)
    }

    /// Kills of the main test: with the restore test's, at least 50 across the suite.
    static var mainKills: Int {
        let base = 50 - 4
        guard let soak = envInt("WINNOW_SOAK_KILLS") else { return base }
        return max(base, soak - restoreKills)
    }

    static var soak: Bool { envInt("WINNOW_SOAK_KILLS") != nil }

    static var workers: Int {
        if let n = envInt("WINNOW_CRASH_WORKERS") { return max(1, n) }
        return ProcessInfo.processInfo.activeProcessorCount >= 2 ? 2 : 1
    }

    // MARK: - Fixture

    /// Rows of `contacts`; ids 1...`groupedRows` fall in `groups` duplicate groups of three
    /// (case and whitespace variants of one e-mail address), the rest are unique.
    static let contactRows = 100_000
    static let groups = 8_000
    static let groupedRows = 24_000
    static let orderRows = 60_000
    static let tagRows = 50

    static let fixtureSQL = """
        CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT, name TEXT, phone TEXT, visits INTEGER, created_at INTEGER);
        CREATE INDEX contacts_email ON contacts (email);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE, amount INTEGER);
        CREATE INDEX orders_contact ON orders (contact_id);
        CREATE TABLE tags (id INTEGER PRIMARY KEY, label TEXT NOT NULL);
        CREATE TABLE contact_tags (id INTEGER PRIMARY KEY, contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
                                   tag_id INTEGER NOT NULL REFERENCES tags(id), since INTEGER);
        CREATE UNIQUE INDEX contact_tags_pair ON contact_tags (contact_id, tag_id);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(contactRows))
        INSERT INTO contacts (id, email, name, phone, visits, created_at)
        SELECT i,
          CASE WHEN i <= \(groupedRows) THEN
            CASE i % 3 WHEN 0 THEN 'user' || ((i - 1) % \(groups)) || '@example.com'
                       WHEN 1 THEN '  USER' || ((i - 1) % \(groups)) || '@Example.com '
                       ELSE 'User' || ((i - 1) % \(groups)) || '@EXAMPLE.COM' END
          ELSE 'solo' || i || '@example.com' END,
          CASE WHEN i % 5 = 0 THEN NULL ELSE 'n' || i END,
          CASE WHEN i % 3 = 0 THEN NULL ELSE '555-' || i END,
          i % 10,
          (i * 7) % 13
        FROM n;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(tagRows))
        INSERT INTO tags (id, label) SELECT i, 'tag' || i FROM n;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(orderRows))
        INSERT INTO orders (id, contact_id, amount) SELECT i, ((i * 7919) % \(contactRows)) + 1, i % 1000 FROM n;
        -- Every member of a group has the group's tag: re-pointing a loser's link collides with the winner's.
        INSERT INTO contact_tags (contact_id, tag_id, since) SELECT id, ((id - 1) % \(groups)) % 10 + 1, id % 100 FROM contacts WHERE id <= 30000;
        INSERT INTO contact_tags (contact_id, tag_id, since) SELECT id, 11 + (id % 17), id % 50 FROM contacts WHERE id % 3 = 0;
        """

    /// The target schema: contacts.name becomes NOT NULL DEFAULT '' (an online rebuild whose
    /// batched copy fills the NULLs), contacts.source is added (ALTER TABLE ADD COLUMN), and a
    /// unique index on the e-mail address is created after deduplication.
    static let schemaYAML = """
        version: 2
        tables:
          contacts:
            columns:
            - {name: id, type: integer, primary_key: true}
            - {name: email, type: text}
            - {name: name, type: text, nullable: false, default: ""}
            - {name: phone, type: text}
            - {name: visits, type: integer}
            - {name: created_at, type: integer}
            - {name: source, type: text, default: import}
            indexes:
            - {name: contacts_email, columns: [email], unique: false}
            - {name: contacts_email_unique, columns: [email], unique: true}
          orders:
            columns:
            - {name: id, type: integer, primary_key: true}
            - {name: contact_id, type: integer, nullable: false, references: {table: contacts, column: id}}
            - {name: amount, type: integer}
            indexes:
            - {name: orders_contact, columns: [contact_id], unique: false}
          tags:
            columns:
            - {name: id, type: integer, primary_key: true}
            - {name: label, type: text, nullable: false}
          contact_tags:
            columns:
            - {name: id, type: integer, primary_key: true}
            - {name: contact_id, type: integer, nullable: false, references: {table: contacts, column: id}}
            - {name: tag_id, type: integer, nullable: false, references: {table: tags, column: id}}
            - {name: since, type: integer}
            indexes:
            - {name: contact_tags_pair, columns: [contact_id, tag_id], unique: true}
        """

    static func jobYAML(schema: Bool) -> String {
        """
        version: 1
        \(schema ? "schema: schema.yaml\n" : "")dedupe:
          - entity: contacts
            key: email
            normalize: [trim, lowercase]
            winner:
              - created_at: asc
            merge:
              phone: fill_null
              visits: sum
            references: repoint
            archive: true
        batch: {size: 40}
        """
    }

    /// The column whose NULLs the migration fills, and its default.
    static let backfilled = (table: "contacts", column: "name", value: "")

    /// Phase boundaries of one uninterrupted run, in seconds since its process started.
    struct Calibration: CustomStringConvertible {
        var migrationEnd: Double
        /// When the rebuild step was reported, right after its cut-over committed.
        var rebuildEnd: Double?
        var firstBatch: Double
        var lastBatch: Double
        var end: Double
        /// Migration steps a first run applies before its first batch.
        var stepsBeforeDedupe: Int
        var description: String {
            String(
                format: "migration until %.3f s (rebuild done at %.3f s), batches %.3f–%.3f s, exit at %.3f s", migrationEnd,
                rebuildEnd ?? -1, firstBatch, lastBatch, end)
        }
    }

    /// The result of an uninterrupted run of a job on a copy of the template.
    struct Reference {
        var job: String
        var path: String
        var calibration: Calibration
        var deleted: Int
        var batches: Int
        var migrates: Bool
    }

    final class Fixture {
        let dir: URL
        let template: String
        /// Original user tables and their columns, in table order.
        let columns: [String: [String]]
        let tables: [String]
        var full: Reference!
        var dedupeOnly: Reference!

        init(dir: URL, template: String, columns: [String: [String]], tables: [String]) {
            self.dir = dir
            self.template = template
            self.columns = columns
            self.tables = tables
        }
    }

    static let fixtureLock = NSLock()
    static var sharedFixture: Fixture?
    static var fixtureError: Error?

    /// Built once per class: the template database, the job files, and the two references.
    static func fixture() throws -> Fixture {
        try fixtureLock.withLock {
            if let fixture = sharedFixture { return fixture }
            if let error = fixtureError { throw error }
            do {
                let fixture = try buildFixture()
                sharedFixture = fixture
                return fixture
            } catch {
                fixtureError = error
                throw error
            }
        }
    }

    static func buildFixture() throws -> Fixture {
        let started = Date()
        let dir = try TestSupport.scratchDirectory("CrashHarness")
        let template = dir.appendingPathComponent("template.sqlite").path
        let queue = try DatabaseQueue(path: template)
        try queue.write { db in try db.execute(sql: fixtureSQL) }
        let (tables, columns) = try queue.read { db -> ([String], [String: [String]]) in
            let tables = try String.fetchAll(
                db,
                sql: """
                    SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid
                    """)
            var columns: [String: [String]] = [:]
            for table in tables {
                columns[table] = try Row.fetchAll(db, sql: "PRAGMA table_info(\(table.sqlIdentifier))").map { $0["name"] as String }
            }
            return (tables, columns)
        }
        try queue.close()
        try TestSupport.writeFile(schemaYAML, to: dir.appendingPathComponent("schema.yaml").path)
        let fullJob = try TestSupport.writeFile(jobYAML(schema: true), to: dir.appendingPathComponent("job.yaml").path)
        let dedupeJob = try TestSupport.writeFile(jobYAML(schema: false), to: dir.appendingPathComponent("dedupe-job.yaml").path)
        let fixture = Fixture(dir: dir, template: template, columns: columns, tables: tables)
        fixture.full = try reference(job: fullJob, name: "reference-full.sqlite", fixture: fixture, migrates: true)
        fixture.dedupeOnly = try reference(job: dedupeJob, name: "reference-dedupe.sqlite", fixture: fixture, migrates: false)
        log(
            "fixture: \(contactRows) contacts (\(groups) duplicate groups), \(orderRows) orders, link table; built and calibrated in \(format(Date().timeIntervalSince(started))) s"
        )
        return fixture
    }

    /// Runs `job` uninterrupted on a copy of the template, timing its events (the calibration).
    static func reference(job: String, name: String, fixture: Fixture, migrates: Bool) throws -> Reference {
        let path = fixture.dir.appendingPathComponent(name).path
        try FileManager.default.copyItem(atPath: fixture.template, toPath: path)
        let process = Process()
        process.executableURL = TestSupport.executable
        process.arguments = ["run", job, "--database", path, "--format", "json"]
        let out = Pipe()
        process.standardOutput = out
        let errFile = path + ".stderr"
        _ = FileManager.default.createFile(atPath: errFile, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: errFile)
        let started = Date()
        try process.run()
        var buffer = Data()
        var events: [(Double, [String: Any])] = []
        while true {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            let now = Date().timeIntervalSince(started)
            buffer.append(chunk)
            while let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] { events.append((now, object)) }
            }
        }
        process.waitUntilExit()
        let end = Date().timeIntervalSince(started)
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let stderr = (try? String(contentsOfFile: errFile, encoding: .utf8)) ?? ""
            throw WinnowError.internal("the uninterrupted reference run of \(job) failed (status \(process.terminationStatus)): \(stderr)")
        }
        let batchTimes = events.filter { ($0.1["event"] as? String) == "batch" }.map(\.0)
        guard let firstBatch = batchTimes.first, let lastBatch = batchTimes.last,
            let summary = events.last(where: { ($0.1["event"] as? String) == "summary" })?.1
        else {
            throw WinnowError.internal("the reference run of \(job) reported no batches: \(events.map(\.1))")
        }
        let migrationEnd = events.filter { ($0.1["event"] as? String) == "migration" && $0.0 <= firstBatch }.map(\.0).last ?? 0
        let rebuildEnd = events.first { ($0.1["event"] as? String) == "migration" && ($0.1["rebuild"] as? Bool) == true }?.0
        let stepsBeforeDedupe = events.filter { ($0.1["event"] as? String) == "migration" && $0.0 <= firstBatch }.count
        let calibration = Calibration(
            migrationEnd: migrationEnd, rebuildEnd: rebuildEnd, firstBatch: firstBatch, lastBatch: lastBatch, end: end,
            stepsBeforeDedupe: stepsBeforeDedupe)
        // The reference is only read from now on (by several connections at once): no WAL.
        let queue = try DatabaseQueue(path: path)
        _ = try queue.writeWithoutTransaction { try String.fetchOne($0, sql: "PRAGMA journal_mode = DELETE") }
        try queue.close()
        let reference = Reference(
            job: job, path: path, calibration: calibration, deleted: summary["deleted"] as? Int ?? -1,
            batches: summary["batches"] as? Int ?? -1, migrates: migrates)
        log(
            "calibration of \(URL(fileURLWithPath: job).lastPathComponent): \(calibration); \(reference.batches) batches, \(reference.deleted) deleted, \(summary["repointed"] ?? "?") re-pointed, \(summary["children_deleted"] ?? "?") link rows deleted, \(summary["updated"] ?? "?") merged"
        )
        return reference
    }

    override class func tearDown() {
        Tally.shared.printSummary()
        if let fixture = sharedFixture {
            if Tally.shared.failed {
                log("kept \(fixture.dir.path) for inspection")
            } else {
                try? FileManager.default.removeItem(at: fixture.dir)
            }
        }
        sharedFixture = nil
        super.tearDown()
    }

    // MARK: - Logging, randomness, counters

    static let logLock = NSLock()
    static func log(_ message: String) {
        logLock.withLock {
            print("[CrashHarness] \(message)")
            fflush(stdout)
        }
    }

    static func format(_ seconds: Double) -> String { String(format: "%.3f", seconds) }

    /// Seeded: the same seed gives the same kills.
    typealias SplitMix = SplitMix64

    /// Where a kill landed, told from the database it left.
    enum Phase: String, CaseIterable {
        case startup, migration, discovery, dedupe, finishing
    }

    /// Kills and failures of the whole suite, for the final summary line.
    final class Tally {
        static let shared = Tally()
        let lock = NSLock()
        var kills: [Phase: Int] = [:]
        var rebuildKills = 0
        var cutoverKills = 0
        var missed = 0
        var completions = 0
        var failures: [String] = []
        var suiteStarted: Date?
        var failed: Bool { lock.withLock { !failures.isEmpty } }

        func start() { lock.withLock { if suiteStarted == nil { suiteStarted = Date() } } }
        func kill(_ phase: Phase, rebuild: Bool, copied: Bool = false) {
            lock.withLock {
                kills[phase, default: 0] += 1
                if rebuild { rebuildKills += 1 }
                if copied { cutoverKills += 1 }
            }
        }
        func fail(_ message: String) {
            lock.withLock { failures.append(message) }
            CrashHarnessTests.log("FAILURE: \(message)")
        }

        func printSummary() {
            let text: String = lock.withLock {
                let total = kills.values.reduce(0, +)
                let phases = Phase.allCases.map { "\($0.rawValue) \(kills[$0, default: 0])" }.joined(separator: ", ")
                let seconds = suiteStarted.map { Date().timeIntervalSince($0) } ?? 0
                return "SUMMARY: \(total) kills (\(phases); \(rebuildKills) of the migration kills inside the table rebuild, "
                    + "\(cutoverKills) of them with the copy complete: replay or cut-over), "
                    + "\(missed) planned kills came too late (the run had finished), \(completions) resumed runs completed and compared, "
                    + "\(failures.count) failures, total \(String(format: "%.1f", seconds)) s"
            }
            CrashHarnessTests.log(text)
        }
    }

    // MARK: - Processes

    enum Outcome {
        case killed
        case exited(Int32, String)
    }

    /// Starts `winnow ARGS`, and kills it with SIGKILL after `delay` seconds if it still runs.
    static func runAndKill(_ arguments: [String], after delay: Double, scratch: String) throws -> (Outcome, pid: Int32, launched: Date) {
        let process = Process()
        process.executableURL = TestSupport.executable
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        let errFile = scratch + ".stderr"
        _ = FileManager.default.createFile(atPath: errFile, contents: nil)
        let errHandle = FileHandle(forWritingAtPath: errFile)
        process.standardError = errHandle
        let started = Date()
        try process.run()
        let pid = process.processIdentifier
        let remaining = delay - Date().timeIntervalSince(started)
        if remaining > 0 { Thread.sleep(forTimeInterval: remaining) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
        try? errHandle?.close()
        if process.terminationReason == .uncaughtSignal {
            return (
                process.terminationStatus == SIGKILL ? .killed : .exited(-process.terminationStatus, "signal \(process.terminationStatus)"),
                pid, started
            )
        }
        let stderr = (try? String(contentsOfFile: errFile, encoding: .utf8)) ?? ""
        return (.exited(process.terminationStatus, stderr), pid, started)
    }

    /// The longest a command may take from its launch to the moment it holds the run lock and
    /// records its run: a dead holder's lock is taken over at once (no --wait, no retry).
    static let lockTakeover: Double = 2.0

    /// Seconds from `launched` to the `started_at` of run `id` (the newest run if nil).
    static func secondsToStart(_ path: String, run id: Int64?, launched: Date) throws -> Double? {
        let queue = try connection(path)
        defer { try? queue.close() }
        let text = try queue.inDatabase { db in
            try String.fetchOne(
                db, sql: "SELECT started_at FROM winnow_runs WHERE id = coalesce(?, (SELECT max(id) FROM winnow_runs))",
                arguments: [id])
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let text, let date = formatter.date(from: text) else { return nil }
        return date.timeIntervalSince(launched)
    }

    /// The objects of a JSON-lines output.
    static func jsonLines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// `winnow history`: the status of each run.
    static func historyStatuses(_ db: String) throws -> [Int64: String] {
        let result = try TestSupport.winnow(["history", "--database", db, "--format", "json"])
        guard result.status == 0 else { throw WinnowError.internal("winnow history exited \(result.status): \(result.stderr)") }
        var statuses: [Int64: String] = [:]
        for object in jsonLines(result.stdout) {
            if let id = (object["run_id"] as? NSNumber)?.int64Value, let status = object["status"] as? String { statuses[id] = status }
        }
        return statuses
    }

    // MARK: - Checks after a kill

    struct Inspection {
        var phase: Phase
        var runID: Int64?
        var detail: String
        var insideRebuild = false
        var copyComplete = false
        var problems: [String] = []
        /// The run had committed its `completed` status when the kill landed (while the process
        /// was closing its database, which checkpoints the WAL): the kill came too late.
        var finished = false
    }

    static func connection(_ path: String) throws -> DatabaseQueue {
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.label = "crash-harness"
        return try DatabaseQueue(path: path, configuration: config)
    }

    static func exactlyEqual(_ a: DatabaseValue, _ b: DatabaseValue) -> Bool {
        switch (a.storage, b.storage) {
        case (.null, .null): return true
        case let (.int64(x), .int64(y)): return x == y
        case let (.double(x), .double(y)): return x.bitPattern == y.bitPattern
        case let (.string(x), .string(y)): return x == y
        case let (.blob(x), .blob(y)): return x == y
        default: return false
        }
    }

    /// Whether `value`, found in the database or a journal image, is the original `original`
    /// of `table.column` (a NULL the migration backfilled counts as the default).
    static func matches(_ original: DatabaseValue, _ value: DatabaseValue, table: String, column: String, migrates: Bool) -> Bool {
        if exactlyEqual(original, value) { return true }
        if migrates, table == backfilled.table, column == backfilled.column, original.isNull {
            return exactlyEqual(value, backfilled.value.databaseValue)
        }
        return false
    }

    /// The state of the run that was just killed, and everything section 5 promises about it.
    static func inspect(_ path: String, fixture: Fixture, reference: Reference, previousRun: Int64) throws -> Inspection {
        let queue = try connection(path)
        defer { try? queue.close() }
        return try queue.inDatabase { db -> Inspection in
            var inspection = Inspection(phase: .startup, runID: nil, detail: "")
            func problem(_ text: String) { inspection.problems.append(text) }

            // 1. The file is sound and consistent.
            let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            if integrity != ["ok"] { problem("integrity_check: \(integrity.prefix(5))") }
            let violations = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check")
            if !violations.isEmpty {
                problem("foreign_key_check: \(violations.count) violations, first \(violations.prefix(3).map { "\($0)" })")
            }

            // 2. Where the kill landed.
            let hasRuns = try db.tableExists("winnow_runs")
            var totalDeleted = 0
            var stepsRecorded = 0
            if hasRuns,
                let run = try Row.fetchOne(
                    db, sql: "SELECT id, status, migration_steps, batches, deleted FROM winnow_runs ORDER BY id DESC LIMIT 1")
            {
                let id: Int64 = run[0]
                if id > previousRun, (run[1] as String) == "running" {
                    inspection.runID = id
                    stepsRecorded = run[2]
                    inspection.detail = "run \(id), migration_steps \(run[2] as Int), batches \(run[3] as Int), deleted \(run[4] as Int)"
                } else if id > previousRun, (run[1] as String) == "completed" {
                    inspection.finished = true
                } else if id > previousRun {
                    problem("the newest run \(id) has status \(run[1] as String) after its process was killed")
                }
                totalDeleted = try Int.fetchOne(db, sql: "SELECT coalesce(sum(deleted), 0) FROM winnow_runs WHERE command = 'run'") ?? 0
            }
            let rebuildTables = try String.fetchAll(
                db,
                sql: """
                    SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'winnow\\_rebuild\\_%' ESCAPE '\\'
                    """)
            let nameNotNull = try Int.fetchOne(db, sql: "SELECT \"notnull\" FROM pragma_table_info('contacts') WHERE name = 'name'") ?? 0
            let hasSource = try Int.fetchOne(db, sql: "SELECT count(*) FROM pragma_table_info('contacts') WHERE name = 'source'") ?? 0
            let migrated = !reference.migrates || (nameNotNull == 1 && hasSource == 1 && rebuildTables.isEmpty)
            let uniqueIndex =
                try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'contacts_email_unique'") ?? 0
            if inspection.runID == nil {
                inspection.phase = .startup
                inspection.detail = "no run recorded yet"
            } else if !migrated {
                inspection.phase = .migration
                if let rebuild = rebuildTables.first {
                    let copied = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(rebuild.sqlIdentifier)") ?? 0
                    let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM contacts") ?? 0
                    inspection.insideRebuild = true
                    inspection.copyComplete = copied >= rows
                    inspection.detail +=
                        "; rebuild of contacts: \(copied) of \(rows) rows copied\(copied >= rows ? " (replay or cut-over)" : "")"
                } else if hasSource == 0 {
                    inspection.detail += "; before ADD COLUMN"
                } else {
                    inspection.detail += "; after ADD COLUMN, before the rebuild"
                }
            } else if previousRun == 0, stepsRecorded < reference.calibration.stepsBeforeDedupe {
                // A first run that finished its last step (the cut-over) but had not recorded it.
                inspection.phase = .migration
                inspection.detail += "; the migration is complete, but its last step was not recorded yet"
            } else if uniqueIndex == 1 || totalDeleted >= reference.deleted {
                inspection.phase = .finishing
            } else if (try Int.fetchOne(db, sql: "SELECT batches FROM winnow_runs WHERE id = ?", arguments: [inspection.runID ?? 0]) ?? 0)
                == 0
            {
                inspection.phase = .discovery
            } else {
                inspection.phase = .dedupe
            }

            // 3. The run counters match the journal: the batch in flight left neither.
            if hasRuns, try db.tableExists("winnow_journal") {
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT r.id, r.deleted, r.children_deleted, r.updated, r.repointed, r.hashed,
                          (SELECT count(*) FROM (\(try ScenarioKit.journalEntries(db))) AS e
                            WHERE e.run_id = r.id AND e.op = 'delete' AND e.tbl = 'contacts'),
                          (SELECT count(*) FROM (\(try ScenarioKit.journalEntries(db))) AS e
                            WHERE e.run_id = r.id AND e.op = 'delete' AND e.tbl <> 'contacts'),
                          (SELECT count(*) FROM winnow_journal j JOIN winnow_journal_shapes s ON s.id = j.shape_id
                            WHERE j.run_id = r.id AND j.op = 'update' AND s.tbl = 'contacts' AND json_array_length(s.columns) > 1),
                          (SELECT count(*) FROM winnow_journal j JOIN winnow_journal_shapes s ON s.id = j.shape_id
                            WHERE j.run_id = r.id AND j.op = 'update' AND s.tbl <> 'contacts'),
                          (SELECT count(*) FROM winnow_journal j JOIN winnow_journal_shapes s ON s.id = j.shape_id
                            WHERE j.run_id = r.id AND j.op = 'update' AND s.tbl = 'contacts' AND json_array_length(s.columns) = 1)
                        FROM winnow_runs r WHERE r.command = 'run' AND r.archive
                        """)
                for row in rows {
                    let names = ["deleted", "children_deleted", "updated", "repointed", "hashed"]
                    for (offset, name) in names.enumerated() where (row[1 + offset] as Int) != (row[6 + offset] as Int) {
                        problem(
                            "run \(row[0] as Int64): winnow_runs.\(name) = \(row[1 + offset] as Int) but the journal holds \(row[6 + offset] as Int) such entries"
                        )
                    }
                }
            }

            // 4. Every original row is still there (same rowid, same content) or journaled.
            problemsOfRows(db, fixture: fixture, reference: reference).forEach(problem)
            return inspection
        }
    }

    /// Every row of the template is in its table with its content, or (changed or gone) has a
    /// journal entry whose first before-image is that content; a gone row has a delete entry;
    /// no row is there that the template did not have; no row journaled as deleted is there.
    static func problemsOfRows(_ db: Database, fixture: Fixture, reference: Reference) -> [String] {
        var problems: [String] = []
        do {
            try db.execute(sql: "ATTACH DATABASE ? AS orig", arguments: [fixture.template])
            defer { try? db.execute(sql: "DETACH DATABASE orig") }
            var shapes: [Int64: (table: String, columns: [String])] = [:]
            if try db.tableExists("winnow_journal_shapes") {
                for row in try Row.fetchAll(db, sql: "SELECT id, tbl, columns FROM main.winnow_journal_shapes") {
                    let columns = try JSONDecoder().decode([String].self, from: Data((row[2] as String).utf8))
                    shapes[row[0]] = (row[1], columns)
                }
            }
            let hasJournal = try db.tableExists("winnow_journal")
            for table in fixture.tables {
                let columns = fixture.columns[table]!
                let t = table.sqlIdentifier
                let same = columns.map { name -> String in
                    let c = name.sqlIdentifier
                    let exact = "(c.\(c) IS o.\(c) AND typeof(c.\(c)) = typeof(o.\(c)))"
                    if reference.migrates, table == backfilled.table, name == backfilled.column {
                        return
                            "(\(exact) OR (o.\(c) IS NULL AND c.\(c) IS '\(backfilled.value.replacingOccurrences(of: "'", with: "''"))'))"
                    }
                    return exact
                }.joined(separator: " AND ")
                let selected = columns.map { "o.\($0.sqlIdentifier)" }.joined(separator: ", ")
                // Rows whose original content is not in the table as it was.
                var mismatched: [Int64: (present: Bool, values: [DatabaseValue])] = [:]
                for row in try Row.fetchAll(
                    db,
                    sql: """
                        SELECT o.rowid, c.rowid IS NOT NULL, \(selected) FROM orig.\(t) AS o LEFT JOIN main.\(t) AS c ON c.rowid = o.rowid
                        WHERE c.rowid IS NULL OR NOT (\(same))
                        """)
                {
                    let present: Bool = row[1]
                    mismatched[row[0]] = (present: present, values: (0..<columns.count).map { row[2 + $0] as DatabaseValue })
                }
                let extra = try Int64.fetchAll(
                    db, sql: "SELECT rowid FROM main.\(t) WHERE rowid NOT IN (SELECT rowid FROM orig.\(t)) LIMIT 5")
                if !extra.isEmpty { problems.append("\(table): rows that were never in the table: rowid \(extra)") }
                let tableShapes = shapes.filter { $0.value.table == table }
                // The typed journal keeps the rule's deleted losers in their own values, each
                // statement's rows after the `winnow_journal` entry it follows.
                let typed = try ScenarioKit.typedJournals(db).filter { $0.table == table }
                guard hasJournal, !tableShapes.isEmpty || !typed.isEmpty else {
                    if !mismatched.isEmpty {
                        let sample = mismatched.keys.sorted().prefix(5)
                        problems.append(
                            "\(table): \(mismatched.count) rows changed or missing, and no journal for the table (rowid \(Array(sample)))")
                    }
                    continue
                }
                let shapeList = tableShapes.keys.map(String.init).joined(separator: ",")
                let resurrected = try Int64.fetchAll(
                    db,
                    sql: """
                        SELECT j.rid FROM main.winnow_journal AS j WHERE j.op = 'delete' AND j.shape_id IN (\(shapeList))
                        AND j.rid IN (SELECT rowid FROM main.\(t)) LIMIT 5
                        """)
                let resurrectedTyped = try typed.flatMap { journal in
                    try Int64.fetchAll(
                        db, sql: "SELECT winnow_rid FROM \(journal.relation) WHERE winnow_rid IN (SELECT rowid FROM main.\(t)) LIMIT 5")
                }
                if !resurrected.isEmpty || !resurrectedTyped.isEmpty {
                    problems.append("\(table): rows journaled as deleted are still in the table: rowid \(resurrected + resurrectedTyped)")
                }
                guard !mismatched.isEmpty else { continue }
                var entries: [Int64: [(order: [Int64], op: String, columns: [String], values: [DatabaseValue])]] = [:]
                let cursor = try Row.fetchCursor(
                    db, sql: "SELECT rid, op, shape_id, image, id FROM main.winnow_journal WHERE shape_id IN (\(shapeList)) ORDER BY id")
                while let row = try cursor.next() {
                    let rid: Int64 = row[0]
                    guard mismatched[rid] != nil else { continue }
                    let shape: Int64 = row[2]
                    let image: Data = row[3]
                    entries[rid, default: []].append(
                        (order: [row[4], 0, 0], op: row[1], columns: shapes[shape]!.columns, values: try ValueCodec.decode([UInt8](image))))
                }
                for journal in typed {
                    let shapeColumns = journal.columns
                    let values = shapeColumns.map(\.sqlIdentifier).joined(separator: ", ")
                    let cursor = try Row.fetchCursor(
                        db, sql: "SELECT winnow_rid, winnow_after, winnow_seq, \(values) FROM \(journal.relation) ORDER BY winnow_seq")
                    while let row = try cursor.next() {
                        let rid: Int64 = row[0]
                        guard mismatched[rid] != nil else { continue }
                        entries[rid, default: []].append(
                            (
                                order: [row[1], 1, row[2]], op: "delete", columns: shapeColumns,
                                values: shapeColumns.indices.map { row[3 + $0] as DatabaseValue }
                            ))
                    }
                }
                var bad: [String] = []
                var badCount = 0
                for (rid, original) in mismatched.sorted(by: { $0.key < $1.key }) {
                    func report(_ text: String) {
                        badCount += 1
                        if bad.count < 5 { bad.append("rowid \(rid) \(text)") }
                    }
                    let list = (entries[rid] ?? []).sorted { $0.order.lexicographicallyPrecedes($1.order) }
                    // The first image that covers any of the original columns is the original row.
                    guard let first = list.first(where: { entry in entry.columns.contains(where: columns.contains) }) else {
                        report(original.present ? "changed without a journal entry" : "missing and not journaled")
                        continue
                    }
                    let shapeColumns = first.columns
                    let image = first.values
                    guard image.count == shapeColumns.count else {
                        report("has a journal image of \(image.count) values for \(shapeColumns.count) columns")
                        continue
                    }
                    for (index, column) in columns.enumerated() {
                        guard let at = shapeColumns.firstIndex(of: column) else { continue }
                        if !matches(original.values[index], image[at], table: table, column: column, migrates: reference.migrates) {
                            report("journal before-image \(column) = \(image[at]), original \(original.values[index])")
                            break
                        }
                    }
                    if !original.present, !list.contains(where: { $0.op == "delete" }) {
                        report("is missing but journaled only as \(list.map(\.op))")
                    }
                }
                if badCount > 0 {
                    problems.append("\(table): \(badCount) original rows lost or wrongly journaled, e.g. \(bad.joined(separator: "; "))")
                }
            }
        } catch {
            problems.append("row check failed: \(error)")
        }
        return problems
    }

    // MARK: - Checks after the job is finished

    /// The database equals `other` (user schema and every user table's rows, rowids included),
    /// and holds nothing of a rebuild or a lock. Rows are compared by SQL (EXCEPT both ways):
    /// exact but for an INTEGER that equals a REAL, which this fixture never stores.
    static func compare(_ path: String, with other: String, otherName: String = "the uninterrupted run's") throws -> [String] {
        var problems: [String] = []
        let queue = try connection(path)
        defer { try? queue.close() }
        try queue.inDatabase { db in
            let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            if integrity != ["ok"] { problems.append("integrity_check: \(integrity.prefix(5))") }
            if try !Row.fetchAll(db, sql: "PRAGMA foreign_key_check").isEmpty { problems.append("foreign_key_check is not empty") }
            let leftovers = try String.fetchAll(
                db,
                sql: """
                    SELECT type || ' ' || name FROM sqlite_master
                    WHERE name LIKE 'winnow\\_rebuild%' ESCAPE '\\' OR name LIKE 'winnow\\_capture%' ESCAPE '\\'
                    """)
            if !leftovers.isEmpty { problems.append("rebuild leftovers: \(leftovers)") }
            if let holder = try Row.fetchOne(db, sql: "SELECT run_id, pid FROM winnow_lock") {
                problems.append("the lock is still held after the run completed: \(holder)")
            }
            try db.execute(sql: "ATTACH DATABASE ? AS ref", arguments: [other])
            defer { try? db.execute(sql: "DETACH DATABASE ref") }
            func schema(_ name: String) throws -> [String] {
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM \(name).sqlite_master
                        WHERE lower(name) NOT LIKE 'winnow\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type, name
                        """)
            }
            let mine = try schema("main")
            let theirs = try schema("ref")
            if mine != theirs {
                problems.append(
                    "user schema differs from \(otherName): only here \(mine.filter { !theirs.contains($0) }), only there \(theirs.filter { !mine.contains($0) })"
                )
            }
            let tables = try String.fetchAll(
                db,
                sql: """
                    SELECT name FROM ref.sqlite_master WHERE type = 'table' AND lower(name) NOT LIKE 'winnow\\_%' ESCAPE '\\'
                    AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name
                    """)
            for table in tables {
                let columns = try Row.fetchAll(db, sql: "PRAGMA ref.table_info(\(table.sqlIdentifier))").map { $0["name"] as String }
                let mineColumns = try Row.fetchAll(db, sql: "PRAGMA main.table_info(\(table.sqlIdentifier))").map { $0["name"] as String }
                guard mineColumns == columns else {
                    problems.append("\(table): columns \(mineColumns), \(otherName) has \(columns)")
                    continue
                }
                let quoted = (["rowid"] + columns.map(\.sqlIdentifier)).joined(separator: ", ")
                let t = table.sqlIdentifier
                let onlyHere =
                    try Int.fetchOne(
                        db, sql: "SELECT count(*) FROM (SELECT \(quoted) FROM main.\(t) EXCEPT SELECT \(quoted) FROM ref.\(t))") ?? -1
                let onlyThere =
                    try Int.fetchOne(
                        db, sql: "SELECT count(*) FROM (SELECT \(quoted) FROM ref.\(t) EXCEPT SELECT \(quoted) FROM main.\(t))") ?? -1
                let counts = try Row.fetchOne(db, sql: "SELECT (SELECT count(*) FROM main.\(t)), (SELECT count(*) FROM ref.\(t))")!
                if onlyHere != 0 || onlyThere != 0 || (counts[0] as Int) != (counts[1] as Int) {
                    let sample = try Row.fetchAll(db, sql: "SELECT \(quoted) FROM main.\(t) EXCEPT SELECT \(quoted) FROM ref.\(t) LIMIT 3")
                        .map { "\($0)" }
                    let missing = try Row.fetchAll(db, sql: "SELECT \(quoted) FROM ref.\(t) EXCEPT SELECT \(quoted) FROM main.\(t) LIMIT 3")
                        .map { "\($0)" }
                    problems.append(
                        "\(table): \(counts[0] as Int) rows vs \(counts[1] as Int) in \(otherName); \(onlyHere) rows only here, e.g. \(sample); \(onlyThere) only there, e.g. \(missing)"
                    )
                }
            }
        }
        return problems
    }

    // MARK: - Part 1: kills all over the run, then resume

    /// Scenario numbers handed out to the workers until enough kills have landed.
    final class Shared {
        let lock = NSLock()
        private var next = 0
        private(set) var kills = 0
        let target: Int
        let maxScenarios: Int
        let single: Bool

        init(target: Int, maxScenarios: Int, single: Bool) {
            self.target = target
            self.maxScenarios = maxScenarios
            self.single = single
        }

        func take() -> Int? {
            lock.withLock { () -> Int? in
                if single {
                    defer { next += 1 }
                    return next == 0 ? 0 : nil
                }
                guard kills < target, next < maxScenarios else { return nil }
                defer { next += 1 }
                return next
            }
        }

        func add(_ n: Int) { lock.withLock { kills += n } }
        var total: Int { lock.withLock { kills } }
    }

    func testKilledRunsLoseNothingAndResumeToTheSameResult() throws {
        Tally.shared.start()
        let started = Date()
        let fixture = try Self.fixture()
        let reference = fixture.full!
        let replay = Self.env["WINNOW_CRASH_REPLAY"].flatMap { text -> UInt64? in
            let t = text.lowercased()
            return t.hasPrefix("0x") ? UInt64(t.dropFirst(2), radix: 16) : UInt64(t)
        }
        let forced = Self.env["WINNOW_CRASH_DELAYS"].map {
            $0.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        }
        let target = Self.mainKills
        let shared = Shared(target: target, maxScenarios: target * 3, single: replay != nil)
        let workers = replay == nil ? Self.workers : 1
        Self.log(
            "kill suite: at least \(target) kills, \(workers) worker(s), base seed 0x\(String(Self.baseSeed, radix: 16)), \(reference.calibration)"
        )
        let failuresBefore = Tally.shared.lock.withLock { Tally.shared.failures.count }
        let group = DispatchGroup()
        for _ in 0..<workers {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                while let index = shared.take() {
                    let seed = replay ?? (Self.baseSeed &+ UInt64(index))
                    shared.add(Self.killScenario(index: index, seed: seed, forcedDelays: forced, fixture: fixture, reference: reference))
                }
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
        group.wait()
        let kills = shared.total
        Self.log("kill suite: \(kills) kills in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        let failures = Tally.shared.lock.withLock { Array(Tally.shared.failures[failuresBefore...]) }
        for failure in failures { XCTFail(failure) }
        if replay == nil { XCTAssertGreaterThanOrEqual(kills, target, "too few kills landed before their run finished") }
    }

    /// One scenario: a copy of the template, one to three kills (each after a resume), each
    /// followed by the checks; then the job run to completion and compared with the reference.
    /// Returns the number of kills.
    static func killScenario(index: Int, seed: UInt64, forcedDelays: [Double]?, fixture: Fixture, reference: Reference) -> Int {
        var random = SplitMix(state: seed)
        let c = reference.calibration
        let tag = "scenario \(index) seed 0x\(String(seed, radix: 16))"
        let dir = fixture.dir.appendingPathComponent("s\(index)")
        let db = dir.appendingPathComponent("db.sqlite").path
        var kills = 0
        var failed = false
        func fail(_ text: String) {
            failed = true
            Tally.shared.fail("\(tag): \(text)")
        }
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: fixture.template, toPath: db)
            // The first kill anywhere in the run (stratified so that the short migration gets its
            // share); one scenario in three kills the resumed run again, some a third time.
            let stratum = random.unit()
            let u = random.unit()
            var delays: [Double] = []
            switch stratum {
            case ..<0.22: delays.append(u * c.migrationEnd)
            // The end of the table rebuild: the last copy batches, the replay and the cut-over.
            case ..<0.30: delays.append(max(0, (c.rebuildEnd ?? c.migrationEnd) - 0.06 + u * 0.07))
            case ..<0.38: delays.append(c.migrationEnd + u * (c.firstBatch - c.migrationEnd))
            case ..<0.93: delays.append(c.firstBatch + u * (c.lastBatch - c.firstBatch))
            default: delays.append(c.lastBatch + u * (c.end - c.lastBatch))
            }
            let chain = random.unit()
            let extra = chain < 0.08 ? 2 : (chain < 0.33 ? 1 : 0)
            for _ in 0..<extra { delays.append(random.uniform(0.05, 0.8 * c.end)) }
            if let forcedDelays, !forcedDelays.isEmpty { delays = forcedDelays }

            var previousRun: Int64 = 0
            var killedRuns: [Int64] = []
            var completed = false
            let arguments = ["run", reference.job, "--database", db, "--format", "json"]
            for (attempt, delay) in delays.enumerated() {
                let (outcome, pid, launched) = try runAndKill(arguments, after: delay, scratch: db)
                switch outcome {
                case .exited(0, _):
                    Tally.shared.lock.withLock { Tally.shared.missed += 1 }
                    log("\(tag): kill \(attempt + 1) at \(format(delay)) s came too late, the run (pid \(pid)) completed")
                    completed = true
                case let .exited(status, stderr):
                    fail("kill \(attempt + 1) at \(format(delay)) s: the run exited \(status) before the kill: \(stderr.prefix(400))")
                    return kills
                case .killed:
                    let checking = Date()
                    let inspection = try inspect(db, fixture: fixture, reference: reference, previousRun: previousRun)
                    if inspection.finished, inspection.problems.isEmpty {
                        Tally.shared.lock.withLock { Tally.shared.missed += 1 }
                        log(
                            "\(tag): kill \(attempt + 1) at \(format(delay)) s landed after the run (pid \(pid)) had completed, while it closed"
                        )
                        completed = true
                        break
                    }
                    kills += 1
                    Tally.shared.kill(inspection.phase, rebuild: inspection.insideRebuild, copied: inspection.copyComplete)
                    log(
                        "\(tag): kill \(attempt + 1)/\(delays.count) at \(format(delay)) s (pid \(pid)) → \(inspection.phase.rawValue): \(inspection.detail) [checked in \(format(Date().timeIntervalSince(checking))) s]"
                    )
                    for text in inspection.problems {
                        fail("kill \(attempt + 1) at \(format(delay)) s (\(inspection.phase.rawValue): \(inspection.detail)): \(text)")
                    }
                    if let id = inspection.runID {
                        if !killedRuns.isEmpty, let wait = try secondsToStart(db, run: id, launched: launched), wait > lockTakeover {
                            fail("kill \(attempt + 1): the resumed run \(id) took \(format(wait)) s to take the killed run's lock")
                        }
                        killedRuns.append(id)
                        previousRun = id
                        let statuses = try historyStatuses(db)
                        if statuses[id] != "interrupted" {
                            fail(
                                "kill \(attempt + 1) at \(format(delay)) s: winnow history shows run \(id) as \(statuses[id] ?? "missing"), not interrupted"
                            )
                        }
                    }
                }
                if completed { break }
            }
            // Run the job again, to completion: the dead run's lock must not stand in the way.
            if !completed {
                let began = Date()
                let result = try TestSupport.winnow(arguments)
                if !killedRuns.isEmpty, let wait = try secondsToStart(db, run: nil, launched: began), wait > lockTakeover {
                    fail("the resumed run took \(format(wait)) s to take the killed run's lock")
                }
                let summary = jsonLines(result.stdout).last { ($0["event"] as? String) == "summary" }
                if result.status != 0 || (summary?["status"] as? String) != "completed" {
                    fail(
                        "the resumed run exited \(result.status) (\(summary?["status"] ?? "no summary")) after \(format(Date().timeIntervalSince(began))) s: \(result.stderr.prefix(400))"
                    )
                    return kills
                }
                Tally.shared.lock.withLock { Tally.shared.completions += 1 }
                log("\(tag): resumed run completed in \(format(Date().timeIntervalSince(began))) s")
            }
            let comparing = Date()
            defer { log("\(tag): final state compared in \(format(Date().timeIntervalSince(comparing))) s") }
            for text in try compare(db, with: reference.path) { fail("after completion: \(text)") }
            // The journals of all the runs together still hold every original row that is gone
            // (checked for every third scenario and every chain of kills, to fit the CI budget).
            if index % 3 == 0 || killedRuns.count > 1 || soak {
                let queue = try connection(db)
                let journalProblems = queue.inDatabase { problemsOfRows($0, fixture: fixture, reference: reference) }
                try queue.close()
                for text in journalProblems { fail("after completion: \(text)") }
            }
            if !killedRuns.isEmpty {
                let statuses = try historyStatuses(db)
                for id in killedRuns where statuses[id] != "interrupted" {
                    fail("after completion: winnow history shows killed run \(id) as \(statuses[id] ?? "missing"), not interrupted")
                }
            }
        } catch {
            fail("harness error: \(error)")
        }
        if !failed { try? FileManager.default.removeItem(at: dir) } else { log("\(tag): kept \(dir.path)") }
        return kills
    }

    // MARK: - Part 2: restore of a killed run; the dead lock never blocks

    func testRestoreOfRunKilledDuringDedupeRestoresExactlyWhatItChanged() throws {
        Tally.shared.start()
        let started = Date()
        let fixture = try Self.fixture()
        let reference = fixture.dedupeOnly!
        let c = reference.calibration
        let count = Self.restoreKills
        Self.log("restore suite: \(count) kills during the dedupe batches of a job without a schema; \(c)")
        var landed = 0
        for index in 0..<count {
            let seed = Self.baseSeed &+ 0x1_0000 &+ UInt64(index)
            var random = SplitMix(state: seed)
            let tag = "restore \(index) seed 0x\(String(seed, radix: 16))"
            let window = c.lastBatch - c.firstBatch
            var delay = random.uniform(c.firstBatch + 0.1 * window, c.lastBatch - 0.1 * window)
            let dir = fixture.dir.appendingPathComponent("r\(index)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let db = dir.appendingPathComponent("db.sqlite").path
            let arguments = ["run", reference.job, "--database", db, "--format", "json"]
            // On a noisy machine a run can be faster than the calibration and finish before its
            // kill: start again from the input with the kill earlier (at most three times).
            var attempt = 0
            var killed: (outcome: Outcome, pid: Int32)?
            while attempt < 3 {
                try? FileManager.default.removeItem(atPath: db)
                for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
                try FileManager.default.copyItem(atPath: fixture.template, toPath: db)
                let (outcome, pid, _) = try Self.runAndKill(arguments, after: delay, scratch: db)
                if case .killed = outcome,
                    !(try Self.inspect(db, fixture: fixture, reference: reference, previousRun: 0).finished)
                {
                    killed = (outcome, pid)
                    break
                }
                Self.log("\(tag): the run finished before its kill at \(Self.format(delay)) s (\(outcome)); again, earlier")
                delay = max(0.05, delay * 0.6)
                attempt += 1
            }
            guard let (_, pid) = killed else {
                XCTFail("\(tag): the run was not killed in three attempts (last at \(Self.format(delay)) s)")
                continue
            }
            let inspection = try Self.inspect(db, fixture: fixture, reference: reference, previousRun: 0)
            Tally.shared.kill(inspection.phase, rebuild: false)
            Self.log("\(tag): kill at \(Self.format(delay)) s (pid \(pid)) → \(inspection.phase.rawValue): \(inspection.detail)")
            for text in inspection.problems {
                Tally.shared.fail("\(tag): kill at \(Self.format(delay)) s: \(text)")
                XCTFail("\(tag): kill at \(Self.format(delay)) s: \(text)")
            }
            guard let runID = inspection.runID else {
                XCTFail("\(tag): no run recorded by the killed process")
                continue
            }
            if inspection.phase == .dedupe { landed += 1 }
            let holder = try Self.values(db, "SELECT pid FROM winnow_lock")
            Self.log("\(tag): lock left behind by the killed process \(pid): \(holder)")

            // The dead run's lock does not block: restore starts (and finishes) at once.
            let began = Date()
            let restored = try TestSupport.winnow(["restore", "--database", db, "--run", String(runID), "--format", "json"])
            let seconds = Date().timeIntervalSince(began)
            if inspection.phase == .discovery {
                // On a slow machine the retried kill can land before the first batch: the killed
                // run changed nothing, so restore refuses (65), says so, and changes nothing.
                Self.log("\(tag): restore of run \(runID), killed before its first batch, exited \(restored.status): \(restored.stderr)")
                XCTAssertEqual(restored.status, 65, "\(tag): \(restored.stdout) \(restored.stderr)")
                XCTAssertTrue(restored.stderr.contains("changed no rows"), "\(tag): \(restored.stderr)")
                XCTAssertEqual(try Self.compare(db, with: fixture.template, otherName: "the database before the killed run"), [], tag)
                XCTAssertEqual(try Self.historyStatuses(db)[runID], "interrupted", "\(tag): history of the killed run")
                XCTAssertEqual(try Self.values(db, "SELECT pid FROM winnow_lock"), [], "\(tag): the refused restore left the lock held")
                try? FileManager.default.removeItem(at: dir)
                continue
            }
            Self.log(
                "\(tag): restore of run \(runID) exited \(restored.status) in \(Self.format(seconds)) s: \(Self.jsonLines(restored.stdout).last?["message"] ?? restored.stderr)"
            )
            XCTAssertNotEqual(restored.status, 75, "\(tag): the killed run's lock blocked restore: \(restored.stderr)")
            XCTAssertEqual(restored.status, 0, "\(tag): \(restored.stdout) \(restored.stderr)")
            XCTAssertLessThan(seconds, 20, "\(tag): restore took too long")
            if let wait = try Self.secondsToStart(db, run: nil, launched: began) {
                XCTAssertLessThan(wait, Self.lockTakeover, "\(tag): restore took \(Self.format(wait)) s to take the killed run's lock")
                Self.log("\(tag): restore held the lock \(Self.format(wait)) s after its launch")
            } else {
                XCTFail("\(tag): the restore recorded no run")
            }
            // Content (and user schema) after the restore is the content before the killed run.
            for text in try Self.compare(db, with: fixture.template, otherName: "the database before the killed run") {
                let message = "\(tag): kill at \(Self.format(delay)) s: after restore: \(text)"
                Tally.shared.fail(message)
                XCTFail(message)
            }
            let statuses = try Self.historyStatuses(db)
            XCTAssertEqual(statuses[runID], "interrupted", "\(tag): history of the killed run")
            XCTAssertEqual(try Self.values(db, "SELECT restored_by IS NOT NULL FROM winnow_runs WHERE id = \(runID)"), ["1"], "\(tag)")
            XCTAssertEqual(try Self.values(db, "SELECT pid FROM winnow_lock"), [], "\(tag): restore left the lock held")

            // And the job, run again, still ends where an uninterrupted run ends.
            let again = try TestSupport.winnow(arguments)
            XCTAssertEqual(again.status, 0, "\(tag): \(again.stderr)")
            if again.status == 0 {
                Tally.shared.lock.withLock { Tally.shared.completions += 1 }
                for text in try Self.compare(db, with: reference.path) {
                    Tally.shared.fail("\(tag): after restore and a new run: \(text)")
                    XCTFail("\(tag): after restore and a new run: \(text)")
                }
            }
            try? FileManager.default.removeItem(at: dir)
        }
        Self.log(
            "restore suite: \(count) kills (\(landed) inside the dedupe batches) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s"
        )
        XCTAssertGreaterThan(landed, 0, "no kill landed inside the dedupe batches")
    }

    /// The first column of a query, as text.
    static func values(_ path: String, _ sql: String) throws -> [String] {
        let queue = try connection(path)
        defer { try? queue.close() }
        return try queue.inDatabase { db in try DatabaseValue.fetchAll(db, sql: sql).map { "\($0)" } }
    }
}
