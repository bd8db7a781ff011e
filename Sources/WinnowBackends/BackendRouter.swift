import Foundation
import WinnowCore
import WinnowSQLite

#if PostgreSQL
import WinnowPostgres
#endif

/// Picks the backend by the database's name: a `postgresql://` (or `postgres://`) URL is a
/// PostgreSQL server, anything else a SQLite file. Seeds are SQLite files on either.
public struct BackendRouter: DatabaseBackend {
    /// How long a SQLite connection waits for a lock another connection holds (`--wait`).
    public var busy: BusyWait

    public init(busy: BusyWait = BusyWait()) {
        self.busy = busy
    }

    /// A router whose SQLite connections wait `wait` seconds (`--wait`; nil: the default few
    /// seconds) for a lock another connection holds, telling `onWait` how long once a wait lasts.
    public init(wait: TimeInterval?, onWait: (@Sendable (TimeInterval) -> Void)? = nil) {
        self.busy = BusyWait(wait: wait, observer: onWait)
    }

    /// Seconds a SQLite connection waits for another connection's lock.
    public var waitLimit: TimeInterval { busy.limit }

    public func withSession<T>(_ location: String, mode: AccessMode, _ body: (any DatabaseSession) throws -> T) throws -> T {
        if DatabaseURL.isPostgres(location) {
            #if PostgreSQL
            return try PostgresBackend(seedBackend: SQLiteBackend()).withSession(location, mode: mode, body)
            #else
            throw WinnowError.notFound(
                "\(DatabaseURL.redacted(location)): this winnow was built without PostgreSQL support; build it with the PostgreSQL trait (on by default: swift build, without --disable-default-traits)"
            )
            #endif
        }
        return try SQLiteBackend(busy: busy).withSession(location, mode: mode, body)
    }
}
