import Foundation

/// Adapts the batch size so that one write transaction stays under `max_transaction_ms`.
public struct BatchSizer {
    public let configured: Int
    public let limit: TimeInterval
    public private(set) var current: Int

    /// `start`: the first size, when smaller than `configured` (row-range loops start small and
    /// double while fast, so the first transaction is never the long one).
    public init(configured: Int, maxTransactionMilliseconds: Int, start: Int? = nil) {
        self.configured = max(1, configured)
        self.limit = Double(maxTransactionMilliseconds) / 1000
        self.current = max(1, min(self.configured, start ?? self.configured))
    }

    /// The first size of loops over row ranges (copies, hashes, emptying a table).
    public static let rowRangeStart = 1000

    /// Feeds back how long a transaction of `size` units took.
    public mutating func record(size: Int, seconds: TimeInterval) {
        guard size > 0 else { return }
        if seconds > limit, current > 1 {
            let fitted = Int(Double(size) * limit / max(seconds, 1e-6) * 0.8)
            current = max(1, min(current - 1, fitted))
        } else if seconds < limit / 4, current < configured {
            current = min(configured, current * 2)
        }
    }
}
