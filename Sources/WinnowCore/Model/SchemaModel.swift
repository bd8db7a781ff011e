import Foundation

/// A model version: the content of a schema file (docs/reference.md section 3), or the live schema of a
/// database in the same terms. Pure values: the migration planner compares two of them.
public struct SchemaModel: Sendable, Equatable {
    /// The model version (an increasing integer); 0 for a live database that never recorded one.
    public var version: Int
    public var tables: [TableModel]
    /// Tables the file asks to drop (`dropped_tables:`). A live table the file neither
    /// describes nor lists here is kept: a schema file's silence never drops anything.
    public var droppedTables: [DroppedName]

    public init(version: Int, tables: [TableModel], droppedTables: [DroppedName] = []) {
        self.version = version
        self.tables = tables
        self.droppedTables = droppedTables
    }

    public func table(named name: String) -> TableModel? {
        tables.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// Whether the file lists table `name` under `dropped_tables:`.
    public func drops(table name: String) -> Bool { droppedTables.contains { $0.matches(name) } }
}

/// One table of a model.
public struct TableModel: Sendable, Equatable {
    public var name: String
    /// Earlier names, newest first (Core Data's renaming identifier).
    public var renamedFrom: [String]
    public var columns: [ColumnModel]
    public var indexes: [IndexModel]
    /// Columns the file asks to drop (`dropped:`); other live columns it does not describe are kept.
    public var dropped: [DroppedName]
    /// Indexes the file asks to drop (`dropped_indexes:`); other live indexes are kept.
    public var droppedIndexes: [DroppedName]
    public var location: SourceLocation?

    public init(
        name: String, renamedFrom: [String] = [], columns: [ColumnModel], indexes: [IndexModel] = [],
        dropped: [DroppedName] = [], droppedIndexes: [DroppedName] = [], location: SourceLocation? = nil
    ) {
        self.name = name
        self.renamedFrom = renamedFrom
        self.columns = columns
        self.indexes = indexes
        self.dropped = dropped
        self.droppedIndexes = droppedIndexes
        self.location = location
    }

    public func column(named name: String) -> ColumnModel? {
        columns.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    public var primaryKey: [String] { columns.filter(\.primaryKey).map(\.name) }

    public static func == (lhs: TableModel, rhs: TableModel) -> Bool {
        lhs.name == rhs.name && lhs.renamedFrom == rhs.renamedFrom && lhs.columns == rhs.columns && lhs.indexes == rhs.indexes
            && lhs.dropped == rhs.dropped && lhs.droppedIndexes == rhs.droppedIndexes
    }

    /// Whether the file lists column `name` under `dropped:`.
    public func drops(column name: String) -> Bool { dropped.contains { $0.matches(name) } }

    /// Whether the file lists index `name` under `dropped_indexes:`.
    public func drops(index name: String) -> Bool { droppedIndexes.contains { $0.matches(name) } }
}

/// A name a schema file lists to be dropped (`dropped:`, `dropped_indexes:`, `dropped_tables:`),
/// with where the file wrote it. Dropping is only ever asked for by name: what a file does not
/// mention is kept.
public struct DroppedName: Sendable, Equatable {
    public var name: String
    /// Where the file wrote the name (not part of equality).
    public var location: SourceLocation?

    public init(_ name: String, location: SourceLocation? = nil) {
        self.name = name
        self.location = location
    }

    /// Names are matched as SQLite matches identifiers: case-insensitively.
    public func matches(_ other: String) -> Bool { name.caseInsensitiveCompare(other) == .orderedSame }

    public static func == (lhs: DroppedName, rhs: DroppedName) -> Bool { lhs.name == rhs.name }
}

/// A column default: a literal value, or an SQL expression kept as written.
public enum DefaultValue: Sendable, Equatable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    /// A non-literal default such as `CURRENT_TIMESTAMP` or `(strftime('%s','now'))`.
    case expression(String)

    /// The SQL that declares this default (`DEFAULT <sql>`).
    public var sql: String {
        switch self {
        case .null: return "NULL"
        case let .integer(v): return String(v)
        case let .real(v): return v == v.rounded() && abs(v) < 1e15 ? String(format: "%.1f", v) : "\(v)"
        case let .text(s): return "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
        case let .expression(e): return e
        }
    }

    /// Whether SQLite can add a column with this default by ALTER TABLE: literals only (SQLite
    /// refuses CURRENT_* and any expression there).
    public var isConstant: Bool {
        if case let .expression(e) = self { return ["TRUE", "FALSE"].contains(e.uppercased()) }
        return true
    }

    /// The text without balanced outer parentheses: `(strftime('%s','now'))` is how a schema may
    /// write what SQLite reports as `strftime('%s','now')`.
    package static func unwrapped(_ sql: String) -> String {
        var text = sql.trimmingCharacters(in: .whitespaces)
        while text.hasPrefix("("), text.hasSuffix(")") {
            var depth = 0
            var closesAtEnd = true
            let tokens = SQLTokenizer.tokenize(text)
            for (index, token) in tokens.enumerated() where token.kind == .punctuation {
                if token.text == "(" { depth += 1 }
                if token.text == ")" {
                    depth -= 1
                    if depth == 0 && index != tokens.count - 1 { closesAtEnd = false }
                }
            }
            guard closesAtEnd else { break }
            text = String(text.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
        }
        return text
    }

    /// Reads SQLite's `dflt_value` text.
    public static func parse(sql: String) -> DefaultValue {
        let trimmed = unwrapped(sql)
        if trimmed.uppercased() == "NULL" { return .null }
        if trimmed.count >= 2, trimmed.hasPrefix("'"), trimmed.hasSuffix("'") {
            let inner = trimmed.dropFirst().dropLast()
            // Only a single literal: no unescaped quote inside.
            if !inner.replacingOccurrences(of: "''", with: "").contains("'") {
                return .text(String(inner).replacingOccurrences(of: "''", with: "'"))
            }
        }
        if let v = Int64(trimmed) { return .integer(v) }
        if trimmed.first.map({ $0.isNumber || $0 == "-" || $0 == "+" || $0 == "." }) == true, let v = Double(trimmed) { return .real(v) }
        return .expression(trimmed)
    }

    public var description: String { sql }
}

/// One column of a model.
public struct ColumnModel: Sendable, Equatable {
    public var name: String
    /// The declared type, lowercased (`integer`, `text`, `varchar(20)`, or empty).
    public var type: String
    public var nullable: Bool
    public var defaultValue: DefaultValue?
    public var primaryKey: Bool
    public var renamedFrom: [String]
    public var references: ColumnReferenceModel?
    public var location: SourceLocation?

    public init(
        name: String, type: String, nullable: Bool = true, defaultValue: DefaultValue? = nil, primaryKey: Bool = false,
        renamedFrom: [String] = [], references: ColumnReferenceModel? = nil, location: SourceLocation? = nil
    ) {
        self.name = name
        self.type = type
        self.nullable = nullable
        self.defaultValue = defaultValue
        self.primaryKey = primaryKey
        self.renamedFrom = renamedFrom
        self.references = references
        self.location = location
    }

    public static func == (lhs: ColumnModel, rhs: ColumnModel) -> Bool {
        lhs.name == rhs.name && lhs.type == rhs.type && lhs.nullable == rhs.nullable && lhs.defaultValue == rhs.defaultValue
            && lhs.primaryKey == rhs.primaryKey && lhs.renamedFrom == rhs.renamedFrom && lhs.references == rhs.references
    }

    /// `{name: x, type: integer, ...}` for messages.
    public var definition: String {
        var parts = ["type \(type.isEmpty ? "(none)" : type)"]
        if primaryKey { parts.append("primary key") }
        parts.append(nullable ? "nullable" : "not null")
        if let d = defaultValue { parts.append("default \(d.sql)") }
        if let r = references { parts.append("references \(r.table)(\(r.column ?? "primary key"))") }
        return parts.joined(separator: ", ")
    }
}

/// `references: {table: T, column: C}` of a column.
public struct ColumnReferenceModel: Sendable, Equatable {
    public var table: String
    public var column: String?
    /// Where the file wrote `table:` and `column:` (not part of equality).
    public var tableLocation: SourceLocation?
    public var columnLocation: SourceLocation?

    public init(table: String, column: String?, tableLocation: SourceLocation? = nil, columnLocation: SourceLocation? = nil) {
        self.table = table
        self.column = column
        self.tableLocation = tableLocation
        self.columnLocation = columnLocation
    }

    public static func == (lhs: ColumnReferenceModel, rhs: ColumnReferenceModel) -> Bool {
        lhs.table == rhs.table && lhs.column == rhs.column
    }
}

/// One index of a model.
public struct IndexModel: Sendable, Equatable {
    public var name: String
    public var columns: [String]
    public var unique: Bool
    /// Where the file wrote the index's name (not part of equality).
    public var location: SourceLocation?

    public init(name: String, columns: [String], unique: Bool) {
        self.name = name
        self.columns = columns
        self.unique = unique
    }

    public static func == (lhs: IndexModel, rhs: IndexModel) -> Bool {
        lhs.name == rhs.name && lhs.columns == rhs.columns && lhs.unique == rhs.unique
    }
}

extension DefaultValue {
    /// A literal (written bare after DEFAULT); other defaults need parentheses.
    package var isLiteral: Bool {
        switch self {
        case .expression(let e):
            return ["CURRENT_TIME", "CURRENT_DATE", "CURRENT_TIMESTAMP", "TRUE", "FALSE"].contains(e.uppercased()) || e.hasPrefix("(")
        default: return true
        }
    }

    /// The value as SQL that can stand in a DEFAULT clause or an expression (parenthesised
    /// where it is not a literal).
    package var expressionSQL: String { isLiteral ? sql : "(\(sql))" }
}
