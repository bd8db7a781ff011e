import Foundation

/// `plan` over a fleet in text: of each group of stores with the same live schema, the plan of
/// the group's first store in the fleet's order, with its sample groups, kept as the stores end
/// (in any order) while every other store's groups are let go.
public final class FleetPlans: @unchecked Sendable {
    private let lock = NSLock()
    private let order: [String: Int]
    private var first: [String: (index: Int, summary: RunSummary)] = [:]

    public init(stores: [String]) {
        order = Dictionary(stores.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Hears of a store as it ends: its plan is kept if it comes first of its schema so far.
    public func heard(_ outcome: StoreOutcome) {
        guard let summary = outcome.summary, let schema = summary.fingerprints?.liveSchema, let index = order[outcome.store] else {
            return
        }
        lock.withLock {
            if let kept = first[schema], kept.index < index { return }
            first[schema] = (index, summary)
        }
    }

    /// The kept plans, by live schema (the plans' fingerprint).
    public var plans: [String: RunSummary] { lock.withLock { first.mapValues(\.summary) } }
}
