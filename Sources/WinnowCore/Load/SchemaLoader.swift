import Foundation
import Yams

/// Reads schema files (docs/reference.md section 3) into ``SchemaModel`` values, with the same located
/// errors as job files.
public enum SchemaLoader {
    package static let rootKeys = ["version", "tables", "dropped_tables"]
    package static let tableKeys = ["renamed_from", "columns", "indexes", "dropped", "dropped_indexes"]
    package static let columnKeys = ["name", "type", "nullable", "default", "primary_key", "renamed_from", "references"]
    package static let indexKeys = ["name", "columns", "unique"]

    public static func load(path: String) throws -> SchemaModel {
        let (reader, root, _) = try YAMLReader.load(path: path)
        return try decode(root, reader: reader)
    }

    public static func decode(yaml: String, file: String = "schema.yaml") throws -> SchemaModel {
        let reader = YAMLReader(file: file)
        return try decode(try reader.compose(yaml), reader: reader)
    }

    /// Whether a composed file looks like a schema file (it has `tables:`) rather than a job.
    package static func isSchema(_ root: Node) -> Bool {
        guard case let .mapping(mapping) = root else { return false }
        return mapping.keys.contains { $0.string == "tables" }
    }

    package static func decode(_ root: Node, reader: YAMLReader) throws -> SchemaModel {
        let map = try reader.mapping(root, "", allowed: rootKeys, what: "a schema")
        let version = try reader.int(
            try map.required("version", what: "the model version, an increasing integer"), "version",
            range: 1...Int(Int32.max))
        let tablesNode = try map.required("tables", what: "the tables of the model")
        let tablesMap = try reader.mapping(tablesNode, "tables", allowed: [], what: "the tables")
        var tables: [TableModel] = []
        // Every table is read even after an error, so one pass reports all of them.
        let log = ErrorLog()
        for entry in tablesMap.entries {
            log.attempt {
                guard !entry.key.isEmpty else { throw reader.error(entry.keyNode, "tables", "expected a table name") }
                if tables.contains(where: { $0.name.caseInsensitiveCompare(entry.key) == .orderedSame }) {
                    throw reader.error(entry.keyNode, "tables", "table '\(entry.key)' is defined twice (names are case-insensitive)")
                }
                if Self.isReserved(entry.key) {
                    throw reader.error(entry.keyNode, "tables", "'\(entry.key)': names starting with winnow_ or sqlite_ are reserved")
                }
                tables.append(
                    try decodeTable(
                        entry.key, entry.value, keyNode: entry.keyNode, reader: reader, path: tablesMap.child(entry.key), log: log))
            }
        }
        try log.throwIfAny()
        var model = SchemaModel(version: version, tables: tables)
        if let node = map.optional("dropped_tables") {
            model.droppedTables = try droppedNames(node, reader, "dropped_tables", what: "a table name")
            for name in model.droppedTables {
                if let table = model.table(named: name.name) {
                    throw WinnowError.invalidFile(
                        name.location, "dropped_tables: '\(name.name)' is also described under tables: (\(table.name)); keep it or drop it")
                }
                if let table = model.tables.first(where: { $0.renamedFrom.contains { name.matches($0) } }) {
                    throw WinnowError.invalidFile(
                        name.location,
                        "dropped_tables: '\(name.name)' is an earlier name of \(table.name) (renamed_from); a renamed table keeps its rows")
                }
            }
        }
        try checkReferences(model, reader: reader)
        try checkIndexNames(root, model, reader: reader)
        return model
    }

    /// A list of names to drop (`dropped:`, `dropped_indexes:`, `dropped_tables:`), each once and
    /// none of them winnow's or SQLite's own.
    package static func droppedNames(_ node: Node, _ reader: YAMLReader, _ path: String, what: String) throws -> [DroppedName] {
        var result: [DroppedName] = []
        for (item, itemPath) in try reader.list(node, path, allowScalar: true) {
            let name = try reader.string(item, itemPath, what: what)
            if isReserved(name.value) {
                throw WinnowError.invalidFile(
                    name.location, "\(itemPath): '\(name.value)': names starting with winnow_ or sqlite_ are reserved")
            }
            if result.contains(where: { $0.matches(name.value) }) {
                throw WinnowError.invalidFile(name.location, "\(itemPath): '\(name.value)' is listed twice")
            }
            result.append(DroppedName(name.value, location: name.location))
        }
        return result
    }

    package static func names(_ node: Node, _ reader: YAMLReader, _ path: String) throws -> [String] {
        try reader.list(node, path, allowScalar: true).map { try reader.string($0.0, $0.1, what: "a name").value }
    }

    package static func decodeTable(_ name: String, _ node: Node, keyNode: Node, reader: YAMLReader, path: String) throws -> TableModel {
        let log = ErrorLog()
        let table = try decodeTable(name, node, keyNode: keyNode, reader: reader, path: path, log: log)
        try log.throwIfAny()
        return table
    }

    /// Reads one table; the errors of its columns and indexes are recorded in `errors`, each
    /// column and index read even after another's error.
    package static func decodeTable(
        _ name: String, _ node: Node, keyNode: Node, reader: YAMLReader, path: String, log: ErrorLog
    ) throws -> TableModel {
        let map = try reader.mapping(node, path, allowed: tableKeys, what: "a table")
        var table = TableModel(name: name, columns: [], location: reader.location(keyNode))
        if let node = map.optional("renamed_from") { table.renamedFrom = try names(node, reader, map.child("renamed_from")) }
        let columnsNode = try map.required("columns", what: "the table's columns")
        for (item, itemPath) in try reader.list(columnsNode, map.child("columns"), allowEmpty: false) {
            log.attempt {
                let column = try decodeColumn(item, reader: reader, path: itemPath)
                if table.column(named: column.name) != nil {
                    throw WinnowError.invalidFile(column.location, "\(itemPath).name: column '\(column.name)' is defined twice")
                }
                table.columns.append(column)
            }
        }
        if let node = map.optional("indexes") {
            for (item, itemPath) in try reader.list(node, map.child("indexes")) {
                log.attempt {
                    let imap = try reader.mapping(item, itemPath, allowed: indexKeys, what: "an index")
                    let indexName = try reader.string(
                        try imap.required("name", what: "the index name"), imap.child("name"), what: "an index name")
                    if Self.isReserved(indexName.value) {
                        throw WinnowError.invalidFile(
                            indexName.location,
                            "\(imap.child("name")): '\(indexName.value)': names starting with winnow_ or sqlite_ are reserved")
                    }
                    let columns = try reader.list(
                        try imap.required("columns", what: "the indexed columns"), imap.child("columns"),
                        allowScalar: true, allowEmpty: false
                    )
                    .map { try reader.string($0.0, $0.1, what: "a column name") }
                    for column in columns where table.column(named: column.value) == nil {
                        throw WinnowError.invalidFile(
                            column.location, "\(imap.child("columns")): table '\(name)' has no column '\(column.value)'")
                    }
                    let unique = try imap.optional("unique").map { try reader.bool($0, imap.child("unique")) } ?? false
                    var index = IndexModel(
                        name: indexName.value, columns: columns.map { table.column(named: $0.value)!.name }, unique: unique)
                    index.location = indexName.location
                    table.indexes.append(index)
                }
            }
        }
        if let node = map.optional("dropped") {
            log.attempt {
                table.dropped = try droppedNames(node, reader, map.child("dropped"), what: "a column name")
                for name in table.dropped {
                    if table.column(named: name.name) != nil {
                        throw WinnowError.invalidFile(
                            name.location,
                            "\(map.child("dropped")): column '\(name.name)' is also described under columns; keep it or drop it")
                    }
                    if let column = table.columns.first(where: { $0.renamedFrom.contains { name.matches($0) } }) {
                        throw WinnowError.invalidFile(
                            name.location,
                            "\(map.child("dropped")): '\(name.name)' is an earlier name of column \(column.name) (renamed_from); a renamed column keeps its values"
                        )
                    }
                }
            }
        }
        if let node = map.optional("dropped_indexes") {
            log.attempt {
                table.droppedIndexes = try droppedNames(node, reader, map.child("dropped_indexes"), what: "an index name")
                for name in table.droppedIndexes where table.indexes.contains(where: { name.matches($0.name) }) {
                    throw WinnowError.invalidFile(
                        name.location,
                        "\(map.child("dropped_indexes")): index '\(name.name)' is also described under indexes; keep it or drop it")
                }
            }
        }
        return table
    }

    package static func decodeColumn(_ node: Node, reader: YAMLReader, path: String) throws -> ColumnModel {
        let map = try reader.mapping(node, path, allowed: columnKeys, what: "a column")
        let name = try reader.string(try map.required("name", what: "the column name"), map.child("name"), what: "a column name")
        var column = ColumnModel(name: name.value, type: "", location: name.location)
        if let node = map.optional("type") {
            column.type = try reader.text(node, map.child("type")).lowercased()
            // A type is pasted into DDL: only SQLite's type-name grammar (words, optional (n) or (n, m)).
            let grammar =
                #"^[a-z_][a-z0-9_]*( +[a-z_][a-z0-9_]*)*( *\( *[+-]?[0-9]+(\.[0-9]+)? *(, *[+-]?[0-9]+(\.[0-9]+)? *)?\))?( +[a-z_][a-z0-9_]*)*$"#
            if !column.type.isEmpty, column.type.range(of: grammar, options: .regularExpression) == nil {
                throw reader.error(
                    node, map.child("type"), "'\(column.type)' is not a type name (words, optionally followed by (n) or (n, m))")
            }
        }
        if let node = map.optional("nullable") { column.nullable = try reader.bool(node, map.child("nullable")) }
        if let node = map.optional("primary_key") { column.primaryKey = try reader.bool(node, map.child("primary_key")) }
        if let node = map.optional("renamed_from") { column.renamedFrom = try names(node, reader, map.child("renamed_from")) }
        if let entry = map.entries.first(where: { $0.key == "default" }) {
            column.defaultValue = try decodeDefault(entry.value, reader: reader, path: map.child("default"))
        }
        if let node = map.optional("references") {
            let rmap = try reader.mapping(node, map.child("references"), allowed: ["table", "column"], what: "a reference")
            let table = try reader.string(
                try rmap.required("table", what: "the referenced table"), rmap.child("table"), what: "a table name")
            let target = try rmap.optional("column").map { try reader.string($0, rmap.child("column"), what: "a column name") }
            column.references = ColumnReferenceModel(
                table: table.value, column: target?.value,
                tableLocation: table.location, columnLocation: target?.location)
        }
        return column
    }

    package static func decodeDefault(_ node: Node, reader: YAMLReader, path: String) throws -> DefaultValue {
        switch node {
        case let .scalar(scalar):
            switch scalar.tagName {
            case .null: return .null
            case .int:
                guard let v = Int64(scalar.string) ?? node.int.map(Int64.init) else {
                    throw reader.error(node, path, "integer \(scalar.string) is out of range")
                }
                return .integer(v)
            case .float:
                guard let v = node.float, v.isFinite else { throw reader.error(node, path, "expected a finite number") }
                return .real(v)
            case .bool: return .integer(node.bool == true ? 1 : 0)
            default: return .text(scalar.string)
            }
        case .mapping:
            let map = try reader.mapping(node, path, allowed: ["sql"], what: "an SQL default")
            let sql = try reader.string(
                try map.required("sql", what: "the default's SQL expression"), map.child("sql"), what: "an SQL expression")
            // One expression: no statement separator or comment outside string literals.
            if SQLTokenizer.tokenize(sql.value).contains(where: { $0.kind == .comment || ($0.kind == .punctuation && $0.text == ";") }) {
                throw reader.error(node, map.child("sql"), "a default is one SQL expression; ';' and comments are not allowed")
            }
            return DefaultValue.parse(sql: sql.value)
        default:
            throw reader.error(node, path, "expected a value or {sql: EXPRESSION}, found \(YAMLReader.describe(node))")
        }
    }

    /// Names a schema may not give a table or an index: winnow's bookkeeping and SQLite's own.
    package static func isReserved(_ name: String) -> Bool {
        Bookkeeping.isWinnowTable(name) || name.lowercased().hasPrefix("sqlite_")
    }

    /// Index names are global to a database in SQLite, and shared with tables: one name, one object.
    package static func checkIndexNames(_ root: Node, _ model: SchemaModel, reader: YAMLReader) throws {
        var seen: [String: String] = [:]
        let tables = Set(model.tables.map { $0.name.lowercased() })
        for table in model.tables {
            for (position, index) in table.indexes.enumerated() {
                if tables.contains(index.name.lowercased()) {
                    throw WinnowError.invalidFile(
                        index.location ?? table.location,
                        "tables.\(table.name).indexes[\(position)].name: '\(index.name)' is the name of a table (tables and indexes share one namespace)"
                    )
                }
                if let other = seen[index.name.lowercased()] {
                    throw WinnowError.invalidFile(
                        index.location ?? table.location,
                        "tables.\(table.name).indexes[\(position)].name: index name '\(index.name)' is already used on table '\(other)' (index names are global to a database)"
                    )
                }
                seen[index.name.lowercased()] = table.name
            }
        }
    }

    package static func checkReferences(_ model: SchemaModel, reader: YAMLReader) throws {
        for table in model.tables {
            for column in table.columns {
                guard let ref = column.references else { continue }
                let path = "tables.\(table.name).columns.\(column.name).references"
                guard let target = model.table(named: ref.table) else {
                    throw WinnowError.invalidFile(
                        ref.tableLocation ?? column.location,
                        "\(path).table: '\(column.name)' references table '\(ref.table)', which the schema does not define")
                }
                if let targetColumn = ref.column, target.column(named: targetColumn) == nil {
                    throw WinnowError.invalidFile(
                        ref.columnLocation ?? column.location,
                        "\(path).column: '\(column.name)' references '\(ref.table).\(targetColumn)', which does not exist")
                }
            }
        }
    }
}
