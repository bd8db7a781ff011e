import Foundation

/// Progress of a run, reported as it happens.
public enum RunEvent: Sendable {
    case ruleStarted(rule: Int, table: String, discovery: Discovery)
    case batch(BatchReport)
    case ruleFinished(rule: Int, table: String, counts: Counts)
    case migrationStep(index: Int, step: PlannedStep, seconds: Double)
    /// A long phase began (`discovery of dedupe[0] contacts`, `migration step 2: ...`): a
    /// terminal shows it with its elapsed time until it ends.
    case phaseStarted(String)
    /// Work done in the phase so far, when it can be counted (rows copied by a rebuild).
    case phaseProgress(String, done: Int, total: Int)
    case phaseFinished(String, seconds: Double)
    /// The run is waiting for a lock (`--wait`): what holds it, and the seconds waited so far.
    /// Heard repeatedly while the wait lasts; nothing marks its end but the next event.
    case waiting(String, seconds: Double)

    /// The name of a rule's discovery phase (`discovery of dedupe[0] contacts`), which its
    /// progress events name too.
    public static func discoveryPhase(of rule: CompiledRule) -> String {
        "discovery of dedupe[\(rule.rule.index)] \(rule.table)"
    }
}

/// One committed batch (or, in a dry run, one batch that would be).
public struct BatchReport: Sendable, Codable, Equatable {
    public var rule: Int
    public var table: String
    public var batch: Int
    public var counts: Counts
    public var seconds: Double
    /// Losers done so far in this rule, and in all (for progress bars).
    public var done: Int
    public var total: Int

    public init(rule: Int, table: String, batch: Int, counts: Counts, seconds: Double, done: Int, total: Int) {
        self.rule = rule
        self.table = table
        self.batch = batch
        self.counts = counts
        self.seconds = seconds
        self.done = done
        self.total = total
    }
}
