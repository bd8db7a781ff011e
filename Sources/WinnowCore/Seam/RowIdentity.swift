import Foundation

/// How winnow names one row of a table in its temporary tables, batches, journal and change
/// log. SQLite gives every rowid table a 64-bit rowid (an `INTEGER PRIMARY KEY` column is an
/// alias of it); other engines identify a row by its primary key.
public enum RowIdentity: Sendable, Equatable {
    /// SQLite's rowid: `expression` names it in SQL (`rowid`, `_rowid_`, `oid` or the alias
    /// column); `alias` is the `INTEGER PRIMARY KEY` column, when there is one.
    case rowid(expression: String, alias: String?)
    /// The primary key's columns, in key order.
    case primaryKey([String])

    /// SQL naming the identity of a row (one expression, or a parenthesised row value).
    public var sql: String {
        switch self {
        case let .rowid(expression, _): return expression
        case let .primaryKey(columns) where columns.count == 1: return columns[0].sqlIdentifier
        case let .primaryKey(columns): return "(" + columns.map(\.sqlIdentifier).joined(separator: ", ") + ")"
        }
    }

    /// The key of the row whose identity reads `literals` (SQL literals, in identity order):
    /// named by the rowid's alias column, else `rowid`; or by the primary key's columns.
    public func key(literals: [String]) -> RowKey {
        switch self {
        case let .rowid(_, alias):
            let literal = literals.first ?? "NULL"
            return RowKey(stored: literal, parts: [RowKey.Part(column: alias ?? "rowid", literal: literal)])
        case let .primaryKey(columns):
            let parts = zip(columns, literals).map { RowKey.Part(column: $0, literal: $1) }
            return RowKey(stored: literals.joined(separator: ", "), parts: parts)
        }
    }

    /// The key of the row with this rowid.
    public func key(rowid: Int64) -> RowKey { key(literals: [String(rowid)]) }
}
