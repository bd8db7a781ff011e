import Foundation

extension String {
    /// This identifier quoted for SQL: wrapped in double quotes, with embedded double quotes
    /// doubled, so any name (quotes, spaces, semicolons, keywords) is one identifier.
    ///
    /// GRDB's `quotedDatabaseIdentifier` wraps the name without doubling embedded quotes, so
    /// winnow uses this everywhere a name from a file or from the database meets SQL. Pure
    /// Swift on UTF-8 (no Foundation string search): it is built for every statement.
    public var sqlIdentifier: String {
        var quoted = "\""
        quoted.reserveCapacity(utf8.count + 2)
        if utf8.contains(UInt8(ascii: "\"")) {
            for character in unicodeScalars {
                if character == "\"" { quoted.unicodeScalars.append("\"") }
                quoted.unicodeScalars.append(character)
            }
        } else {
            quoted += self
        }
        quoted += "\""
        return quoted
    }
}
