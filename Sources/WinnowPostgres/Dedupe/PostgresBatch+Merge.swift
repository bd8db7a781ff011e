import Foundation
import PostgresNIO
import WinnowCore

/// Merges of a batch (resolved by ``PostgresMerge``), applied to the winners.
extension PostgresBatch {
    /// Resolves and applies the merges (``PostgresMerge``); returns the number of winners changed.
    func merge(_ groups: [Group], batch: Int) throws -> Int {
        guard !merges.isEmpty else { return 0 }
        var rows: [String] = []
        var winners: [[String]] = []
        // Values that may not fit their column (a sum, a joined text): a failed cast is traced
        // back to them.
        var unsure: [(winner: [String], index: Int, value: SQLValue)] = []
        for group in groups {
            let changes = merges.changes(group.values)
            guard !changes.isEmpty else { continue }
            var values: [String] = Array(repeating: "false, NULL::text", count: merges.columns.count)
            for change in changes {
                values[change.index] = "true, \(Self.textLiteral(change.value))"
                if merges.columns[change.index].makesValues {
                    unsure.append((group.winner, change.index, change.value))
                }
            }
            winners.append(group.winner)
            rows.append("(" + (group.winner.map(dialect.literal) + values).joined(separator: ", ") + ")")
        }
        guard !winners.isEmpty else { return 0 }
        let names =
            (0..<width).map { "k\($0)" } + merges.columns.indices.flatMap { ["f\($0)", "v\($0)"] }
        let valuesSQL = "(VALUES \(rows.joined(separator: ", "))) AS v(\(names.joined(separator: ", ")))"
        guard dedupe.writes else {
            // `plan` tries the values as `run` would store them, so that a value the column
            // cannot hold is refused here too.
            let checks = merges.columns.indices.filter { merges.columns[$0].makesValues }.map { index in
                "(v.f\(index) AND \(merges.loses("v.v\(index)", column: index)))"
            }
            if !unsure.isEmpty, !checks.isEmpty {
                let misfits: Int
                do {
                    misfits =
                        try link.query("SELECT count(*) FROM \(valuesSQL) WHERE \(checks.joined(separator: " OR "))").first?.first?.int ?? 0
                } catch {
                    throw try misfitRefusal(unsure, error)
                }
                if misfits > 0 { throw try misfitRefusal(unsure, WinnowError.internal("a merged value does not fit its column")) }
            }
            return winners.count
        }
        let keys = dedupe.unnestKeys(first: 1, count: width, alias: "m", names: (0..<width).map { "k\($0)" })
        let sets = merges.columns.enumerated().map { index, column in
            let name = column.name.sqlIdentifier
            return "\(name) = CASE WHEN v.f\(index) THEN v.v\(index)::\(column.castType) ELSE t.\(name) END"
        }
        // The winners reached by key (`probe`): joined to the values alone, they were found by a
        // hash of the whole table for each batch.
        do {
            try journaled(
                """
                UPDATE \(dedupe.table) AS t SET \(sets.joined(separator: ", "))
                FROM \(valuesSQL)
                WHERE \(dedupe.keyJoin("t", "v", columns: dedupe.primaryKey, probe: 1))
                """, op: "update", table: rule.table, keys: dedupe.primaryKey,
                from: "FROM \(keys) JOIN \(dedupe.table) AS c ON \(dedupe.keyJoin("c", "m", columns: dedupe.primaryKey, probe: 1))",
                binds: PostgresDedupe.bindings(PostgresDedupe.columns(winners, width: width)), batch: batch)
        } catch let error as PSQLError where error.serverInfo?[.sqlState]?.hasPrefix("22") == true && !unsure.isEmpty {
            // The transaction is aborted: the values are tried once it is rolled back.
            throw PostgresMerge.Misfit(changes: unsure, error: error)
        }
        return winners.count
    }

    /// The refusal naming the first of `unsure` that its column cannot hold, or `error` when
    /// each fits alone (tried outside any transaction).
    func misfitRefusal(_ unsure: [(winner: [String], index: Int, value: SQLValue)], _ error: Error) throws -> Error {
        guard let misfit = try merges.misfit(unsure, link: link) else { return error }
        return merges.refusal(misfit, rule: rule, primaryKey: dedupe.primaryKey)
    }

    /// A value as a text literal (cast to the column's type where it is used).
    static func textLiteral(_ value: SQLValue) -> String {
        switch value {
        case .null: return "NULL::text"
        case let .integer(v): return "'\(v)'"
        case let .real(v): return "'\(v)'"
        case let .text(v): return "'" + v.replacingOccurrences(of: "'", with: "''") + "'"
        case let .blob(v): return "'\\x" + v.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}
