import Foundation
import GRDB
import WinnowCore

/// Reads the live schema of the main database, leaving out `sqlite_*` and `winnow_*` tables.
public enum SchemaInspector {
    /// SQL over `sqlite_master` that keeps user objects: not SQLite's own, not winnow's
    /// bookkeeping (``Bookkeeping/tablePrefix``).
    static let userObjects = "lower(substr(name, 1, 7)) NOT IN ('sqlite_', '\(Bookkeeping.tablePrefix)')"

    /// Names of the user tables, in `sqlite_master` order.
    public static func tableNames(_ db: Database) throws -> [String] {
        try String.fetchAll(
            db,
            sql: """
                SELECT name FROM main.sqlite_master
                WHERE type = 'table' AND \(userObjects)
                ORDER BY rowid
                """)
    }

    /// The canonical name of a table (SQLite matches table names case-insensitively), or nil.
    public static func canonicalTableName(_ db: Database, _ name: String) throws -> String? {
        try String.fetchOne(
            db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
            arguments: [name])
    }

    public static func table(_ db: Database, named name: String) throws -> LiveTable? {
        guard let canonical = try canonicalTableName(db, name) else { return nil }
        let sql =
            try String.fetchOne(
                db, sql: "SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = ?",
                arguments: [canonical]) ?? ""
        let isVirtual = sql.range(of: "CREATE VIRTUAL TABLE", options: [.caseInsensitive, .anchored]) != nil
        var columns = try Row.fetchAll(
            db,
            sql: """
                SELECT name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo(?, 'main') ORDER BY cid
                """, arguments: [canonical]
        ).map { row in
            // `hidden`: 0 for an ordinary column, 1 for a virtual table's hidden column, 2 and 3
            // for generated columns.
            LiveColumn(
                name: row[0], type: row[1] ?? "", notNull: row[2], defaultSQL: row[3], primaryKeyIndex: row[4],
                generated: (row[5] as Int) != 0)
        }
        var collationsKnown = isVirtual
        // What the catalog does not say is read from the statement: each column's collation and
        // constraints, and the columns the table constraints name (all of them, to be safe, when
        // the statement cannot be read).
        for i in columns.indices { columns[i].inTableConstraint = !isVirtual }
        if !isVirtual, let parsed = try? CreateTableSQL.parse(sql) {
            collationsKnown = true
            for i in columns.indices { columns[i].inTableConstraint = parsed.constraintsMention(columns[i].name) }
            for definition in parsed.columns {
                guard let i = columns.firstIndex(where: { $0.name.caseInsensitiveCompare(definition.name) == .orderedSame }) else {
                    continue
                }
                for clause in CreateTableSQL.clauses(definition.tokens).clauses {
                    if clause.contains(where: {
                        $0.isKeyword("UNIQUE") || $0.isKeyword("CHECK") || $0.isKeyword("GENERATED") || $0.isKeyword("AS")
                    }) {
                        columns[i].constrainedInDefinition = true
                    }
                    let words = clause.filter { !$0.isTrivia }
                    if let at = words.firstIndex(where: { $0.isKeyword("COLLATE") }), at + 1 < words.count,
                        let name = words[at + 1].identifierValue, name.uppercased() != "BINARY"
                    {
                        columns[i].collation = name
                    }
                }
            }
        }
        var foreignKeys: [Int: LiveForeignKey] = [:]
        var fkOrder: [Int] = []
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT id, "table", "from", "to" FROM pragma_foreign_key_list(?, 'main') ORDER BY id, seq
                """, arguments: [canonical])
        {
            let id: Int = row[0]
            let to: String? = row[3]
            if foreignKeys[id] == nil {
                fkOrder.append(id)
                foreignKeys[id] = LiveForeignKey(
                    childTable: canonical, childColumns: [], parentTable: row[1],
                    parentColumns: to == nil ? nil : [])
            }
            foreignKeys[id]!.childColumns.append(row[2])
            if let to { foreignKeys[id]!.parentColumns?.append(to) }
        }
        var indexes: [LiveIndex] = []
        var hasRowID = !isVirtual
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT name, "unique", origin, partial FROM pragma_index_list(?, 'main') ORDER BY seq
                """, arguments: [canonical])
        {
            let indexName: String = row[0]
            let xinfo = try Row.fetchAll(
                db, sql: "SELECT cid, name, key FROM pragma_index_xinfo(?, 'main') ORDER BY seqno",
                arguments: [indexName])
            let keyColumns: [String?] = xinfo.filter { ($0[2] as Int) == 1 }.map { $0[1] }
            // `origin`: `c` (CREATE INDEX), `u` (UNIQUE constraint) or `pk`.
            let origin: String = row[2]
            if origin == "pk", !xinfo.contains(where: { ($0[0] as Int) == -1 }) { hasRowID = false }
            indexes.append(
                LiveIndex(
                    name: indexName, columns: keyColumns, unique: row[1], partial: row[3],
                    origin: origin == "pk" ? .primaryKey : origin == "u" ? .uniqueConstraint : .createIndex))
        }
        return LiveTable(
            name: canonical, sql: sql, columns: columns, hasRowID: hasRowID, isVirtual: isVirtual,
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
