import Foundation

/// Tells a database server's URL (`postgresql://...`) from a file path, and keeps secrets out of
/// what winnow prints and stores.
public enum DatabaseURL {
    /// The URL schemes of PostgreSQL (libpq's `postgresql://` and `postgres://`).
    public static let postgresSchemes = ["postgresql", "postgres"]

    /// Whether `location` names a PostgreSQL server rather than a SQLite file.
    public static func isPostgres(_ location: String) -> Bool {
        guard let colon = location.firstIndex(of: ":") else { return false }
        let scheme = location[..<colon].lowercased()
        return postgresSchemes.contains(scheme) && location[colon...].hasPrefix("://")
    }

    /// Whether the URL carries a password (`user:secret@host`).
    public static func hasPassword(_ location: String) -> Bool { redacted(location) != location }

    /// The URL without its password (`user:secret@host` -> `user@host`): what a file winnow
    /// writes may name, the password coming from `PGPASSWORD` or the password file instead.
    public static func withoutPassword(_ location: String) -> String {
        let shown = redacted(location)
        guard shown != location, let mask = shown.range(of: ":***@") else { return location }
        return shown.replacingCharacters(in: mask, with: "@")
    }

    /// A short name for files named after a database: a file's name without its extension, a
    /// server's database name (`postgresql://host/app?sslmode=require` -> `app`).
    public static func shortName(_ location: String) -> String {
        guard isPostgres(location), let start = location.range(of: "://") else {
            return URL(fileURLWithPath: location).deletingPathExtension().lastPathComponent
        }
        let rest = location[start.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return "postgres" }
        let path = rest[rest.index(after: slash)...].prefix { $0 != "?" && $0 != "#" }
        let name = String(path).removingPercentEncoding ?? String(path)
        let safe = name.filter { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == "." }
        return safe.isEmpty || safe.hasPrefix(".") ? "postgres" : safe
    }

    /// The URL with its password replaced by `***` (what messages show).
    public static func redacted(_ location: String) -> String {
        guard isPostgres(location), let start = location.range(of: "://") else { return location }
        let rest = location[start.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard let at = authority.lastIndex(of: "@") else { return location }
        let userInfo = authority[..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return location }
        return String(location[..<colon]) + ":***" + String(location[at...])
    }
}
