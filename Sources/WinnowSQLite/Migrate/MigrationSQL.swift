import Foundation
import WinnowCore

/// The SQL of migration steps. Pure: the same text is shown by `plan` and run by `run`.
public enum MigrationSQL {
    /// A column definition for CREATE TABLE or ADD COLUMN.
    public static func columnDefinition(_ column: ColumnModel, inlinePrimaryKey: Bool) -> String {
        var parts = [column.name.sqlIdentifier]
        if !column.type.isEmpty { parts.append(column.type.uppercased()) }
        if column.primaryKey && inlinePrimaryKey { parts.append("PRIMARY KEY") }
        if !column.nullable { parts.append("NOT NULL") }
        if let value = column.defaultValue, value != .null {
            parts.append("DEFAULT " + value.expressionSQL)
        }
        if let ref = column.references {
            parts.append("REFERENCES \(ref.table.sqlIdentifier)" + (ref.column.map { "(\($0.sqlIdentifier))" } ?? ""))
        }
        return parts.joined(separator: " ")
    }

    public static func createTable(_ table: TableModel, name: String? = nil) -> String {
        let keys = table.primaryKey
        var items = table.columns.map { columnDefinition($0, inlinePrimaryKey: keys.count == 1) }
        if keys.count > 1 { items.append("PRIMARY KEY (\(keys.map(\.sqlIdentifier).joined(separator: ", ")))") }
        return "CREATE TABLE \((name ?? table.name).sqlIdentifier) (\n    \(items.joined(separator: ",\n    "))\n)"
    }

    public static func createIndex(_ index: IndexModel, on table: String, name: String? = nil) -> String {
        "CREATE \(index.unique ? "UNIQUE " : "")INDEX \((name ?? index.name).sqlIdentifier) ON \(table.sqlIdentifier) (\(index.columns.map(\.sqlIdentifier).joined(separator: ", ")))"
    }

    /// The statements of a step as `plan` shows them. A rebuild needs the table's current
    /// CREATE statement; it is shown as the new table's definition and the procedure.
    public static func statements(_ step: MigrationStep, currentSQL: String? = nil) -> [String] {
        switch step {
        case let .createTable(t): return [createTable(t)]
        case let .renameTable(from, to): return ["ALTER TABLE \(from.sqlIdentifier) RENAME TO \(to.sqlIdentifier)"]
        case let .renameColumn(t, from, to):
            return ["ALTER TABLE \(t.sqlIdentifier) RENAME COLUMN \(from.sqlIdentifier) TO \(to.sqlIdentifier)"]
        case let .addColumn(t, c):
            return ["ALTER TABLE \(t.sqlIdentifier) ADD COLUMN \(columnDefinition(c, inlinePrimaryKey: false))"]
        case let .rebuild(r):
            var result: [String] = []
            if let currentSQL, let sql = try? rebuiltTable(r, currentSQL: currentSQL, newName: TableRebuild.temporaryName(r.table)) {
                result.append(sql)
            }
            let fills = r.fills.map { filling($0.column.sqlIdentifier, with: $0.value) }
            result += [
                "-- copy rows in batches\(fills.isEmpty ? "" : " (NULLs filled: \(fills.joined(separator: ", ")))") while triggers capture concurrent writes, replay them",
                "-- cut-over: ALTER TABLE \(r.table.sqlIdentifier) RENAME TO \(TableRebuild.retiredName(r.table).sqlIdentifier); ALTER TABLE \(TableRebuild.temporaryName(r.table).sqlIdentifier) RENAME TO \(r.table.sqlIdentifier); indexes, triggers and views kept",
                "-- then the old rows: DROP TABLE \(TableRebuild.retiredName(r.table).sqlIdentifier) (in short transactions when large)",
            ]
            return result
        case let .dropIndex(_, name): return ["DROP INDEX \(name.sqlIdentifier)"]
        case let .dropColumn(t, c): return ["ALTER TABLE \(t.sqlIdentifier) DROP COLUMN \(c.sqlIdentifier)"]
        case let .createIndex(t, i, _): return [createIndex(i, on: t)]
        case let .dropTable(t): return ["DROP TABLE \(t.sqlIdentifier)"]
        }
    }

    /// `expression` with its NULLs replaced by `value`: how a rebuild fills a column made NOT NULL.
    package static func filling(_ expression: String, with value: DefaultValue) -> String {
        TableRebuild.filling(expression, withSQL: value.expressionSQL)
    }

    /// The CREATE TABLE of the rebuilt table: the current statement with exactly the rebuild's
    /// changes (NOT NULL / DEFAULT clauses, added and dropped columns), under `newName`.
    package static func rebuiltTable(_ rebuild: TableRebuild, currentSQL: String, newName: String) throws -> String {
        var parsed = try CreateTableSQL.parse(currentSQL)
        for column in rebuild.changed {
            parsed.setConstraints(of: column.name, nullable: column.nullable, defaultValue: column.defaultValue)
        }
        for column in rebuild.dropped { parsed.dropColumn(column) }
        for column in rebuild.added { parsed.addColumn(columnDefinition(column, inlinePrimaryKey: false)) }
        return parsed.render(name: newName)
    }
}
