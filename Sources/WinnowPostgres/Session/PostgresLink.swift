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
final class PostgresLink {
    let location: PostgresLocation
    private let group: MultiThreadedEventLoopGroup
    private let connection: PostgresConnection
    private let logger: Logger

    init(_ location: PostgresLocation) throws {
        self.location = location
        var logger = Logger(label: "winnow.postgres")
        logger.logLevel = .critical
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var configuration: PostgresConnection.Configuration
        let tls: PostgresConnection.Configuration.TLS
        switch location.sslMode {
        case .disable:
            tls = .disable
        case .allow, .prefer, .require:
            var settings = TLSConfiguration.makeClientConfiguration()
            settings.certificateVerification = .none
            let context = try NIOSSLContext(configuration: settings)
            tls = location.sslMode == .require ? .require(context) : .prefer(context)
        case .verifyCA, .verifyFull:
            var settings = TLSConfiguration.makeClientConfiguration()
            settings.certificateVerification = location.sslMode == .verifyFull ? .fullVerification : .noHostnameVerification
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
        configuration.options.connectTimeout = .seconds(10)
        configuration.options.additionalStartupParameters = [("application_name", "winnow")]
        do {
            connection = try PostgresConnection.connect(
                on: group.next(), configuration: configuration, id: 1, logger: logger
            ).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw Self.connectError(error, location)
        }
    }

    deinit {
        _ = try? connection.close().wait()
        try? group.syncShutdownGracefully()
    }

    /// Runs one statement (parameters `$1`, `$2`, ...) and returns its rows as values.
    ///
    /// Rows are converted as they arrive (postgres-nio's collect-all path copies its growing row
    /// array on every network read: half of a 200,000-row discovery's time).
    func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws -> [[SQLValue]] {
        let box = RowBox()
        _ = try connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger) { row in
            box.rows.append(row.sqlValues)
        }.wait()
        return box.rows
    }

    /// Runs one statement and returns the number of rows it changed.
    @discardableResult
    func command(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws -> Int {
        let result = try connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).wait()
        return result.metadata.rows ?? 0
    }

    /// The failure of a connection attempt: exit 66 naming the server, never the password.
    static func connectError(_ error: Error, _ location: PostgresLocation) -> WinnowError {
        let target = "PostgreSQL at \(location.serverDescription) (database \(location.database), user \(location.user))"
        if let error = error as? PSQLError {
            if let state = error.serverInfo?[.sqlState] {
                let message = error.serverInfo?[.message] ?? "server error"
                switch state {
                case "28P01", "28000":
                    return .notFound("\(target): authentication failed; check the user and PGPASSWORD (or ~/.pgpass)")
                case "3D000":
                    return .notFound("\(target): the database does not exist (\(message))")
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
                let reason = error.underlying.map { "\($0)" } ?? "\(error.code)"
                return .notFound("cannot reach \(target): \(reason)")
            }
        }
        return .notFound("cannot reach \(target): \(error)")
    }
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
