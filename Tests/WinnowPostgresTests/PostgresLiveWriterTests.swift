import Foundation
import GRDB
import WinnowBackends
import WinnowCore
import WinnowPostgres
import WinnowTestSupport
import XCTest

/// winnow next to an application that keeps writing: the writer's rows are never lost, it is
/// never refused (batches hold their locks for short transactions only), and the next run
/// finishes what the writer added meanwhile.
final class PostgresLiveWriterTests: XCTestCase {
    func testWriterKeepsWritingAndNothingIsLost() throws {
        let url = try PostgresServer.require()
        let dir = try TestSupport.scratchDirectory()
        let path = dir.appendingPathComponent("live.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v INTEGER)")
            try db.execute(sql: "CREATE TABLE heartbeat (id INTEGER PRIMARY KEY, at TEXT)")
            for id in 1...30000 { try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?)", arguments: [id, "k\(id % 10000)", id % 7]) }
        }
        try queue.close()
        try PostgresServer.reset(url)
        try PostgresServer.load(path, into: url)
        let job = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: t, key: k, merge: {v: sum}, archive: true}\nbatch: {size: 100, max_transaction_ms: 50}\n",
            to: dir.appendingPathComponent("job.yaml").path)

        // The writer: inserts heartbeats and new duplicates, updates rows winnow may be merging.
        let state = WriterState()
        let writer = Thread {
            do {
                try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in
                    var n = 0
                    while !state.read({ $0.stopped }) {
                        n += 1
                        let started = Date()
                        try session.writeTransaction {
                            try session.execute("INSERT INTO public.heartbeat (at) VALUES (?)", [SQLValue("\(n)")])
                            try session.execute("INSERT INTO public.t (k, v) VALUES (?, 1)", [SQLValue("k\(n % 10000)")])
                            try session.execute("UPDATE public.t SET v = v WHERE id = ?", [SQLValue(Int64(1 + (n * 7919) % 30000))])
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
        let run = try TestSupport.winnow(["run", job, "--database", url])
        state.update { $0.stopped = true }
        while !writer.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        let (written, worst, failure) = state.read { ($0.written, $0.worst, $0.failure) }
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertNil(failure, "the writer failed: \(failure ?? "")")
        XCTAssertGreaterThan(written, 10, "the writer ran beside the batches")
        let heartbeats = try BackendRouter().withSession(url, mode: .readOnly) { try $0.value("SELECT count(*) FROM public.heartbeat").int }
        XCTAssertEqual(heartbeats, written, "every committed heartbeat is there")
        XCTAssertLessThan(worst, 2.0, "a writer waited \(worst) s in one transaction")
        // What the writer added meanwhile is the next run's work; then the table is clean.
        XCTAssertEqual(try TestSupport.winnow(["run", job, "--database", url]).status, 0)
        XCTAssertEqual(try TestSupport.winnow(["check", job, "--database", url]).status, 0)
        print("[PostgresLiveWriter] \(written) writer transactions beside the run, worst \(Int(worst * 1000)) ms")
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
