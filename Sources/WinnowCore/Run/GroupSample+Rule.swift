import Foundation

extension CompiledRule {
    /// Columns a plan shows per sample row: the key, the winner order's columns and the merged
    /// columns first, then the other stored columns, at most `limit` in all. The row's identity
    /// has its own column (SQLite's rowid alias, PostgreSQL's primary key) and is left out.
    public func sampleColumns(limit: Int = 8) -> [String] {
        let identity: [String]
        switch self.identity {
        case let .rowid(_, alias): identity = alias.map { [$0] } ?? []
        case let .primaryKey(columns): identity = columns
        }
        var columns: [String] = []
        func add(_ name: String) {
            guard !identity.contains(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) else { return }
            if !columns.contains(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) { columns.append(name) }
        }
        keyColumns.forEach(add)
        for term in winnerTerms { if case let .column(name, _, _) = term { add(name) } }
        mergeColumns.forEach { add($0.name) }
        for name in storedColumns where columns.count < limit { add(name) }
        return columns
    }
}

extension GroupSample {
    /// The merges of the group as a batch resolves them (``MergeResolver``): `values` holds the
    /// merge columns of the winner, then of the losers in winner order (each row followed by
    /// its ranking columns, ``CompiledRule/mergeRankColumns(alias:)``, where the rule ranks).
    public mutating func recordMerges(_ rule: CompiledRule, values: [[SQLValue]]) {
        let changes = MergeResolver.changes(
            strategies: rule.mergeColumns.map(\.strategy), orders: rule.mergeOrders, flat: values.flatMap { $0 },
            ranked: rule.mergesRanked)
        // The rows shown (``rows``) are the rows of `values`, in the same order.
        let keys = rows.count == values.count ? rows.map(\.row) : []
        for change in changes {
            merged.append(
                MergedValue(
                    column: rule.mergeColumns[change.index].name, before: values[0][change.index].quotedLiteral,
                    after: change.value.quotedLiteral,
                    from: MergedValue.source(of: change.value, values: values.map { $0[change.index] }, rows: keys)))
        }
    }
}

extension SQLValue {
    /// The value as SQL spells it (what SQLite's `quote()` gives): `NULL`, numbers bare, text in
    /// single quotes, blobs as `X'..'`.
    public var quotedLiteral: String {
        switch self {
        case .null: return "NULL"
        case let .integer(v): return String(v)
        case let .real(v): return "\(v)"
        case let .text(v): return "'" + (v.utf8.contains(UInt8(ascii: "'")) ? v.replacingOccurrences(of: "'", with: "''") : v) + "'"
        case let .blob(v): return "X'" + v.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }
}
