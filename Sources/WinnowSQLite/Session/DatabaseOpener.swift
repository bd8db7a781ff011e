import Foundation
import WinnowCore
import GRDB

/// Opens databases with winnow's connection settings and maps SQLite's failures to the
/// contract's exit codes.
public enum DatabaseOpener {
    /// Busy timeout of a connection when nothing asks for another (`--wait`): how long a
    /// statement waits for a lock another connection holds.
    public static let busyTimeout: TimeInterval = BusyWait.defaultLimit

    /// WAL size after which a batch-writing connection checkpoints while it writes alone.
    static let walCheckpointBytes = 64 << 20

    /// The connection's checkpoint threshold: SQLite's 1,000 pages while other connections
    /// write (`shared`), else about ``walCheckpointBytes``. A writer's commit checkpoints the
    /// WAL once it is past its own threshold, so a large WAL left by winnow would be copied
    /// inside another writer's commit.
    static func setCheckpoint(_ db: Database, shared: Bool) {
        let pageSize = (try? Int.fetchOne(db, sql: "PRAGMA main.page_size")) ?? 4096
        let pages = shared ? 1000 : max(1000, walCheckpointBytes / max(512, pageSize))
        try? db.execute(sql: "PRAGMA main.wal_autocheckpoint = \(pages)")
    }

    /// Helper threads SQLite's sorter may use: one per extra core, at most 3.
    static let sorterThreads = max(0, min(3, ProcessInfo.processInfo.activeProcessorCount - 1))

    /// Opens `path` with winnow's settings; `busy` says how long a statement waits for a lock
    /// another connection holds (``busyTimeout``, or `--wait`).
    public static func open(path: String, mode: AccessMode, busy: BusyWait = BusyWait()) throws -> DatabaseQueue {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        if isDirectory.boolValue { throw WinnowError.notFound("\(path): is a directory, not a database") }
        switch mode {
        case .readOnly, .readWrite(create: false):
            guard exists else { throw WinnowError.notFound("\(path): no such database file") }
        case .readWrite(create: true):
            break
        }
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .callback(busy.handler())
        if case .readOnly = mode { config.readonly = true }
        config.label = "winnow"
        config.prepareDatabase { db in
            try SQLFunctions.register(on: db)
            // Large sorts (finding duplicate groups, grouped counts without an index) may use a
            // helper thread: about 8% faster on two cores. Per connection; nothing is stored.
            try db.execute(sql: "PRAGMA threads = \(sorterThreads)")
            if ProcessInfo.processInfo.environment["WINNOW_SQL_PROFILE"] != nil { StatementProfile.shared.attach(to: db) }
        }
        do {
            let queue = try DatabaseQueue(path: path, configuration: config)
            // Opening is lazy in SQLite: read the schema now so that a file that is not a
            // database is reported here, before any work starts.
            try queue.inDatabase { db in _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM main.sqlite_master") }
            return queue
        } catch {
            throw map(error, path: path, busy: busy)
        }
    }

    /// Settings of a connection that is about to write in batches next to other writers:
    ///
    /// - the journal mode as the file has it: it belongs to every program that opens the file
    ///   (WAL needs shared memory and `-wal`/`-shm` files beside it, which network file systems
    ///   and tools that copy the main file alone do not give). Only a job that asks for WAL
    ///   (`sqlite: {journal_mode: wal}`) switches a rollback-journal file to WAL, where readers
    ///   never block writers, so winnow's long reads (finding the duplicate groups) do not stall
    ///   the application's commits; the file then stays in WAL. The switch needs the file to
    ///   itself for a moment: if another connection keeps holding a lock through a few tries over
    ///   about a second, the run goes on in the rollback journal and says so (the returned remark).
    /// - `synchronous=NORMAL` in WAL mode: a commit survives a crash of any process; only a power
    ///   loss can roll back the last batches, never corrupt the file (a new run redoes them).
    /// - `wal_autocheckpoint` of about ``walCheckpointBytes`` in WAL mode.
    /// - in the default rollback mode (`delete`), `journal_mode=PERSIST` for this connection
    ///   only: between its transactions the `-journal` file stays, its header zeroed and synced
    ///   (which is the commit), instead of being deleted and made again, and synced with its
    ///   folder, by every batch (docs/performance.md, "Batches": 4-7% of the runs measured).
    ///   Rollback modes are per connection: the application's connections keep deleting the
    ///   journal after their own commits, and read a zeroed header as no journal. The session's
    ///   end (``endBatchWrites(_:)``) sets `delete` again, which removes the file; a killed run
    ///   leaves it zeroed, as harmless as no file, until the next commit in `delete` mode.
    /// - the busy timeout (``busyTimeout`` or `--wait`) set at open.
    ///
    /// Called after the run lock is taken, outside any transaction.
    @discardableResult
    public static func prepareForBatchWrites(_ db: Database, journalMode: SQLiteSettings.JournalMode? = nil) -> String? {
        guard !db.isInsideTransaction else { return nil }
        // Setting the mode answers the mode the file is in afterwards (or fails: busy, at once,
        // whatever the busy timeout), so a busy application gets a few tries (up to ~1 s).
        func mode(_ sql: String) -> String? { (try? String.fetchOne(db, sql: sql))?.lowercased() }
        var current = mode("PRAGMA main.journal_mode")
        var remark: String?
        if journalMode == .wal {
            let rollback = ["delete", "truncate", "persist"]
            let found = current
            for attempt in 0..<50 where rollback.contains(current ?? "") {
                if attempt > 0 { Thread.sleep(forTimeInterval: 0.02) }
                current = mode("PRAGMA main.journal_mode = WAL") ?? current
            }
            if let found, rollback.contains(found), current != "wal" {
                remark =
                    "sqlite: journal_mode: wal: another connection kept the file busy, so this run kept the \(found) journal; the next run tries again"
            }
        }
        if current == "delete" {
            _ = mode("PRAGMA main.journal_mode = PERSIST")
        }
        if current == "wal" {
            try? db.execute(sql: "PRAGMA main.synchronous = NORMAL")
            // Checkpoint after about 64 MB of WAL instead of SQLite's 1,000 pages while no
            // other connection writes (see ``WriteGap``): a page that many batches rewrite (an
            // index, the journal's last page) is copied to the database and synced once instead
            // of at almost every batch.
            setCheckpoint(db, shared: false)
        }
        return remark
    }

    /// Undoes ``prepareForBatchWrites(_:journalMode:)``'s `persist` journal: `delete` again,
    /// which removes the `-journal` file (when no other connection is writing: the file is then
    /// its journal, and its commit deletes it). Run when a writing session ends, however it ends.
    static func endBatchWrites(_ db: Database) {
        guard !db.isInsideTransaction, (try? String.fetchOne(db, sql: "PRAGMA main.journal_mode"))?.lowercased() == "persist"
        else { return }
        _ = try? String.fetchOne(db, sql: "PRAGMA main.journal_mode = DELETE")
    }

    /// Maps an error thrown while working on `path` to a ``WinnowError``; `busy` is how long
    /// the connection waited for a lock (named when that wait ran out).
    public static func map(_ error: Error, path: String, busy: BusyWait = BusyWait()) -> WinnowError {
        if let error = error as? WinnowError { return error }
        guard let dbError = error as? DatabaseError else { return .internal("\(path): \(error)") }
        let message = dbError.message ?? "\(dbError.resultCode)"
        switch dbError.resultCode {
        case .SQLITE_NOTADB:
            return .notFound("\(path): not a database (\(message))")
        case .SQLITE_CANTOPEN:
            return .notFound("\(path): cannot open the database (\(message))")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return .locked(
                "\(path): another connection kept the database locked (\(message)) for longer than the \(String(format: "%g", busy.limit)) s winnow waits for it; retry later (run and restore wait longer with --wait SECONDS)"
            )
        case .SQLITE_CORRUPT:
            return .io("\(path): the database is corrupt (\(message))")
        case .SQLITE_FULL:
            return .io("\(path): database or disk is full (\(message))")
        case .SQLITE_READONLY:
            return .io("\(path): the database is read-only (\(message))")
        case .SQLITE_IOERR:
            return .io(
                "\(path): disk I/O error (\(message)); is the disk full or the file size limited? Committed batches are kept; the batch in flight was rolled back"
            )
        case .SQLITE_CONSTRAINT:
            return .refused("\(path): a constraint failed (\(message))")
        default:
            return .io("\(path): SQLite error \(dbError.resultCode.rawValue): \(message)")
        }
    }
}
