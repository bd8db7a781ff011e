import Foundation
import GRDB
import WinnowCore
import WinnowTestSupport
import XCTest

@testable import WinnowSQLite

/// A job that asks for WAL (`sqlite: {journal_mode: wal}`) gets it, so that readers never
/// block the application's commits; the switch from a rollback journal needs the file to itself
/// for a moment. A job that asks for nothing leaves the mode as found.
final class JournalModeTests: XCTestCase {
    func makeRollbackDatabase() throws -> String {
        let path = try TestSupport.scratchDirectory().appendingPathComponent("j.sqlite").path
        try TestSupport.makeDatabase(
            at: path, sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');")
        return path
    }

    /// Another connection holds a write transaction open (it has written, not committed) until
    /// `release` is signalled (or for `seconds`); returns once it has written. SQLite does not
    /// wait out such a lock for a connection that asks to change the journal mode: it answers
    /// busy at once, busy timeout or not.
    func holdWrite(_ path: String, seconds: Double, release: DispatchSemaphore) throws -> Thread {
        let other = try DatabaseQueue(path: path)
        let reading = DispatchSemaphore(value: 0)
        let reader = Thread {
            try? other.inDatabase { db in
                try db.inTransaction(.immediate) {
                    try db.execute(sql: "INSERT INTO t (v) VALUES ('b')")
                    reading.signal()
                    _ = release.wait(timeout: .now() + seconds)
                    return .commit
                }
            }
        }
        reader.start()
        XCTAssertEqual(reading.wait(timeout: .now() + 10), .success)
        return reader
    }

    func switchedMode(_ path: String, asking journalMode: SQLiteSettings.JournalMode? = .wal) throws -> (mode: String?, remark: String?) {
        let queue = try DatabaseOpener.open(path: path, mode: .readWrite(create: false))
        return try queue.inDatabase { db in
            let remark = DatabaseOpener.prepareForBatchWrites(db, journalMode: journalMode)
            return (try String.fetchOne(db, sql: "PRAGMA journal_mode"), remark)
        }
    }

    /// The file's mode, as a connection of another program finds it.
    func fileMode(_ path: String) throws -> String? {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }
    }

    /// Nothing asked: the rollback journal stays, and nothing is remarked. winnow's own
    /// connection keeps its journal file between commits (`persist`, that connection's alone).
    func testNothingAskedLeavesTheRollbackJournal() throws {
        let path = try makeRollbackDatabase()
        let result = try switchedMode(path, asking: nil)
        XCTAssertEqual(result.mode, "persist")
        XCTAssertNil(result.remark)
        XCTAssertEqual(try fileMode(path), "delete")
    }

    /// Another connection in the middle of a write when winnow starts: the switch tries again
    /// once it ends instead of giving up at the first refusal.
    func testSwitchWaitsForAnotherConnectionsWriteToEnd() throws {
        let path = try makeRollbackDatabase()
        let reader = try holdWrite(path, seconds: 0.3, release: DispatchSemaphore(value: 0))
        let result = try switchedMode(path)
        XCTAssertEqual(result.mode, "wal")
        XCTAssertNil(result.remark)
        while !reader.isFinished { Thread.sleep(forTimeInterval: 0.01) }
    }

    /// A connection that keeps its write open: winnow gives up after its tries and keeps the
    /// rollback journal (the run still works, its batches just lock readers out for a moment),
    /// and says so.
    func testConnectionThatNeverLetsGoKeepsTheRollbackJournal() throws {
        let path = try makeRollbackDatabase()
        let release = DispatchSemaphore(value: 0)
        let reader = try holdWrite(path, seconds: 30, release: release)
        let result = try switchedMode(path)
        XCTAssertEqual(result.mode, "persist", "a rollback journal, kept between this connection's commits")
        XCTAssertTrue(result.remark?.contains("kept the delete journal; the next run tries again") == true, result.remark ?? "no remark")
        release.signal()
        while !reader.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(try fileMode(path), "delete")
    }
}
