import Foundation
import PostgresNIO
import WinnowCore

/// Sample groups for `plan`, each row named by its primary key.
extension PostgresBatch {
    /// Sample groups for `plan`.
    func samples(_ groups: [Group]) throws -> [GroupSample] {
        let limit = max(0, dedupe.options.sampleLimit)
        let chosen = groups.prefix(limit)
        guard !chosen.isEmpty else { return [] }
        let columns = rule.sampleColumns()
        let shown = columns.map { name -> String in
            let value = "(t.\(name.sqlIdentifier))::text"
            return PostgresDialect.isText(rule.columnTypes[name])
                ? "CASE WHEN t.\(name.sqlIdentifier) IS NULL THEN 'NULL' ELSE quote_literal(t.\(name.sqlIdentifier)) END"
                : "coalesce(\(value), 'NULL')"
        }
        let keys = dedupe.unnestKeys(first: 1, count: width, alias: "m", names: (0..<width).map { "k\($0)" })
        var samples: [GroupSample] = []
        // A row is named by its primary key, each value as SQL spells it.
        let rowKey = dedupe.rowKey
        // Every chosen group's rows in one read, and each loser's child rows per reference in
        // one grouped count (with a query per group and per loser, `plan --verbose` of 53,277
        // groups took 11.5 s, 2.1 s with this).
        let members = chosen.flatMap { [$0.winner] + $0.losers }
        var byID: [[String]: [String]] = [:]
        for row in try link.query(
            """
            SELECT \(dedupe.idTexts("t").joined(separator: ", ")), \(shown.joined(separator: ", "))
            FROM \(keys) JOIN \(dedupe.table) AS t ON \(dedupe.keyJoin("t", "m", columns: dedupe.primaryKey))
            """, PostgresDedupe.bindings(PostgresDedupe.columns(members, width: width)))
        {
            byID[row[0..<width].map { $0.string ?? "" }] = row[width...].map { $0.string ?? "NULL" }
        }
        let losers = chosen.flatMap(\.losers)
        let parents = dedupe.idTexts("p").joined(separator: ", ")
        let children = try rule.references.map { path -> [[String]: Int] in
            guard !losers.isEmpty else { return [:] }
            var counts: [[String]: Int] = [:]
            for row in try link.query(
                "SELECT \(parents), count(*) FROM \(dedupe.childJoin(path)) GROUP BY \(parents)",
                PostgresDedupe.bindings(PostgresDedupe.columns(losers, width: width)))
            {
                counts[row[0..<width].map { $0.string ?? "" }] = row[width].int ?? 0
            }
            return counts
        }
        for group in chosen {
            let all = [group.winner] + group.losers
            let ids = all.map(rowKey)
            var sample = GroupSample(
                key: rule.keyColumns.map { key in
                    columns.firstIndex { $0.caseInsensitiveCompare(key) == .orderedSame }.flatMap { byID[group.winner]?[$0] } ?? ""
                }, winner: ids[0], losers: Array(ids.dropFirst()))
            sample.columns = columns
            sample.rows = zip(all, ids).compactMap { id, number in byID[id].map { GroupSample.SampleRow(row: number, values: $0) } }
            for change in merges.changes(group.values) {
                let before = merges.winnerValue(group.values, change.index)
                sample.merged.append(
                    GroupSample.MergedValue(
                        column: merges.columns[change.index].name, before: merges.display(before, column: change.index),
                        after: merges.display(change.value, column: change.index),
                        from: GroupSample.MergedValue.source(
                            of: change.value, values: group.values.map { merges.ownValue($0, change.index) }, rows: ids)))
            }
            for (index, path) in rule.references.enumerated() {
                for (loser, number) in zip(group.losers, ids.dropFirst()) {
                    let count = children[index][loser] ?? 0
                    if count > 0 {
                        sample.children.append(
                            .init(reference: path.label, loser: number, rows: count, mayCollide: !path.uniqueKeys.isEmpty))
                    }
                }
            }
            samples.append(sample)
        }
        return samples
    }
}
