import Foundation

/// One object winnow created in a database (`winnow uninstall` lists and removes them).
public struct WinnowObject: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case table, trigger, function, schema
    }

    public var kind: Kind
    public var name: String
    /// The schema of the object (of a trigger: of its table), where the engine has schemas.
    public var schema: String?
    /// A trigger's table (a user table: the trigger goes, the table stays).
    public var on: String?
    /// A table's rows.
    public var rows: Int?

    public init(kind: Kind, name: String, schema: String? = nil, on: String? = nil, rows: Int? = nil) {
        self.kind = kind
        self.name = name
        self.schema = schema
        self.on = on
        self.rows = rows
    }

    /// `schema.name`, or the name alone.
    public var qualifiedName: String { schema.map { "\($0).\(name)" } ?? name }
}
