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
    /// `key: {any: [...]}`: the alternatives, any one of which links two rows; empty for a rule
    /// with one key. `key` then lists every column the alternatives read, in order of first use.
    public var anyOf: [KeyAlternative] = []
    /// `max_group_size`: the largest group a run may form (nil: no limit).
    public var maxGroupSize: Int?

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

    /// Whether rows sharing any of several keys are one record (`key: {any: ...}`).
    public var linksByAny: Bool { !anyOf.isEmpty }

    /// The group size limit that applies: the rule's, else 50 for an `any:` rule.
    public var effectiveMaxGroupSize: Int? { maxGroupSize ?? (linksByAny ? Self.defaultMaxGroupSize : nil) }

    /// `max_group_size` of an `any:` rule that sets none.
    public static let defaultMaxGroupSize = 50
}

/// One alternative of `key: {any: [...]}`: rows equal on all of its columns (after its
/// normalisers) are linked; with `similar:`, rows equal on its columns are a block whose pairs
/// are linked when the similar columns are close enough.
public struct KeyAlternative: Sendable {
    public var location: SourceLocation?
    public var columns: [Located<String>]
    /// Normalisers per column (its own, else the rule's `normalize:`).
    public var normalize: [String: [Normalizer]]
    /// Whether `normalize:` was written on the alternative itself.
    public var ownNormalize: Bool
    public var similar: Similarity?

    public init(
        location: SourceLocation? = nil, columns: [Located<String>], normalize: [String: [Normalizer]] = [:],
        ownNormalize: Bool = false, similar: Similarity? = nil
    ) {
        self.location = location
        self.columns = columns
        self.normalize = normalize
        self.ownNormalize = ownNormalize
        self.similar = similar
    }

    /// Every column the alternative reads: its block, then its similar columns.
    public var allColumns: [Located<String>] { columns + (similar?.columns ?? []) }

    /// How messages and plans name it: `soc_sec_id`, `given_name + surname`, or
    /// `date_of_birth ~ given_name surname (jaro_winkler >= 0.9)`.
    public var label: String {
        let block = columns.map(\.value).joined(separator: " + ")
        guard let similar else { return block }
        return "\(block) ~ \(similar.columns.map(\.value).joined(separator: " ")) (\(similar.measure.label))"
    }
}

/// `similar:` of a key alternative: the columns compared inside a block, and how close they must be.
public struct Similarity: Sendable {
    public var columns: [Located<String>]
    public var measure: SimilarityMeasure

    public init(columns: [Located<String>], measure: SimilarityMeasure) {
        self.columns = columns
        self.measure = measure
    }
}

/// How close two strings must be (docs/reference.md, "Several keys in one rule").
public enum SimilarityMeasure: Sendable, Equatable {
    /// Jaro-Winkler similarity at least this (0...1).
    case jaroWinkler(Double)
    /// At most this many single-character insertions, deletions or substitutions.
    case levenshtein(Int)

    public var label: String {
        switch self {
        case let .jaroWinkler(threshold): return "jaro_winkler >= \(threshold)"
        case let .levenshtein(edits): return "levenshtein <= \(edits)"
        }
    }
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
    /// `latest` and `prefer`: the column that ranks the rows (`{latest: COLUMN}`,
    /// `{prefer: {column: COLUMN, ...}}`).
    public var by: Located<String>?
    /// `prefer`: the values of ``by`` in order of preference.
    public var order: [String] = []

    public init(column: Located<String>, strategy: MergeStrategy, by: Located<String>? = nil, order: [String] = []) {
        self.column = column
        self.strategy = strategy
        self.by = by
        self.order = order
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
    /// `{latest: COLUMN}`: the value of the row with the greatest COLUMN (rows whose value or
    /// COLUMN is NULL are skipped; ties by the winner order).
    case latest
    /// The commonest non-NULL value (values equal when identical in type and value); ties go
    /// to the value met first in winner order.
    case mostFrequent = "most_frequent"
    /// `{prefer: {column: COLUMN, order: [A, B, ...]}}`: the non-NULL value of the row whose
    /// COLUMN comes first in the list; rows not in it last, by the winner order.
    case prefer

    /// Whether the strategy ranks rows by another column (written as a mapping).
    public var ranksByColumn: Bool { self == .latest || self == .prefer }
}

/// Key normalisers, applied in the order written.
public enum Normalizer: String, Sendable, CaseIterable {
    case trim
    case lowercase
    case collapseWhitespace = "collapse_whitespace"
    case nfkc
    case digitsOnly = "digits_only"
}
