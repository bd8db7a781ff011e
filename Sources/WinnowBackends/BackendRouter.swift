import Foundation
import WinnowCore
import WinnowPostgres
import WinnowSQLite

/// Picks the backend by the database's name: a `postgresql://` (or `postgres://`) URL is a
/// PostgreSQL server, anything else a SQLite file. Seeds are SQLite files on either.
public struct BackendRouter: DatabaseBackend {
    /// How long a SQLite connection waits for a lock another connection holds (`--wait`).
    public var busy: BusyWait

    public init(busy: BusyWait = BusyWait()) {
        self.busy = busy
    }

    public func withSession<T>(_ location: String, mode: AccessMode, _ body: (any DatabaseSession) throws -> T) throws -> T {
        if DatabaseURL.isPostgres(location) {
            return try PostgresBackend(seedBackend: SQLiteBackend()).withSession(location, mode: mode, body)
        }
        return try SQLiteBackend(busy: busy).withSession(location, mode: mode, body)
    }
}
