import Foundation

/// One migration step as `plan` and `run` report it.
public struct PlannedStep: Sendable, Equatable {
    public var summary: String
    public var sql: [String]
    public var rebuildsTable: Bool
}

/// What one rule found and did.
public struct RuleSummary: Sendable, Equatable {
    public var index: Int
    public var table: String
    public var key: [String]
    public var winner: String
    public var references: [String]
    public var discovery: Discovery
    public var counts: Counts
    /// Groups shown by `plan` (the first few).
    public var samples: [GroupSample]
    /// For an `incremental: true` rule: whether this pass looked only at changed rows (false:
    /// a full pass, the first one after tracking started).
    public var incremental: Bool? = nil
    /// What would make this rule slow, and the fix (`plan` only; see ``PlanAdvice``).
    public var warnings: [String] = []
}

/// The final report of `run`, `plan`, `check` and `restore`: the `"event":"summary"` object of
/// CONTRACT section 1.
public struct RunSummary: Sendable, Equatable {
    public var command: String
    public var runID: Int64?
    /// `completed`, `planned`, `clean`, `duplicates`, `restored`, `failed`, `refused`.
    public var status: String
    public var job: String?
    public var database: String
    public var dryRun: Bool
    public var counts: Counts
    public var migrationSteps: Int
    public var seconds: Double
    public var rules: [RuleSummary]
    public var message: String?
    /// Migration steps (planned, or applied by `run`), with their SQL.
    public var migration: [PlannedStep] = []
    /// `check`: differences between the live schema and the job's target schema.
    public var drift: [String] = []
    /// Remarks worth a line (a seed already applied, a rule evaluated after migration, ...).
    public var notes: [String] = []
    /// `restore` only: rows put back, and rows returned to their before-image.
    public var reinserted: Int?
    public var reverted: Int?

    public init(command: String, runID: Int64? = nil, status: String, job: String?, database: String, dryRun: Bool = false,
                counts: Counts = Counts(), migrationSteps: Int = 0, seconds: Double = 0, rules: [RuleSummary] = [],
                message: String? = nil) {
        self.command = command
        self.runID = runID
        self.status = status
        self.job = job
        self.database = database
        self.dryRun = dryRun
        self.counts = counts
        self.migrationSteps = migrationSteps
        self.seconds = seconds
        self.rules = rules
        self.message = message
    }
}

/// One row of `winnow history`.
public struct HistoryEntry: Sendable, Equatable {
    public var runID: Int64
    public var command: String
    public var job: String?
    public var startedAt: String
    public var finishedAt: String?
    public var status: String
    public var archive: Bool
    public var counts: Counts
    public var migrationSteps: Int
    public var seconds: Double
    public var restoresRun: Int64?
    public var restoredBy: Int64?
    public var message: String?
}
