import Foundation

/// Survivorship: the values a winner takes from its group. Pure, and the same for every
/// backend (values compared in ``ValueOrder``).
public enum MergeResolver {
    /// Separator of `concat`.
    public static let concatSeparator = ", "

    /// The merged value of one column.
    /// - Parameter values: the column's value in every row of the group, winner first, then the
    ///   losers in winner order.
    /// - Parameter by: for `latest` and `prefer`, the ranking column's value in the same rows.
    /// - Parameter order: for `prefer`, the preferred values of `by`, first best.
    public static func merge<Values: Collection<SQLValue>>(
        _ strategy: MergeStrategy, _ values: Values, by: [SQLValue]? = nil, order: [String] = []
    ) -> SQLValue {
        let present = values.lazy.filter { !$0.isNull }
        switch strategy {
        case .latest, .prefer:
            return pick(strategy, Array(values), by: by ?? [], order: order)
        case .mostFrequent:
            // Counted by identity (type and value); the first of the commonest in winner order.
            var seen: [(value: SQLValue, count: Int)] = []
            for value in present {
                if let index = seen.firstIndex(where: { ValueOrder.identical($0.value, value) }) {
                    seen[index].count += 1
                } else {
                    seen.append((value, 1))
                }
            }
            var best: (value: SQLValue, count: Int)?
            for candidate in seen where candidate.count > (best?.count ?? 0) { best = candidate }
            return best?.value ?? values.first ?? .null
        case .fillNull:
            return present.first ?? .null
        case .min:
            return present.reduce(nil) { best, v in best.map { ValueOrder.compare(v, $0) < 0 ? v : $0 } ?? v } ?? .null
        case .max:
            return present.reduce(nil) { best, v in best.map { ValueOrder.compare(v, $0) > 0 ? v : $0 } ?? v } ?? .null
        case .longest:
            var best: SQLValue?
            var bestLength = -1
            for value in present {
                let length = self.length(value)
                if length > bestLength {
                    best = value
                    bestLength = length
                }
            }
            return best ?? .null
        case .sum:
            return sum(present) ?? values.first ?? .null
        case .concat:
            var seen = Set<String>()
            var parts: [String] = []
            for value in present {
                guard let text = self.text(value), !text.isEmpty, seen.insert(text).inserted else { continue }
                parts.append(text)
            }
            if parts.isEmpty { return values.first ?? .null }
            // One value only: keep it as stored (an integer stays an integer).
            if parts.count == 1, let only = present.first(where: { text($0) == parts[0] }) { return only }
            return .text(parts.joined(separator: concatSeparator))
        }
    }

    /// `latest`: the non-NULL value of the row whose `by` is greatest (SQLite's order), rows
    /// with a NULL `by` left out; `prefer`: the non-NULL value of the row whose `by` (as text)
    /// comes first in `order`, rows not in it after. Ties go to the earlier row in winner
    /// order; with no candidate the winner keeps its value.
    static func pick(_ strategy: MergeStrategy, _ values: [SQLValue], by: [SQLValue], order: [String]) -> SQLValue {
        var best: Int?
        for index in values.indices where !values[index].isNull && index < by.count {
            let rank = by[index]
            if strategy == .latest {
                guard !rank.isNull else { continue }
                if let current = best, ValueOrder.compare(rank, by[current]) <= 0 { continue }
            } else {
                func position(_ value: SQLValue) -> Int { text(value).flatMap { order.firstIndex(of: $0) } ?? order.count }
                if let current = best, position(rank) >= position(by[current]) { continue }
            }
            best = index
        }
        return best.map { values[$0] } ?? values.first ?? .null
    }

    /// SQLite's `length()`: characters of text, bytes of a blob, characters of a number's text.
    static func length(_ value: SQLValue) -> Int {
        switch value {
        case .null: return 0
        case let .text(s): return s.unicodeScalars.count
        case let .blob(d): return d.count
        case .integer, .real: return text(value)?.count ?? 0
        }
    }

    static func text(_ value: SQLValue) -> String? {
        switch value {
        case .null: return nil
        case let .text(s): return s
        case let .integer(i): return String(i)
        case let .real(d): return String(d)
        case let .blob(d): return String(bytes: d, encoding: .utf8)
        }
    }

    /// Sum of the numeric values (text and blobs are not numbers and are left out). Integers stay
    /// integers unless they overflow; any REAL makes the sum REAL.
    static func sum(_ values: some Sequence<SQLValue>) -> SQLValue? {
        var integer: Int64 = 0
        var real = 0.0
        var isReal = false
        var any = false
        for value in values {
            switch value {
            case let .integer(i):
                any = true
                if isReal {
                    real += Double(i)
                    continue
                }
                let (result, overflow) = integer.addingReportingOverflow(i)
                if overflow {
                    isReal = true
                    real = Double(integer) + Double(i)
                } else {
                    integer = result
                }
            case let .real(d):
                any = true
                if !isReal {
                    isReal = true
                    real = Double(integer)
                }
                real += d
            default:
                continue
            }
        }
        guard any else { return nil }
        return isReal ? .real(real) : .integer(integer)
    }

    /// The columns whose merged value differs from the winner's, with their new values.
    /// - Parameter rows: the group's rows (merge columns only), winner first.
    public static func changes(strategies: [MergeStrategy], rows: [[SQLValue]]) -> [(index: Int, value: SQLValue)] {
        changes(strategies: strategies, flat: rows.flatMap { $0 })
    }

    /// The same for a group read into one buffer: its rows one after another, one value per
    /// strategy each (a batch reads every group so, without an array per row).
    public static func changes(strategies: [MergeStrategy], flat values: [SQLValue]) -> [(index: Int, value: SQLValue)] {
        changes(strategies: strategies, orders: [], flat: values, ranked: false)
    }

    /// The same, where `ranked`: each row holds one value per strategy, then one `by` value per
    /// strategy (``merge(_:_:by:order:)``; NULL for a strategy that ranks by nothing), and
    /// `orders` holds each strategy's `prefer` order.
    public static func changes(
        strategies: [MergeStrategy], orders: [[String]], flat values: [SQLValue], ranked: Bool
    ) -> [(index: Int, value: SQLValue)] {
        let width = strategies.count
        let rowWidth = ranked ? 2 * width : width
        guard width > 0, values.count >= rowWidth else { return [] }
        var result: [(Int, SQLValue)] = []
        for (index, strategy) in strategies.enumerated() {
            let column = stride(from: index, to: values.count, by: rowWidth).map { values[$0] }
            let by = ranked ? stride(from: width + index, to: values.count, by: rowWidth).map { values[$0] } : nil
            let merged = merge(strategy, column, by: by, order: index < orders.count ? orders[index] : [])
            if !ValueOrder.identical(merged, values[index]) { result.append((index, merged)) }
        }
        return result
    }
}
