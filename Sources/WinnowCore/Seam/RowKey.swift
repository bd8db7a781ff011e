import Foundation

/// One row as winnow's bookkeeping names it: SQLite's rowid, another engine's primary key.
/// Two keys are the same row when their stored form is equal; the parts are for people.
public struct RowKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// One column of the identity and its value as SQL spells it.
    public struct Part: Sendable, Hashable, Codable {
        public var column: String
        public var literal: String

        public init(column: String, literal: String) {
            self.column = column
            self.literal = literal
        }
    }

    /// The identity as the engine stores it in `winnow_journal.rid` and `winnow_run_groups`.
    public var stored: String
    /// `id 7`, `rowid 12`; several columns for a composite primary key.
    public var parts: [Part]

    public init(stored: String, parts: [Part]) {
        self.stored = stored
        self.parts = parts
    }

    public static func == (lhs: RowKey, rhs: RowKey) -> Bool { lhs.stored == rhs.stored }
    public func hash(into hasher: inout Hasher) { hasher.combine(stored) }

    /// The columns that name the row, joined (`id`, `a, b`): a table's heading for keys.
    public var columns: String { parts.map(\.column).joined(separator: ", ") }

    /// The values that name the row as SQL spells them, joined (`7`, `1, 'x'`).
    public var literals: String { parts.map(\.literal).joined(separator: ", ") }

    /// `id 7`, or `(a, b) = (1, 'x')`.
    public var description: String {
        if parts.count == 1 { return "\(parts[0].column) \(parts[0].literal)" }
        return "(\(parts.map(\.column).joined(separator: ", "))) = (\(parts.map(\.literal).joined(separator: ", ")))"
    }
}
