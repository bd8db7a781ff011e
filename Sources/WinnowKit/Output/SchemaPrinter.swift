import Foundation
import GRDB
import Yams

/// `winnow schema inspect`: the live schema written in the schema-file format (CONTRACT
/// section 3), leaving out `winnow_*` and `sqlite_*` tables.
public enum SchemaPrinter {
    public static func inspect(database path: String) throws -> String {
        let queue = try DatabaseOpener.open(path: path, mode: .readOnly)
        do {
            let schema = try queue.inDatabase { db in try SchemaInspector.inspect(db) }
            return try render(schema)
        } catch {
            throw DatabaseOpener.map(error, path: path)
        }
    }

    static func scalar(_ text: String) -> Node { Node(text) }

    static func flow(_ pairs: [(String, Node)]) -> Node {
        .mapping(Node.Mapping(pairs.map { (Node($0.0), $0.1) }, .implicit, .flow))
    }

    /// A column default as the schema file writes it: a string literal unquoted, anything else as its SQL text.
    static func defaultNode(_ sql: String) -> Node {
        if sql.count >= 2, sql.hasPrefix("'"), sql.hasSuffix("'") {
            return Node(String(sql.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'"), Tag(.str), .doubleQuoted)
        }
        if Int64(sql) != nil { return Node(sql, Tag(.int)) }
        if Double(sql) != nil { return Node(sql, Tag(.float)) }
        return Node(sql, Tag(.str), .doubleQuoted)
    }

    public static func render(_ schema: LiveSchema) throws -> String {
        var tables: [(Node, Node)] = []
        for table in schema.tables where !table.isVirtual {
            let columns: [Node] = table.storedColumns.map { column in
                var pairs: [(String, Node)] = [("name", Node(column.name)), ("type", Node(column.type.lowercased(), Tag(.str)))]
                if column.primaryKeyIndex > 0 { pairs.append(("primary_key", Node("true", Tag(.bool)))) }
                if column.notNull && column.primaryKeyIndex == 0 { pairs.append(("nullable", Node("false", Tag(.bool)))) }
                if let dflt = column.defaultSQL, dflt.uppercased() != "NULL" { pairs.append(("default", defaultNode(dflt))) }
                if let fk = table.foreignKeys.first(where: { $0.childColumns == [column.name] }) {
                    var ref: [(String, Node)] = [("table", Node(fk.parentTable))]
                    if let parent = fk.parentColumns?.first { ref.append(("column", Node(parent))) }
                    pairs.append(("references", flow(ref)))
                }
                return flow(pairs)
            }
            var entry: [(Node, Node)] = [(Node("columns"), .sequence(Node.Sequence(columns)))]
            let indexes: [Node] = table.indexes.filter { $0.origin == "c" && !$0.partial && !$0.columns.contains(nil) }.map { index in
                flow([("name", Node(index.name)),
                      ("columns", .sequence(Node.Sequence(index.columns.compactMap { $0 }.map { Node($0) }, .implicit, .flow))),
                      ("unique", Node(index.unique ? "true" : "false", Tag(.bool)))])
            }
            if !indexes.isEmpty { entry.append((Node("indexes"), .sequence(Node.Sequence(indexes)))) }
            tables.append((Node(table.name), .mapping(Node.Mapping(entry))))
        }
        let root: Node = .mapping(Node.Mapping([
            (Node("version"), Node("1", Tag(.int))),
            (Node("tables"), .mapping(Node.Mapping(tables))),
        ]))
        return try Yams.serialize(node: root, width: -1, allowUnicode: true, sortKeys: false)
            .trimmingCharacters(in: .newlines)
    }
}
