import Foundation

extension String {
    /// This identifier quoted for SQL: wrapped in double quotes, with embedded double quotes
    /// doubled, so any name (quotes, spaces, semicolons, keywords) is one identifier.
    ///
    /// GRDB's `quotedDatabaseIdentifier` wraps the name without doubling embedded quotes, so
    /// winnow uses this everywhere a name from a file or from the database meets SQL.
    public var sqlIdentifier: String {
        "\"" + replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
