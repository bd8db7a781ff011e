import Foundation

/// The order of values every backend reproduces: SQLite's. NULL, then numbers (INTEGER and REAL
/// compared numerically), then TEXT (binary, by UTF-8 bytes), then BLOB (bytewise). Merges
/// (`min`, `max`) and "unchanged" judgements use it, so a PostgreSQL table and a SQLite file
/// holding the same rows keep the same values.
public enum ValueOrder {
    static func rank(_ value: SQLValue) -> Int {
        switch value {
        case .null: return 0
        case .integer, .real: return 1
        case .text: return 2
        case .blob: return 3
        }
    }

    public static func compare(_ a: SQLValue, _ b: SQLValue) -> Int {
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case let (.integer(x), .integer(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.integer(x), .real(y)): return compare(x, y)
        case let (.real(x), .integer(y)): return -compare(y, x)
        case let (.real(x), .real(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.text(x), .text(y)): return lexicographic(Array(x.utf8), Array(y.utf8))
        case let (.blob(x), .blob(y)): return lexicographic(x, y)
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
    public static func identical(_ a: SQLValue, _ b: SQLValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.integer(x), .integer(y)): return x == y
        case let (.real(x), .real(y)): return x.bitPattern == y.bitPattern
        case let (.text(x), .text(y)): return Array(x.utf8) == Array(y.utf8)
        case let (.blob(x), .blob(y)): return x == y
        default: return false
        }
    }
}
