import Foundation
import WinnowCore

/// Where a PostgreSQL database is and who connects, by libpq's conventions: a
/// `postgresql://user:password@host:port/dbname?sslmode=...&host=/socket/dir` URL, with what it
/// leaves out taken from `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD` and
/// `PGSSLMODE`, then libpq's defaults (a unix socket in `/var/run/postgresql`, port 5432, the
/// login name as user and database). Pure: the environment is passed in.
public struct PostgresLocation: Sendable, Equatable {
    public enum SSLMode: String, Sendable, CaseIterable {
        case disable, allow, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// A host name or address, or (starting with `/`) the folder of a unix socket.
    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String
    public var sslMode: SSLMode
    /// The schema of winnow's own tables.
    public var bookkeepingSchema = "winnow"
    /// Seconds a connection attempt may take, the login included (libpq's `connect_timeout`,
    /// `PGCONNECT_TIMEOUT`; at least 2). Nil: wait as long as the operating system does.
    public var connectTimeout: Int? = 10
    /// Seconds a statement may go without an answer before winnow checks, over a second
    /// connection, that the server still works on it (`winnow_liveness_check`; nil: never).
    public var livenessCheck: Int? = 30

    public var isUnixSocket: Bool { host.hasPrefix("/") }
    /// The socket file of a unix-socket location.
    public var socketPath: String { "\(host)/.s.PGSQL.\(port)" }

    /// The server as messages name it (never the password).
    public var serverDescription: String { isUnixSocket ? "socket \(socketPath)" : "\(host):\(port)" }

    /// The URL without its password, for messages.
    public var redacted: String {
        let hostPart = isUnixSocket ? "" : (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        var url = "postgresql://\(Self.encode(user))@\(hostPart)/\(Self.encode(database))"
        if isUnixSocket { url += "?host=\(host)&port=\(port)" }
        return url
    }

    /// Parses `url` against `environment`; a malformed URL is a usage error that names the part.
    public static func parse(_ url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PostgresLocation
    {
        func bad(_ what: String) -> WinnowError { .usage("\(DatabaseURL.redacted(url)): \(what)") }
        guard DatabaseURL.isPostgres(url), let schemeEnd = url.range(of: "://") else {
            throw bad("not a postgresql:// URL")
        }
        var rest = String(url[schemeEnd.upperBound...])
        var query: [String: String] = [:]
        if let mark = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: mark)...].split(separator: "&") where !pair.isEmpty {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let key = decode(parts[0]), let value = decode(parts[1]) else {
                    throw bad("the query parameter '\(pair)' is not name=value")
                }
                query[key] = value
            }
            rest = String(rest[..<mark])
        }
        var path = ""
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[rest.index(after: slash)...])
            rest = String(rest[..<slash])
        }
        var user: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let info = rest[..<at]
            if let colon = info.firstIndex(of: ":") {
                user = decode(String(info[..<colon]))
                password = decode(String(info[info.index(after: colon)...]))
            } else {
                user = decode(String(info))
            }
            rest = String(rest[rest.index(after: at)...])
        }
        var host: String?
        var port: Int?
        if !rest.isEmpty {
            var hostPart = rest
            if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
                hostPart = String(rest[rest.index(after: rest.startIndex)..<close])
                let after = rest[rest.index(after: close)...]
                if after.hasPrefix(":") {
                    guard let value = Int(after.dropFirst()) else { throw bad("the port '\(after.dropFirst())' is not a number") }
                    port = value
                }
            } else if let colon = rest.lastIndex(of: ":") {
                hostPart = String(rest[..<colon])
                let text = rest[rest.index(after: colon)...]
                guard let value = Int(text) else { throw bad("the port '\(text)' is not a number") }
                port = value
            }
            host = decode(hostPart)
        }
        for (key, value) in query {
            switch key {
            case "host": host = value
            case "port":
                guard let value = Int(value) else { throw bad("port=\(value) is not a number") }
                port = value
            case "user": user = value
            case "password": password = value
            case "dbname": path = value
            case "sslmode": break
            case "winnow_schema": break
            case "application_name", "connect_timeout", "winnow_liveness_check": break
            default:
                throw bad(
                    "unknown parameter '\(key)' (known: host, port, user, password, dbname, sslmode, connect_timeout, winnow_schema, winnow_liveness_check)"
                )
            }
        }
        let env = environment
        let login = env["USER"] ?? env["LOGNAME"] ?? "postgres"
        let finalUser = nonEmpty(user) ?? nonEmpty(env["PGUSER"]) ?? login
        let finalHost = nonEmpty(host) ?? nonEmpty(env["PGHOST"]) ?? "/var/run/postgresql"
        var finalPort = port
        if finalPort == nil, let text = nonEmpty(env["PGPORT"]) {
            guard let value = Int(text) else { throw WinnowError.usage("PGPORT=\(text) is not a number") }
            finalPort = value
        }
        guard let decodedPath = decode(path) else { throw bad("the database name is not valid percent-encoding") }
        let modeText = query["sslmode"] ?? nonEmpty(env["PGSSLMODE"]) ?? "prefer"
        guard let mode = SSLMode(rawValue: modeText) else {
            throw bad("sslmode=\(modeText) is not one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard (1...65535).contains(finalPort ?? 5432) else { throw bad("the port \(finalPort ?? 0) is out of range") }
        var location = PostgresLocation(
            host: finalHost, port: finalPort ?? 5432, user: finalUser,
            password: nonEmpty(password) ?? nonEmpty(env["PGPASSWORD"]),
            database: nonEmpty(decodedPath) ?? nonEmpty(env["PGDATABASE"]) ?? finalUser, sslMode: mode)
        if let text = query["connect_timeout"] ?? nonEmpty(env["PGCONNECT_TIMEOUT"]) {
            guard let seconds = Int(text) else { throw bad("connect_timeout=\(text) is not a whole number of seconds") }
            // libpq's reading: zero or less waits without a limit, and less than 2 s is 2 s.
            location.connectTimeout = seconds <= 0 ? nil : max(2, seconds)
        }
        if let text = query["winnow_liveness_check"] {
            guard let seconds = Int(text), seconds >= 0 else {
                throw bad("winnow_liveness_check=\(text) is not a whole number of seconds (0 turns the check off)")
            }
            location.livenessCheck = seconds == 0 ? nil : seconds
        }
        if let schema = query["winnow_schema"] {
            guard !schema.isEmpty else { throw bad("winnow_schema is empty") }
            location.bookkeepingSchema = schema
        }
        return location
    }

    private static func nonEmpty(_ text: String?) -> String? { text.flatMap { $0.isEmpty ? nil : $0 } }

    private static func decode(_ text: String) -> String? { text.removingPercentEncoding }

    private static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed.subtracting(CharacterSet(charactersIn: ":@/?"))) ?? text
    }
}
