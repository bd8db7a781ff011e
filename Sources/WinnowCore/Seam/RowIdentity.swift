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
}
