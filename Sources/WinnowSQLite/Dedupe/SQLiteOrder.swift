import Foundation
import WinnowCore
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
        if y >= 9_223_372_036_854_775_808.0 { return -1 }  // 2^63: above every Int64
        if y < -9_223_372_036_854_775_808.0 { return 1 }
        let whole = y.rounded(.down)
        let integer = Int64(whole)
        if x != integer { return x < integer ? -1 : 1 }
        return whole == y ? 0 : -1  // y has a fraction above x
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
