import Foundation
import WinnowCore

/// `seed:` on PostgreSQL: the seed is a SQLite file (a prebuilt database), read through the
/// SQLite backend the command line hands over, and copied once, in one transaction, parents
/// before children; an integer key already taken gets the next free one and the children that
/// follow are re-pointed to it. The seed's name is recorded in `winnow_seeds` in the same
/// transaction.
struct PostgresSeeder {
    let session: PostgresSession
    let spec: SeedSpec
    let runID: Int64?

    func seed(checkingAgainst schema: LiveSchema?) throws -> SeedOutcome {
        if try session.tableExists("winnow_seeds"), try SchemaVersions.isSeeded(session, name: spec.name.value) {
            return SeedOutcome(seeded: false, rows: 0)
        }
        guard let reader = session.seedBackend else {
            throw WinnowError.usage("seed.from: reading a seed database needs the SQLite backend; run winnow from its command line")
        }
        try SeedPlan.checkSource(spec)
        return try reader.withSession(spec.from.value, mode: .readOnly) { seed in
            let seedSchema = try seed.inspect()
            let target = try schema ?? session.inspect()
            let plan = try SeedPlan(spec, seed: seedSchema, target: target)
            guard schema == nil else { return SeedOutcome(seeded: false, rows: 0) }
            return try copy(plan, from: seed)
        }
    }

    private func copy(_ plan: SeedPlan, from seed: any DatabaseSession) throws -> SeedOutcome {
        let dialect = session.postgresDialect
        var keyMaps: [String: [Int64: Int64]] = [:]
        var rows = 0
        try session.writeTransaction {
            for seeded in plan.tables {
                let (target, columns) = (seeded.target, seeded.columns)
                let table = dialect.table(target.name)
                let key =
                    target.primaryKey.count == 1 && ["integer", "bigint"].contains(target.column(named: target.primaryKey[0])?.type ?? "")
                    ? target.primaryKey[0] : nil
                var nextKey =
                    try key.map { try session.value("SELECT coalesce(max(\($0.sqlIdentifier)), 0) FROM \(table)").int64 ?? 0 } ?? 0
                var map: [Int64: Int64] = [:]
                let insert = """
                    INSERT INTO \(table) (\(columns.map(\.sqlIdentifier).joined(separator: ", "))) OVERRIDING SYSTEM VALUE
                    VALUES (\(columns.map { "?::\(target.column(named: $0)?.type ?? "text")" }.joined(separator: ", "))) ON CONFLICT DO NOTHING
                    """
                for row in try seed.rows(SeedPlan.select(seeded, dialect: seed.dialect)) {
                    var values = row.values.map { value -> SQLValue in
                        if case let .integer(v) = value { return .text(String(v)) }
                        if case let .real(v) = value { return .text("\(v)") }
                        return value
                    }
                    for fk in target.foreignKeys where fk.childColumns.count == 1 {
                        guard let parentMap = keyMaps[fk.parentTable.lowercased()],
                            let i = columns.firstIndex(where: { $0.caseInsensitiveCompare(fk.childColumns[0]) == .orderedSame }),
                            let old = values[i].int64, let new = parentMap[old]
                        else { continue }
                        values[i] = .text(String(new))
                    }
                    if let key, let i = columns.firstIndex(of: key), let old = values[i].int64 {
                        if try session.row("SELECT 1 FROM \(table) WHERE \(key.sqlIdentifier) = ?", [.integer(old)]) != nil {
                            nextKey += 1
                            values[i] = .text(String(nextKey))
                            map[old] = nextKey
                        } else {
                            nextKey = max(nextKey, old)
                            map[old] = old
                        }
                    }
                    rows += try session.link.command(PostgresSession.numbered(insert), .init(values: values))
                }
                keyMaps[target.name.lowercased()] = map
                if let key {
                    // An identity column numbers the next row after the seeded ones.
                    try session.execute(
                        """
                        SELECT setval(pg_get_serial_sequence(?, ?), greatest(1, (SELECT coalesce(max(\(key.sqlIdentifier)), 0) FROM \(table))))
                        WHERE pg_get_serial_sequence(?, ?) IS NOT NULL
                        """, [SQLValue(table), SQLValue(key), SQLValue(table), SQLValue(key)])
                }
            }
            try SchemaVersions.install(session)
            try session.execute(
                "INSERT INTO \(dialect.bookkeeping("winnow_seeds")) (name, seeded_at, run_id, rows) VALUES (?, ?, ?, ?)",
                [SQLValue(spec.name.value), SQLValue(Bookkeeping.timestamp()), SQLValue(runID), SQLValue(rows)])
        }
        return SeedOutcome(seeded: true, rows: rows)
    }
}
