import Foundation

/// `run --max-duration`: the time after which a run stops cleanly once the batch in flight has
/// committed. Checked between batches and between stages; once passed it stays passed, so every
/// later stage of the run sees it.
public final class RunDeadline: @unchecked Sendable {
    public let at: Date?
    public private(set) var reached = false

    public init(at: Date?) { self.at = at }

    /// Whether the run must stop now (and, from then on, always).
    public func passed(_ now: Date = Date()) -> Bool {
        if !reached, let at, now >= at { reached = true }
        return reached
    }
}
