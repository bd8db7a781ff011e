import Foundation

extension SchemaModel {
    /// The live schema of a database in model terms (what `schema inspect` prints and what
    /// migrations and drift checks compare with a schema file). Virtual tables are left out.
    public init(live: LiveSchema, version: Int) {
        self.init(version: version, tables: live.tables.filter { !$0.isVirtual }.map(TableModel.init(live:)))
    }
}

extension TableModel {
    public init(live table: LiveTable) {
        let columns = table.storedColumns.map { column -> ColumnModel in
            var model = ColumnModel(
                name: column.name, type: column.type.lowercased(), nullable: !column.notNull,
                defaultValue: column.defaultSQL.map(DefaultValue.parse(sql:)),
                primaryKey: column.primaryKeyIndex > 0)
            if model.defaultValue == .null { model.defaultValue = nil }
            if let fk = table.foreignKeys.first(where: { $0.childColumns.count == 1 && $0.childColumns[0] == column.name }) {
                model.references = ColumnReferenceModel(table: fk.parentTable, column: fk.parentColumns?.first)
            }
            return model
        }
        let indexes = table.indexes
            .filter { $0.origin == .createIndex && !$0.partial && !$0.columns.contains(nil) }
            .map { IndexModel(name: $0.name, columns: $0.columns.compactMap { $0 }, unique: $0.unique) }
        self.init(name: table.name, columns: columns, indexes: indexes)
    }
}

/// A difference between a live schema and a target schema, as `check` reports it.
public struct SchemaDrift: Sendable, Equatable, CustomStringConvertible {
    public var table: String
    public var column: String?
    public var message: String
    /// Where the schema file says what the database differs from (the table, column or index;
    /// for a table the file does not have, the file itself).
    public var location: SourceLocation?

    public init(table: String, column: String? = nil, message: String, location: SourceLocation? = nil) {
        self.table = table
        self.column = column
        self.message = message
        self.location = location
    }

    public var description: String {
        column.map { "\(table).\($0): \(message)" } ?? "\(table): \(message)"
    }
}

extension SchemaModel {
    /// Everything the target describes that the live schema (self) does not match. Hints
    /// (`renamed_from`) and column order are not part of the comparison.
    public func drift(to target: SchemaModel) -> [SchemaDrift] {
        var result: [SchemaDrift] = []
        for table in target.tables {
            guard let live = self.table(named: table.name) else {
                result.append(SchemaDrift(table: table.name, message: "missing table", location: table.location))
                continue
            }
            for column in table.columns {
                guard let liveColumn = live.column(named: column.name) else {
                    result.append(
                        SchemaDrift(
                            table: table.name, column: column.name, message: "missing column", location: column.location ?? table.location))
                    continue
                }
                let differences = ColumnModel.differences(liveColumn, column)
                if !differences.isEmpty {
                    result.append(
                        SchemaDrift(
                            table: table.name, column: column.name, message: differences.joined(separator: "; "),
                            location: column.location ?? table.location))
                }
            }
            for column in live.columns where table.column(named: column.name) == nil {
                let listed = table.dropped.first { $0.matches(column.name) }
                let renamed = table.columns.first { $0.renamedFrom.contains { $0.caseInsensitiveCompare(column.name) == .orderedSame } }
                result.append(
                    SchemaDrift(
                        table: table.name, column: column.name,
                        message: Self.beyondTheFile("column", dropKey: "dropped", renamedTo: renamed?.name, listed: listed != nil),
                        location: renamed?.location ?? listed?.location ?? table.location))
            }
            for index in table.indexes {
                guard let liveIndex = live.indexes.first(where: { $0.name.caseInsensitiveCompare(index.name) == .orderedSame }) else {
                    result.append(
                        SchemaDrift(table: table.name, message: "missing index \(index.name)", location: index.location ?? table.location))
                    continue
                }
                if !IndexModel.sameDefinition(liveIndex, index) {
                    result.append(
                        SchemaDrift(
                            table: table.name, message: "index \(index.name) is \(liveIndex.summary), the schema says \(index.summary)",
                            location: index.location ?? table.location))
                }
            }
            for index in live.indexes where !table.indexes.contains(where: { $0.name.caseInsensitiveCompare(index.name) == .orderedSame }) {
                let listed = table.droppedIndexes.first { $0.matches(index.name) }
                result.append(
                    SchemaDrift(
                        table: table.name,
                        message: Self.beyondTheFile(
                            "index \(index.name)", dropKey: "dropped_indexes", renamedTo: nil, listed: listed != nil),
                        location: listed?.location ?? table.location))
            }
        }
        for table in tables where target.table(named: table.name) == nil {
            let listed = target.droppedTables.first { $0.matches(table.name) }
            let renamed = target.tables.first { $0.renamedFrom.contains { $0.caseInsensitiveCompare(table.name) == .orderedSame } }
            result.append(
                SchemaDrift(
                    table: table.name,
                    message: Self.beyondTheFile("table", dropKey: "dropped_tables", renamedTo: renamed?.name, listed: listed != nil),
                    location: renamed?.location ?? listed?.location))
        }
        return result
    }

    /// The drift of something the database has and the file does not describe: a run renames
    /// it (`renamed_from`), drops it (listed under `dropKey`), or keeps it.
    static func beyondTheFile(_ subject: String, dropKey: String, renamedTo: String?, listed: Bool) -> String {
        if let renamedTo { return "\(subject) is to be renamed to \(renamedTo) (renamed_from)" }
        if listed { return "\(subject) is listed under \(dropKey), still in the database (a run drops it)" }
        return "\(subject) is not in the schema file (kept by a run; add it to the file, or list it under \(dropKey) to drop it)"
    }
}

extension ColumnModel {
    /// Normalised declared type: lowercased, single spaces, no space before parentheses.
    public var normalizedType: String {
        type.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ").replacingOccurrences(of: " (", with: "(")
    }

    /// How `live` differs from `target`, in words; empty when they match.
    package static func differences(_ live: ColumnModel, _ target: ColumnModel) -> [String] {
        var result: [String] = []
        if live.normalizedType != target.normalizedType {
            result.append(
                "type is \(live.type.isEmpty ? "(none)" : live.type), the schema says \(target.type.isEmpty ? "(none)" : target.type)")
        }
        if live.primaryKey != target.primaryKey {
            result.append(
                live.primaryKey
                    ? "is part of the primary key, the schema says not" : "is not part of the primary key, the schema says it is")
        }
        if live.nullable != target.nullable {
            result.append(live.nullable ? "is nullable, the schema says NOT NULL" : "is NOT NULL, the schema says nullable")
        }
        if !DefaultValue.same(live.defaultValue, target.defaultValue) {
            result.append("default is \(live.defaultValue?.sql ?? "none"), the schema says \(target.defaultValue?.sql ?? "none")")
        }
        if !ColumnReferenceModel.same(live.references, target.references) {
            let describe = { (r: ColumnReferenceModel?) in r.map { "\($0.table)(\($0.column ?? "primary key"))" } ?? "nothing" }
            result.append("references \(describe(live.references)), the schema says \(describe(target.references))")
        }
        return result
    }
}

extension DefaultValue {
    /// Equal defaults; NULL and no default are the same thing.
    package static func same(_ a: DefaultValue?, _ b: DefaultValue?) -> Bool {
        let x = a == .null ? nil : a
        let y = b == .null ? nil : b
        switch (x, y) {
        case (nil, nil): return true
        case let (.expression(e1)?, .expression(e2)?):
            return unwrapped(e1).caseInsensitiveCompare(unwrapped(e2)) == .orderedSame
        case let (.real(r)?, .integer(i)?), let (.integer(i)?, .real(r)?): return Double(i) == r
        default: return x == y
        }
    }
}

extension ColumnReferenceModel {
    package static func same(_ a: ColumnReferenceModel?, _ b: ColumnReferenceModel?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (x?, y?):
            return x.table.caseInsensitiveCompare(y.table) == .orderedSame
                && (x.column ?? "").caseInsensitiveCompare(y.column ?? "") == .orderedSame
        default: return false
        }
    }
}

extension IndexModel {
    package static func sameDefinition(_ a: IndexModel, _ b: IndexModel) -> Bool {
        a.unique == b.unique && a.columns.map { $0.lowercased() } == b.columns.map { $0.lowercased() }
    }

    package var summary: String { "\(unique ? "unique " : "")on (\(columns.joined(separator: ", ")))" }
}
