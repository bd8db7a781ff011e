import Foundation
import Yams

/// `winnow schema inspect`: a model written in the schema-file format (docs/reference.md section 3).
/// Loading what it prints gives back an equal model, so a database checked against its own
/// inspected schema shows no drift.
public enum SchemaPrinter {
    /// The live schema of `location` in the schema-file format.
    public static func inspect(database location: String, backend: any DatabaseBackend) throws -> String {
        try render(try model(database: location, backend: backend))
    }

    /// The live schema of `location` as a model (version: the recorded one, else 1).
    public static func model(database location: String, backend: any DatabaseBackend) throws -> SchemaModel {
        try backend.withSession(location, mode: .readOnly) { session in
            SchemaModel(live: try session.inspect(), version: try SchemaVersions.recorded(session)?.version ?? 1)
        }
    }

    /// The model as one JSON object with the schema file's keys, in the file's order. JSON is
    /// YAML too: the output loads back as a schema file.
    public static func json(_ model: SchemaModel) -> String {
        func string(_ s: String) -> String {
            var out = "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case let c where c.value < 0x20: out += String(format: "\\u%04x", c.value)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        func object(_ pairs: [(String, String)]) -> String { "{" + pairs.map { "\(string($0.0)): \($0.1)" }.joined(separator: ", ") + "}" }
        func array(_ items: [String]) -> String { "[" + items.joined(separator: ", ") + "]" }
        func names(_ list: [String]) -> String { list.count == 1 ? string(list[0]) : array(list.map(string)) }
        func defaultValue(_ value: DefaultValue) -> String {
            switch value {
            case .null: return "null"
            case let .integer(v): return String(v)
            case let .real(v): return v.isFinite ? (v == v.rounded() && abs(v) < 1e15 ? String(format: "%.1f", v) : "\(v)") : string("\(v)")
            case let .text(s): return string(s)
            case let .expression(e): return object([("sql", string(e))])
            }
        }
        let tables = model.tables.map { table -> (String, String) in
            let columns = table.columns.map { column -> String in
                var pairs: [(String, String)] = [("name", string(column.name)), ("type", string(column.type))]
                if column.primaryKey { pairs.append(("primary_key", "true")) }
                if !column.nullable { pairs.append(("nullable", "false")) }
                if let value = column.defaultValue { pairs.append(("default", defaultValue(value))) }
                if !column.renamedFrom.isEmpty { pairs.append(("renamed_from", names(column.renamedFrom))) }
                if let ref = column.references {
                    var r: [(String, String)] = [("table", string(ref.table))]
                    if let target = ref.column { r.append(("column", string(target))) }
                    pairs.append(("references", object(r)))
                }
                return object(pairs)
            }
            var entry: [(String, String)] = []
            if !table.renamedFrom.isEmpty { entry.append(("renamed_from", names(table.renamedFrom))) }
            entry.append(("columns", array(columns)))
            let indexes = table.indexes.map { index in
                object([
                    ("name", string(index.name)), ("columns", array(index.columns.map(string))),
                    ("unique", index.unique ? "true" : "false"),
                ])
            }
            if !indexes.isEmpty { entry.append(("indexes", array(indexes))) }
            if !table.dropped.isEmpty { entry.append(("dropped", array(table.dropped.map { string($0.name) }))) }
            if !table.droppedIndexes.isEmpty { entry.append(("dropped_indexes", array(table.droppedIndexes.map { string($0.name) }))) }
            return (table.name, object(entry))
        }
        var root = [("version", String(model.version)), ("tables", object(tables))]
        if !model.droppedTables.isEmpty { root.append(("dropped_tables", array(model.droppedTables.map { string($0.name) }))) }
        return object(root)
    }

    package static func flow(_ pairs: [(String, Node)]) -> Node {
        .mapping(Node.Mapping(pairs.map { (Node($0.0), $0.1) }, .implicit, .flow))
    }

    /// A string node, plain when it reads back as the same string, else double-quoted.
    package static func plain(_ text: String) -> Node {
        let simple =
            !text.isEmpty && text.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || $0 == "_" }
            && !(text.first?.isNumber ?? true)
        if simple, Resolver.default.resolveTag(of: Node(text)) == .str { return Node(text, Tag(.str)) }
        return Node(text, Tag(.str), .doubleQuoted)
    }

    package static func defaultNode(_ value: DefaultValue) -> Node {
        switch value {
        case .null: return Node("null", Tag(.null))
        case let .integer(v): return Node(String(v), Tag(.int))
        case let .real(v): return Node(v == v.rounded() && abs(v) < 1e15 ? String(format: "%.1f", v) : "\(v)", Tag(.float))
        case let .text(s): return Node(s, Tag(.str), .doubleQuoted)
        case let .expression(e): return flow([("sql", Node(e, Tag(.str), .doubleQuoted))])
        }
    }

    /// A list of names to drop, always as a flow sequence (`dropped: [fax]`).
    package static func droppedNode(_ names: [DroppedName]) -> Node {
        .sequence(Node.Sequence(names.map { plain($0.name) }, .implicit, .flow))
    }

    package static func namesNode(_ names: [String]) -> Node {
        names.count == 1 ? plain(names[0]) : .sequence(Node.Sequence(names.map(plain), .implicit, .flow))
    }

    /// The model as schema-file YAML.
    public static func render(_ model: SchemaModel) throws -> String {
        var tables: [(Node, Node)] = []
        for table in model.tables {
            let columns: [Node] = table.columns.map { column in
                var pairs: [(String, Node)] = [("name", plain(column.name)), ("type", plain(column.type))]
                if column.primaryKey { pairs.append(("primary_key", Node("true", Tag(.bool)))) }
                if !column.nullable { pairs.append(("nullable", Node("false", Tag(.bool)))) }
                if let value = column.defaultValue { pairs.append(("default", defaultNode(value))) }
                if !column.renamedFrom.isEmpty { pairs.append(("renamed_from", namesNode(column.renamedFrom))) }
                if let ref = column.references {
                    var r: [(String, Node)] = [("table", plain(ref.table))]
                    if let target = ref.column { r.append(("column", plain(target))) }
                    pairs.append(("references", flow(r)))
                }
                return flow(pairs)
            }
            var entry: [(Node, Node)] = []
            if !table.renamedFrom.isEmpty { entry.append((Node("renamed_from"), namesNode(table.renamedFrom))) }
            entry.append((Node("columns"), .sequence(Node.Sequence(columns))))
            let indexes: [Node] = table.indexes.map { index in
                flow([
                    ("name", plain(index.name)),
                    ("columns", .sequence(Node.Sequence(index.columns.map(plain), .implicit, .flow))),
                    ("unique", Node(index.unique ? "true" : "false", Tag(.bool))),
                ])
            }
            if !indexes.isEmpty { entry.append((Node("indexes"), .sequence(Node.Sequence(indexes)))) }
            if !table.dropped.isEmpty { entry.append((Node("dropped"), droppedNode(table.dropped))) }
            if !table.droppedIndexes.isEmpty { entry.append((Node("dropped_indexes"), droppedNode(table.droppedIndexes))) }
            tables.append((plain(table.name), .mapping(Node.Mapping(entry))))
        }
        var root: [(Node, Node)] = [
            (Node("version"), Node(String(model.version), Tag(.int))),
            (Node("tables"), .mapping(Node.Mapping(tables))),
        ]
        if !model.droppedTables.isEmpty { root.append((Node("dropped_tables"), droppedNode(model.droppedTables))) }
        return try Yams.serialize(node: .mapping(Node.Mapping(root)), width: -1, allowUnicode: true, sortKeys: false)
            .trimmingCharacters(in: .newlines)
    }
}
