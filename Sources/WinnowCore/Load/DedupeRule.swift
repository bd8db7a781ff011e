import Foundation

/// One entry of `dedupe:`: how duplicates of one table are found, ranked and resolved.
public struct DedupeRule: Sendable {
    /// Position in the job's `dedupe:` list, for messages (`dedupe[0]`).
    public var index: Int
    public var location: SourceLocation?
    /// The table.
    public var entity: Located<String>
    /// Key columns, in the order written.
    public var key: [Located<String>]
    /// Group by a SHA-256 of the normalised key tuple instead of the tuple itself.
    public var hash: Bool
    /// Column that also stores the key hash for every row.
    public var hashColumn: Located<String>?
    /// Normalisers per key column name (absent: none).
    public var normalize: [String: [Normalizer]]
    public var nulls: NullPolicy
    public var winner: WinnerRule
    public var merge: [MergeRule]
    public var references: ReferencePolicy
    public var referencedBy: [ColumnReference]
    public var archive: Bool
    public var maxDeletePercent: Double?
    /// Look up only the keys of rows inserted or changed since the last run (needs an index).
    public var incremental = false

    public init(
        index: Int = 0, location: SourceLocation? = nil, entity: Located<String>,
        key: [Located<String>], hash: Bool = false, hashColumn: Located<String>? = nil,
        normalize: [String: [Normalizer]] = [:], nulls: NullPolicy = .distinct,
        winner: WinnerRule = .ordered([]), merge: [MergeRule] = [],
        references: ReferencePolicy = .repoint, referencedBy: [ColumnReference] = [],
        archive: Bool = true, maxDeletePercent: Double? = nil
    ) {
        self.index = index
        self.location = location
        self.entity = entity
        self.key = key
        self.hash = hash
        self.hashColumn = hashColumn
        self.normalize = normalize
        self.nulls = nulls
        self.winner = winner
        self.merge = merge
        self.references = references
        self.referencedBy = referencedBy
        self.archive = archive
        self.maxDeletePercent = maxDeletePercent
    }

    /// `dedupe[N]`, the key path prefix used in messages.
    public var keyPath: String { "dedupe[\(index)]" }

    /// The normalisers applied to one key column.
    public func normalizers(for column: String) -> [Normalizer] { normalize[column] ?? [] }
}

/// How a NULL key part is treated.
public enum NullPolicy: String, Sendable, CaseIterable {
    /// A row with a NULL key part is never a duplicate.
    case distinct
    /// NULL matches NULL.
    case equal
}

/// What happens to rows elsewhere that point at a loser.
public enum ReferencePolicy: String, Sendable, CaseIterable {
    /// Point them at the winner before the loser is deleted.
    case repoint
    /// Refuse (exit 65, nothing changed) when a loser is referenced.
    case restrict
}

/// `TABLE.COLUMN` of `referenced_by:`.
public struct ColumnReference: Sendable, Hashable {
    public var table: String
    public var column: String
    public var location: SourceLocation?

    public init(table: String, column: String, location: SourceLocation? = nil) {
        self.table = table
        self.column = column
        self.location = location
    }

    public static func == (lhs: ColumnReference, rhs: ColumnReference) -> Bool {
        lhs.table == rhs.table && lhs.column == rhs.column
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(table)
        hasher.combine(column)
    }
}

/// The winner rule: the first row in this order survives.
public enum WinnerRule: Sendable {
    /// Ordered terms (possibly empty: content tie-break only).
    case ordered([WinnerTerm])
    /// Most non-NULL columns wins.
    case mostComplete
}

/// One `COLUMN: asc|desc` term.
public struct WinnerTerm: Sendable {
    public var column: Located<String>
    public var descending: Bool
    /// Rows whose value is NULL rank after all others (the `earliest`/`latest` shorthands).
    public var nullsLast: Bool

    public init(column: Located<String>, descending: Bool, nullsLast: Bool = false) {
        self.column = column
        self.descending = descending
        self.nullsLast = nullsLast
    }
}

/// A survivorship rule: how one winner column takes values from its losers.
public struct MergeRule: Sendable {
    public var column: Located<String>
    public var strategy: MergeStrategy

    public init(column: Located<String>, strategy: MergeStrategy) {
        self.column = column
        self.strategy = strategy
    }
}

/// Survivorship strategies of `merge:`.
public enum MergeStrategy: String, Sendable, CaseIterable {
    /// Keep the winner's value unless NULL; else the first non-NULL loser's, in winner order.
    case fillNull = "fill_null"
    /// Sum of the non-NULL values of the group.
    case sum
    /// Smallest non-NULL value (SQLite's order).
    case min
    /// Largest non-NULL value (SQLite's order).
    case max
    /// The longest non-NULL text (in characters); ties go to the earlier row in winner order.
    case longest
    /// Distinct non-NULL, non-empty values in winner order, joined by ", ".
    case concat
}

/// Key normalisers, applied in the order written.
public enum Normalizer: String, Sendable, CaseIterable {
    case trim
    case lowercase
    case collapseWhitespace = "collapse_whitespace"
    case nfkc
    case digitsOnly = "digits_only"
}
