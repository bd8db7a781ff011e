import Foundation

/// What a `seed:` section copies, decided the same way on every engine: the seed file is
/// checked, each named table is paired with its table in the database, and the pairs are put
/// parents before children (so that children can follow their parents' new keys). Backends
/// only read the rows (``select(_:columns:dialect:)``) and insert them.
public struct SeedPlan: Sendable {
    /// One seeded table: where its rows come from and where they go.
    public struct Table: Sendable {
        public var source: LiveTable
        public var target: LiveTable
        /// The stored columns of the target that the seed's table also stores, in target order.
        public var columns: [String]
    }

    /// The tables, parents before children.
    public var tables: [Table]

    /// Refuses a seed path that names no file (or a directory), before the file is opened.
    public static func checkSource(_ spec: SeedSpec) throws {
        let path = spec.from.value
        let place = spec.from.location.map { "\($0): " } ?? ""
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw WinnowError.notFound("\(place)seed.from: \(path): no such seed database; nothing was changed")
        }
        guard !isDirectory.boolValue else {
            throw WinnowError.notFound("\(place)seed.from: \(path): is a directory, not a seed database; nothing was changed")
        }
    }

    /// Pairs each table the seed names with the seed database's table and the target's,
    /// refusing a name either lacks (at the name's place in the job file).
    public init(_ spec: SeedSpec, seed: LiveSchema, target: LiveSchema) throws {
        let pairs = try spec.tables.map { name -> Table in
            guard let source = seed.table(named: name.value) else {
                throw WinnowError.invalidFile(name.location, "seed.tables: the seed database has no table '\(name.value)'")
            }
            guard let table = target.table(named: name.value) else {
                throw WinnowError.invalidFile(name.location, "seed.tables: the database has no table '\(name.value)'")
            }
            let columns = table.storedColumns.map(\.name).filter { source.column(named: $0)?.isStored == true }
            return Table(source: source, target: table, columns: columns)
        }
        tables = Self.parentsFirst(pairs)
    }

    /// `pairs` with every table after the seeded tables it references (a table referencing
    /// itself, or a cycle, keeps its place in the job's order).
    static func parentsFirst(_ pairs: [Table]) -> [Table] {
        let seeded = Set(pairs.map { $0.target.name.lowercased() })
        var ordered: [Table] = []
        var remaining = pairs
        while !remaining.isEmpty {
            let ready =
                remaining.firstIndex { pair in
                    pair.target.foreignKeys.allSatisfy { fk in
                        let parent = fk.parentTable.lowercased()
                        return parent == pair.target.name.lowercased() || !seeded.contains(parent)
                            || ordered.contains { $0.target.name.lowercased() == parent }
                    }
                } ?? 0
            ordered.append(remaining.remove(at: ready))
        }
        return ordered
    }

    /// The `SELECT` that reads a seeded table's rows from the seed database, in the order of
    /// the seed's row identity: keys taken in the target are renumbered in that order, the same
    /// on every engine.
    public static func select(_ table: Table, dialect: any SQLDialect) -> String {
        let order: String
        switch dialect.rowIdentity(of: table.source) {
        case let .rowid(expression, _): order = " ORDER BY \(expression)"
        case let .primaryKey(columns): order = " ORDER BY " + columns.map(\.sqlIdentifier).joined(separator: ", ")
        case nil: order = ""
        }
        return "SELECT \(table.columns.map(\.sqlIdentifier).joined(separator: ", ")) FROM \(dialect.table(table.source.name))\(order)"
    }
}
