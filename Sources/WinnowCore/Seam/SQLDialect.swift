import Foundation

/// What a database engine can do, as far as winnow's plans depend on it.
public struct DialectCapabilities: Sendable, Equatable {
    /// DDL runs inside a transaction and rolls back with it.
    public var transactionalDDL: Bool
    /// `ALTER TABLE ... ALTER COLUMN ... SET/DROP NOT NULL` exists (else: a table rebuild).
    public var alterColumnNullability: Bool
    /// Row triggers that can record changes (incremental rules).
    public var triggers: Bool
    /// Session-level advisory locks next to the `winnow_lock` row.
    public var advisoryLocks: Bool
    /// A cheap token that changes when another connection commits (SQLite's `data_version`).
    public var changeToken: Bool

    public init(transactionalDDL: Bool, alterColumnNullability: Bool, triggers: Bool, advisoryLocks: Bool, changeToken: Bool) {
        self.transactionalDDL = transactionalDDL
        self.alterColumnNullability = alterColumnNullability
        self.triggers = triggers
        self.advisoryLocks = advisoryLocks
        self.changeToken = changeToken
    }
}

/// How one engine spells the SQL the core writes, and what it can do. The core builds its
/// statements (rule expressions, bookkeeping) through a dialect and never spells an
/// engine-specific form itself.
public protocol SQLDialect: Sendable {
    /// A short name for messages (`sqlite`, `postgresql`).
    var name: String { get }
    var capabilities: DialectCapabilities { get }
    /// A user table as statements name it (`main."t"` on SQLite; schema-qualified elsewhere).
    func table(_ name: String) -> String
    /// One of winnow's own tables (`winnow_runs`, ...).
    func bookkeeping(_ name: String) -> String
    /// `a` equals `b`, NULL equal to NULL.
    func nullSafeEqual(_ a: String, _ b: String) -> String
    /// The statements that create winnow's bookkeeping tables if they are missing.
    var bookkeepingSchema: [String] { get }
    /// The statements that create the schema-version and seed tables if they are missing.
    var versionSchema: [String] { get }
    /// How a table's rows are identified across statements.
    func rowIdentity(of table: LiveTable) -> RowIdentity?

    // MARK: rule expressions (the same groups and order on every engine)

    /// `expression` passed through one key normaliser, with the results of ``Normalize``.
    func normalized(_ expression: String, by normalizer: Normalizer) -> String
    /// The key hash of a tuple: lowercase hex SHA-256 of its ``ValueCodec``-style encoding;
    /// NULL when a part is NULL and `nullsEqual` is false.
    /// `parts` are SQL expressions with their column's declared type (nil: text, after a normaliser).
    func keyHash(nullsEqual: Bool, _ parts: [(sql: String, type: String?)]) -> String
    /// One ascending/descending term of a winner order, NULLs placed as SQLite places them
    /// (first when ascending, last when descending, or last when `nullsLast`). `type` is the
    /// column's declared type; a content tie-break (`tieBreak`) compares text byte by byte.
    func orderTerm(_ expression: String, type: String?, descending: Bool, nullsLast: Bool, tieBreak: Bool) -> String
    /// The number of `conditions` that hold (`most_complete`).
    func countTrue(_ conditions: [String]) -> String
    /// A condition that always holds.
    var alwaysTrue: String { get }
}

extension SQLDialect {
    /// A string literal.
    public func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    /// ` LIMIT n`, or nothing for no limit.
    public func limit(_ count: Int?) -> String { count.map { " LIMIT \($0)" } ?? "" }
}
