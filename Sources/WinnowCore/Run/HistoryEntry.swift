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
}
