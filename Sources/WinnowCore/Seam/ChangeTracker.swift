import Foundation

/// The change log behind `incremental: true`.
public protocol ChangeTracker {
    func isTracking(_ rule: CompiledRule) throws -> Bool
    func start(_ rule: CompiledRule) throws
    func isInstalled(table: String) throws -> Bool
    func stop(table: String) throws
    func lastChange(table: String) throws -> Int64
    /// Drops the changes up to `upTo` (done) and records the run that covered them.
    func finish(table: String, upTo: Int64, runID: Int64) throws
}
