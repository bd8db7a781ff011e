import Foundation
import GRDB
import WinnowCore

/// The SQLite backend: opens files with winnow's connection settings (``DatabaseOpener``).
public struct SQLiteBackend: DatabaseBackend {
    /// How long a statement waits for a lock another connection holds on the file.
    public var busy: BusyWait

    public init(busy: BusyWait = BusyWait()) {
        self.busy = busy
    }

    public func withSession<T>(_ location: String, mode: AccessMode, _ body: (any DatabaseSession) throws -> T) throws -> T {
        let queue = try DatabaseOpener.open(path: location, mode: mode, busy: busy)
        do {
            return try queue.inDatabase { db in
                defer { if case .readWrite = mode { DatabaseOpener.endBatchWrites(db) } }
                return try body(SQLiteSession(db, location: location, busy: busy))
            }
        } catch {
            throw DatabaseOpener.map(error, path: location, busy: busy)
        }
    }
}
