import Foundation

/// Lets one transaction of a loop over row ranges take more rows while its time allows.
///
/// A stretch of children re-pointed through an index rewrites most of that index whatever its
/// rows: each page it touches is journaled at its first change and written at the commit.
/// ``BatchSizer`` sizes a stretch before it starts, from the times of the stretches before it,
/// and aims at ``BatchSizer/rowRangeAim`` of the limit so that a stretch whose rows cost more
/// than predicted stays under it; every stretch that ends early writes the index once more. A
/// filled stretch starts at the size the sizer gives, then, inside the same transaction, takes
/// the next rows in pieces that the time measured so far says fit: at the cost per row of its
/// own rows so far, with the longest commit seen and a margin on each, within ``share`` of the
/// limit, each piece at most as many rows as the transaction has taken (``mostPiece``). The
/// first stretch is the sizer's alone: no commit was seen before it.
public struct StretchFill {
    /// The limit of one transaction, in seconds.
    public let limit: TimeInterval
    /// The longest commit seen (nil before the first).
    public private(set) var commitCost: TimeInterval?

    public init(maxTransactionMilliseconds: Int) {
        limit = Double(maxTransactionMilliseconds) / 1000
    }

    /// The share of the limit a filled transaction is predicted within, its commit included.
    public static let share = 0.9
    /// What the cost of the next rows and the commit are taken as, times their estimate: a
    /// piece's rows may cost more than the rows before it, a commit more than the longest seen.
    public static let margin = 1.25
    /// The fewest rows a piece takes, as a share of the rows the transaction has taken: less
    /// is not worth its statements.
    public static let leastPiece = 1.0 / 16
    /// The most rows a piece takes, as a share of the rows the transaction has taken: a piece's
    /// cost is predicted from rows at least as many as its own. Where a row costs more further
    /// on (the losers that the merges left lie sparser towards the end of a table, so each
    /// costs a page of its own), a prediction from a small first piece fell far short:
    /// merge-500 at 1,600,000 customers deleted a rest of its losers predicted within 0.95 s in
    /// one transaction of 1.54 s under a 1 s limit.
    public static let mostPiece = 1.0

    /// Records how long a commit took.
    public mutating func recordCommit(seconds: TimeInterval) {
        commitCost = max(commitCost ?? 0, seconds)
    }

    /// Whether the transactions fill: from the second on (a commit was seen).
    public var fills: Bool { commitCost != nil && limit > 0 }

    /// The rows the transaction may take next, having taken `units` rows in `elapsed` seconds
    /// (from before it began), at most ``mostPiece`` of them; nil when it should commit now.
    /// Where its `last` piece cost more a row than the transaction so far, at that cost: the
    /// rows further on are more like the last ones.
    public func more(units: Int, elapsed: TimeInterval, last: Piece? = nil) -> Int? {
        piece(fits(units: units, elapsed: elapsed, within: Self.share, last: last), after: units).map { capped($0, after: units) }
    }

    /// A piece a transaction has taken: its rows and their time.
    public struct Piece {
        public var units: Int
        public var seconds: TimeInterval
        public init(units: Int, seconds: TimeInterval) { (self.units, self.seconds) = (units, seconds) }
    }

    /// The share of the limit the rest of the work may take with a transaction, where it is
    /// all that is left (``rest(units:elapsed:last:)``).
    public static let restShare = 0.95

    /// The rows that fit within ``restShare`` of the limit (the margins kept), for the rest of
    /// the work where it is all that is left: a stretch of its own for it would write the index
    /// again (merge-500 at 1,600,000 customers: 26,925 orders left after ten filled stretches).
    /// At most ``mostPiece`` of the rows taken, as a piece.
    public func rest(units: Int, elapsed: TimeInterval, last: Piece? = nil) -> Int? {
        guard let fits = fits(units: units, elapsed: elapsed, within: Self.restShare, last: last), fits >= 1 else { return nil }
        return capped(fits, after: units)
    }

    /// The rows that fit in `share` of the limit after `elapsed` seconds (and, where `commits`,
    /// the longest commit seen), at the cost per row of `units` rows in `elapsed` or of the
    /// `last` piece's rows, the higher, with ``margin`` on both; nil before a commit was seen
    /// or where no room is left.
    private func fits(
        units: Int, elapsed: TimeInterval, within share: Double, commits: Bool = true, last: Piece? = nil
    ) -> Double? {
        guard fills, let commitCost, units > 0, elapsed > 0 else { return nil }
        let room = limit * share - elapsed - (commits ? commitCost * Self.margin : 0)
        guard room > 0 else { return nil }
        var secondsPerRow = elapsed / Double(units)
        if let last, last.units > 0 { secondsPerRow = max(secondsPerRow, last.seconds / Double(last.units)) }
        return rows(in: room, secondsPerRow: secondsPerRow)
    }

    /// The rows that take `room` seconds at `secondsPerRow` with ``margin``.
    private func rows(in room: TimeInterval, secondsPerRow: Double) -> Double {
        room / (secondsPerRow * Self.margin)
    }

    /// `fits` as a next piece after `units` rows: nil where it is none or less than
    /// ``leastPiece`` of them.
    private func piece(_ fits: Double?, after units: Int) -> Double? {
        guard let fits, fits >= max(1, Double(units) * Self.leastPiece) else { return nil }
        return fits
    }

    /// `fits` rows as a piece of a transaction after `units` rows: at most ``mostPiece`` of them.
    private func capped(_ fits: Double, after units: Int) -> Int {
        Self.whole(min(fits, Double(units) * Self.mostPiece))
    }

    /// A count of rows, kept far below `Int.max`.
    private static func whole(_ fits: Double) -> Int { Int(min(fits, Double(Int.max / 2))) }

    /// The share of the limit that finding a transaction's work before it begins may take
    /// (``findMore(units:elapsed:)``).
    public static let findShare = 0.5

    /// The rows the finding before a transaction may take next, having found `units` rows in
    /// `elapsed` seconds: what fits in what is left of ``findShare`` of the limit, at the cost
    /// per row so far with ``margin``; nil when it should stop (less room than ``leastPiece``
    /// of what it found, or no commit seen yet). How many rows the transaction will take is
    /// known only from the transactions before it, and where those tell little (the first
    /// takes a few rows, to measure), this finds as many as that time allows: what the
    /// transaction does not take stays found for the next, and what it takes past them it must
    /// find inside, holding its lock.
    public func findMore(units: Int, elapsed: TimeInterval) -> Int? {
        // (Outside the transaction: no commit to keep room for.)
        piece(fits(units: units, elapsed: elapsed, within: Self.findShare, commits: false), after: units).map(Self.whole)
    }

    /// The rows of one read of the finding before a transaction: `rows`, cut to what fits in
    /// ``findShare`` of the limit at `secondsPerRow` (the last read's cost per row) with
    /// ``margin``, at least one; `rows` where no cost is known yet. In a rollback journal a
    /// read holds back every other connection's commit until it ends, so no read is to last
    /// longer than the finding may in all.
    public func findPiece(_ rows: Int, secondsPerRow: Double?) -> Int {
        guard let secondsPerRow, secondsPerRow > 0, limit > 0 else { return rows }
        return max(1, min(rows, Self.whole(self.rows(in: limit * Self.findShare, secondsPerRow: secondsPerRow))))
    }

    /// Takes pieces after a transaction's `bounds` while ``more(units:elapsed:last:)`` allows
    /// (each at the cost a row of the piece before it, where higher), then the rest of the work
    /// where it is all that is left and fits (``rest(units:elapsed:last:)``):
    /// `nextBound` gives the end of the next `size` units after a position (nil: none left),
    /// `apply` applies the units in `(after, upTo]`, in the transaction begun at `started`.
    /// Returns where the transaction's work ends and its units.
    public func extend(
        _ bounds: BatchBounds, started: Date, now: () -> Date = Date.init,
        nextBound: (_ after: Int64, _ size: Int) throws -> Int64?, apply: (_ after: Int64, _ upTo: Int64) throws -> Void
    ) throws -> (upTo: Int64, units: Int) {
        var (upTo, units) = (bounds.upTo, bounds.size)
        var last: Piece?
        while let more = more(units: units, elapsed: now().timeIntervalSince(started), last: last),
            let end = try nextBound(upTo, more)
        {
            let began = now()
            try apply(upTo, end)
            last = Piece(units: more, seconds: now().timeIntervalSince(began))
            (upTo, units) = (end, units + more)
        }
        if let rest = rest(units: units, elapsed: now().timeIntervalSince(started), last: last),
            let end = try nextBound(upTo, rest), try nextBound(end, 1) == nil
        {
            try apply(upTo, end)
            (upTo, units) = (end, units + rest)
        }
        return (upTo, units)
    }
}
