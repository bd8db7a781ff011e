import Foundation

/// The final report of `run`, `plan`, `check` and `restore`: the `"event":"summary"` object of
/// docs/reference.md section 1.
public struct RunSummary: Sendable, Equatable {
    public var command: RunCommand
    public var runID: Int64?
    /// `completed`, `planned`, `clean`, `duplicates`, `drift`, `restored`, `failed`, `refused`.
    public var status: RunStatus
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
    /// `plan` and `run`: what the live database has and the schema file does not mention, kept.
    public var kept: [KeptObject] = []
    /// `check`: differences between the live schema and the job's target schema.
    public var drift: [String] = []
    /// The same differences with where the schema file states each (for `--format github`).
    public var driftFindings: [SchemaDrift] = []
    /// `plan --save`: what the plan depends on.
    public var fingerprints: SavedPlan.Fingerprints?
    /// `check`: the job's target schema file, if it names one.
    public var schemaFile: String?
    /// Remarks worth a line (a seed already applied, a rule evaluated after migration, ...).
    public var notes: [String] = []
    /// `restore` only: rows put back, and rows returned to their before-image.
    public var reinserted: Int?
    public var reverted: Int?

    public init(
        command: RunCommand, runID: Int64? = nil, status: RunStatus, job: String?, database: String, dryRun: Bool = false,
        counts: Counts = Counts(), migrationSteps: Int = 0, seconds: Double = 0, rules: [RuleSummary] = [],
        message: String? = nil
    ) {
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
