import Foundation

/// One term of a winner order.
public enum OrderTerm: Sendable, Equatable {
    /// `column ASC|DESC [NULLS LAST]`.
    case column(String, descending: Bool, nullsLast: Bool)
    /// Rows with more non-NULL values among these columns first (`most_complete`).
    case completeness([String])

    public func sql(alias: String?, dialect: any SQLDialect, types: [String: String] = [:]) -> String {
        switch self {
        case let .column(name, descending, nullsLast):
            return dialect.orderTerm(
                CompiledRule.column(name, alias), type: types[name], descending: descending, nullsLast: nullsLast, tieBreak: false)
        case .completeness:
            return "\(compared(alias: alias, dialect: dialect)) DESC"
        }
    }

    /// The value this term compares (without its direction).
    public func compared(alias: String?, dialect: any SQLDialect) -> String {
        switch self {
        case let .column(name, _, _):
            return CompiledRule.column(name, alias)
        case let .completeness(columns):
            return dialect.countTrue(columns.map { "\(CompiledRule.column($0, alias)) IS NOT NULL" })
        }
    }

    public var label: String {
        switch self {
        case let .column(name, descending, nullsLast):
            return "\(name) \(descending ? "desc" : "asc")\(nullsLast ? " nulls last" : "")"
        case .completeness:
            return "most non-NULL columns"
        }
    }
}

/// A place elsewhere in the database that holds the key of a row of the rule's table.
public struct ReferencePath: Sendable, Equatable {
    /// The child table (may be the rule's own table, for a self-reference).
    public var childTable: String
    /// Child columns, parallel to `parentColumns`.
    public var childColumns: [String]
    /// Columns of the rule's table that the child columns hold.
    public var parentColumns: [String]
    /// SQL naming the child table's rowid.
    public var childRowID: String
    /// How the child table's rows are identified (its rowid, or its primary key), with the
    /// declared types of a primary key's columns.
    public var childIdentity: RowIdentity = .rowid(expression: "rowid", alias: nil)
    public var childKeyTypes: [String] = []
    /// Stored columns of the child table, for journal images.
    public var childStoredColumns: [String]
    /// Unique keys of the child that include a child column: re-pointing must not break them.
    public var uniqueKeys: [[String]]
    /// true for a declared FOREIGN KEY, false for a `referenced_by:` entry.
    public var declared: Bool

    /// SQL matching a child row (aliased `c`) to its parent row of the rule's table (`p`).
    public var childJoin: String {
        zip(childColumns, parentColumns).map { "c.\($0.sqlIdentifier) = p.\($1.sqlIdentifier)" }.joined(separator: " AND ")
    }
    /// Whether the child columns lead an index of the child table (or are its rowid alias): the
    /// children of a parent row are then found by index; otherwise the rule maps every child row
    /// of its duplicate groups once, in one scan of the child table.
    public var indexed: Bool = true

    /// The index that lets the children of a row be found without a scan of the child table.
    public func suggestedIndex(_ dialect: any SQLDialect) -> String {
        let name = "\(childTable)_\(childColumns.joined(separator: "_"))"
        return dialect.advisedIndex(IndexModel(name: name, columns: childColumns, unique: false), on: childTable)
    }

    /// `child(col, ...)` for messages.
    public var label: String { "\(childTable).\(childColumns.joined(separator: "+"))" }
}

/// A dedupe rule bound to the live schema: every identifier checked and every SQL fragment
/// built, ready for the executor. Building one touches no database; see ``RuleCompiler``.
public struct CompiledRule: Sendable {
    public var rule: DedupeRule
    /// Canonical table name.
    public var table: String
    /// How the rule names one row of its table (SQLite: the rowid, or its alias column).
    public var identity: RowIdentity
    /// SQL naming a row's identity (SQLite: an alias column or `rowid`).
    public var rowID: String { identity.sql }
    /// Stored columns in table order (journal images, restore).
    public var storedColumns: [String]
    /// Primary key columns (empty: the hidden rowid).
    public var primaryKey: [String]
    /// Canonical key column names.
    public var keyColumns: [String]
    public var mergeColumns: [(name: String, strategy: MergeStrategy)]
    /// Per merge column (parallel to ``mergeColumns``): for `latest` and `prefer`, the column
    /// that ranks the rows (canonical) and `prefer`'s order; nil for the other strategies.
    public var mergeRankings: [MergeRanking?] = []
    public var references: [ReferencePath]
    /// Canonical hash column name.
    public var hashColumn: String?
    /// Winner order terms, before the content tie-break.
    public var winnerTerms: [OrderTerm]
    /// Tie-break columns: stored columns in table order, primary key left out.
    var tieBreakColumns: [String]
    /// Normalisers per canonical key column.
    package var normalizers: [String: [Normalizer]]
    /// Declared collations of the winner columns (ties follow them); nil when unknown.
    package var winnerCollations: [String: String]? = [:]
    /// Whether the table has an index of any kind (a primary key's included).
    public var tableHasIndex = true
    /// Whether batches may turn SQLite's foreign-key enforcement off and check the references
    /// they touch themselves: deleting a parent row with enforcement on scans every child table
    /// whose referencing columns have no index, once per row (quadratic). Decided by
    /// ``RuleCompiler`` from the schema; the executor also requires enforcement to be on.
    public var foreignKeysSuspendable = false
    /// For `incremental: true`: the indexed expressions a changed row's key is looked up by
    /// (the key columns, or the hash column).
    public var lookupColumns: [String] = []

    /// For `key: {any: ...}`: the alternatives, and the scratch table that holds each linked
    /// row's group (``ComponentFinder``). Nil for a rule with one key.
    public var components: ComponentKey?

    /// Where a table's rows are read from instead of the table itself, by lowercased name: a
    /// `SELECT` giving the rows as a pending migration will leave them (guards checked before it runs).
    public var sources: [String: String] = [:]

    /// The tables the rule reads (its own, the tables that reference it) that the connection
    /// sees only part of, under row-level security (``LiveTable/rowSecurity``).
    public var rowSecurityTables: [String] = []

    /// How the rule's SQL is spelled.
    public var dialect: any SQLDialect
    /// Declared types of the table's columns (how a dialect orders and compares them).
    public var columnTypes: [String: String] = [:]

    /// The quoted table name, qualified with `main` (or the rule's source for it, in parentheses).
    public var qualifiedTable: String { qualified(table) }

    /// Any table of the database, as the rule reads it.
    public func qualified(_ name: String) -> String {
        sources[name.lowercased()].map { "(\($0))" } ?? dialect.table(name)
    }

    static func column(_ name: String, _ alias: String?) -> String {
        alias.map { "\($0).\(name.sqlIdentifier)" } ?? name.sqlIdentifier
    }

    /// The normalised value of each key column, over the table aliased as `alias` (nil: unqualified).
    public func keyExpressions(alias: String? = nil) -> [String] {
        keyColumns.map { name in
            dialect.normalized(Self.column(name, alias), by: normalizers[name, default: []])
        }
    }

    /// The hash of the normalised key tuple.
    public func hashExpression(alias: String? = nil) -> String {
        let types = keyColumns.map { normalizers[$0, default: []].isEmpty ? columnTypes[$0] ?? "" : nil }
        return dialect.keyHash(
            nullsEqual: rule.nulls == .equal, Array(zip(keyExpressions(alias: alias), types)).map { (sql: $0, type: $1) })
    }

    /// What rows are grouped by: the normalised key columns, or their hash; for an `any:` rule,
    /// the row's group as ``ComponentFinder`` found it.
    public func groupExpressions(alias: String? = nil) -> [String] {
        if components != nil { return [componentExpression(alias: alias)] }
        return rule.hash ? [hashExpression(alias: alias)] : keyExpressions(alias: alias)
    }

    /// The SQL type of each of ``groupExpressions(alias:)``: text for the hash and for a
    /// normalised column, else the column's declared type (nil when unknown).
    public var groupTypes: [String?] {
        if components != nil { return ["bigint"] }
        return rule.hash ? ["text"] : keyColumns.map { normalizers[$0, default: []].isEmpty ? columnTypes[$0] : "text" }
    }

    /// SQL naming each part of a row's identity over the table aliased as `alias` (nil:
    /// unqualified): the rowid, or the primary key's columns.
    public func identityExpressions(alias: String? = nil) -> [String] {
        switch identity {
        case let .rowid(expression, _): return [alias.map { "\($0).\(expression)" } ?? expression]
        case let .primaryKey(columns): return columns.map { Self.column($0, alias) }
        }
    }

    /// For an `any:` rule: a JOIN of the scratch table of its groups to the rule's table
    /// (aliased as `alias`, nil: unqualified), as `join`, and the joined row's group, as `group`.
    /// Discovery reads each row's group once this way (a correlated ``componentExpression(alias:)``
    /// in a window's partition is evaluated again for every window function); the join keeps the
    /// rows in no group, or changed since, out as the expression does.
    public func componentJoin(alias: String? = nil) -> (join: String, group: String)? {
        guard let components else { return nil }
        return (
            "JOIN \(dialect.scratchTable(components.table)) AS winnow_k ON \(componentMatch("winnow_k", alias: alias))", "winnow_k.winnow_c"
        )
    }

    /// The scratch row `scratch` is the row `alias`'s, as the groups were found: same identity,
    /// every key column still holding the value it was linked by.
    func componentMatch(_ scratch: String, alias: String?) -> String {
        var conditions = identityExpressions(alias: alias).enumerated().map { "\(scratch).winnow_i\($0) = \($1)" }
        conditions += keyColumns.enumerated().map { dialect.nullSafeEqual("\(scratch).winnow_a\($0)", Self.column($1, alias)) }
        return conditions.joined(separator: " AND ")
    }

    /// The group of the row aliased as `alias` in an `any:` rule: its component in the scratch
    /// table, found by the row's identity, while every key column still holds the value the
    /// components were found from (NULL for a row that is in no group, or that changed since).
    /// The scratch table's columns are all named `winnow_*`, so unqualified names in it still
    /// name the outer row's columns.
    public func componentExpression(alias: String? = nil) -> String {
        guard let components else { return dialect.alwaysFalse }
        return "(SELECT c.winnow_c FROM \(dialect.scratchTable(components.table)) AS c WHERE \(componentMatch("c", alias: alias)))"
    }

    /// `expressions` (the group expressions, or names standing for them, in their order) as
    /// GROUP BY / PARTITION BY terms (``SQLDialect/groupTerm(_:type:)``). Every statement that
    /// decides the groups a run resolves spells its terms here, so discovery and the batches
    /// never disagree on what one group is (`check`'s first count need not: see
    /// `JobRunner.duplicateCountSQL`).
    public func groupTerms(_ expressions: [String]) -> [String] {
        zip(expressions, groupTypes).map { dialect.groupTerm($0, type: $1) }
    }

    /// Rows that can take part in a duplicate group (`nulls: distinct` leaves out NULL key parts).
    /// Every normaliser maps NULL to NULL and anything else to a non-NULL value, so the raw
    /// columns are tested (no normaliser is called twice per row).
    public func candidateFilter(alias: String? = nil) -> String {
        if components != nil { return "\(componentExpression(alias: alias)) IS NOT NULL" }
        guard rule.nulls == .distinct else { return dialect.alwaysTrue }
        return keyColumns.map { "\(Self.column($0, alias)) IS NOT NULL" }.joined(separator: " AND ")
    }

    /// SQL that is true when rows `a` and `b` still share a key.
    public func sameKey(_ a: String, _ b: String) -> String {
        zip(groupExpressions(alias: a), groupExpressions(alias: b)).map {
            rule.nulls == .equal && components == nil ? dialect.nullSafeEqual($0, $1) : "\($0) = \($1)"
        }.joined(separator: " AND ")
    }

    /// The full winner order: the rule's terms, then content (NULLs first, binary collation),
    /// then the primary key, then the rowid. A total order on distinct content.
    public func orderBy(alias: String? = nil) -> String {
        var terms = winnerTerms.map { $0.sql(alias: alias, dialect: dialect, types: columnTypes) }
        terms += tieBreakColumns.map {
            dialect.orderTerm(Self.column($0, alias), type: columnTypes[$0], descending: false, nullsLast: false, tieBreak: true)
        }
        terms += primaryKey.map {
            dialect.orderTerm(Self.column($0, alias), type: columnTypes[$0], descending: false, nullsLast: false, tieBreak: false)
        }
        // SQLite's rowid last where the primary key is not its alias (a key of several columns
        // already ends the order: it is the identity itself, and no one expression names it).
        if case let .rowid(expression, _) = identity, !primaryKey.contains(where: { $0.sqlIdentifier == expression }) {
            terms.append("\(alias.map { "\($0).\(expression)" } ?? expression) ASC")
        }
        return terms.joined(separator: ", ")
    }

    /// SQL that is true only where row `a` comes before row `b` on the first winner term alone
    /// (so in the full order too), under the column's collation as ORDER BY compares; false or
    /// NULL where they tie, where either is NULL, or where the rule has no winner term. A row
    /// for which it is not true must be ranked by ``orderBy(alias:)`` to know.
    public func surelyBefore(_ a: String, _ b: String) -> String {
        guard let first = winnerTerms.first else { return dialect.alwaysFalse }
        let (left, right) = (first.compared(alias: a, dialect: dialect), first.compared(alias: b, dialect: dialect))
        switch first {
        case let .column(_, descending, _): return descending ? "\(left) > \(right)" : "\(left) < \(right)"
        case .completeness: return "\(left) > \(right)"
        }
    }

    /// The rule's own winner terms only (may be empty): what discovery sorts by. Rows tied on it
    /// are ordered by ``orderBy(alias:)`` later, within their group.
    public func winnerOrderBy(alias: String? = nil) -> String? {
        winnerTerms.isEmpty ? nil : winnerTerms.map { $0.sql(alias: alias, dialect: dialect, types: columnTypes) }.joined(separator: ", ")
    }

    /// SQL, inside a window named `window` sorted by ``winnerOrderBy(alias:)``, that is true when
    /// the current row ties the row just before it on every winner term (under each column's
    /// collation, as ORDER BY compares). It may say "tied" too often, never too rarely. A group
    /// none of whose rows ties its predecessor is already in full winner order; and since the
    /// rows are sorted, a group's first row ties another exactly when its second row ties it.
    public func tiedWithPrevious(window: String) -> String { tied("lag", window: window) }

    /// Whether ``tiedWithPrevious(window:)`` can tell tied rows from others (it says "tied"
    /// always where the winner columns' collations are unknown).
    package var knowsWinnerTies: Bool { winnerCollations != nil }

    private func tied(_ function: String, window: String) -> String {
        guard let collations = winnerCollations else { return dialect.alwaysTrue }
        let parts = winnerTerms.map { term -> String in
            let value = term.compared(alias: nil, dialect: dialect)
            var collation = ""
            if case let .column(name, _, _) = term, let declared = collations[name] { collation = " COLLATE \(declared.sqlIdentifier)" }
            return "(\(dialect.nullSafeEqual("\(function)(\(value)) OVER \(window)", "\(value)\(collation)")))"
        }
        return parts.isEmpty ? dialect.alwaysTrue : parts.joined(separator: " AND ")
    }

    /// `max_delete_percent`: the rule is refused when its losers are a larger share of the
    /// table's rows than the limit (on every backend alike, before anything is written).
    package func checkDeleteShare(_ discovery: Discovery) throws {
        guard let limit = rule.maxDeletePercent, discovery.tableRows > 0 else { return }
        let share = Double(discovery.losers) * 100 / Double(discovery.tableRows)
        guard share > limit else { return }
        throw WinnowError.guardRefused(
            GuardRefusal(
                .deleteShare,
                """
                \(rule.keyPath) (\(table)): would delete \(discovery.losers) of \(discovery.tableRows) rows \
                (\(String(format: "%.1f", share))%), more than max_delete_percent \(limit.formatted6)%
                """))
    }

    /// The refusal of `references: restrict`: `what` (child rows) points at rows the rule
    /// would delete. One spelling for the checks before the first write and inside batches.
    package func restrictRefusal(_ what: String) -> WinnowError {
        .guardRefused(GuardRefusal(.restrictedReference, "\(rule.keyPath) (\(table)): references: restrict, and \(what)"))
    }

    /// Human description of the winner order, for plans.
    public var winnerDescription: String {
        var parts = winnerTerms.map(\.label)
        parts.append("content")
        parts.append(primaryKey.isEmpty ? "rowid" : primaryKey.joined(separator: ", "))
        return parts.joined(separator: ", ")
    }
}

/// The alternatives of an `any:` rule as bound to the live schema, and where their groups are
/// kept while the rule runs.
public struct ComponentKey: Sendable {
    /// One alternative, its columns in their canonical spelling.
    public struct Alternative: Sendable {
        public var label: String
        public var columns: [String]
        public var similar: (columns: [String], measure: SimilarityMeasure)?
        public var normalizers: [String: [Normalizer]]
    }

    /// The scratch table (``SQLDialect/scratchTable(_:)``) of the rule's groups.
    public var table: String
    public var alternatives: [Alternative]
    public var maxGroupSize: Int?
}

/// What ranks the rows of a `latest` or `prefer` merge.
public struct MergeRanking: Sendable, Equatable {
    /// The ranking column (canonical name).
    public var by: String
    /// `prefer`: the values of ``by`` in order of preference (empty for `latest`).
    public var order: [String]

    public init(by: String, order: [String] = []) {
        self.by = by
        self.order = order
    }
}

extension CompiledRule {
    /// Whether a merge ranks rows by another column: batches then read that column beside
    /// each merge column (``MergeResolver/changes(strategies:orders:flat:ranked:)``).
    public var mergesRanked: Bool { mergeRankings.contains { $0 != nil } }

    /// `prefer`'s order per merge column (empty for the others).
    public var mergeOrders: [[String]] { mergeRankings.map { $0?.order ?? [] } }

    /// The `by` column of each merge column over rows `alias` (NULL where it ranks by nothing),
    /// as a batch selects them after the merge columns.
    public func mergeRankColumns(alias: String?) -> [String] {
        mergeRankings.map { ranking in ranking.map { Self.column($0.by, alias) } ?? "NULL" }
    }
}
