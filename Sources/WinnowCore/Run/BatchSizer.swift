import Foundation

/// Adapts the batch size so that one write transaction stays under `max_transaction_ms`.
///
/// A transaction's time is a cost per unit (rows copied, groups settled) plus a cost paid
/// whatever its size: a rollback journal's syncs at commit (far longer than a commit in WAL on
/// a busy disk), a server's round trips. Shrinking a batch cuts only the first, so
/// where the fixed cost alone comes near the limit, batches shrink toward one unit each and
/// multiply the commits every other writer waits for. The sizer estimates the fixed cost from
/// the two latest transactions of different sizes and aims at twice it when the limit is lower.
public struct BatchSizer {
    public let configured: Int
    public let limit: TimeInterval
    public private(set) var current: Int
    /// The estimated cost of a transaction whatever its size (0 until two sizes were seen): the
    /// line through the two latest sizes, each at the least time seen for it.
    public private(set) var fixedCost: TimeInterval = 0
    private var previous: (size: Int, seconds: TimeInterval)?
    private var lineNear: (size: Int, seconds: TimeInterval)?
    private var lineFar: (size: Int, seconds: TimeInterval)?
    private var shortest = TimeInterval.infinity
    /// The largest size shrunk from (0 before a shrink).
    private var shrunkFrom = 0

    /// `start`: the first size, when smaller than `configured` (row-range loops start small and
    /// double while fast, so the first transaction is never the long one).
    public init(configured: Int, maxTransactionMilliseconds: Int, start: Int? = nil) {
        self.configured = max(1, configured)
        self.limit = Double(maxTransactionMilliseconds) / 1000
        self.current = max(1, min(self.configured, start ?? self.configured))
    }

    /// The first size of loops over row ranges (copies, hashes, emptying a table).
    public static let rowRangeStart = 1000

    /// The sizer of a loop over row ranges: starting at `start` rows (``rowRangeStart``) and growing up to
    /// `multiple` times the configured batch size (at least ``rowRangeStart`` times it) while
    /// they stay under `max_transaction_ms`.
    public static func rowRanges(_ settings: BatchSettings, upTo multiple: Int, start: Int = rowRangeStart) -> BatchSizer {
        rowRanges(settings, configured: max(settings.size, rowRangeStart) * multiple, start: start)
    }

    /// The sizer of a loop over row ranges that only `max_transaction_ms` bounds: starting at
    /// ``rowRangeStart`` rows and growing as ``rowRanges(_:upTo:)`` does, with no multiple of
    /// `batch.size` as a cap (``uncapped`` rows). For the stretches ahead of a rule's deletions
    /// (children re-pointed, merges applied): a stretch of children re-pointed through an index
    /// rewrites most of that index whatever its rows, so a run that allows long transactions
    /// takes fewer stretches and writes the index fewer times (a cap of 256 times `batch.size`
    /// kept at least one stretch per 256,000 rows of the child table whatever the limit allowed).
    public static func rowRanges(_ settings: BatchSettings, start: Int = rowRangeStart) -> BatchSizer {
        rowRanges(settings, configured: uncapped, start: start)
    }

    private static func rowRanges(_ settings: BatchSettings, configured: Int, start: Int) -> BatchSizer {
        var sizer = BatchSizer(
            configured: configured, maxTransactionMilliseconds: settings.maxTransactionMilliseconds, start: start)
        sizer.growthLimit = rowRangeMaxGrowth
        sizer.aim = rowRangeAim
        sizer.leastGrowth = rowRangeMinGrowth
        sizer.takesTail = true
        return sizer
    }

    /// The configured size of a loop that only the time limit bounds (``rowRanges(_:)``): 2^40
    /// rows, far beyond any table's rows in one transaction, and far from `Int`'s overflow in
    /// the sizer's arithmetic.
    public static let uncapped = 1 << 40

    /// The sizer of a `hash_column`'s fill, on every engine: slices of rows in the table's
    /// identity order, up to ten times the configured batch size (at least 10,000).
    public static func hashFill(_ settings: BatchSettings) -> BatchSizer { rowRanges(settings, upTo: 10) }

    /// What one transaction aims at: the limit, or twice the fixed cost where that is more.
    public var target: TimeInterval { max(limit, 2 * fixedCost) }

    /// Feeds back how long a transaction of `size` units took.
    public mutating func record(size: Int, seconds: TimeInterval) {
        guard size > 0 else { return }
        shortest = min(shortest, seconds)
        // The two latest sizes, each with the least time seen for it since it began: a stall
        // (a checkpoint, another connection's lock) only adds to a transaction's time.
        if let near = lineNear, near.size == size {
            lineNear = (size, min(near.seconds, seconds))
        } else {
            lineFar = lineNear
            lineNear = (size, seconds)
        }
        if let far = lineFar, let near = lineNear {
            // The line through them: its value at size 0 is the fixed cost (never more than the
            // shortest transaction seen).
            let perUnit = (near.seconds - far.seconds) / Double(near.size - far.size)
            if perUnit > 0 {
                let small = near.size < far.size ? near : far
                fixedCost = min(shortest, max(0, small.seconds - perUnit * Double(small.size)))
            }
        }
        let earlier = latestPerUnit
        previous = (size, seconds)
        if let earlier, earlier > 0, let latest = latestPerUnit {
            rise = min(Self.maxRise, max(1, latest / earlier))
        }
        let target = target
        // The next transaction at this size, where the cost per unit rises again as it rose.
        let predicted = fixedCost + (seconds - fixedCost) * rise
        if seconds > target, current > 1 {
            shrink(size: size, seconds: seconds, toward: target, margin: 0.8)
        } else if takesTail, predicted > target, current > 1 {
            // A loop over row ranges whose cost per unit rises from one stretch to the next
            // (merge-archive-50's stretches of merges at 1,600,000 customers: each deletes more
            // of the losers taken before it, 0.65 s, 0.75 s, then 1.07 s under a 1 s limit):
            // shrunk before the stretch that would pass the limit, not after it.
            shrink(size: size, seconds: predicted, toward: target, margin: 0.8)
        } else if current < configured {
            // Grows to the size that the latest transaction's time, taken as all per unit, puts
            // at ``aim`` of the target (half, or ``rowRangeAim``), by ``minGrowth``
            // (``rowRangeMinGrowth``) to ``maxGrowth`` times the size measured (a short last
            // batch predicts little), and no further than the line through the two latest
            // transactions puts there. Below the aim the first is the smaller (the line's fixed
            // cost is at most the shortest time seen), so a transaction whose time is mostly paid
            // whatever its size (an index rewritten at each commit) still grows toward the aim,
            // in more steps, and a line through two short transactions, the first of them
            // stalled, which takes the stall for a fixed cost and the rest for next to nothing a
            // unit, makes no huge step (merge-archive-50 at 1,600,000 customers, by the line
            // alone: 1,000 winners in 0.04 s, 12,990 in 0.06 s, then 305,033 in 2.32 s under a
            // 1 s limit). The line stops the growth where its fixed cost fills the aim.
            let byLine = (target * aim - fixedCost) / max(seconds - fixedCost, 1e-6)
            var growth = min(byLine, target * aim / max(seconds, 1e-6))
            // What keeps the next transaction within ``tailShare`` of the target were all of
            // the latest one's time per unit, risen again as it last rose.
            let safe = target * Self.tailShare / max(seconds * rise, 1e-6)
            let sizesVaried = lineFar != nil
            if takesTail, growth < leastGrowth, !sizesVaried || byLine >= leastGrowth {
                // A loop over row ranges whose time, taken as all per unit, is too long to grow
                // toward the aim, but short enough to grow within the tail's share: while it
                // has seen one size only, it takes one step of ``leastGrowth`` so that two
                // sizes tell its fixed cost from its cost per unit (it kept its first size to
                // the end before, where the fixed cost passed the aim over ``leastGrowth``);
                // once they have, it grows as far as the line says, within that share.
                growth = min(sizesVaried ? byLine : leastGrowth, safe)
            }
            let grown = Int(Double(size) * min(growth, growthLimit))
            if growth >= leastGrowth, grown > current {
                current = min(configured, grown)
            } else if current < shrunkFrom {
                // A size shrunk from comes back as far as the latest transaction allows (by
                // the tail's share for loops over row ranges, by the aim for batches): a
                // stall read as a rising cost, or as a transaction past the target, shrinks
                // the next one, and where growth toward the aim is under ``leastGrowth`` (a
                // fixed cost over a third of the target) nothing else would undo it. Every
                // stall took another quarter off for good: 1,000 winners a stretch, then 727,
                // then 546, down to one.
                let back = (Double(size) * min(comeBack(growth: growth, byLine: byLine, safe: safe), growthLimit)).rounded(.up)
                current = max(current, min(shrunkFrom, Int(back)))
            }
        }
    }

    /// How far a size shrunk from comes back after the latest transaction: batches by their
    /// growth toward the aim; loops over row ranges within the tail's share (`safe`); loops
    /// over row ranges that grow like batches (``growLikeBatches()``) to their aim by the line
    /// (`byLine`), and within the tail's share only where their fixed cost keeps growth
    /// toward the aim under ``leastGrowth`` (as that share alone undoes a shrink there).
    /// Those loops aim at half the target because their cost per unit rises from one
    /// transaction to the next; coming back to 3/4 of it after a transaction that happened to
    /// be quick took the next past the limit where times at one size vary by half: stretches
    /// of merges at 10,000,000 customers, 42,892 winners in 0.53 s, then 60,716 in 1.048 s under
    /// a 1 s limit (``BatchSizerTests``, costs that vary and rise).
    private func comeBack(growth: Double, byLine: Double, safe: Double) -> Double {
        guard takesTail else { return growth }
        guard aim <= Self.batchAim, fixedCost * leastGrowth <= target * aim else { return safe }
        return min(byLine, safe)
    }

    /// The most a transaction's size grows from one to the next (the line it is predicted by
    /// is measured near the sizes seen).
    public static let maxGrowth = 4.0
    /// The same for loops over row ranges (``rowRanges(_:upTo:)``). They start at
    /// ``rowRangeStart`` rows whatever the table, so their first transactions are far under the
    /// limit, and where each one rewrites most of an index whatever its size (children
    /// re-pointed ahead), every step of the ramp writes that index again: merge-500 at 200,000
    /// customers took 5 stretches of children and 4 of merges growing by 4, and 3 and 3 growing
    /// by 16 (267,000 blocks written against 242,000-253,000). Still only up to the size the
    /// latest transaction's time puts at ``rowRangeAim`` of the limit.
    public static let rowRangeMaxGrowth = 16.0
    /// The most this sizer grows a transaction by (``maxGrowth``, or ``rowRangeMaxGrowth``).
    public var growthLimit = BatchSizer.maxGrowth
    /// Whether the rest of the work goes with the transaction before it when it is short
    /// (loops over row ranges, ``tailAllowance``).
    public private(set) var takesTail = false

    /// The units a transaction may take beyond ``current`` when they are all that is left: a
    /// quarter of it, within ``configured``, for loops over row ranges (0 for batches of groups,
    /// whose size is the job's). Such a transaction is at most 1.25 times the size predicted at
    /// the aim (at ``rowRangeAim``, 3/4 of the target), and it saves a last one that may cost
    /// as much as a full one (a stretch of children rewrites most of the child's index whatever
    /// its size). Where the latest transaction's cost per unit, risen again as it last rose
    /// (``rise``), puts ``current`` itself past the aim, only what that cost keeps within 3/4
    /// of the target:
    /// merge-500's last stretch of merges at 1,600,000 customers took its 18% more winners in
    /// 0.94 s under a 1 s limit, after 0.66 s for the stretch before it. (Not 5/8: that left a
    /// stretch of children of its own for a rest of 15,000-20,000 rows at 1,600,000
    /// customers, and the child's index written once more.)
    public var tailAllowance: Int {
        guard takesTail else { return 0 }
        let quarter = min(current / 4, configured - current)
        guard let latestPerUnit, latestPerUnit > 0 else { return quarter }
        // (The fixed cost is at most half the target, so the share left is positive.)
        let within = (target * Self.tailShare - fixedCost) / (latestPerUnit * rise) - Double(current)
        return max(0, Int(min(within, Double(quarter))))
    }
    /// The share of the target a transaction with the rest taken is predicted within.
    public static let tailShare = 0.75
    /// How much the cost per unit rose from the transaction before the latest to the latest
    /// (1 where it fell or stayed). A loop over row ranges expects the next to rise as much.
    public private(set) var rise = 1.0
    /// The most ``rise`` is taken as. A stall in a transaction whose time is mostly its fixed
    /// cost reads as a cost per unit risen thousands of times, which shrank the next one to
    /// one unit; a real rise (the stretches of merges, each deleting more of the losers taken
    /// before it) is 1.1 to 1.4 times.
    public static let maxRise = 2.0
    /// The cost per unit beyond the fixed cost of the latest transaction (nil before one).
    private var latestPerUnit: Double? { previous.map { max(0, $0.seconds - fixedCost) / Double($0.size) } }

    /// Sets the next size to the one the latest transaction's line puts at `goal` seconds
    /// (times `margin`), at least one unit less than now.
    private mutating func shrink(size: Int, seconds: TimeInterval, toward goal: TimeInterval, margin: Double = 1) {
        let fitted = Int(Double(size) * (goal - fixedCost) / max(seconds - fixedCost, 1e-6) * margin)
        shrunkFrom = max(shrunkFrom, current)
        current = max(1, min(current - 1, fitted))
    }
    /// Below this predicted growth the size stays (no creeping by a few percent).
    public static let minGrowth = 1.5
    /// The same for loops over row ranges. A stretch of children re-pointed ahead pays most of
    /// its time whatever its size (the child's index rewritten at its commit), and with 1.5 the
    /// stretches settled wherever the ramp's third one left them, anywhere between two thirds
    /// of the aim and the aim (merge-500 at 1,600,000 customers: 12 to 17 stretches from one
    /// run to the next).
    public static let rowRangeMinGrowth = 1.1
    /// The least growth this sizer takes (``minGrowth``, or ``rowRangeMinGrowth``).
    public private(set) var leastGrowth = BatchSizer.minGrowth

    /// The share of the target a transaction grows toward: half for batches of groups, whose
    /// size is the job's (``batchAim``); ``rowRangeAim`` for loops over row ranges.
    public private(set) var aim = BatchSizer.batchAim
    /// What batches grow toward: half the target.
    public static let batchAim = 0.5
    /// What loops over row ranges grow toward. Each stretch of children re-pointed ahead
    /// rewrites most of the child's index whatever its rows, so the number of stretches sets
    /// the bytes a run writes: merge-500 at 1,600,000 customers under the contract's default of
    /// 250 ms took 80 and 71 stretches of children and wrote 4.3 and 3.9 GB aiming at 0.6, 98
    /// and 96 and 5.1 and 5.0 GB aiming at half (docs/performance.md, "Sizes adapt"). A cost
    /// that rises from one stretch to the next is shrunk before it passes the limit
    /// (``record(size:seconds:)``), and the rest taken with the last stretch stays within
    /// ``tailShare``.
    public static let rowRangeAim = 0.6

    /// Starts at `size` (at least one unit), a share of the configured size held back before any
    /// transaction gave a time to size by (SQLite's first batch beside another writer): the
    /// configured size counts as a size shrunk from, so it comes back as one does (by the aim,
    /// for batches) rather than only by steps of ``leastGrowth`` under half the target. Started
    /// at an eighth with a first batch that paid a one-off cost (unindexed references mapped),
    /// batches of merge-archive-50's customers beside a writer stayed at 29 of 50 groups a
    /// batch, 976 batches against 730 from the whole size.
    public mutating func holdBack(to size: Int) {
        current = max(1, min(configured, size))
        shrunkFrom = configured
    }

    /// Grows this loop over row ranges as batches grow: toward half the target, by at least
    /// ``minGrowth``. For stretches whose cost per unit rises from one to the next (each
    /// stretch of merges deletes more of the losers taken before it), which the sizer sees
    /// only once it has happened: growing toward ``rowRangeAim``, merge-archive-50 at
    /// 1,600,000 customers took 0.80, 0.77 and 0.80 s, then 1.17 s under a 1 s limit (0.61-0.83
    /// s growing as batches do).
    public mutating func growLikeBatches() {
        aim = Self.batchAim
        leastGrowth = Self.minGrowth
    }
}
