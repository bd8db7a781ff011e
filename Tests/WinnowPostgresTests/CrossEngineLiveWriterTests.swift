import Foundation
import GRDB
import WinnowBackends
import WinnowCore
import WinnowPostgres
import WinnowTestSupport
import XCTest

/// winnow next to an application that keeps writing, on both engines from one definition: the
/// writer's rows are never lost, it is never refused (batches hold their locks for short
/// transactions only), and the next run finishes what the writer added meanwhile.
final class CrossEngineLiveWriterTests: XCTestCase {
    /// A rule with a merge: batches rank on the server and merge, journal and delete in
    /// separate statements.
    func testWriterKeepsWritingAndNothingIsLost() throws {
        try besideWriter(rule: "{entity: t, key: k, merge: {v: sum}, archive: true}")
    }

    /// A rule without merges or references: on PostgreSQL each batch is one statement that
    /// deletes by tuple id, next to a writer that moves rows (its updates give them new ones).
    func testWriterKeepsWritingBesideOneStatementBatches() throws {
        try besideWriter(rule: "{entity: t, key: k, archive: true}")
    }

    /// The same with the table analyzed: on PostgreSQL discovery decides the batches, and a
    /// batch whose rows the writer changed ranks them again as they are now.
    func testWriterKeepsWritingBesideDecidedBatches() throws {
        try besideWriter(rule: "{entity: t, key: k, archive: true}", analyze: true)
    }

    func besideWriter(rule: String, analyze: Bool = false, file: StaticString = #filePath, line: UInt = #line) throws {
        let dir = try TestSupport.scratchDirectory()
        let template = dir.appendingPathComponent("live.sqlite").path
        let queue = try DatabaseQueue(path: template)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v INTEGER)")
            try db.execute(sql: "CREATE TABLE heartbeat (id INTEGER PRIMARY KEY, at TEXT)")
            for id in 1...30000 { try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?)", arguments: [id, "k\(id % 10000)", id % 7]) }
        }
        try queue.close()
        let job = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - \(rule)\nbatch: {size: 100, max_transaction_ms: 50}\n",
            to: dir.appendingPathComponent("job.yaml").path)
        for engine in try CrossEngine.all() {
            let location = try engine.prepare(template, dir)
            if analyze, engine.name == "postgresql" {
                try BackendRouter().withSession(location, mode: .readWrite(create: false)) { try $0.execute("ANALYZE public.t") }
            }
            // The writer, through the same library on either engine: inserts heartbeats and new
            // duplicates, updates rows winnow may be merging.
            let state = WriterState()
            let writer = Thread {
                do {
                    try BackendRouter().withSession(location, mode: .readWrite(create: false)) { session in
                        var n = 0
                        while !state.read({ $0.stopped }) {
                            n += 1
                            let started = Date()
                            try session.writeTransaction {
                                try session.execute("INSERT INTO heartbeat (at) VALUES (?)", [SQLValue("\(n)")])
                                try session.execute("INSERT INTO t (k, v) VALUES (?, 1)", [SQLValue("k\(n % 10000)")])
                                try session.execute("UPDATE t SET v = v WHERE id = ?", [SQLValue(Int64(1 + (n * 7919) % 30000))])
                            }
                            let waited = Date().timeIntervalSince(started)
                            state.update {
                                $0.worst = max($0.worst, waited)
                                $0.written = n
                            }
                            Thread.sleep(forTimeInterval: 0.002)
                        }
                    }
                } catch {
                    state.update { $0.failure = "\(error)" }
                }
            }
            writer.start()
            let run = try TestSupport.winnow(["run", job, "--database", location])
            state.update { $0.stopped = true }
            while !writer.isFinished { Thread.sleep(forTimeInterval: 0.01) }
            let (written, worst, failure) = state.read { ($0.written, $0.worst, $0.failure) }
            XCTAssertEqual(run.status, 0, "\(engine.name): \(run.stderr)", file: file, line: line)
            XCTAssertNil(failure, "\(engine.name): the writer failed: \(failure ?? "")", file: file, line: line)
            XCTAssertGreaterThan(written, 10, "\(engine.name): the writer ran beside the batches", file: file, line: line)
            let heartbeats = try BackendRouter().withSession(location, mode: .readOnly) {
                try $0.value("SELECT count(*) FROM heartbeat").int
            }
            XCTAssertEqual(heartbeats, written, "\(engine.name): every committed heartbeat is there", file: file, line: line)
            XCTAssertLessThan(worst, 2.0, "\(engine.name): a writer waited \(worst) s in one transaction", file: file, line: line)
            // What the writer added meanwhile is the next run's work; then the table is clean.
            XCTAssertEqual(try TestSupport.winnow(["run", job, "--database", location]).status, 0, engine.name, file: file, line: line)
            XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", location]).status, 0, engine.name, file: file, line: line)
            print(
                "[CrossEngineLiveWriter] \(rule) on \(engine.name): \(written) writer transactions beside the run, worst \(Int(worst * 1000)) ms"
            )
        }
    }
}

/// What the writer thread shares with the test, under a lock.
final class WriterState: @unchecked Sendable {
    struct Values {
        var stopped = false
        var written = 0
        var worst: TimeInterval = 0
        var failure: String?
    }
    private let lock = NSLock()
    private var values = Values()

    func update(_ change: (inout Values) -> Void) { lock.withLock { change(&values) } }
    func read<T>(_ body: (Values) -> T) -> T { lock.withLock { body(values) } }
}
