import Foundation

/// One column of a live table, as the engine's catalog describes it.
public struct LiveColumn: Sendable, Equatable {
    public var name: String
    public var type: String
    public var notNull: Bool
    public var defaultSQL: String?
    /// 1-based position in the primary key; 0 when not part of it.
    public var primaryKeyIndex: Int
    /// Whether the engine computes the column (a generated column, or a hidden column of a
    /// SQLite virtual table): it is never written, journaled or copied.
    public var generated: Bool
    /// The declared collation (`COLLATE NOCASE`); nil for the engine's default.
    public var collation: String? = nil
    /// Whether the column's own definition declares a UNIQUE or CHECK constraint or a
    /// generated expression: dropping it drops that too, which only a table rebuild can do.
    public var constrainedInDefinition = false
    /// Whether a table constraint (PRIMARY KEY, UNIQUE, CHECK, FOREIGN KEY, EXCLUDE) names the
    /// column, or whether the table's constraints could not be read: dropping it is then not a
    /// lightweight change.
    public var inTableConstraint = false

    package init(
        name: String, type: String, notNull: Bool, defaultSQL: String? = nil, primaryKeyIndex: Int, generated: Bool = false,
        collation: String? = nil
    ) {
        self.name = name
        self.type = type
        self.notNull = notNull
        self.defaultSQL = defaultSQL
        self.primaryKeyIndex = primaryKeyIndex
        self.generated = generated
        self.collation = collation
    }

    public var isStored: Bool { !generated }
}

/// A declared foreign key of a child table.
public struct LiveForeignKey: Sendable, Equatable {
    public var childTable: String
    public var childColumns: [String]
    public var parentTable: String
    /// nil when the declaration names no columns (it then means the parent's primary key).
    public var parentColumns: [String]?

    package init(childTable: String, childColumns: [String], parentTable: String, parentColumns: [String]? = nil) {
        self.childTable = childTable
        self.childColumns = childColumns
        self.parentTable = parentTable
        self.parentColumns = parentColumns
    }
}

/// Why an index exists.
public enum IndexOrigin: Sendable, Equatable {
    /// Made by `CREATE INDEX`: a schema file describes it, and winnow may drop it.
    case createIndex
    /// Made for a UNIQUE constraint of the table.
    case uniqueConstraint
    /// Made for the primary key.
    case primaryKey
}

/// An index of a table.
public struct LiveIndex: Sendable, Equatable {
    public var name: String
    /// Indexed columns in order; nil for an expression term.
    public var columns: [String?]
    public var unique: Bool
    public var partial: Bool
    public var origin: IndexOrigin

    package init(name: String, columns: [String?], unique: Bool, partial: Bool, origin: IndexOrigin = .createIndex) {
        self.name = name
        self.columns = columns
        self.unique = unique
        self.partial = partial
        self.origin = origin
    }
}

/// What winnow needs to know about one live table.
public struct LiveTable: Sendable {
    public var name: String
    /// The table's definition as the engine keeps it as text (SQLite: the `CREATE TABLE`
    /// statement in `sqlite_master`, which a rebuild edits); empty where the engine keeps none.
    public var sql: String = ""
    public var columns: [LiveColumn]
    public var hasRowID: Bool
    public var isVirtual: Bool
    public var foreignKeys: [LiveForeignKey]
    public var indexes: [LiveIndex]

    package init(
        name: String, sql: String = "", columns: [LiveColumn], hasRowID: Bool, isVirtual: Bool, foreignKeys: [LiveForeignKey],
        indexes: [LiveIndex], collationsKnown: Bool = true
    ) {
        self.name = name
        self.sql = sql
        self.columns = columns
        self.hasRowID = hasRowID
        self.isVirtual = isVirtual
        self.foreignKeys = foreignKeys
        self.indexes = indexes
        self.collationsKnown = collationsKnown
    }
    /// Whether every column's collation could be read from the DDL.
    public var collationsKnown = true
    /// Whether the connection sees only the rows a row-level security policy lets it see
    /// (PostgreSQL: the table has RLS enabled and the role does not bypass it).
    public var rowSecurity = false

    /// Columns that hold stored data (generated columns left out), in table order.
    public var storedColumns: [LiveColumn] { columns.filter(\.isStored) }

    /// Primary key columns in key order (empty when the key is the hidden rowid).
    public var primaryKey: [String] {
        columns.filter { $0.primaryKeyIndex > 0 }.sorted { $0.primaryKeyIndex < $1.primaryKeyIndex }.map(\.name)
    }

    /// Whether `columns` (in any order) lead an index of the table that is not partial, or are
    /// the rowid alias alone: then rows can be found by those columns without a full scan.
    public func hasIndex(leading columns: [String]) -> Bool {
        let wanted = Set(columns.map { $0.lowercased() })
        if columns.count == 1, let alias = rowIDAlias, alias.lowercased() == columns[0].lowercased() { return true }
        return indexes.contains { index in
            let lead = index.columns.prefix(columns.count).compactMap { $0?.lowercased() }
            return lead.count == columns.count && Set(lead) == wanted && !index.partial
        }
    }

    /// The `INTEGER PRIMARY KEY` column that aliases the rowid, if any.
    public var rowIDAlias: String? {
        guard hasRowID, primaryKey.count == 1, let column = column(named: primaryKey[0]),
            column.type.uppercased() == "INTEGER"
        else { return nil }
        return column.name
    }

    /// SQL that names the rowid of this table: the alias column if there is one, else the first
    /// of `rowid`, `_rowid_`, `oid` that no column shadows; nil for WITHOUT ROWID tables.
    public var rowIDExpression: String? {
        guard hasRowID else { return nil }
        if let alias = rowIDAlias { return alias.sqlIdentifier }
        return ["rowid", "_rowid_", "oid"].first { name in column(named: name) == nil }
    }

    /// Looks a column up the way SQLite does (ASCII case-insensitively).
    public func column(named name: String) -> LiveColumn? {
        columns.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }
}

/// A snapshot of the user tables of a database.
public struct LiveSchema: Sendable {
    public var tables: [LiveTable]

    public init(tables: [LiveTable]) { self.tables = tables }

    public func table(named name: String) -> LiveTable? {
        tables.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// Declared foreign keys, in any table, whose parent is `table`.
    public func foreignKeys(referencing table: String) -> [LiveForeignKey] {
        tables.flatMap(\.foreignKeys).filter { $0.parentTable.caseInsensitiveCompare(table) == .orderedSame }
    }
}
