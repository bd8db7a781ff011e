import Foundation

/// How one rule runs.
public struct RuleExecutionOptions {
    public var settings: BatchSettings
    /// Groups kept as samples (plan output); 0 for none.
    public var sampleLimit: Int
    /// For a tracked incremental rule: the last change this pass covers.
    public var changesUpTo: Int64?
    /// `--max-duration`: batches stop once it has passed (after the batch in flight commits).
    public var deadline: RunDeadline
    public var onEvent: (RunEvent) -> Void

    public init(
        settings: BatchSettings, sampleLimit: Int = 0, changesUpTo: Int64? = nil, deadline: RunDeadline = RunDeadline(at: nil),
        onEvent: @escaping (RunEvent) -> Void = { _ in }
    ) {
        self.settings = settings
        self.sampleLimit = sampleLimit
        self.changesUpTo = changesUpTo
        self.deadline = deadline
        self.onEvent = onEvent
    }
}

/// One rule's discovery, guards and batches on one session.
public protocol RuleExecution {
    /// Finds the duplicate groups (into the session's working storage).
    func discover() throws -> Discovery
    /// Refuses (nothing written) what the rule's guards forbid.
    func checkGuards(_ discovery: Discovery) throws
    /// Readies the writer for the rule (journal shapes), in its own transaction.
    func prepare() throws
    /// Resolves the groups found, batch after batch, until they are done or the deadline has
    /// passed (the rule is then left for the next run).
    func execute(_ discovery: Discovery, batchNumber: inout Int, totals: inout Counts, samples: inout SampleList) throws -> Counts
    /// For an execution that writes nothing: a digest (SHA-256, hex) of the identities of the
    /// rows it would have deleted, in identity order; nil for one that writes.
    func deletionDigest() throws -> String?
    /// Stores the key hashes of the rows that remain (`key.hash_column`).
    func fillHashes(batchNumber: inout Int, totals: inout Counts) throws -> Counts
    /// What the batches found worth telling once they are done, beside the rule's summary
    /// (``PlanAdvice/stretchesWarning(_:stretches:settings:)``).
    var runWarnings: [String] { get }
    /// `check`'s grouped count (``JobRunner/duplicateCountSQL(_:from:)``), where the backend reads
    /// it otherwise than by one statement over the table: duplicate groups, their surplus rows
    /// and the table's rows. Nil: `check` runs the statement itself.
    func countDuplicates() throws -> Discovery?
}

extension RuleExecution {
    public var runWarnings: [String] { [] }
    public func countDuplicates() throws -> Discovery? { nil }
}
