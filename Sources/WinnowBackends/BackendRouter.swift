import Foundation
import WinnowCore
import WinnowPostgres
import WinnowSQLite

/// Picks the backend by the database's name: a `postgresql://` (or `postgres://`) URL is a
/// PostgreSQL server, anything else a SQLite file. Seeds are SQLite files on either.
public struct BackendRouter: DatabaseBackend {
    public init() {}

    public func withSession<T>(_ location: String, mode: AccessMode, _ body: (any DatabaseSession) throws -> T) throws -> T {
        if DatabaseURL.isPostgres(location) {
            return try PostgresBackend(seedBackend: SQLiteBackend()).withSession(location, mode: mode, body)
        }
        return try SQLiteBackend().withSession(location, mode: mode, body)
    }
}
