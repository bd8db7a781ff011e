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
