import Foundation

/// Tells a database server's connection string from a file path, and keeps secrets out of what
/// winnow prints and stores. A PostgreSQL server is named as libpq names it: a URI
/// (`postgresql://...` or `postgres://...`) or key words (`host=db dbname=app user=ann`).
public enum DatabaseURL {
    /// The URL schemes of PostgreSQL (libpq's `postgresql://` and `postgres://`).
    public static let postgresSchemes = ["postgresql", "postgres"]

    /// libpq's connection key words that can start a key-word connection string (a file path
    /// that merely contains `=` is not one).
    public static let postgresKeywords: Set<String> = [
        "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service", "sslmode", "sslrootcert", "sslcert",
        "sslkey", "connect_timeout", "application_name", "target_session_attrs", "winnow_schema", "winnow_liveness_check",
    ]

    /// One `key=value` of a key-word connection string, with where its value is written.
    public struct Keyword: Sendable, Equatable {
        public var key: String
        public var value: String
        /// The value as written (quotes and escapes included), in the string it came from.
        public var written: Range<String.Index>
    }

    /// Whether `location` names a PostgreSQL server rather than a SQLite file.
    public static func isPostgres(_ location: String) -> Bool { isPostgresURL(location) || keywords(location) != nil }

    /// Whether `location` is a `postgresql://` or `postgres://` URI.
    public static func isPostgresURL(_ location: String) -> Bool {
        guard let colon = location.firstIndex(of: ":") else { return false }
        let scheme = location[..<colon].lowercased()
        return postgresSchemes.contains(scheme) && location[colon...].hasPrefix("://")
    }

    /// The pairs of a key-word connection string (`host=h port=5432 dbname='my db'`), by libpq's
    /// rules: pairs apart by spaces, spaces allowed around `=`, a value in single quotes when it
    /// has spaces, `\` escaping the next character. Nil when `location` is not one: its first key
    /// is not a libpq key word, or a pair is malformed.
    public static func keywords(_ location: String) -> [Keyword]? {
        var pairs: [Keyword] = []
        var i = location.startIndex
        func skipSpaces() { while i < location.endIndex, location[i].isWhitespace { i = location.index(after: i) } }
        skipSpaces()
        while i < location.endIndex {
            let keyStart = i
            while i < location.endIndex, location[i] != "=", !location[i].isWhitespace { i = location.index(after: i) }
            let key = String(location[keyStart..<i])
            skipSpaces()
            guard !key.isEmpty, i < location.endIndex, location[i] == "=" else { return nil }
            i = location.index(after: i)
            skipSpaces()
            let valueStart = i
            var value = ""
            if i < location.endIndex, location[i] == "'" {
                i = location.index(after: i)
                var closed = false
                while i < location.endIndex {
                    let c = location[i]
                    i = location.index(after: i)
                    if c == "\\", i < location.endIndex {
                        value.append(location[i])
                        i = location.index(after: i)
                    } else if c == "'" {
                        closed = true
                        break
                    } else {
                        value.append(c)
                    }
                }
                guard closed else { return nil }
            } else {
                while i < location.endIndex, !location[i].isWhitespace {
                    if location[i] == "\\", location.index(after: i) < location.endIndex { i = location.index(after: i) }
                    value.append(location[i])
                    i = location.index(after: i)
                }
            }
            pairs.append(Keyword(key: key, value: value, written: valueStart..<i))
            skipSpaces()
        }
        guard let first = pairs.first, postgresKeywords.contains(first.key) else { return nil }
        return pairs
    }

    /// Whether the connection string carries a password (`user:secret@host`, `password=secret`).
    public static func hasPassword(_ location: String) -> Bool { redacted(location) != location }

    /// The connection string without its password (`user:secret@host` -> `user@host`; the
    /// `password=` pair left out): what a file winnow writes may name, the password coming from
    /// `PGPASSWORD` or the password file instead.
    public static func withoutPassword(_ location: String) -> String {
        if let pairs = keywords(location) {
            return pairs.filter { $0.key != "password" }.map { "\($0.key)=\(location[$0.written])" }.joined(separator: " ")
        }
        let shown = redacted(location)
        guard shown != location, let mask = shown.range(of: ":***@") else { return location }
        return shown.replacingCharacters(in: mask, with: "@")
    }

    /// A short name for files named after a database: a file's name without its extension, a
    /// server's database name (`postgresql://host/app?sslmode=require` -> `app`, `dbname=app`
    /// -> `app`).
    public static func shortName(_ location: String) -> String {
        var name: String
        if let pairs = keywords(location) {
            name = pairs.last { $0.key == "dbname" }?.value ?? ""
        } else if isPostgresURL(location), let start = location.range(of: "://") {
            let rest = location[start.upperBound...]
            guard let slash = rest.firstIndex(of: "/") else { return "postgres" }
            let path = rest[rest.index(after: slash)...].prefix { $0 != "?" && $0 != "#" }
            name = String(path).removingPercentEncoding ?? String(path)
        } else {
            return URL(fileURLWithPath: location).deletingPathExtension().lastPathComponent
        }
        let safe = name.filter { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == "." }
        return safe.isEmpty || safe.hasPrefix(".") ? "postgres" : safe
    }

    /// The connection string with its password replaced by `***` (what messages show).
    public static func redacted(_ location: String) -> String {
        if let pairs = keywords(location) {
            var shown = ""
            var cursor = location.startIndex
            for pair in pairs where pair.key == "password" {
                shown += location[cursor..<pair.written.lowerBound] + "***"
                cursor = pair.written.upperBound
            }
            return shown + location[cursor...]
        }
        guard isPostgresURL(location), let start = location.range(of: "://") else { return location }
        let rest = location[start.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var shown = location
        if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
            shown = String(location[..<colon]) + ":***" + String(location[at...])
        }
        // A password may also come as a query parameter (`?password=...`).
        guard let query = shown.firstIndex(of: "?") else { return shown }
        let parameters = shown[shown.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { pair in
            pair.hasPrefix("password=") ? "password=***" : String(pair)
        }
        return String(shown[...query]) + parameters.joined(separator: "&")
    }
}
