import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import WinnowCore

/// One connection to a PostgreSQL server, used synchronously: winnow holds one connection for
/// a whole run (its temporary tables, advisory lock and transactions belong to the session), so
/// the run waits for each statement's result on its own event loop.
///
/// Every wait ends (``ConnectionWatch``): a connection the server closed fails the statement
/// waiting on it, and every later one, at once; a statement that goes without an answer for
/// ``PostgresLocation/livenessCheck`` seconds makes winnow ask the server, over a second short
/// connection, whether it still works on it, and a server that does not answer that within the
/// connect timeout is given up (``ServerCheck``).
final class PostgresLink {
    let location: PostgresLocation
    private let group: MultiThreadedEventLoopGroup
    let connection: PostgresConnection
    private let configuration: PostgresConnection.Configuration
    let logger: Logger
    private let watch = ConnectionWatch()
    /// The server process of this connection (what the liveness check looks up).
    private(set) var backendPID: Int64 = 0

    /// Seconds winnow waits for a connection when the location sets no limit of its own, for
    /// the liveness check's connection.
    static let checkTimeout = 10

    /// Connects to the first of the location's hosts that answers and fits its
    /// `target_session_attrs` (for `prefer-standby`, a standby first, then any), as libpq does.
    init(_ location: PostgresLocation) throws {
        var logger = Logger(label: "winnow.postgres")
        logger.logLevel = .critical
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let passes: [PostgresLocation.TargetSessionAttrs] =
            location.targetSessionAttrs == .preferStandby ? [.standby, .any] : [location.targetSessionAttrs]
        var failures: [(PostgresLocation, Error)] = []
        var chosen: (PostgresLocation, PostgresConnection.Configuration, PostgresConnection)?
        attempts: for wanted in passes {
            for endpoint in location.endpoints {
                let here = location.at(endpoint)
                do {
                    let configuration = try Self.configuration(here)
                    let connection = try Self.connect(configuration, on: group, timeout: here.connectTimeout, logger: logger)
                    if let unfit = try Self.unfit(connection, for: wanted, timeout: here.connectTimeout, logger: logger) {
                        _ = try? Self.wait(Self.close(connection), seconds: 2)
                        failures.append((here, WinnowError.notFound(unfit)))
                        continue
                    }
                    chosen = (here, configuration, connection)
                    break attempts
                } catch let error as WinnowError where error.exitCode == 64 {
                    try? group.syncShutdownGracefully()
                    throw error
                } catch {
                    failures.append((here, error))
                }
            }
        }
        guard let chosen else {
            try? group.syncShutdownGracefully()
            throw Self.connectError(failures, location)
        }
        (self.location, configuration, connection) = chosen
        let watch = self.watch
        connection.closeFuture.whenComplete { _ in watch.markClosed() }
        backendPID = try query(Self.processQuery).first?.first?.int64 ?? 0
        try refuseSharedSession()
    }

    deinit {
        // Bounded like every other wait: a server that stopped answering never holds the exit.
        _ = try? Self.wait(Self.close(connection), seconds: 2)
        try? group.syncShutdownGracefully()
    }

    /// Why the server of `connection` does not fit `wanted` (nil when it does): libpq's checks,
    /// `transaction_read_only` for read-write and read-only, recovery for primary and standby.
    static func unfit(
        _ connection: PostgresConnection, for wanted: PostgresLocation.TargetSessionAttrs, timeout: Int?, logger: Logger
    ) throws -> String? {
        let sql: String
        switch wanted {
        case .any, .preferStandby: return nil
        case .readWrite, .readOnly: sql = "SELECT current_setting('transaction_read_only') = 'on'"
        case .primary, .standby: sql = "SELECT pg_catalog.pg_is_in_recovery()"
        }
        guard let flag = try rows(sql, on: connection, within: timeout ?? checkTimeout, logger: logger)?.first?.first?.bool else {
            return "the server did not say whether it \(wanted == .readWrite || wanted == .readOnly ? "is read-only" : "is a standby")"
        }
        switch wanted {
        case .readWrite where flag: return "the server is read-only (target_session_attrs=read-write)"
        case .readOnly where !flag: return "the server is not read-only (target_session_attrs=read-only)"
        case .primary where flag: return "the server is a standby (target_session_attrs=primary)"
        case .standby where !flag: return "the server is not a standby (target_session_attrs=\(wanted.rawValue))"
        default: return nil
        }
    }

    /// The TLS settings of `location`: its root certificates (else the system's) and its client
    /// certificate, with `verification`.
    static func tlsSettings(_ location: PostgresLocation, verification: CertificateVerification) throws -> TLSConfiguration {
        var settings = TLSConfiguration.makeClientConfiguration()
        settings.certificateVerification = verification
        do {
            if let root = location.sslRootCert, root != "system", verification != .none {
                settings.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(root))
            }
            if let certificate = location.sslCert, let key = location.sslKey {
                settings.certificateChain = try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) }
                settings.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            }
        } catch {
            throw WinnowError.usage(
                "\(location.redacted): cannot read the TLS files (sslrootcert \(location.sslRootCert ?? "-"), sslcert \(location.sslCert ?? "-"), sslkey \(location.sslKey ?? "-")): \(error)"
            )
        }
        return settings
    }

    /// The connection settings of `location`.
    static func configuration(_ location: PostgresLocation) throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        let tls: PostgresConnection.Configuration.TLS
        switch location.sslMode {
        case .disable:
            tls = .disable
        case .allow, .prefer, .require:
            let context = try NIOSSLContext(configuration: try tlsSettings(location, verification: .none))
            tls = location.sslMode == .require ? .require(context) : .prefer(context)
        case .verifyCA, .verifyFull:
            let settings = try tlsSettings(
                location, verification: location.sslMode == .verifyFull ? .fullVerification : .noHostnameVerification)
            tls = .require(try NIOSSLContext(configuration: settings))
        }
        if location.isUnixSocket {
            configuration = .init(
                unixSocketPath: location.socketPath, username: location.user, password: location.password, database: location.database)
        } else {
            configuration = .init(
                host: location.host, port: location.port, username: location.user, password: location.password,
                database: location.database, tls: tls)
        }
        // Without a limit of its own, postgres-nio's connect gives up after an hour.
        configuration.options.connectTimeout = .seconds(Int64(location.connectTimeout ?? 3600))
        configuration.options.additionalStartupParameters = [("application_name", location.applicationName)]
        return configuration
    }

    /// Opens a connection, within `timeout` seconds (TCP connect and login).
    private static func connect(
        _ configuration: PostgresConnection.Configuration, on group: MultiThreadedEventLoopGroup, timeout: Int?, logger: Logger
    ) throws -> PostgresConnection {
        let future = PostgresConnection.connect(on: group.next(), configuration: configuration, id: 1, logger: logger)
        // postgres-nio enforces the timeout; the margin covers a name lookup that hangs.
        guard let connection = try wait(future, seconds: timeout.map { TimeInterval($0) + 5 }) else {
            future.whenSuccess { _ = Self.close($0) }
            throw ChannelError.connectTimeout(.seconds(Int64(timeout ?? 0)))
        }
        return connection
    }

    /// Closes `connection` without waiting (the future says when it is closed).
    @discardableResult
    static func close(_ connection: PostgresConnection) -> EventLoopFuture<Void> {
        let closing: EventLoopFuture<Void> = connection.close()
        return closing
    }

    /// Seconds a second connection of this link (the liveness check's, the one-session check's)
    /// may take to open and to answer: the location's connect timeout, else ``checkTimeout``.
    var secondConnectionTimeout: Int { location.connectTimeout ?? Self.checkTimeout }

    /// Opens another connection to this link's server, within ``secondConnectionTimeout``
    /// seconds (a timeout throws `ChannelError.connectTimeout`).
    func secondConnection() throws -> PostgresConnection {
        var settings = configuration
        settings.options.connectTimeout = .seconds(Int64(secondConnectionTimeout))
        return try Self.connect(settings, on: group, timeout: secondConnectionTimeout, logger: logger)
    }

    /// The rows of one statement on `connection`, as values; nil when no answer came within
    /// `seconds` (for a connection other than the link's own, whose waits are not watched).
    static func rows(
        _ sql: String, _ binds: PostgresBindings = PostgresBindings(), on connection: PostgresConnection, within seconds: Int,
        logger: Logger
    ) throws -> [[SQLValue]]? {
        let box = RowBox()
        let query = connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger) { row in
            box.rows.append(row.sqlValues)
        }
        guard try wait(query, seconds: TimeInterval(seconds)) != nil else { return nil }
        return box.rows
    }

    /// Runs one statement (parameters `$1`, `$2`, ...) and returns its rows as values.
    ///
    /// Rows are converted as they arrive (postgres-nio's collect-all path copies its growing row
    /// array on every network read: half of a 200,000-row discovery's time).
    func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws -> [[SQLValue]] {
        try ensureOpen()
        let box = RowBox()
        _ = try wait(
            connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger) { row in
                box.rows.append(row.sqlValues)
            })
        return box.rows
    }

    /// Runs one statement and returns the number of rows it changed.
    @discardableResult
    func command(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws -> Int {
        try ensureOpen()
        let result = try wait(connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger))
        return result.metadata.rows ?? 0
    }

    // MARK: waiting

    /// A statement written on a closed connection is dropped unanswered (postgres-nio does not
    /// fail it): refuse it here.
    private func ensureOpen() throws {
        if watch.isClosed { throw lost("the server closed it") }
    }

    /// The failure of a statement whose connection is gone: exit 74, naming the server.
    func lost(_ why: String) -> WinnowError {
        .io(
            "lost the connection to PostgreSQL at \(location.serverDescription) (\(why)); what was committed stays committed and the server rolls back the transaction in flight; run again once the server is back"
        )
    }

    /// Waits for `future`: its result; or, when the connection closes first, a lost-connection
    /// error at once; or, when the server gives no answer for the liveness check's interval and
    /// then fails the check, a lost-connection error after the connection is closed.
    private func wait<T>(_ future: EventLoopFuture<T>) throws -> T {
        let outcome = Outcome<T>()
        let watch = self.watch
        future.whenComplete { result in watch.update { outcome.result = result } }
        let sent = Date()
        var silentSince = sent
        while true {
            let deadline = location.livenessCheck.map { silentSince.addingTimeInterval(TimeInterval($0)) }
            switch watch.wait(until: deadline, for: { outcome.result }) {
            case let .done(result):
                return try result.get()
            case .closed:
                // The statement in flight fails with the server's own message (a shutdown names
                // itself) when it arrives with the close; one written after it never does.
                if case let .done(result) = watch.wait(until: Date().addingTimeInterval(0.5), ignoringClose: true, for: { outcome.result })
                {
                    return try result.get()
                }
                throw lost("the server closed it")
            case .timedOut:
                switch checkServer(silent: Int(Date().timeIntervalSince(sent).rounded())) {
                case .working:
                    silentSince = Date()
                case let .gone(why):
                    // An answer that crossed the check is still taken.
                    let grace = Date().addingTimeInterval(2)
                    if case let .done(result) = watch.wait(until: grace, ignoringClose: true, for: { outcome.result }) {
                        return try result.get()
                    }
                    _ = Self.close(connection)
                    throw lost(why)
                }
            }
        }
    }

    /// Waits up to `seconds` (nil: without limit) for `future`; nil when the time ran out.
    static func wait<T>(_ future: EventLoopFuture<T>, seconds: TimeInterval?) throws -> T? {
        let outcome = Outcome<T>()
        let watch = ConnectionWatch()
        future.whenComplete { result in watch.update { outcome.result = result } }
        let deadline = seconds.map { Date().addingTimeInterval($0) }
        if case let .done(result) = watch.wait(until: deadline, for: { outcome.result }) { return try result.get() }
        return nil
    }

    /// What the liveness check found.
    enum ServerCheck: Equatable {
        /// The server answered and still runs this connection's statement (or answered with an
        /// error of its own: it is alive).
        case working
        /// The server did not answer, or no longer knows this connection.
        case gone(String)
    }

    /// Asks the server, over a second connection, whether it still works on this connection's
    /// statement, unanswered for `silence` seconds.
    private func checkServer(silent silence: Int) -> ServerCheck {
        let seconds = secondConnectionTimeout
        let unanswered = "no answer for \(silence) s, and a new connection got none within \(seconds) s"
        let checker: PostgresConnection
        do {
            checker = try secondConnection()
        } catch let error as PSQLError where error.serverInfo?[.sqlState] != nil {
            return .working  // refused, but by a server that answers (too many connections, ...)
        } catch ChannelError.connectTimeout(_) {
            return .gone(unanswered)
        } catch {
            return .gone("no answer for \(silence) s, and a new connection failed: \(Self.reason(error, timeout: seconds))")
        }
        defer { _ = Self.close(checker) }
        let found: [[SQLValue]]
        do {
            guard
                let rows = try Self.rows(
                    "SELECT state FROM pg_catalog.pg_stat_activity WHERE pid = $1", PostgresBindings(values: [.integer(backendPID)]),
                    on: checker, within: seconds, logger: logger)
            else { return .gone(unanswered) }
            found = rows
        } catch let error as PSQLError where error.serverInfo?[.sqlState] != nil {
            return .working  // an error, but from a server that answers
        } catch {
            return .gone("no answer for \(silence) s, and a new connection failed: \(Self.reason(error, timeout: seconds))")
        }
        guard let state = found.first?.first?.string else {
            return .gone("no answer for \(silence) s, and the server no longer runs this connection's session")
        }
        // `active`: the statement runs. Anything else means the server sent its answer and it
        // never arrived.
        return state == "active" ? .working : .gone("no answer for \(silence) s, though the server says it answered")
    }

    // MARK: connect errors

    /// The failure of every host a location names: the one host's failure, or each host's in
    /// the order tried.
    static func connectError(_ failures: [(PostgresLocation, Error)], _ location: PostgresLocation) -> WinnowError {
        guard failures.count > 1 else {
            return connectError(failures.first?.1 ?? ChannelError.alreadyClosed, failures.first?.0 ?? location)
        }
        let each = failures.map { location, error -> String in
            let message = connectError(error, location).description
            return message.hasPrefix("PostgreSQL at ") || message.hasPrefix("cannot reach ")
                ? message : "\(location.serverDescription): \(message)"
        }
        return .notFound("no host of \(location.redacted) could be used: \(each.joined(separator: "; "))")
    }

    /// The failure of a connection attempt: exit 66 naming the server and the reason in words,
    /// never the password.
    static func connectError(_ error: Error, _ location: PostgresLocation) -> WinnowError {
        if let refused = PostgresTLSDiagnosis.reason(error, location) {
            return .notFound(
                "PostgreSQL at \(location.serverDescription) (database \(location.database), user \(location.user)): \(refused)")
        }
        if let error = error as? WinnowError, case let .notFound(why) = error {
            return .notFound("PostgreSQL at \(location.serverDescription) (database \(location.database), user \(location.user)): \(why)")
        }
        let target = "PostgreSQL at \(location.serverDescription) (database \(location.database), user \(location.user))"
        if let error = error as? PSQLError {
            if let state = error.serverInfo?[.sqlState] {
                let message = error.serverInfo?[.message] ?? "server error"
                switch state {
                case "28P01", "28000":
                    return .notFound("\(target): authentication failed; check the user and PGPASSWORD (or ~/.pgpass)")
                case "3D000":
                    return .notFound("\(target): the database does not exist (\(message))")
                case "53300":
                    return .notFound("\(target): the server has no free connection slot (\(message))")
                case "57P03":
                    return .notFound("\(target): the server is starting up or shutting down (\(message))")
                default:
                    return .notFound("\(target): \(message) (SQLSTATE \(state))")
                }
            }
            switch error.code {
            case .authMechanismRequiresPassword:
                return .notFound("\(target): the server asks for a password; set PGPASSWORD (or ~/.pgpass)")
            case .sslUnsupported:
                return .notFound("\(target): the server does not support SSL (sslmode=\(location.sslMode.rawValue))")
            default:
                break
            }
        }
        return .notFound("cannot reach \(target): \(reason(error, timeout: location.connectTimeout))")
    }

    /// Why a connection failed, in words: a refused or timed-out connection, an unknown host
    /// name, a missing socket file, a closed connection; the operating system's words otherwise.
    static func reason(_ error: Error, timeout: Int?) -> String {
        switch error {
        case let error as PSQLError:
            if let underlying = error.underlying { return reason(underlying, timeout: timeout) }
            switch error.code {
            case .serverClosedConnection, .uncleanShutdown:
                return "the server closed the connection during the login"
            case .sslUnsupported:
                return "the server does not support SSL"
            case .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
                return "the TLS handshake failed"
            default:
                return "\(error.code)"
            }
        case let error as NIOConnectionError:
            if let dns = error.dnsAError ?? error.dnsAAAAError { return reason(dns, timeout: timeout) }
            // Several addresses (IPv4 and IPv6): the first failure speaks for them.
            if let first = error.connectionErrors.first { return reason(first.error, timeout: timeout) }
            return "no address to connect to"
        case let error as SocketAddressError.UnknownHost:
            return "the host name '\(error.host)' was not found (\(error.errorDescription))"
        case let error as ChannelError:
            if case .connectTimeout = error { return "timed out after \(timeout.map { "\($0) s" } ?? "the operating system's limit")" }
            if case .alreadyClosed = error { return "the server closed the connection" }
            if case .eof = error { return "the server closed the connection" }
            return "\(error)"
        case let error as IOError:
            return errnoReason(error.errnoCode, timeout: timeout)
        case let error as NIOSSLError:
            return "the TLS handshake failed (\(error))"
        default:
            return "\(error)"
        }
    }

    private static func errnoReason(_ code: CInt, timeout: Int?) -> String {
        switch code {
        case ECONNREFUSED: return "connection refused (no server listens there)"
        case ENOENT: return "no socket file there (no server runs with that socket directory and port)"
        case ETIMEDOUT: return "timed out after \(timeout.map { "\($0) s" } ?? "the operating system's limit")"
        case EHOSTUNREACH: return "no route to the host"
        case ENETUNREACH: return "the network is unreachable"
        case ECONNRESET: return "the connection was reset"
        case EACCES, EPERM: return "permission denied"
        default: return String(cString: strerror(code))
        }
    }
}

/// The state every wait of one connection watches: whether the connection closed, and the
/// condition its futures' callbacks signal (they run on the event loop; the run waits on its
/// own thread).
final class ConnectionWatch: @unchecked Sendable {
    private let condition = NSCondition()
    private var closed = false

    enum Ending<T> {
        case done(Result<T, Error>)
        case closed
        case timedOut
    }

    var isClosed: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closed
    }

    func markClosed() { update { closed = true } }

    /// Changes the watched state and wakes the waiter.
    func update(_ change: () -> Void) {
        condition.lock()
        change()
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `result` gives a value, the connection closes (unless `ignoringClose`), or
    /// `deadline` passes (nil: no deadline).
    func wait<T>(until deadline: Date?, ignoringClose: Bool = false, for result: () -> Result<T, Error>?) -> Ending<T> {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let value = result() { return .done(value) }
            if closed, !ignoringClose { return .closed }
            if let deadline {
                if !condition.wait(until: deadline) {
                    if let value = result() { return .done(value) }
                    return .timedOut
                }
            } else {
                condition.wait()
            }
        }
    }
}

/// The result of one future, set on the event loop under the watch's lock.
private final class Outcome<T>: @unchecked Sendable {
    var result: Result<T, Error>?
}

/// Rows collected by a query's row callback (called on the connection's event loop, one row at
/// a time, while the caller waits for the query to end).
private final class RowBox: @unchecked Sendable {
    var rows: [[SQLValue]] = []
}

extension PostgresRow {
    /// The row as backend-neutral values.
    var sqlValues: [SQLValue] { map(SQLValue.init(cell:)) }
}

extension SQLValue {
    /// A PostgreSQL value as one of SQLite's storage classes: integers and booleans as
    /// integers, floating point as real, `bytea` as blob, everything else as its text.
    init(cell: PostgresCell) {
        guard cell.bytes != nil else {
            self = .null
            return
        }
        switch cell.dataType {
        case .int2, .int4, .int8, .oid:
            self = (try? cell.decode(Int64.self)).map { .integer($0) } ?? .null
        case .bool:
            self = (try? cell.decode(Bool.self)).map { .integer($0 ? 1 : 0) } ?? .null
        case .float4, .float8:
            self = (try? cell.decode(Double.self)).map { .real($0) } ?? .null
        case .numeric:
            if let decimal = try? cell.decode(Decimal.self) {
                let text = "\(decimal)"
                if let integer = Int64(text) {
                    self = .integer(integer)
                } else {
                    self = Double(text).map { .real($0) } ?? .text(text)
                }
            } else {
                self = .null
            }
        case .bytea:
            self = (try? cell.decode(ByteBuffer.self)).map { .blob(Array($0.readableBytesView)) } ?? .null
        default:
            if let text = try? cell.decode(String.self) {
                self = .text(text)
            } else if var bytes = cell.bytes {
                self = .text(bytes.readString(length: bytes.readableBytes) ?? "")
            } else {
                self = .null
            }
        }
    }
}

extension PostgresBindings {
    /// Binds backend-neutral values in order (`$1`, `$2`, ...).
    init(values: [SQLValue]) {
        self.init(capacity: values.count)
        for value in values {
            switch value {
            case .null: appendNull()
            case let .integer(v): append(v)
            case let .real(v): append(v)
            case let .text(v): append(v)
            case let .blob(v): append(ByteBuffer(bytes: v))
            }
        }
    }
}
