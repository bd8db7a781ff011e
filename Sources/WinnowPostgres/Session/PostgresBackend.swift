import Foundation
import WinnowCore

/// The PostgreSQL backend: connection strings as libpq reads them (see ``PostgresLocation``),
/// one connection per command.
public struct PostgresBackend: DatabaseBackend {
    /// Reads seed databases (SQLite files) for `seed:`.
    let seedBackend: (any DatabaseBackend)?
    let environment: [String: String]

    public init(seedBackend: (any DatabaseBackend)? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.seedBackend = seedBackend
        self.environment = environment
    }

    public func withSession<T>(_ location: String, mode: AccessMode, _ body: (any DatabaseSession) throws -> T) throws -> T {
        let parsed = try PostgresLocation.parse(location, environment: environment)
        // What libpq would warn about (a password file others may read), as libpq does: on
        // standard error, and the connection goes on without it.
        for warning in parsed.warnings { FileHandle.standardError.write(Data("winnow: warning: \(warning)\n".utf8)) }
        let link = try PostgresLink(parsed)
        if case .readWrite = mode { try Self.refuseReadOnlyServer(link) }
        let session: PostgresSession
        do {
            let readOnly: Bool
            if case .readOnly = mode { readOnly = true } else { readOnly = false }
            session = try PostgresSession(link: link, location: parsed.redacted, readOnly: readOnly, seedBackend: seedBackend)
        } catch let error as WinnowError {
            throw error
        } catch {
            throw PostgresLink.connectError(error, parsed)
        }
        do {
            return try body(session)
        } catch {
            session.rollbackIfNeeded()
            throw session.mapError(error)
        }
    }
    /// A command that writes refuses, before it writes anything, a server that takes no writes:
    /// a standby (in recovery) or one whose sessions are read-only. The message says how to
    /// reach the primary.
    static func refuseReadOnlyServer(_ link: PostgresLink) throws {
        let row = try link.query("SELECT pg_catalog.pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'").first ?? []
        let standby = row.first?.bool == true
        guard standby || row.dropFirst().first?.bool == true else { return }
        let location = link.location
        throw WinnowError.notFound(
            """
            PostgreSQL at \(location.serverDescription) (database \(location.database), user \(location.user)) \
            \(standby ? "is a standby (in recovery)" : "is read-only (transaction_read_only = on)") and takes no writes; \
            nothing was changed: name the primary, or list every host with target_session_attrs=read-write so the primary is found
            """)
    }
}
