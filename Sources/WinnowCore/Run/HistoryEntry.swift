import Foundation

/// One row of `winnow history`.
public struct HistoryEntry: Sendable, Equatable {
    public var runID: Int64
    public var command: RunCommand
    public var job: String?
    public var startedAt: String
    public var finishedAt: String?
    public var status: RunStatus
    public var archive: Bool
    public var counts: Counts
    public var migrationSteps: Int
    public var seconds: Double
    public var restoresRun: Int64?
    public var restoredBy: Int64?
    public var message: String?
    /// A restore's rows put back: deleted rows inserted again, changed rows set back (nil for
    /// a run, and for a restore recorded by a winnow that did not count them).
    public var reinserted: Int? = nil
    public var reverted: Int? = nil
    /// When the run's journal was pruned (`winnow prune`, `journal: keep_days`): it can no
    /// longer be restored or listed by `show`.
    public var prunedAt: String? = nil
}
