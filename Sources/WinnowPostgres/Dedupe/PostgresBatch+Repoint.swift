import Foundation
import PostgresNIO
import WinnowCore

/// Children of a batch's losers, moved to their winners (or deleted where the winner already has the same child).
extension PostgresBatch {
    /// Moves the children of the losers to their winners; returns (re-pointed, deleted).
    func repoint(_ path: ReferencePath, groups: [Group], batch: Int) throws -> (Int, Int) {
        let losers = groups.flatMap(\.losers)
        let winners = groups.flatMap { group in group.losers.map { _ in group.winner } }
        let child = rule.qualified(path.childTable)
        let childKey = childKeys[path.childTable] ?? []
        if rule.rule.references == .restrict {
            let count = try dedupe.childCount(path, of: losers)
            if count > 0 { throw rule.restrictRefusal("\(count) row(s) of \(path.label) point at rows that would be deleted") }
            return (0, 0)
        }
        let sets = zip(path.childColumns, path.parentColumns).map { "\($0.sqlIdentifier) = w.\($1.sqlIdentifier)" }.joined(separator: ", ")
        if path.uniqueKeys.isEmpty {
            let names = (0..<width).map { "k\($0)" } + (0..<width).map { "w\($0)" }
            let pairs =
                "unnest(\((1...(2 * width)).map { "$\($0)::text[]" }.joined(separator: ", "))) AS m(\(names.joined(separator: ", ")))"
            // Where the reference holds the parent's key, the pairs give the loser's and the
            // winner's values (both rows are locked by the ranking), and the children are reached
            // through the reference's index, if any, by the losers' keys. Told how many pairs
            // there are, the planner hashes the whole child and parent tables for each batch to
            // join them. Another referenced
            // column is read from the loser (`p`) and winner (`w`) rows.
            let direct = holdsKey(path)
            let from =
                direct
                ? "FROM \(pairs)"
                : """
                FROM \(pairs) JOIN \(dedupe.table) AS p ON \(dedupe.keyJoin("p", "m", columns: dedupe.primaryKey))
                JOIN \(dedupe.table) AS w ON \(winnerJoin)
                """
            let keyTypes = Dictionary(zip(path.childColumns, dedupe.primaryKey.map { dedupe.type($0) }), uniquingKeysWith: { a, _ in a })
            let children =
                direct ? dedupe.keyJoin("c", "m", columns: path.childColumns, types: keyTypes, probe: 1) : PostgresDedupe.join(path)
            let values =
                direct
                ? dedupe.primaryKey.indices.map { "m.w\($0)::\(dedupe.type(dedupe.primaryKey[$0]))" }
                : path.parentColumns.map { "w.\($0.sqlIdentifier)" }
            let assignments = zip(path.childColumns, values).map { "\($0.sqlIdentifier) = \($1)" }.joined(separator: ", ")
            let binds = PostgresDedupe.bindings(
                PostgresDedupe.columns(losers, width: width) + PostgresDedupe.columns(winners, width: width))
            guard dedupe.writes else {
                return (
                    try link.query("SELECT count(*) \(from) JOIN \(child) AS c ON \(children)", binds)
                        .first?.first?.int ?? 0, 0
                )
            }
            let moved = try journaled(
                "UPDATE \(child) AS c SET \(assignments) \(from) WHERE \(children)", op: "update", table: path.childTable,
                keys: childKey, from: "\(from) JOIN \(child) AS c ON \(children)", binds: binds, batch: batch, path: path,
                winnerValues: values)
            return (moved, 0)
        }
        // A unique key of the child includes the reference: decided row by row, as SQLite does.
        // Children of the winner first, then of each loser in winner order; a row whose key
        // after re-pointing is taken is a duplicate itself and deleted.
        let keyColumns = Array(Set(path.uniqueKeys.flatMap { $0 })).sorted()
        var members: [[String]] = []
        var order: [Int64] = []
        var owner: [Int] = []
        for (index, group) in groups.enumerated() {
            for member in [group.winner] + group.losers {
                members.append(member)
                order.append(Int64(order.count))
                owner.append(index)
            }
        }
        let names = ["o"] + (0..<width).map { "k\($0)" }
        let keysFrom = "unnest($1::int8[]\((0..<width).map { ", $\($0 + 2)::text[]" }.joined())) AS m(\(names.joined(separator: ", ")))"
        var binds = PostgresBindings()
        binds.append(order)
        for column in PostgresDedupe.columns(members, width: width) { binds.append(column) }
        let parentValues = path.parentColumns.map { "(p.\($0.sqlIdentifier))::text" }
        let rows = try link.query(
            """
            SELECT m.o, \(childKey.map { "(c.\($0.sqlIdentifier))::text" }.joined(separator: ", ")), \
            \(parentValues.joined(separator: ", ")), \(keyColumns.map { "(c.\($0.sqlIdentifier))::text" }.joined(separator: ", "))
            FROM \(keysFrom) JOIN \(dedupe.table) AS p ON \(dedupe.keyJoin("p", "m", columns: dedupe.primaryKey))
            JOIN \(child) AS c ON \(PostgresDedupe.join(path))
            ORDER BY m.o, \(childKey.map { "c.\($0.sqlIdentifier)" }.joined(separator: ", "))
            """, binds)
        var winnerValues: [Int: [SQLValue]] = [:]
        var occupied = Set<[SQLValue]>()
        var currentGroup = -1
        var moves: [([String], [String])] = []
        var deletes: [[String]] = []
        let k = childKey.count
        let pc = path.parentColumns.count
        for row in rows {
            let values = row
            let position = values[0].int ?? 0
            let group = owner[position]
            let childID = values[1...k].map { $0.string ?? "" }
            let parent = Array(values[(k + 1)...(k + pc)])
            var current: [String: SQLValue] = [:]
            for (offset, name) in keyColumns.enumerated() { current[name] = values[k + pc + 1 + offset] }
            let isWinner = members[position] == groups[group].winner
            if group != currentGroup {
                occupied.removeAll()
                currentGroup = group
            }
            if isWinner { winnerValues[group] = parent }
            if !isWinner {
                // The winner's referenced values (read from any of its rows, else from the parent).
                let target = try winnerValues[group] ?? referenced(path, winner: groups[group].winner)
                winnerValues[group] = target
                for (column, value) in zip(path.childColumns, target) { current[column] = value }
            }
            let tuples: [[SQLValue]] = path.uniqueKeys.enumerated().compactMap { keyIndex, key in
                let tuple = key.map { current[$0] ?? .null }
                return tuple.contains(where: \.isNull) ? nil : [SQLValue(keyIndex)] + tuple
            }
            if isWinner || !tuples.contains(where: occupied.contains) {
                occupied.formUnion(tuples)
                if !isWinner { moves.append((childID, groups[group].winner)) }
            } else {
                deletes.append(childID)
            }
        }
        guard dedupe.writes else { return (moves.count, deletes.count) }
        let types = childTypes[path.childTable]
        let childNames = (0..<k).map { "k\($0)" }
        if !deletes.isEmpty {
            let from =
                "FROM \(dedupe.unnestKeys(first: 1, count: k, alias: "m", names: childNames)) JOIN \(child) AS c ON \(dedupe.keyJoin("c", "m", columns: childKey, types: types, probe: 1))"
            let binds = PostgresDedupe.bindings(PostgresDedupe.columns(deletes, width: k))
            try journaled(
                "DELETE FROM \(child) AS c USING \(dedupe.unnestKeys(first: 1, count: k, alias: "m", names: childNames)) WHERE \(dedupe.keyJoin("c", "m", columns: childKey, types: types, probe: 1))",
                op: "delete", table: path.childTable, keys: childKey, from: from, binds: binds, batch: batch)
        }
        if !moves.isEmpty {
            let names = childNames + (0..<width).map { "w\($0)" }
            let pairs =
                "unnest(\((1...(k + width)).map { "$\($0)::text[]" }.joined(separator: ", "))) AS m(\(names.joined(separator: ", ")))"
            let binds = PostgresDedupe.bindings(
                PostgresDedupe.columns(moves.map(\.0), width: k) + PostgresDedupe.columns(moves.map(\.1), width: width))
            try journaled(
                """
                UPDATE \(child) AS c SET \(sets) FROM \(pairs) JOIN \(dedupe.table) AS w ON \(winnerJoin)
                WHERE \(dedupe.keyJoin("c", "m", columns: childKey, types: types, probe: 1))
                """, op: "update", table: path.childTable, keys: childKey,
                from:
                    "FROM \(pairs) JOIN \(child) AS c ON \(dedupe.keyJoin("c", "m", columns: childKey, types: types, probe: 1)) JOIN \(dedupe.table) AS w ON \(winnerJoin)",
                binds: binds, batch: batch, path: path)
        }
        return (moves.count, deletes.count)
    }

    /// Whether `path`'s reference holds the parent's primary key, column for column.
    func holdsKey(_ path: ReferencePath) -> Bool {
        path.parentColumns.count == width
            && zip(path.parentColumns, dedupe.primaryKey).allSatisfy { $0.caseInsensitiveCompare($1) == .orderedSame }
    }

    /// The values a winner's children hold (its referenced columns).
    func referenced(_ path: ReferencePath, winner: [String]) throws -> [SQLValue] {
        let keys = dedupe.unnestKeys(first: 1, count: width, alias: "m", names: (0..<width).map { "k\($0)" })
        let row = try link.query(
            """
            SELECT \(path.parentColumns.map { "(p.\($0.sqlIdentifier))::text" }.joined(separator: ", "))
            FROM \(keys) JOIN \(dedupe.table) AS p ON \(dedupe.keyJoin("p", "m", columns: dedupe.primaryKey))
            """, PostgresDedupe.bindings(PostgresDedupe.columns([winner], width: width)))
        return row.first ?? []
    }
}
