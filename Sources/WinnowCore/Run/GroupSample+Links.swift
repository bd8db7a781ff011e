import Foundation

extension ComponentKey.Alternative {
    /// The alternative as plans show it: each column with its normalisers, and the similarity.
    public var described: String {
        func column(_ name: String) -> String {
            let chain = normalizers[name, default: []]
            return chain.isEmpty ? name : "\(name) (\(chain.map(\.rawValue).joined(separator: ", ")))"
        }
        let block = columns.map(column).joined(separator: " + ")
        guard let similar else { return block }
        return "\(block) ~ \(similar.columns.map(column).joined(separator: " ")) (\(similar.measure.label))"
    }
}

extension RuleSummary {
    /// What the links of an `any:` rule came to (``ComponentFinder/Outcome``).
    package mutating func record(_ outcome: ComponentFinder.Outcome, _ rule: CompiledRule) {
        guard let key = rule.components else { return }
        links = zip(key.alternatives, outcome.added).map { KeyLinks(key: $0.described, rows: $1) }
        largestGroups = outcome.largestSizes
        maxGroupSize = key.maxGroupSize
    }
}

extension GroupSample {
    /// The sample with ``linkedBy`` filled in: for each loser, the first alternative (in the
    /// rule's order) that it shares with another row of the group, and the first such row (the
    /// winner first, then the losers in winner order). Every row of a group shares some
    /// alternative with another of its rows, so each loser is named, unless one of its key
    /// columns is not among the sample's columns.
    package func linked(_ rule: CompiledRule) -> GroupSample {
        guard let key = rule.components, !rows.isEmpty else { return self }
        func index(_ column: String) -> Int? { columns.firstIndex { $0.caseInsensitiveCompare(column) == .orderedSame } }
        /// A shown value as text, or nil for NULL (literals as the engine quoted them).
        func text(_ literal: String) -> String? {
            if literal == "NULL" { return nil }
            if literal.hasPrefix("'"), literal.hasSuffix("'"), literal.count >= 2 {
                return String(literal.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'")
            }
            return literal
        }
        /// The alternative's values of one row after its normalisers: the block, and the
        /// compared text; nil when a value is NULL or not shown.
        func values(_ alternative: ComponentKey.Alternative, _ row: SampleRow) -> (block: [String], compared: [Unicode.Scalar])? {
            func value(_ column: String) -> String? {
                guard let position = index(column), position < row.values.count, let raw = text(row.values[position]) else { return nil }
                return Normalize.apply(alternative.normalizers[column, default: []], to: raw)
            }
            let block = alternative.columns.map(value)
            guard block.allSatisfy({ $0 != nil }) else { return nil }
            let compared = (alternative.similar?.columns ?? []).map(value)
            guard compared.allSatisfy({ $0 != nil }) else { return nil }
            return (block.compactMap { $0 }, Array(compared.compactMap { $0 }.joined(separator: " ").unicodeScalars))
        }
        var copy = self
        copy.linkedBy = []
        for (position, row) in rows.enumerated() where row.row != winner {
            search: for alternative in key.alternatives {
                guard let mine = values(alternative, row) else { continue }
                for (other, candidate) in rows.enumerated() where other != position {
                    guard let theirs = values(alternative, candidate), theirs.block == mine.block else { continue }
                    if let similar = alternative.similar, !similar.measure.matches(mine.compared, theirs.compared) { continue }
                    copy.linkedBy.append(Link(row: row.row, key: alternative.described, to: candidate.row))
                    break search
                }
            }
        }
        return copy
    }
}
