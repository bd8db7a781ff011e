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
        for group in chosen {
            let all = [group.winner] + group.losers
            let rows = try link.query(
                """
                SELECT \(dedupe.idTexts("t").joined(separator: ", ")), \(shown.joined(separator: ", "))
                FROM \(keys) JOIN \(dedupe.table) AS t ON \(dedupe.keyJoin("t", "m", columns: dedupe.primaryKey))
                """, PostgresDedupe.bindings(PostgresDedupe.columns(all, width: width)))
            var byID: [[String]: [String]] = [:]
            for row in rows {
                let values = row
                byID[values[0..<width].map { $0.string ?? "" }] = values[width...].map { $0.string ?? "NULL" }
            }
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
            for path in rule.references {
                for (loser, number) in zip(group.losers, ids.dropFirst()) {
                    let count = try dedupe.childCount(path, of: [loser])
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
