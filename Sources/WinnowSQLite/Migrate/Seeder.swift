import Foundation
import WinnowCore
import GRDB

/// The `seed:` section: copies tables from a prebuilt database once per target database (a
/// marker in `winnow_seeds` records it), in one transaction. Copied rows keep their integer
/// primary key where it is free and get a new one where it is taken; foreign keys among the
/// seeded tables follow their parents' new keys.
struct Seeder {
    let db: Database
    let spec: SeedSpec
    let runID: Int64?

    struct Outcome {
        var seeded: Bool
        var rows: Int
    }

    func run() throws -> Outcome {
        guard try !SchemaVersions.isSeeded(db, name: spec.name.value) else { return Outcome(seeded: false, rows: 0) }
        return try withSeed { seed in try copy(from: seed) }
    }

    /// What ``run()`` would refuse, checked before anything is written: the seed file opens as
    /// a database and every table named is in it and in `schema` (the schema the migration
    /// leaves). Nothing to check when the seed was applied before.
    func check(against schema: LiveSchema) throws {
        guard try !SchemaVersions.isSeeded(db, name: spec.name.value) else { return }
        try withSeed { seed in _ = try SeedPlan(spec, seed: try SchemaInspector.inspect(seed), target: schema) }
    }

    private func withSeed<T>(_ body: (Database) throws -> T) throws -> T {
        try SeedPlan.checkSource(spec)
        let path = spec.from.value
        var config = Configuration()
        config.readonly = true
        let source: DatabaseQueue
        do { source = try DatabaseQueue(path: path, configuration: config) } catch { throw DatabaseOpener.map(error, path: path) }
        defer { try? source.close() }
        do {
            return try source.read { seed in try body(seed) }
        } catch {
            throw DatabaseOpener.map(error, path: path)
        }
    }

    private func copy(from seed: Database) throws -> Outcome {
        let plan = try SeedPlan(spec, seed: try SchemaInspector.inspect(seed), target: try SchemaInspector.inspect(db))
        var keyMaps: [String: [Int64: Int64]] = [:]
        var rows = 0
        try db.writeTransaction {
            for table in plan.tables {
                let (target, columns) = (table.target, table.columns)
                let alias = target.rowIDAlias
                var nextKey =
                    try Int64.fetchOne(db, sql: "SELECT max(\(target.rowIDExpression ?? "rowid")) FROM main.\(target.name.sqlIdentifier)")
                    ?? 0
                var map: [Int64: Int64] = [:]
                let insert = try db.makeStatement(
                    sql: """
                        INSERT OR IGNORE INTO main.\(target.name.sqlIdentifier) (\(columns.map(\.sqlIdentifier).joined(separator: ", ")))
                        VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))
                        """)
                let exists = try alias.map {
                    try db.makeStatement(sql: "SELECT 1 FROM main.\(target.name.sqlIdentifier) WHERE \($0.sqlIdentifier) = ?")
                }
                let cursor = try Row.fetchCursor(seed, sql: SeedPlan.select(table, dialect: SQLiteDialect()))
                while let row = try cursor.next() {
                    var values = (0..<columns.count).map { row[$0] as DatabaseValue }
                    for fk in target.foreignKeys where fk.childColumns.count == 1 {
                        guard let parentMap = keyMaps[fk.parentTable.lowercased()],
                            let i = columns.firstIndex(where: { $0.caseInsensitiveCompare(fk.childColumns[0]) == .orderedSame }),
                            let old = Int64.fromDatabaseValue(values[i]), let new = parentMap[old]
                        else { continue }
                        values[i] = new.databaseValue
                    }
                    if let alias, let i = columns.firstIndex(of: alias), let old = Int64.fromDatabaseValue(values[i]) {
                        if try Bool.fetchOne(exists!, arguments: [old]) == true {
                            nextKey += 1
                            values[i] = nextKey.databaseValue
                            map[old] = nextKey
                        } else {
                            nextKey = max(nextKey, old)
                            map[old] = old
                        }
                    }
                    try insert.execute(arguments: StatementArguments(values))
                    rows += db.changesCount
                }
                keyMaps[target.name.lowercased()] = map
            }
            try SchemaVersions.install(db)
            try db.execute(
                sql: "INSERT INTO winnow_seeds (name, seeded_at, run_id, rows) VALUES (?, ?, ?, ?)",
                arguments: [spec.name.value, Bookkeeping.timestamp(), runID, rows])
            return
        }
        return Outcome(seeded: true, rows: rows)
    }
}
