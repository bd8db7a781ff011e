import Foundation

/// A libpq password file (`~/.pgpass`, `PGPASSFILE`, `passfile=`): one
/// `hostname:port:database:username:password` per line, the first four fields `*` for any
/// value, `:` and `\` inside a field escaped with `\`, `#` starting a comment line. The first
/// line that matches gives the password.
public struct PostgresPasswordFile: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        var fields: [String]
        var password: String
    }

    var entries: [Entry]

    public init(parsing text: String) {
        entries = text.split(whereSeparator: \.isNewline).compactMap { line in
            guard !line.hasPrefix("#") else { return nil }
            var fields: [String] = []
            var current = ""
            var i = line.startIndex
            while i < line.endIndex {
                let c = line[i]
                i = line.index(after: i)
                if c == "\\", i < line.endIndex {
                    current.append(line[i])
                    i = line.index(after: i)
                } else if c == ":", fields.count < 4 {
                    fields.append(current)
                    current = ""
                } else {
                    current.append(c)
                }
            }
            guard fields.count == 4 else { return nil }
            return Entry(fields: fields, password: current)
        }
    }

    /// The password for a connection to `host` (a unix-socket folder matches `localhost`, as
    /// in libpq), `port`, `database` as `user`.
    public func password(host: String, port: Int, database: String, user: String) -> String? {
        let wanted = [host.hasPrefix("/") || host.isEmpty ? "localhost" : host, String(port), database, user]
        return entries.first { entry in zip(entry.fields, wanted).allSatisfy { $0 == "*" || $0 == $1 } }?.password
    }
}

/// A libpq connection service file (`~/.pg_service.conf`, `PGSERVICEFILE`, the system's
/// `pg_service.conf`): `[name]` sections of `key=value` lines, `#` comments.
enum PostgresServiceFile {
    /// The settings of service `name` in `text`, nil when it has no such section; a line that is
    /// not `key=value` is an error naming it.
    static func settings(of name: String, in text: String, file: String) throws -> [String: String]? {
        var section: String?
        var found: [String: String]?
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw ServiceFileError(file: file, line: number + 1) }
                if found != nil { break }
                section = String(line.dropFirst().dropLast())
                if section == name { found = [:] }
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { throw ServiceFileError(file: file, line: number + 1) }
            guard section == name else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            found?[key] = value
        }
        return found
    }

    struct ServiceFileError: Error {
        var file: String
        var line: Int
    }
}
