import Foundation
import GRDB

/// SQLite's ordering of values: NULL, then numbers (INTEGER and REAL compared numerically),
/// then TEXT (binary), then BLOB (memcmp).
public enum SQLiteOrder {
    static func rank(_ value: DatabaseValue) -> Int {
        switch value.storage {
        case .null: return 0
        case .int64, .double: return 1
        case .string: return 2
        case .blob: return 3
        }
    }

    public static func compare(_ a: DatabaseValue, _ b: DatabaseValue) -> Int {
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a.storage, b.storage) {
        case let (.int64(x), .int64(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.int64(x), .double(y)): return compare(x, y)
        case let (.double(x), .int64(y)): return -compare(y, x)
        case let (.double(x), .double(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.string(x), .string(y)): return lexicographic(Array(x.utf8), Array(y.utf8))
        case let (.blob(x), .blob(y)): return lexicographic(Array(x), Array(y))
        default: return 0
        }
    }

    /// An integer against a real, exactly (as SQLite does): no rounding of large integers.
    static func compare(_ x: Int64, _ y: Double) -> Int {
        if y.isNaN { return 1 }
        if y >= 9_223_372_036_854_775_808.0 { return -1 }   // 2^63: above every Int64
        if y < -9_223_372_036_854_775_808.0 { return 1 }
        let whole = y.rounded(.down)
        let integer = Int64(whole)
        if x != integer { return x < integer ? -1 : 1 }
        return whole == y ? 0 : -1                          // y has a fraction above x
    }

    private static func lexicographic(_ x: [UInt8], _ y: [UInt8]) -> Int {
        for (a, b) in zip(x, y) where a != b { return a < b ? -1 : 1 }
        return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
    }

    /// Same type and same bytes: what "unchanged" means for a journal.
    public static func identical(_ a: DatabaseValue, _ b: DatabaseValue) -> Bool {
        switch (a.storage, b.storage) {
        case (.null, .null): return true
        case let (.int64(x), .int64(y)): return x == y
        case let (.double(x), .double(y)): return x.bitPattern == y.bitPattern
        case let (.string(x), .string(y)): return Array(x.utf8) == Array(y.utf8)
        case let (.blob(x), .blob(y)): return x == y
        default: return false
        }
    }
}

/// Survivorship: the values a winner takes from its group. Pure.
public enum MergeResolver {
    /// Separator of `concat`.
    public static let concatSeparator = ", "

    /// The merged value of one column.
    /// - Parameter values: the column's value in every row of the group, winner first, then the
    ///   losers in winner order.
    public static func merge(_ strategy: MergeStrategy, _ values: [DatabaseValue]) -> DatabaseValue {
        let present = values.filter { !$0.isNull }
        switch strategy {
        case .fillNull:
            return present.first ?? .null
        case .min:
            return present.reduce(nil) { best, v in best.map { SQLiteOrder.compare(v, $0) < 0 ? v : $0 } ?? v } ?? .null
        case .max:
            return present.reduce(nil) { best, v in best.map { SQLiteOrder.compare(v, $0) > 0 ? v : $0 } ?? v } ?? .null
        case .longest:
            var best: DatabaseValue?
            var bestLength = -1
            for value in present {
                let length = self.length(value)
                if length > bestLength { best = value; bestLength = length }
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
            return parts.joined(separator: concatSeparator).databaseValue
        }
    }

    /// SQLite's `length()`: characters of text, bytes of a blob, characters of a number's text.
    static func length(_ value: DatabaseValue) -> Int {
        switch value.storage {
        case .null: return 0
        case let .string(s): return s.unicodeScalars.count
        case let .blob(d): return d.count
        case .int64, .double: return text(value)?.count ?? 0
        }
    }

    static func text(_ value: DatabaseValue) -> String? {
        switch value.storage {
        case .null: return nil
        case let .string(s): return s
        case let .int64(i): return String(i)
        case let .double(d): return String(d)
        case let .blob(d): return String(data: d, encoding: .utf8)
        }
    }

    /// Sum of the numeric values (text and blobs are not numbers and are left out). Integers stay
    /// integers unless they overflow; any REAL makes the sum REAL.
    static func sum(_ values: [DatabaseValue]) -> DatabaseValue? {
        var integer: Int64 = 0
        var real = 0.0
        var isReal = false
        var any = false
        for value in values {
            switch value.storage {
            case let .int64(i):
                any = true
                if isReal { real += Double(i); continue }
                let (result, overflow) = integer.addingReportingOverflow(i)
                if overflow { isReal = true; real = Double(integer) + Double(i) } else { integer = result }
            case let .double(d):
                any = true
                if !isReal { isReal = true; real = Double(integer) }
                real += d
            default:
                continue
            }
        }
        guard any else { return nil }
        return isReal ? real.databaseValue : integer.databaseValue
    }

    /// The columns whose merged value differs from the winner's, with their new values.
    /// - Parameter rows: the group's rows (merge columns only), winner first.
    public static func changes(strategies: [MergeStrategy], rows: [[DatabaseValue]]) -> [(index: Int, value: DatabaseValue)] {
        guard let winner = rows.first else { return [] }
        var result: [(Int, DatabaseValue)] = []
        for (index, strategy) in strategies.enumerated() {
            let merged = merge(strategy, rows.map { $0[index] })
            if !SQLiteOrder.identical(merged, winner[index]) { result.append((index, merged)) }
        }
        return result
    }
}
