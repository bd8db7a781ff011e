import Foundation
import WinnowCore

/// Where a PostgreSQL database is and who connects, read as libpq reads it. The connection
/// string is a URI (`postgresql://user:password@host:port,host2:port2/dbname?key=value`, or
/// `postgres://`) or key words (`host=h port=5432 dbname=d`). A setting it leaves out comes from
/// the service it names (`service=`, `PGSERVICE`: `PGSERVICEFILE` or `~/.pg_service.conf`, then
/// the system's `pg_service.conf`), then from the environment (`PGHOST`, `PGPORT`, `PGUSER`,
/// `PGDATABASE`, `PGPASSWORD`, `PGPASSFILE`, `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT`,
/// `PGSSLKEY`, `PGCONNECT_TIMEOUT`, `PGAPPNAME`, `PGTARGETSESSIONATTRS`), then libpq's defaults
/// (a unix socket in `/var/run/postgresql`, port 5432, the login name as user and database,
/// `~/.pgpass`, certificates under `~/.postgresql/`). Pure: the environment and the files are
/// passed in.
public struct PostgresLocation: Sendable, Equatable {
    public enum SSLMode: String, Sendable, CaseIterable {
        case disable, allow, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// Which server of several a run takes (libpq's `target_session_attrs`).
    public enum TargetSessionAttrs: String, Sendable, CaseIterable {
        case any
        case readWrite = "read-write"
        case readOnly = "read-only"
        case primary, standby
        case preferStandby = "prefer-standby"
    }

    /// One host to try, with its port.
    public struct Endpoint: Sendable, Equatable {
        /// A host name or address, or (starting with `/`) the folder of a unix socket.
        public var host: String
        public var port: Int
    }

    /// The host tried (the first of ``endpoints`` until a connection chose one).
    public var host: String
    public var port: Int
    /// Every host, in the order they are tried.
    public var endpoints: [Endpoint]
    public var user: String
    /// The password of ``host`` and ``port``: the one given (URL, key word, service,
    /// `PGPASSWORD`), else the password file's (``at(_:)``).
    public var password: String?
    /// The password given, whatever the host.
    var givenPassword: String?
    /// The password file, when one is readable and private (libpq ignores one that others may read).
    var passwordFile: PostgresPasswordFile?
    public var database: String
    public var sslMode: SSLMode
    /// The certificates that verify the server (a PEM file), or `system` for the operating
    /// system's trust store; nil: the system's, where a mode verifies at all.
    public var sslRootCert: String?
    /// The client certificate and its key (PEM files), when the server asks for one.
    public var sslCert: String?
    public var sslKey: String?
    public var applicationName = "winnow"
    public var targetSessionAttrs = TargetSessionAttrs.any
    /// What libpq would warn about (a password file others may read), for the command to print.
    public var warnings: [String] = []
    /// The schema of winnow's own tables.
    public var bookkeepingSchema = "winnow"
    /// Seconds a connection attempt may take, the login included (libpq's `connect_timeout`,
    /// `PGCONNECT_TIMEOUT`; at least 2), per host. Nil: wait as long as the operating system does.
    public var connectTimeout: Int? = 10
    /// Seconds a statement may go without an answer before winnow checks, over a second
    /// connection, that the server still works on it (`winnow_liveness_check`; nil: never).
    public var livenessCheck: Int? = 30

    public var isUnixSocket: Bool { host.hasPrefix("/") }
    /// The socket file of a unix-socket location.
    public var socketPath: String { "\(host)/.s.PGSQL.\(port)" }

    /// The server as messages name it (never the password).
    public var serverDescription: String { isUnixSocket ? "socket \(socketPath)" : "\(host):\(port)" }

    /// The URL of the host tried, without its password, for messages.
    public var redacted: String {
        let hostPart = isUnixSocket ? "" : (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        var url = "postgresql://\(Self.encode(user))@\(hostPart)/\(Self.encode(database))"
        if isUnixSocket { url += "?host=\(host)&port=\(port)" }
        return url
    }

    /// This location at `endpoint`, with the password for it.
    public func at(_ endpoint: Endpoint) -> PostgresLocation {
        var location = self
        location.host = endpoint.host
        location.port = endpoint.port
        location.password =
            givenPassword ?? passwordFile?.password(host: endpoint.host, port: endpoint.port, database: database, user: user)
        return location
    }

    /// The files a location reads (service file, password file, certificates); the system's by
    /// default, others in tests.
    public struct Files: Sendable {
        public var read: @Sendable (String) -> String?
        /// The file's permission bits, nil when it does not exist.
        public var permissions: @Sendable (String) -> Int?

        public init(read: @escaping @Sendable (String) -> String?, permissions: @escaping @Sendable (String) -> Int?) {
            self.read = read
            self.permissions = permissions
        }

        public static let system = Files(
            read: { try? String(contentsOfFile: $0, encoding: .utf8) },
            permissions: { path in (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue })
    }

    /// The system's service file folder when `PGSYSCONFDIR` is not set (Debian's packages).
    static let systemConfigurationFolder = "/etc/postgresql-common"

    /// Parses `url` against `environment` and `files`; a malformed connection string is a usage
    /// error that names the part (never the password).
    public static func parse(
        _ url: String, environment: [String: String] = ProcessInfo.processInfo.environment, files: Files = .system
    ) throws -> PostgresLocation {
        func bad(_ what: String) -> WinnowError { .usage("\(DatabaseURL.redacted(url)): \(what)") }
        var given: [String: String]
        if DatabaseURL.isPostgresURL(url) {
            given = try uriSettings(url, bad)
        } else if let pairs = DatabaseURL.keywords(url) {
            given = [:]
            for pair in pairs { given[pair.key] = pair.value }
        } else {
            throw bad("not a postgresql:// URL or a key-word connection string (host=... dbname=...)")
        }
        func checkKeys(_ settings: [String: String], _ origin: String) throws {
            for key in settings.keys.sorted() where !DatabaseURL.postgresKeywords.contains(key) || key == "hostaddr" {
                let known = DatabaseURL.postgresKeywords.subtracting(["hostaddr"]).sorted().joined(separator: ", ")
                throw bad("unknown parameter '\(key)'\(origin) (known: \(known))")
            }
        }
        try checkKeys(given, "")
        let env = environment
        let home = env["HOME"].flatMap(nonEmpty)
        // The service's settings stand in for what the string leaves out.
        var service: [String: String] = [:]
        if let name = nonEmpty(given["service"]) ?? nonEmpty(env["PGSERVICE"]) {
            var candidates: [String] = []
            if let file = nonEmpty(env["PGSERVICEFILE"]) {
                candidates.append(file)
            } else if let home {
                candidates.append("\(home)/.pg_service.conf")
            }
            candidates.append("\(nonEmpty(env["PGSYSCONFDIR"]) ?? systemConfigurationFolder)/pg_service.conf")
            var found: [String: String]?
            for file in candidates {
                guard let text = files.read(file) else { continue }
                do {
                    found = try PostgresServiceFile.settings(of: name, in: text, file: file)
                } catch let error as PostgresServiceFile.ServiceFileError {
                    throw bad("syntax error in service file \(error.file), line \(error.line)")
                }
                if found != nil { break }
            }
            guard let found else {
                throw bad("definition of service \"\(name)\" not found (looked in \(candidates.joined(separator: ", ")))")
            }
            try checkKeys(found, " in service \"\(name)\"")
            service = found
        }
        /// A setting: the string's, the service's, then the environment's.
        func setting(_ key: String, _ variable: String? = nil) -> String? {
            nonEmpty(given[key]) ?? nonEmpty(service[key]) ?? variable.flatMap { nonEmpty(env[$0]) }
        }

        let login = env["USER"] ?? env["LOGNAME"] ?? "postgres"
        let user = setting("user", "PGUSER") ?? login
        let hosts = (setting("host", "PGHOST") ?? "").split(separator: ",", omittingEmptySubsequences: false).map {
            nonEmpty(String($0)) ?? "/var/run/postgresql"
        }
        var ports: [Int?] = []
        for text in (setting("port", "PGPORT") ?? "").split(separator: ",", omittingEmptySubsequences: false) {
            if text.isEmpty {
                ports.append(nil)
                continue
            }
            guard let port = Int(text), (1...65535).contains(port) else { throw bad("the port '\(text)' is not a port number") }
            ports.append(port)
        }
        guard ports.count == 1 || ports.count == hosts.count else {
            throw bad("could not match \(ports.count) port numbers to \(hosts.count) hosts")
        }
        let endpoints = hosts.enumerated().map { index, host in
            Endpoint(host: host, port: (ports.count == 1 ? ports[0] : ports[index]) ?? 5432)
        }
        let modeText = setting("sslmode", "PGSSLMODE") ?? "prefer"
        guard var mode = SSLMode(rawValue: modeText) else {
            throw bad("sslmode=\(modeText) is not one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var location = PostgresLocation(
            host: endpoints[0].host, port: endpoints[0].port, endpoints: endpoints, user: user,
            password: nil, givenPassword: setting("password", "PGPASSWORD"),
            database: setting("dbname", "PGDATABASE") ?? user, sslMode: mode)

        // The password file, when no password is given.
        if location.givenPassword == nil {
            let path = setting("passfile", "PGPASSFILE") ?? home.map { "\($0)/.pgpass" }
            if let path, let text = files.read(path) {
                if let bits = files.permissions(path), bits & 0o077 != 0 {
                    location.warnings.append(
                        "password file \"\(path)\" has group or world access; permissions should be u=rw (0600) or less (the file is ignored)"
                    )
                } else {
                    location.passwordFile = PostgresPasswordFile(parsing: text)
                }
            }
        }

        // Certificates: those named, else libpq's files under ~/.postgresql/ where they exist.
        func certificate(_ key: String, _ variable: String, default name: String) throws -> String? {
            if let path = setting(key, variable) {
                guard path == "system" && key == "sslrootcert" || files.permissions(path) != nil else {
                    throw bad("\(key) \(path) does not exist")
                }
                return path
            }
            guard let home, files.permissions("\(home)/.postgresql/\(name)") != nil else { return nil }
            return "\(home)/.postgresql/\(name)"
        }
        location.sslRootCert = try certificate("sslrootcert", "PGSSLROOTCERT", default: "root.crt")
        location.sslCert = try certificate("sslcert", "PGSSLCERT", default: "postgresql.crt")
        location.sslKey = try certificate("sslkey", "PGSSLKEY", default: "postgresql.key")
        if let key = location.sslKey, let bits = files.permissions(key), bits & 0o077 != 0 {
            throw bad("private key file \"\(key)\" has group or world access; permissions should be u=rw (0600) or less")
        }
        // libpq's rule: `require` with a root certificate file verifies as `verify-ca` does.
        if mode == .require, let root = location.sslRootCert, root != "system" { mode = .verifyCA }
        location.sslMode = mode

        if let text = setting("connect_timeout", "PGCONNECT_TIMEOUT") {
            guard let seconds = Int(text) else { throw bad("connect_timeout=\(text) is not a whole number of seconds") }
            // libpq's reading: zero or less waits without a limit, and less than 2 s is 2 s.
            location.connectTimeout = seconds <= 0 ? nil : max(2, seconds)
        }
        if let name = setting("application_name", "PGAPPNAME") { location.applicationName = name }
        if let text = setting("target_session_attrs", "PGTARGETSESSIONATTRS") {
            guard let attrs = TargetSessionAttrs(rawValue: text) else {
                throw bad(
                    "target_session_attrs=\(text) is not one of \(TargetSessionAttrs.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            location.targetSessionAttrs = attrs
        }
        if let text = setting("winnow_liveness_check") {
            guard let seconds = Int(text), seconds >= 0 else {
                throw bad("winnow_liveness_check=\(text) is not a whole number of seconds (0 turns the check off)")
            }
            location.livenessCheck = seconds == 0 ? nil : seconds
        }
        if let schema = given["winnow_schema"] ?? service["winnow_schema"] {
            guard !schema.isEmpty else { throw bad("winnow_schema is empty") }
            location.bookkeepingSchema = schema
        }
        return location.at(endpoints[0])
    }

    /// The settings a URI gives: its user, password, hosts and ports, database, and query
    /// parameters (which win over the same settings before the `?`, as in libpq).
    static func uriSettings(_ url: String, _ bad: (String) -> WinnowError) throws -> [String: String] {
        guard let schemeEnd = url.range(of: "://") else { throw bad("not a postgresql:// URL") }
        var rest = String(url[schemeEnd.upperBound...])
        var settings: [String: String] = [:]
        var query: [(String, String)] = []
        if let mark = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: mark)...].split(separator: "&") where !pair.isEmpty {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let key = decode(parts[0]), let value = decode(parts[1]) else {
                    throw bad("the query parameter '\(pair.hasPrefix("password=") ? "password=***" : String(pair))' is not name=value")
                }
                query.append((key, value))
            }
            rest = String(rest[..<mark])
        }
        if let slash = rest.firstIndex(of: "/") {
            guard let name = decode(String(rest[rest.index(after: slash)...])) else {
                throw bad("the database name is not valid percent-encoding")
            }
            if !name.isEmpty { settings["dbname"] = name }
            rest = String(rest[..<slash])
        }
        if let at = rest.lastIndex(of: "@") {
            let info = rest[..<at]
            if let colon = info.firstIndex(of: ":") {
                settings["user"] = decode(String(info[..<colon]))
                settings["password"] = decode(String(info[info.index(after: colon)...]))
            } else {
                settings["user"] = decode(String(info))
            }
            rest = String(rest[rest.index(after: at)...])
        }
        if !rest.isEmpty {
            var hosts: [String] = []
            var ports: [String] = []
            for part in rest.split(separator: ",", omittingEmptySubsequences: false) {
                var host = String(part)
                var port = ""
                if part.hasPrefix("["), let close = part.firstIndex(of: "]") {
                    host = String(part[part.index(after: part.startIndex)..<close])
                    let after = part[part.index(after: close)...]
                    if after.hasPrefix(":") { port = String(after.dropFirst()) }
                } else if let colon = part.lastIndex(of: ":") {
                    host = String(part[..<colon])
                    port = String(part[part.index(after: colon)...])
                }
                guard port.isEmpty || Int(port) != nil else { throw bad("the port '\(port)' is not a number") }
                guard let decoded = decode(host) else { throw bad("the host '\(host)' is not valid percent-encoding") }
                hosts.append(decoded)
                ports.append(port)
            }
            settings["host"] = hosts.joined(separator: ",")
            if ports.contains(where: { !$0.isEmpty }) { settings["port"] = ports.joined(separator: ",") }
        }
        for (key, value) in query { settings[key] = value }
        return settings
    }

    private static func nonEmpty(_ text: String?) -> String? { text.flatMap { $0.isEmpty ? nil : $0 } }

    private static func decode(_ text: String) -> String? { text.removingPercentEncoding }

    private static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed.subtracting(CharacterSet(charactersIn: ":@/?"))) ?? text
    }
}
