import Foundation

/// Options of `run`, `plan` and `check` that come from the command line.
public struct RunOptions: Sendable {
    /// `--database`, overriding the job's `database:`.
    public var database: String?
    /// `--batch-size`, overriding `batch.size`.
    public var batchSize: Int?
    /// `--dry-run`.
    public var dryRun = false
    /// `--wait SECONDS` for another run's lock.
    public var wait: TimeInterval?
    /// Groups listed per rule by `plan` (nil: all).
    public var sampleLimit: Int? = 20
    /// `run --max-duration SECONDS`: stop cleanly after the batch in flight once this much time
    /// has passed since the run started (status `stopped`; the next run continues).
    public var maxDuration: TimeInterval?
    /// `plan --save`: also compute the plan's fingerprints (``RunSummary/fingerprints``).
    public var fingerprints = false
    /// `run --plan FILE`: the fingerprints of the approved plan; the run refuses (65) before its
    /// first write when the database, the files or the duplicates no longer match them.
    public var approvedPlan: SavedPlan.Fingerprints?
    /// A fleet's signal to stop after the batch in flight (status `stopped`, like --max-duration).
    public var stop: StopSignal?
    /// `--allow-row-security`: run rules on tables the connection sees only part of.
    public var allowRowSecurity = false

    public init(
        database: String? = nil, batchSize: Int? = nil, dryRun: Bool = false, wait: TimeInterval? = nil,
        sampleLimit: Int? = 20, maxDuration: TimeInterval? = nil
    ) {
        self.database = database
        self.batchSize = batchSize
        self.dryRun = dryRun
        self.wait = wait
        self.sampleLimit = sampleLimit
        self.maxDuration = maxDuration
    }
}
