import Foundation

/// Bounds a stretch by the rows it writes, where the units it is sized in say little of them.
///
/// ``BatchSizer`` sizes a loop's stretches in units and predicts a stretch's time from the
/// time per unit of the stretches before it. The stretches of merges ahead of the deletions are
/// sized in winners, and each also deletes the losers in its rowids whose winners are merged,
/// its own or an earlier stretch's: further along the table more of each stretch's losers are,
/// so a winner costs more from one stretch to the next, by more than the sizer's rise
/// (merge-500 at 1,600,000 customers: 5.3, 5.6, then 7.8 µs a winner, where a row written,
/// winner or loser, took 2.1 to 2.6 µs; the last of those stretches took 0.82 s where 0.62 s was
/// predicted, and past a 1 s limit on a slower day). Where the rows a stretch would write can
/// be counted before it, its units are cut in proportion to the rows that the time per row of
/// the latest stretch measured puts at ``share`` of the limit, beside what any stretch costs
/// whatever its rows: the shortest stretch's time. So the first stretch is only that measure:
/// at merge-500's 200,000 customers the first stretch of merges, 1,000 winners in 7 ms, took
/// 6.7 µs a row, nearly all of it its commit, where the next took 2 µs; taken as the time of a
/// row, it cut the next stretch to 21,000 winners of the 51,000 that fit, and the losers left
/// at its end were deleted in another pass over the table, which wrote a fifth more bytes.
public struct RowBudget {
    /// The limit of one transaction, in seconds (0: none).
    public let limit: TimeInterval
    /// What a row written took in the latest stretch measured, beyond ``fixedCost``; nil before
    /// a stretch longer than the shortest.
    public private(set) var secondsPerRow: Double?
    /// What any stretch costs whatever its rows (its commit, its statements): the shortest
    /// stretch's time; nil before one.
    public private(set) var fixedCost: TimeInterval?

    public init(maxTransactionMilliseconds: Int) {
        limit = Double(maxTransactionMilliseconds) / 1000
    }

    /// The share of the limit a stretch's rows are predicted within: the share the sizer aims
    /// the stretches of merges at (``BatchSizer/batchAim``).
    public static let share = BatchSizer.batchAim

    /// Records that a stretch wrote `rows` rows in `seconds`.
    public mutating func record(rows: Int, seconds: TimeInterval) {
        guard seconds > 0 else { return }
        defer { fixedCost = min(fixedCost ?? seconds, seconds) }
        guard rows > 0, let fixedCost, seconds > fixedCost else { return }
        secondsPerRow = (seconds - fixedCost) / Double(rows)
    }

    /// The rows a stretch may write; nil without a limit or before a stretch was measured.
    public var room: Int? {
        guard limit > 0, let secondsPerRow, secondsPerRow > 0 else { return nil }
        let left = limit * Self.share - (fixedCost ?? 0)
        return max(1, Int(min(max(0, left) / secondsPerRow, Double(Int.max / 2)).rounded()))
    }

    /// The units a stretch of `units` units that would write `rows` rows is cut to, in
    /// proportion to the rows ``room`` allows; nil where it fits, or is one unit.
    public func cut(units: Int, rows: Int) -> Int? {
        guard let room, rows > room, units > 1 else { return nil }
        return max(1, Int(Double(units) * Double(room) / Double(rows)))
    }
}
