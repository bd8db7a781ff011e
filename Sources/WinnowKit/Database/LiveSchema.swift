import Foundation
import GRDB

/// One column as SQLite reports it (`PRAGMA table_xinfo`).
public struct LiveColumn: Sendable, Equatable {
    public var name: String
    public var type: String
    public var notNull: Bool
    public var defaultSQL: String?
    /// 1-based position in the primary key; 0 when not part of it.
    public var primaryKeyIndex: Int
    /// 0 for ordinary columns; 2 and 3 for generated columns (which cannot be written).
    public var hidden: Int
    /// The declared collation (`COLLATE NOCASE`), read from the table's DDL; nil for BINARY.
    public var collation: String? = nil

    public var isStored: Bool { hidden == 0 }
}

/// A declared foreign key of a child table.
public struct LiveForeignKey: Sendable, Equatable {
    public var childTable: String
    public var childColumns: [String]
    public var parentTable: String
    /// nil when the declaration names no columns (it then means the parent's primary key).
    public var parentColumns: [String]?
}

/// An index of a table.
public struct LiveIndex: Sendable, Equatable {
    public var name: String
    /// Indexed columns in order; nil for an expression term.
    public var columns: [String?]
    public var unique: Bool
    public var partial: Bool
    /// `c` (CREATE INDEX), `u` (UNIQUE constraint) or `pk`.
    public var origin: String
}

/// What winnow needs to know about one live table.
public struct LiveTable: Sendable {
    public var name: String
    /// The table's `CREATE TABLE` statement as stored in `sqlite_master`.
    public var sql: String = ""
    public var columns: [LiveColumn]
    public var hasRowID: Bool
    public var isVirtual: Bool
    public var foreignKeys: [LiveForeignKey]
    public var indexes: [LiveIndex]
    /// Whether every column's collation could be read from the DDL.
    public var collationsKnown = true

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
              column.type.uppercased() == "INTEGER" else { return nil }
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

/// Reads the live schema of the main database, leaving out `sqlite_*` and `winnow_*` tables.
public enum SchemaInspector {
    /// Whether a table name belongs to winnow's bookkeeping.
    public static func isWinnowTable(_ name: String) -> Bool { name.lowercased().hasPrefix("winnow_") }

    /// Names of the user tables, in `sqlite_master` order.
    public static func tableNames(_ db: Database) throws -> [String] {
        try String.fetchAll(db, sql: """
            SELECT name FROM main.sqlite_master
            WHERE type = 'table' AND lower(substr(name, 1, 7)) <> 'sqlite_' AND lower(substr(name, 1, 7)) <> 'winnow_'
            ORDER BY rowid
            """)
    }

    /// The canonical name of a table (SQLite matches table names case-insensitively), or nil.
    public static func canonicalTableName(_ db: Database, _ name: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                            arguments: [name])
    }

    public static func table(_ db: Database, named name: String) throws -> LiveTable? {
        guard let canonical = try canonicalTableName(db, name) else { return nil }
        let sql = try String.fetchOne(db, sql: "SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = ?",
                                      arguments: [canonical]) ?? ""
        let isVirtual = sql.range(of: "CREATE VIRTUAL TABLE", options: [.caseInsensitive, .anchored]) != nil
        var columns = try Row.fetchAll(db, sql: """
            SELECT name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo(?, 'main') ORDER BY cid
            """, arguments: [canonical]).map { row in
            LiveColumn(name: row[0], type: row[1] ?? "", notNull: row[2], defaultSQL: row[3], primaryKeyIndex: row[4], hidden: row[5])
        }
        var collationsKnown = isVirtual
        if !isVirtual, let parsed = try? CreateTableSQL.parse(sql) {
            collationsKnown = true
            for definition in parsed.columns {
                guard let i = columns.firstIndex(where: { $0.name.caseInsensitiveCompare(definition.name) == .orderedSame }) else { continue }
                for clause in CreateTableSQL.clauses(definition.tokens).clauses {
                    let words = clause.filter { !$0.isTrivia }
                    if let at = words.firstIndex(where: { $0.isKeyword("COLLATE") }), at + 1 < words.count,
                       let name = words[at + 1].identifierValue, name.uppercased() != "BINARY" {
                        columns[i].collation = name
                    }
                }
            }
        }
        var foreignKeys: [Int: LiveForeignKey] = [:]
        var fkOrder: [Int] = []
        for row in try Row.fetchAll(db, sql: """
            SELECT id, "table", "from", "to" FROM pragma_foreign_key_list(?, 'main') ORDER BY id, seq
            """, arguments: [canonical]) {
            let id: Int = row[0]
            let to: String? = row[3]
            if foreignKeys[id] == nil {
                fkOrder.append(id)
                foreignKeys[id] = LiveForeignKey(childTable: canonical, childColumns: [], parentTable: row[1],
                                                 parentColumns: to == nil ? nil : [])
            }
            foreignKeys[id]!.childColumns.append(row[2])
            if let to { foreignKeys[id]!.parentColumns?.append(to) }
        }
        var indexes: [LiveIndex] = []
        var hasRowID = !isVirtual
        for row in try Row.fetchAll(db, sql: """
            SELECT name, "unique", origin, partial FROM pragma_index_list(?, 'main') ORDER BY seq
            """, arguments: [canonical]) {
            let indexName: String = row[0]
            let xinfo = try Row.fetchAll(db, sql: "SELECT cid, name, key FROM pragma_index_xinfo(?, 'main') ORDER BY seqno",
                                         arguments: [indexName])
            let keyColumns: [String?] = xinfo.filter { ($0[2] as Int) == 1 }.map { $0[1] }
            let origin: String = row[2]
            if origin == "pk", !xinfo.contains(where: { ($0[0] as Int) == -1 }) { hasRowID = false }
            indexes.append(LiveIndex(name: indexName, columns: keyColumns, unique: row[1], partial: row[3], origin: origin))
        }
        return LiveTable(name: canonical, sql: sql, columns: columns, hasRowID: hasRowID, isVirtual: isVirtual,
                         foreignKeys: fkOrder.compactMap { foreignKeys[$0] }, indexes: indexes.reversed(),
                         collationsKnown: collationsKnown)
    }

    /// Every user table, keyed by lowercased name.
    public static func inspect(_ db: Database) throws -> LiveSchema {
        var tables: [LiveTable] = []
        for name in try tableNames(db) {
            if let table = try table(db, named: name) { tables.append(table) }
        }
        return LiveSchema(tables: tables)
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
