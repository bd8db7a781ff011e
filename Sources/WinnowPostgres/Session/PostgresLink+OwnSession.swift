import Foundation
import PostgresNIO
import WinnowCore

extension PostgresLink {
    /// Refuses, before any statement of the command, a connection whose statements do not all
    /// run in one server session: a pooler in transaction or statement mode (PgBouncer's
    /// `pool_mode = transaction`) hands each transaction to whichever server process is free.
    ///
    /// winnow keeps its temporary tables, prepared statements, session settings and run lock in
    /// its session. Through such a pooler the settings (`lock_timeout`, `jit`, ...) would stay
    /// behind in a server process that other clients of the pool then use, the run lock would
    /// be held by a process winnow no longer reaches, and a later batch would find no temporary
    /// table. A second connection holds a transaction open, so that the server process it runs
    /// in cannot be handed out, and this connection asks again which process serves it. Its own
    /// session answers with the same process at once; a pooler in transaction mode answers with
    /// another process, or keeps the statement waiting for a free one. A server that refuses the
    /// second connection (a connection limit), or gives it no server process within
    /// ``probeWait`` seconds (a pooler whose server processes are all taken), leaves nothing to
    /// compare with, and the command goes on.
    func refuseSharedSession() throws {
        let seconds = secondConnectionTimeout
        guard let opened = try? secondConnection() else { return }
        defer { _ = try? Self.wait(Self.close(opened), seconds: 2) }
        do {
            guard try Self.rows("BEGIN", on: opened, within: Self.probeWait, logger: logger) != nil else { return }
        } catch let error as PSQLError where error.serverInfo?[.message] != nil {
            // A server takes any transaction; a pooler in statement mode refuses them all.
            throw sharedSession("a second connection's transaction was refused: \(error.serverInfo?[.message] ?? "")")
        } catch {
            return
        }
        guard let held = try? Self.rows(Self.processQuery, on: opened, within: Self.probeWait, logger: logger)?.first?.first?.int64
        else { return }
        let now: Int64?
        do {
            now = try Self.rows(Self.processQuery, on: connection, within: seconds, logger: logger)?.first?.first?.int64
        } catch {
            throw Self.connectError(error, location)
        }
        let seen: String
        if let now, now == backendPID, held != backendPID {
            return
        } else if held == backendPID {
            seen = "another connection's transaction ran in its server process \(held)"
        } else if let now {
            seen = "its statements ran in server processes \(backendPID) and \(now)"
        } else {
            seen = "its statement waited \(seconds) s for a server process while another connection held one"
        }
        throw sharedSession(seen)
    }

    /// The refusal of a connection that does not keep one server session, with what showed it.
    private func sharedSession(_ seen: String) -> WinnowError {
        WinnowError.notFound(
            """
            PostgreSQL at \(location.serverDescription) (database \(location.database), user \(location.user)): \
            the connection does not keep one server session (\(seen)), as through a pooler in transaction or \
            statement mode (PgBouncer's pool_mode = transaction); winnow keeps temporary tables, prepared statements, \
            session settings and its run lock in its session, so nothing was changed: connect to the server \
            directly, or through a pooler in session mode
            """)
    }

    /// Seconds the second connection waits for its transaction and its process: a server
    /// answers at once, and a pooler in session mode with no free server process would make
    /// every command wait out the connect timeout (10 s by default).
    static let probeWait = 2

    /// What a connection's server process is.
    static let processQuery = "SELECT pg_backend_pid()::int8"
}
