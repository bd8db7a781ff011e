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
}
