import Foundation
import GRDB
import WinnowCore

/// The SQLite backend: opens files with winnow's connection settings (``DatabaseOpener``).
public struct SQLiteBackend: DatabaseBackend {
    public init() {}

    public func withSession<T>(_ location: String, mode: AccessMode, _ body: (any DatabaseSession) throws -> T) throws -> T {
        let queue = try DatabaseOpener.open(path: location, mode: mode)
        do {
            return try queue.inDatabase { db in try body(SQLiteSession(db, location: location)) }
        } catch {
            throw DatabaseOpener.map(error, path: location)
        }
    }
}
