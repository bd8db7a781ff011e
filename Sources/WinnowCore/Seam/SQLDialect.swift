import Foundation

/// What a database engine can do, where winnow's behaviour depends on it (each flag is read by
/// the core: a target without a capability gets a clear refusal or a different plan).
public struct DialectCapabilities: Sendable, Equatable {
    /// Row triggers that can record changes: `incremental: true` is refused without them.
    public var triggers: Bool
    /// A connection may turn its foreign-key enforcement off and check the references it
    /// touches itself (SQLite); otherwise every deleted parent row is checked by the engine,
    /// which reads a child table without an index once per row (`plan` says so).
    public var suspendableForeignKeyChecks: Bool
    /// `ALTER TABLE ... DROP COLUMN` drops a column that no index, constraint or reference
    /// names in place; without it every column drop rebuilds the table.
    public var dropsColumnInPlace: Bool

    public init(triggers: Bool, suspendableForeignKeyChecks: Bool, dropsColumnInPlace: Bool = true) {
        self.triggers = triggers
        self.suspendableForeignKeyChecks = suspendableForeignKeyChecks
        self.dropsColumnInPlace = dropsColumnInPlace
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
    /// A scratch table of this connection (dropped when it closes), as statements name it.
    func scratchTable(_ name: String) -> String
    /// The statements that make scratch table `name` hold the rows of `select` (whose columns
    /// are `columns`, each with the declared type of the user column it copies, if any), found
    /// by `key` (unique) without a scan: any earlier table of that name is dropped first.
    func createScratchTable(_ name: String, columns: [(name: String, type: String?)], key: [String], from select: String) -> [String]
    /// The same for a table whose rows are numbered 1, 2, ... in `winnow_n` (its key), in the
    /// order `select` gives them; `columns` are the selected ones, without `winnow_n`.
    func createNumberedScratchTable(_ name: String, columns: [(name: String, type: String?)], from select: String) -> [String]
    /// The statements that create winnow's bookkeeping tables if they are missing (and drop
    /// what an earlier winnow made that is no longer wanted), each sent only where it has
    /// something to do (``SchemaStatement/neededIf``).
    var bookkeepingSchema: [SchemaStatement] { get }
    /// The statements that create the schema-version and seed tables if they are missing.
    var versionSchema: [String] { get }
    /// A query for the column names of one of winnow's own tables (none when it is missing),
    /// with its arguments: a database written by an earlier winnow lacks the newer columns.
    func columnNames(ofBookkeeping name: String) -> (sql: String, arguments: [SQLValue])
    /// How a table's rows are identified across statements.
    func rowIdentity(of table: LiveTable) -> RowIdentity?

    // MARK: rule expressions (the same groups and order on every engine)

    /// `expression` passed through one key normaliser, with the results of ``Normalize``.
    func normalized(_ expression: String, by normalizer: Normalizer) -> String
    /// `column` (an expression of the stored value) passed through `normalizers` in order.
    func normalized(_ column: String, by normalizers: [Normalizer]) -> String
    /// The key hash of a tuple: lowercase hex SHA-256 of its ``ValueCodec``-style encoding;
    /// NULL when a part is NULL and `nullsEqual` is false.
    /// `parts` are SQL expressions with their column's declared type (nil: text, after a normaliser).
    func keyHash(nullsEqual: Bool, _ parts: [(sql: String, type: String?)]) -> String
    /// One ascending/descending term of a winner order, NULLs placed as SQLite places them
    /// (first when ascending, last when descending, or last when `nullsLast`). `type` is the
    /// column's declared type; a content tie-break (`tieBreak`) compares text byte by byte.
    func orderTerm(_ expression: String, type: String?, descending: Bool, nullsLast: Bool, tieBreak: Bool) -> String
    /// A group expression as rows are grouped by it (GROUP BY, PARTITION BY): values equal
    /// byte for byte, as SQLite's BINARY collation compares. `type` is the expression's type.
    func groupTerm(_ expression: String, type: String?) -> String
    /// The number of `conditions` that hold (`most_complete`).
    func countTrue(_ conditions: [String]) -> String
    /// A condition that always holds.
    var alwaysTrue: String { get }
    /// A condition that never holds.
    var alwaysFalse: String { get }
    /// `expression` as a value of a schema file's `type` where the engine's types are strict
    /// (PostgreSQL: a cast); unchanged where any value fits any column (SQLite).
    func value(_ expression: String, as type: String) -> String
    /// A schema file's model as this engine stores it and its inspector reports it (type names
    /// the engine gives the declared types, nullability it reports), so that comparing it with
    /// an inspected schema finds only real differences. Unchanged on SQLite.
    func stored(_ model: SchemaModel) -> SchemaModel
    /// The statement `plan` advises for a missing index on a live database: one that other
    /// writers can keep working beside (PostgreSQL builds it `CONCURRENTLY`).
    func advisedIndex(_ index: IndexModel, on table: String) -> String
    /// Why rows of `table` cannot be identified across statements although it has a row
    /// identity (nil when they can).
    func unsupportedIdentity(of table: LiveTable) -> String?
    /// Why a rule on `table` cannot use `option` on this engine (nil when it can).
    func unsupported(_ option: RuleOption, on table: LiveTable) -> String?
    /// Why `strategy` has no meaning for a column of declared type `type` on this engine (nil
    /// when it has): a rule that asks for it is refused before anything runs.
    func unsupportedMerge(_ strategy: MergeStrategy, type: String) -> String?
}

extension SQLDialect {
    public func stored(_ model: SchemaModel) -> SchemaModel { model }

    public func unsupportedIdentity(of table: LiveTable) -> String? { nil }

    public func unsupported(_ option: RuleOption, on table: LiveTable) -> String? { nil }

    /// Every merge applies to every column where a column holds any value (SQLite).
    public func unsupportedMerge(_ strategy: MergeStrategy, type: String) -> String? { nil }

    public func advisedIndex(_ index: IndexModel, on table: String) -> String {
        "CREATE INDEX \(index.name.sqlIdentifier) ON \(table.sqlIdentifier) (\(index.columns.map(\.sqlIdentifier).joined(separator: ", ")));"
    }

    public func groupTerm(_ expression: String, type: String?) -> String { expression }

    public func normalized(_ column: String, by normalizers: [Normalizer]) -> String {
        normalizers.reduce(column) { normalized($0, by: $1) }
    }

    /// A string literal.
    public func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    /// ` LIMIT n`, or nothing for no limit.
    public func limit(_ count: Int?) -> String { count.map { " LIMIT \($0)" } ?? "" }
}

/// A rule option that an engine may support for some tables only.
public enum RuleOption: String, Sendable {
    /// `key.hash_column`: a stored key hash, kept current in batches of the table's rows.
    case hashColumn = "hash_column"
    /// `incremental`: a change log of the table's rows, kept by triggers.
    case incremental
}
