import Foundation

/// The rows of each table as a migration will leave them, written as a `SELECT` over the tables
/// as they are now. Lightweight steps change values in few ways (a rename moves a column, an
/// added column holds its default, a column made NOT NULL has its NULLs turned into its default, a dropped column is
/// gone), so a data-dependent guard (`max_delete_percent`, `references: restrict`, a unique
/// index over duplicates) can be evaluated before the first step runs. Pure: built from the
/// live schema and the typed steps, no database handle.
public struct MigrationPreview: Sendable {
    /// One column of a previewed table: its name after the migration and the SQL giving its value.
    package struct Column: Sendable {
        package var name: String
        package var expression: String
        /// The declared collation, kept where an expression would lose it.
        package var collation: String? = nil
    }

    /// A table after the migration: where its rows come from now, or empty (a new table).
    package struct Source: Sendable {
        /// The current name; nil for a table the migration creates (no rows yet).
        package var currentTable: String?
        /// SQL naming the current table's rowid (nil where rows are identified by primary-key
        /// columns, which the preview carries like any other column).
        package var currentRowID: String?
        package var columns: [Column]
    }

    /// Keyed by the lowercased table name after the migration.
    private var tables: [String: Source] = [:]
    /// How values and tables are spelled.
    private let dialect: any SQLDialect

    public init(live: LiveSchema, steps: [MigrationStep], dialect: any SQLDialect) {
        self.dialect = dialect
        for table in live.tables where table.rowIDExpression != nil || !table.primaryKey.isEmpty {
            tables[table.name.lowercased()] = Source(
                currentTable: table.name, currentRowID: table.rowIDExpression,
                columns: table.columns.map { Column(name: $0.name, expression: $0.name.sqlIdentifier, collation: $0.collation) })
        }
        for step in steps { apply(step) }
    }

    private mutating func apply(_ step: MigrationStep) {
        func defaultSQL(_ column: ColumnModel) -> String { dialect.value(column.defaultValue?.expressionSQL ?? "NULL", as: column.type) }
        func edit(_ table: String, _ change: (inout Source) -> Void) {
            guard var source = tables[table.lowercased()] else { return }
            change(&source)
            tables[table.lowercased()] = source
        }
        switch step {
        case let .createTable(model):
            tables[model.name.lowercased()] = Source(
                currentTable: nil, currentRowID: nil,
                columns: model.columns.map { Column(name: $0.name, expression: dialect.value("NULL", as: $0.type)) })
        case let .renameTable(from, to):
            if let source = tables.removeValue(forKey: from.lowercased()) { tables[to.lowercased()] = source }
        case let .renameColumn(table, from, to):
            edit(table) { source in
                if let i = source.columns.firstIndex(where: { $0.name.caseInsensitiveCompare(from) == .orderedSame }) {
                    source.columns[i].name = to
                }
            }
        case let .addColumn(table, column):
            edit(table) { $0.columns.append(Column(name: column.name, expression: defaultSQL(column))) }
        case let .rebuild(rebuild):
            edit(rebuild.table) { source in
                // A column made NOT NULL gets its default where it was NULL (the copy's coalesce).
                for (name, value) in rebuild.fills {
                    guard let i = source.columns.firstIndex(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) else {
                        continue
                    }
                    // coalesce() drops the column's collation: keep it, so grouping compares as the column does.
                    let column = source.columns[i]
                    let type = rebuild.changed.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.type ?? ""
                    source.columns[i].expression =
                        TableRebuild.filling(column.expression, withSQL: dialect.value(value.expressionSQL, as: type))
                        + (column.collation.map { " COLLATE \($0.sqlIdentifier)" } ?? "")
                }
                source.columns.removeAll { column in rebuild.dropped.contains { $0.caseInsensitiveCompare(column.name) == .orderedSame } }
                for column in rebuild.added {
                    source.columns.append(Column(name: column.name, expression: defaultSQL(column)))
                }
            }
        case let .dropColumn(table, column):
            edit(table) { $0.columns.removeAll { $0.name.caseInsensitiveCompare(column) == .orderedSame } }
        case let .dropTable(table):
            tables.removeValue(forKey: table.lowercased())
        case .dropIndex, .createIndex:
            break
        }
    }

    /// Whether the table exists after the migration with the rows it has now (false for a new table).
    public func hasRows(_ table: String) -> Bool {
        tables[table.lowercased()]?.currentTable != nil
    }

    /// A `SELECT` giving the table's rows after the migration, with its columns under their new
    /// names and, where rows are identified by a rowid, the current rowid under `rowID` (the name
    /// a rule compiled against the migrated schema uses; nil for primary-key identity, whose
    /// columns are among the others); nil for a table the migration drops or one that does not
    /// exist.
    public func select(_ table: String, rowID: String?) -> String? {
        guard let source = tables[table.lowercased()] else { return nil }
        var items = source.columns.map { "\($0.expression) AS \($0.name.sqlIdentifier)" }
        let aliased = rowID.map { rowID in source.columns.contains { $0.name.sqlIdentifier == rowID || $0.name == rowID } } ?? true
        guard let current = source.currentTable else {
            if let rowID, !aliased { items.append("NULL AS \(rowID)") }
            return "SELECT \(items.joined(separator: ", ")) WHERE \(dialect.alwaysFalse)"
        }
        if let rowID, !aliased, let currentRowID = source.currentRowID { items.append("\(currentRowID) AS \(rowID)") }
        return "SELECT \(items.joined(separator: ", ")) FROM \(dialect.table(current))"
    }
}
