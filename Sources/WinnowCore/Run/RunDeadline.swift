import Foundation

/// `run --max-duration`: the time after which a run stops cleanly once the batch in flight has
/// committed. Checked between batches and between stages; once passed it stays passed, so every
/// later stage of the run sees it.
public final class RunDeadline: @unchecked Sendable {
    public let at: Date?
    public private(set) var reached = false

    /// Raised when the run should stop early for another reason (a fleet's rollout stopped).
    public let stop: StopSignal?

    public init(at: Date?, stop: StopSignal? = nil) {
        self.at = at
        self.stop = stop
    }

    /// Whether the run must stop now (and, from then on, always).
    public func passed(_ now: Date = Date()) -> Bool {
        if !reached, let at, now >= at { reached = true }
        if !reached, stop?.isRaised == true { reached = true }
        return reached
    }
}

/// A flag raised once, read by many runs (a fleet stops its runs in flight after a failure).
public final class StopSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var raised = false

    public init() {}

    public func raise() { lock.withLock { raised = true } }
    public var isRaised: Bool { lock.withLock { raised } }
}
