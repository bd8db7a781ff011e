import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// docs/reference.md section 3 ("Table rebuilds, online": other connections keep writing and
/// lose none of their writes); section 5: a run killed by a signal never blocks the next run,
/// and `run` again finishes the job.
final class OnlineRebuildTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("OnlineRebuild")
    }

    override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    // MARK: - Fixture

    struct Item: Equatable, CustomStringConvertible {
        var k: Int64
        var v: String?
        var note: String?
        var description: String { "(\(k), \(v ?? "NULL"), \(note ?? "NULL"))" }
    }

    /// Ids 1...`tagged` have tags (children with ON DELETE CASCADE); the writer never deletes them.
    static let tagged: Int64 = 1000

    /// items (rows rows), an index on k, and tags referencing items with ON DELETE CASCADE.
    func makeItems(_ path: String, rows: Int, wal: Bool) throws {
        let queue = try DatabaseQueue(path: path)
        if wal { _ = try queue.writeWithoutTransaction { try String.fetchOne($0, sql: "PRAGMA journal_mode = WAL") } }
        try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE items (
                        id INTEGER PRIMARY KEY,
                        k INTEGER NOT NULL,
                        v TEXT DEFAULT 'a',
                        note TEXT
                    );
                    CREATE INDEX items_k ON items (k);
                    CREATE TABLE tags (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE, label TEXT);
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
                    INSERT INTO items (id, k, v, note) SELECT i, (i * 7919) % 1000, 'v' || i, CASE WHEN i % 3 = 0 THEN NULL ELSE 'n' || i END FROM n;
                    INSERT INTO tags (item_id, label) SELECT id, 't' || id FROM items WHERE id <= \(Self.tagged);
                    """)
        }
        try queue.close()
    }

    static let itemsColumns = """
              - {name: id, type: integer, primary_key: true}
              - {name: k, type: integer, nullable: false}
        """

    /// The target schema: `change` is the YAML of v and note.
    static func schema(v: String, note: String) -> String {
        """
        version: 2
        tables:
          items:
            columns:
        \(itemsColumns)
              - \(v)
              - \(note)
            indexes:
              - {name: items_k, columns: [k]}
          tags:
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: item_id, type: integer, nullable: false, references: {table: items, column: id}}
              - {name: label, type: text}
        """
    }

    static let slowBatch = "batch: {size: 50, max_transaction_ms: 20, pause_ms: 2}\n"

    func readItems(_ path: String) throws -> [Int64: Item] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            var items: [Int64: Item] = [:]
            let cursor = try Row.fetchCursor(db, sql: "SELECT id, k, v, note FROM items")
            while let row = try cursor.next() { items[row[0]] = Item(k: row[1], v: row[2], note: row[3]) }
            return items
        }
    }

    func strings(_ db: String, _ sql: String) throws -> [String?] { try ScenarioKit.column(db, sql, as: String.self) }

    func leftovers(_ db: String) throws -> [String] {
        try strings(
            db,
            """
            SELECT type || ' ' || name FROM sqlite_master
            WHERE name LIKE 'winnow\\_rebuild%' ESCAPE '\\' OR name LIKE 'winnow\\_capture%' ESCAPE '\\'
               OR name LIKE 'winnow\\_retired%' ESCAPE '\\'
            """
        ).compactMap { $0 }
    }

    // MARK: - Another connection that keeps writing

    /// Seeded, so every run makes the same choices.
    typealias SeededRandom = SplitMix64

    /// Inserts, updates and deletes rows of `items` on its own connection and thread, one
    /// IMMEDIATE transaction each, and keeps the expected content: `model` with every committed
    /// write applied.
    final class Writer {
        let queue: DatabaseQueue
        var random: SeededRandom
        var model: [Int64: Item]
        var live: [Int64]
        let lock = NSLock()
        private var stopRequested = false
        private(set) var committed = 0
        var inserts = 0, updates = 0, deletes = 0
        var failures: [String] = []
        var longestWait: TimeInterval = 0
        let noteNeverNull: Bool
        let done = DispatchSemaphore(value: 0)

        init(path: String, model: [Int64: Item], seed: UInt64, noteNeverNull: Bool) throws {
            var config = Configuration()
            config.busyMode = .timeout(10)
            config.foreignKeysEnabled = true
            config.label = "other-writer"
            queue = try DatabaseQueue(path: path, configuration: config)
            random = SeededRandom(state: seed)
            self.model = model
            live = model.keys.sorted()
            self.noteNeverNull = noteNeverNull
        }

        var committedCount: Int { lock.withLock { committed } }

        func stop() { lock.withLock { stopRequested = true } }

        func start(maxOperations: Int, maxSeconds: TimeInterval) {
            let thread = Thread { [self] in
                loop(maxOperations: maxOperations, maxSeconds: maxSeconds)
                done.signal()
            }
            thread.start()
        }

        private func loop(maxOperations: Int, maxSeconds: TimeInterval) {
            let started = Date()
            var n = 0
            while n < maxOperations, Date().timeIntervalSince(started) < maxSeconds, !lock.withLock({ stopRequested }) {
                n += 1
                let choice = Int.random(in: 0..<10, using: &random)
                let begun = Date()
                do {
                    if choice < 4 || live.count <= Int(OnlineRebuildTests.tagged) + 10 {
                        try insert(n)
                    } else if choice < 8 {
                        try update(n)
                    } else {
                        try delete()
                    }
                    lock.withLock { committed += 1 }
                } catch {
                    failures.append("operation \(n): \(error)")
                }
                longestWait = max(longestWait, Date().timeIntervalSince(begun))
                Thread.sleep(forTimeInterval: 0.001)
            }
        }

        private func note(_ n: Int) -> String? {
            (!noteNeverNull && n % 4 == 0) ? nil : "w\(n)"
        }

        private func insert(_ n: Int) throws {
            let k = Int64.random(in: 0..<1000, using: &random)
            let explicitV = n % 5 != 0
            let note = note(n)
            var inserted: (Int64, Item)?
            try queue.inDatabase { db in
                try db.inTransaction(.immediate) {
                    if explicitV {
                        try db.execute(sql: "INSERT INTO items (k, v, note) VALUES (?, ?, ?)", arguments: [k, "i\(n)", note])
                    } else {
                        // The default: 'a' before the cut-over, 'b' after; read back what was stored.
                        try db.execute(sql: "INSERT INTO items (k, note) VALUES (?, ?)", arguments: [k, note])
                    }
                    let id = db.lastInsertedRowID
                    let v = try String.fetchOne(db, sql: "SELECT v FROM items WHERE id = ?", arguments: [id])
                    inserted = (id, Item(k: k, v: v, note: note))
                    return .commit
                }
            }
            let (id, item) = inserted!
            if model[id] == nil { live.append(id) }
            model[id] = item
            inserts += 1
        }

        private func update(_ n: Int) throws {
            let id = live[Int.random(in: 0..<live.count, using: &random)]
            let k = Int64.random(in: 0..<1000, using: &random)
            let note = note(n)
            try queue.inDatabase { db in
                try db.inTransaction(.immediate) {
                    try db.execute(sql: "UPDATE items SET k = ?, v = ?, note = ? WHERE id = ?", arguments: [k, "u\(n)", note, id])
                    if db.changesCount != 1 { throw WinnowError.internal("row \(id) vanished") }
                    return .commit
                }
            }
            model[id] = Item(k: k, v: "u\(n)", note: note)
            updates += 1
        }

        private func delete() throws {
            // Only rows without tags: a delete that cascades would change another table.
            var index = 0
            repeat { index = Int.random(in: 0..<live.count, using: &random) } while live[index] <= OnlineRebuildTests.tagged
            let id = live[index]
            try queue.inDatabase { db in
                try db.inTransaction(.immediate) {
                    try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [id])
                    if db.changesCount != 1 { throw WinnowError.internal("row \(id) vanished") }
                    return .commit
                }
            }
            model[id] = nil
            live.swapAt(index, live.count - 1)
            live.removeLast()
            deletes += 1
        }
    }

    // MARK: - Rebuild while another connection writes

    enum Change {
        /// `v` gets another default ('a' → 'b').
        case changeDefault
        /// `note` becomes NOT NULL with default '' (the rebuild's batched copy fills the NULLs).
        case notNullWithDefault
    }

    func rebuildWhileWriting(
        _ change: Change, wal: Bool, rows: Int, seed: UInt64, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let db = path("items.sqlite")
        try makeItems(db, rows: rows, wal: wal)
        let tagsBefore = try ScenarioKit.rows(db, "SELECT * FROM tags ORDER BY id")
        switch change {
        case .changeDefault:
            try TestSupport.writeFile(
                Self.schema(v: "{name: v, type: text, default: b}", note: "{name: note, type: text}"), to: path("schema.yaml"))
        case .notNullWithDefault:
            try TestSupport.writeFile(
                Self.schema(v: "{name: v, type: text, default: a}", note: "{name: note, type: text, nullable: false, default: \"\"}"),
                to: path("schema.yaml"))
        }
        let job = try JobLoader.decode(
            yaml: "version: 1\nschema: schema.yaml\n" + Self.slowBatch, file: path("job.yaml"), baseDirectory: dir)

        let initial = try readItems(db)
        XCTAssertEqual(initial.count, rows, file: file, line: line)
        let writer = try Writer(path: db, model: initial, seed: seed, noteNeverNull: change == .notNullWithDefault)
        writer.start(maxOperations: 50_000, maxSeconds: 40)
        // Let the writer get going before the run starts.
        let warmUp = Date()
        while writer.committedCount < 20, Date().timeIntervalSince(warmUp) < 10 { Thread.sleep(forTimeInterval: 0.005) }
        let before = writer.committedCount
        let started = Date()
        var summary: RunSummary?
        var runError: Error?
        do {
            summary = try SQLiteBackend.run(job, options: RunOptions(database: db))
        } catch {
            runError = error
        }
        let seconds = Date().timeIntervalSince(started)
        let during = writer.committedCount - before
        writer.stop()
        XCTAssertEqual(writer.done.wait(timeout: .now() + 30), .success, "the writer did not stop", file: file, line: line)
        print(
            """
            [OnlineRebuild] \(change) wal=\(wal) rows=\(rows): run \(String(format: "%.2f", seconds)) s; \
            other connection: \(writer.committed) writes (\(during) during the run; \(writer.inserts) inserts, \(writer.updates) updates, \
            \(writer.deletes) deletes), longest wait \(String(format: "%.3f", writer.longestWait)) s, failures \(writer.failures.count)
            """)
        if let runError {
            XCTFail("run failed: \(runError)", file: file, line: line)
            return
        }
        XCTAssertEqual(summary?.status, "completed", file: file, line: line)
        XCTAssertTrue(
            summary?.migration.contains { $0.rebuildsTable } ?? false, "\(summary?.migration.map(\.summary) ?? [])", file: file, line: line)

        // The other connection never failed, and really wrote while the table was rebuilt.
        XCTAssertEqual(writer.failures, [], file: file, line: line)
        XCTAssertGreaterThan(during, 10, "the other connection hardly wrote during the rebuild", file: file, line: line)
        XCTAssertLessThan(writer.longestWait, 2.0, "the other connection waited too long for the database", file: file, line: line)

        // Every committed write is there; nothing else changed.
        var expected = writer.model
        if change == .notNullWithDefault {
            for (id, item) in expected where item.note == nil { expected[id]!.note = "" }
        }
        let actual = try readItems(db)
        XCTAssertEqual(actual.count, expected.count, "row count", file: file, line: line)
        var wrong: [String] = []
        for (id, item) in expected where actual[id] != item {
            wrong.append("id \(id): expected \(item), found \(actual[id].map { "\($0)" } ?? "nothing")")
        }
        for id in actual.keys where expected[id] == nil { wrong.append("id \(id): unexpected row \(actual[id]!)") }
        XCTAssertEqual(Array(wrong.sorted().prefix(20)), [], "\(wrong.count) rows differ", file: file, line: line)
        XCTAssertEqual(
            try ScenarioKit.rows(db, "SELECT * FROM tags ORDER BY id"), tagsBefore, "tags changed (a cascade?)", file: file, line: line)

        // The result is the target, clean.
        XCTAssertEqual(try strings(db, "PRAGMA integrity_check"), ["ok"], file: file, line: line)
        XCTAssertEqual(try ScenarioKit.rows(db, "PRAGMA foreign_key_check").count, 0, file: file, line: line)
        XCTAssertEqual(try leftovers(db), [], file: file, line: line)
        XCTAssertEqual(
            try strings(db, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'items'"), ["items_k"], file: file,
            line: line)
        let checked = try SQLiteBackend.check(job, options: RunOptions(database: db))
        XCTAssertEqual(checked.drift, [], file: file, line: line)
        XCTAssertEqual(try SQLiteBackend.plan(job, options: RunOptions(database: db)).migration.map(\.summary), [], file: file, line: line)
        switch change {
        case .changeDefault:
            XCTAssertEqual(
                try strings(db, "SELECT dflt_value FROM pragma_table_info('items') WHERE name = 'v'"), ["'b'"], file: file, line: line)
        case .notNullWithDefault:
            XCTAssertEqual(
                try ScenarioKit.int(db, "SELECT \"notnull\" FROM pragma_table_info('items') WHERE name = 'note'"), 1, file: file, line: line
            )
        }
    }

    func testChangeDefaultWhileAnotherConnectionWrites() throws {
        // A rollback journal, as found: every commit of both connections syncs, so fewer rows.
        try rebuildWhileWriting(.changeDefault, wal: false, rows: 50_000, seed: 0x5EED_0001)
    }

    func testNotNullBackfillAndRebuildWhileAnotherConnectionWritesInWALMode() throws {
        try rebuildWhileWriting(.notNullWithDefault, wal: true, rows: 120_000, seed: 0x5EED_0002)
    }

    // MARK: - Killed in the middle of a rebuild

    func testRunKilledDuringRebuildLeavesTableCompleteAndNextRunFinishes() throws {
        let db = path("items.sqlite")
        let rows = 100_000
        try makeItems(db, rows: rows, wal: false)
        let reference = try readItems(db)
        try TestSupport.writeFile(
            Self.schema(v: "{name: v, type: text, default: b}", note: "{name: note, type: text}"), to: path("schema.yaml"))
        let jobPath = try TestSupport.writeFile(
            """
            version: 1
            schema: schema.yaml
            batch: {size: 50, max_transaction_ms: 20, pause_ms: 15}
            """, to: path("job.yaml"))

        let process = Process()
        process.executableURL = TestSupport.executable
        process.arguments = ["run", jobPath, "--database", db, "--quiet"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()

        // Wait until the copy is well under way, then kill the process.
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(5)
        let observer = try DatabaseQueue(path: db, configuration: config)
        let deadline = Date().addingTimeInterval(30)
        var copied = 0
        var observed: [String] = []
        while Date() < deadline, process.isRunning {
            do {
                copied = try observer.read { db -> Int in
                    guard try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE name = 'winnow_rebuild_items'") == 1 else {
                        return 0
                    }
                    return try Int.fetchOne(db, sql: "SELECT count(*) FROM winnow_rebuild_items") ?? 0
                }
            } catch {
                observed.append("\(error)")
            }
            if copied >= 10_000 { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        try observer.close()
        guard process.isRunning else {
            XCTFail(
                "winnow finished (status \(process.terminationStatus)) before it could be killed mid-rebuild; copied \(copied); observer errors: \(observed.prefix(3))"
            )
            return
        }
        XCTAssertGreaterThanOrEqual(copied, 10_000, "the rebuild never got under way")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)
        print("[OnlineRebuild] killed winnow after \(copied) of \(rows) rows were copied; leftovers: \(try leftovers(db))")

        // The table is readable and complete, and still has its old definition.
        XCTAssertEqual(try readItems(db), reference, "the killed run changed the table's rows")
        XCTAssertEqual(try strings(db, "SELECT dflt_value FROM pragma_table_info('items') WHERE name = 'v'"), ["'a'"])
        XCTAssertEqual(try strings(db, "PRAGMA integrity_check"), ["ok"])
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM tags"), Int(Self.tagged))
        // The application keeps writing before the next run.
        try ScenarioKit.execute(db, "INSERT INTO items (id, k, v, note) VALUES (?, 1, 'after-kill', NULL)", arguments: [Int64(rows + 1)])
        try ScenarioKit.execute(db, "UPDATE items SET v = 'changed' WHERE id = 5")
        try ScenarioKit.execute(db, "DELETE FROM items WHERE id = 5000")
        var expected = reference
        expected[Int64(rows + 1)] = Item(k: 1, v: "after-kill", note: nil)
        expected[5]!.v = "changed"
        expected[5000] = nil

        // The next run is not blocked by the dead run's lock and finishes the migration.
        let next = try TestSupport.winnow(["run", jobPath, "--database", db, "--format", "json"])
        XCTAssertEqual(next.status, 0, next.stdout + next.stderr)
        XCTAssertEqual(try readItems(db), expected)
        XCTAssertEqual(try strings(db, "SELECT dflt_value FROM pragma_table_info('items') WHERE name = 'v'"), ["'b'"])
        XCTAssertEqual(try leftovers(db), [], "capture triggers or winnow_rebuild_* tables left behind")
        XCTAssertEqual(try strings(db, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'items'"), ["items_k"])
        XCTAssertEqual(try strings(db, "PRAGMA integrity_check"), ["ok"])
        XCTAssertEqual(try ScenarioKit.rows(db, "PRAGMA foreign_key_check").count, 0)
        XCTAssertEqual(try ScenarioKit.int(db, "SELECT count(*) FROM tags"), Int(Self.tagged))
        XCTAssertEqual(try strings(db, "SELECT status FROM winnow_runs ORDER BY id"), ["interrupted", "completed"])
        let job = try JobLoader.load(path: jobPath)
        XCTAssertEqual(try SQLiteBackend.check(job, options: RunOptions(database: db)).drift, [])
        // Writes after the run are no longer captured anywhere.
        try ScenarioKit.execute(db, "UPDATE items SET v = 'later' WHERE id = 6")
        XCTAssertEqual(try leftovers(db), [])
    }
}
