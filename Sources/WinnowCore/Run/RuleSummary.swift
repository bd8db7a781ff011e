import Foundation

/// What one rule found and did.
public struct RuleSummary: Sendable, Equatable {
    public var index: Int
    public var table: String
    public var key: [String]
    /// The key's column names (``key`` as shown, with its normalisers).
    public var keyColumns: [String] = []
    public var winner: String
    public var references: [String]
    public var discovery: Discovery
    public var counts: Counts
    /// Groups shown by `plan` (the first few).
    public var samples: SampleList
    /// For an `incremental: true` rule: whether this pass looked only at changed rows (false:
    /// a full pass, the first one after tracking started).
    public var incremental: Bool? = nil
    /// What would make this rule slow, and the fix (`plan` only; see ``PlanAdvice``).
    public var warnings: [String] = []
    /// `plan --save`: a SHA-256 of the identities of the rows the rule would delete.
    public var deletionDigest: String? = nil
    /// Where the job file states the rule (its `entity:`), for `--format github`.
    public var location: SourceLocation? = nil
    /// For a `key: {any: ...}` rule: per alternative, in the rule's order, the rows it joined to
    /// a group that the alternatives before it had not (the losers it adds).
    public var links: [KeyLinks] = []
    /// For a `key: {any: ...}` rule: the sizes of its largest groups, largest first, and its limit.
    public var largestGroups: [Int] = []
    public var maxGroupSize: Int? = nil
}

/// What one alternative of a `key: {any: ...}` rule added.
public struct KeyLinks: Sendable, Equatable {
    public var key: String
    public var rows: Int

    public init(key: String, rows: Int) {
        self.key = key
        self.rows = rows
    }
}
