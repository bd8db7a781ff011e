import Foundation
import XCTest

@testable import WinnowCore

/// How far a transaction of a loop over row ranges takes more rows, against modelled costs: a
/// cost per row (that may rise within the transaction) and a commit paid at its end.
final class StretchFillTests: XCTestCase {
    /// Runs one filled transaction: `first` rows, then pieces while ``StretchFill/more(units:elapsed:last:)``
    /// allows, each row costing `perUnit` times `rise` to the power of the piece's number;
    /// returns its rows, its pieces and its time with `commit` added.
    func transaction(
        _ fill: StretchFill, first: Int, perUnit: Double, rise: Double = 1, overhead: Double = 0.001, commit: Double
    ) -> (units: Int, pieces: Int, seconds: Double) {
        var units = first
        var elapsed = overhead + perUnit * Double(first)
        var pieces = 1
        var cost = perUnit
        while let more = fill.more(units: units, elapsed: elapsed) {
            XCTAssertGreaterThan(more, 0)
            cost *= rise
            elapsed += cost * Double(more)
            units += more
            pieces += 1
            XCTAssertLessThan(pieces, 20, "a transaction ends")
            if pieces >= 20 { break }
        }
        return (units, pieces, elapsed + commit)
    }

    func testNothingMoreBeforeACommitWasSeen() {
        let fill = StretchFill(maxTransactionMilliseconds: 1000)
        XCTAssertFalse(fill.fills)
        XCTAssertNil(fill.more(units: 1000, elapsed: 0.01))
    }

    /// Once a commit was seen, a transaction takes what fits in the share of the limit that
    /// the longest commit seen leaves, with the margin on both.
    func testAfterACommitTheRoomLeftIsTaken() {
        var fill = StretchFill(maxTransactionMilliseconds: 1000)
        fill.recordCommit(seconds: 0.08)
        XCTAssertTrue(fill.fills)
        // 0.9 s - 0.5 s taken - 0.1 s for the commit leaves 0.3 s, at 62.5 µs a row with the margin.
        XCTAssertEqual(Double(fill.more(units: 10_000, elapsed: 0.5) ?? 0), 4800, accuracy: 1)
        // Where more fit (0.7 s at 125 µs a row: 5,600), no more than the rows taken.
        XCTAssertEqual(fill.more(units: 1000, elapsed: 0.1), 1000)
        // At the cost a row of the last piece where higher: 0.3 s at 100 µs a row.
        XCTAssertEqual(
            Double(fill.more(units: 10_000, elapsed: 0.5, last: StretchFill.Piece(units: 1000, seconds: 0.08)) ?? 0), 3000, accuracy: 1)
        XCTAssertEqual(
            Double(fill.more(units: 10_000, elapsed: 0.5, last: StretchFill.Piece(units: 1000, seconds: 0.01)) ?? 0), 4800, accuracy: 1)
        // The longest commit seen is the one predicted.
        fill.recordCommit(seconds: 0.02)
        XCTAssertEqual(fill.commitCost, 0.08)
        // The rest of the work may take 0.95 of the limit: 0.35 s left, 5,600 rows.
        XCTAssertEqual(Double(fill.rest(units: 10_000, elapsed: 0.5) ?? 0), 5600, accuracy: 1)
        XCTAssertEqual(fill.rest(units: 1000, elapsed: 0.1), 1000)
    }

    /// No piece once the time left is spent, nor one smaller than a sixteenth of the rows taken.
    func testNoPieceOnceTheTimeIsSpentOrTooSmall() {
        var fill = StretchFill(maxTransactionMilliseconds: 1000)
        fill.recordCommit(seconds: 0.1)
        XCTAssertNil(fill.more(units: 100_000, elapsed: 0.8))
        XCTAssertNil(fill.more(units: 100_000, elapsed: 0.75), "room for 2,666 rows: under a sixteenth")
        XCTAssertNotNil(fill.more(units: 100_000, elapsed: 0.7))
    }

    /// Whatever the cost of a row and of the commit, a filled transaction whose rows cost what
    /// its first rows did, or up to the margin more as it goes, stays within the limit; and one
    /// that starts small fills most of it.
    func testFilledTransactionsStayWithinTheLimitAndFillMostOfIt() {
        for limit in [250, 1000, 5000] {
            let seconds = Double(limit) / 1000
            for commitShare in [0.05, 0.1, 0.2, 0.3] {
                for perUnit in [0.000_000_5, 0.000_005, 0.000_05] {
                    for rise in [1.0, 1.1, 1.25] {
                        var fill = StretchFill(maxTransactionMilliseconds: limit)
                        let commit = seconds * commitShare
                        fill.recordCommit(seconds: commit)
                        // A first piece of a tenth of the limit's worth of rows.
                        let first = max(1, Int(seconds * 0.1 / perUnit))
                        let t = transaction(fill, first: first, perUnit: perUnit, rise: rise, commit: commit)
                        let label = "limit \(limit) ms, commit \(commitShare), \(perUnit) s a row, rise \(rise)"
                        XCTAssertLessThanOrEqual(t.seconds, seconds, label)
                        XCTAssertGreaterThan(t.pieces, 1, label)
                        if rise == 1 {
                            XCTAssertGreaterThan(t.seconds, seconds * 0.6, "filled: \(t.units) rows, \(label)")
                        }
                    }
                }
            }
        }
    }

    /// Where the rows after a transaction's bounds cost more than those in them (the losers the
    /// merges left lie sparser towards the end of a table, so each costs a page of its own),
    /// `extend` takes no piece larger than the rows taken so far, each predicted at the cost a
    /// row of the piece before it where that is higher, and the transaction stays within the
    /// limit: from bounds of a twentieth of it, rows further on up to four times as dear.
    func testRowsDearerFurtherOnKeepTheTransactionWithinTheLimit() throws {
        for limit in [250, 1000, 5000] {
            let seconds = Double(limit) / 1000
            for commitShare in [0.05, 0.2] {
                for step in [1.0, 2.0, 4.0] {
                    // A table of more work than fits, and one whose rest fits at the bounds' cost.
                    for total in [Int64.max / 4, 3_000_000] {
                        var fill = StretchFill(maxTransactionMilliseconds: limit)
                        let commit = seconds * commitShare
                        fill.recordCommit(seconds: commit)
                        let perUnit = 0.000_000_5
                        let first = Int(seconds * 0.05 / perUnit)
                        var clock = Date(timeIntervalSince1970: 0)
                        let started = clock
                        clock += 0.0002 + perUnit * Double(first)
                        var taken = first
                        var largest = 0.0
                        let ended = try fill.extend(
                            BatchBounds(after: 0, upTo: Int64(first), size: first), started: started, now: { clock },
                            nextBound: { after, size in after < total ? min(total, after + Int64(size)) : nil },
                            apply: { after, upTo in
                                let rows = Int(upTo - after)
                                largest = max(largest, Double(rows) / Double(taken))
                                taken += rows
                                clock += perUnit * step * Double(rows)
                            })
                        let time = clock.timeIntervalSince(started) + commit
                        let label = "limit \(limit) ms, commit \(commitShare), rows past the bounds \(step)x, \(total) rows"
                        XCTAssertLessThanOrEqual(time, seconds, label)
                        XCTAssertLessThanOrEqual(largest, StretchFill.mostPiece, label)
                        XCTAssertEqual(ended.upTo, Int64(taken), label)
                        if step == 1 && total > ended.upTo {
                            XCTAssertGreaterThan(time, seconds * 0.6, "filled: \(ended.units) rows, \(label)")
                        }
                    }
                }
            }
        }
    }

    /// A commit longer than the share the limit leaves after it: nothing more is taken.
    func testACommitThatTakesTheWholeShareTakesNothingMore() {
        var fill = StretchFill(maxTransactionMilliseconds: 250)
        fill.recordCommit(seconds: 0.2)
        XCTAssertNil(fill.more(units: 100, elapsed: 0.001))
    }

    /// The finding before a transaction goes on, once a commit was seen, while it has taken
    /// less than half the limit: each next piece what fits in the time left at the cost per row
    /// so far with the margin, none smaller than a sixteenth of the rows found.
    func testFindingGoesOnForHalfTheLimit() {
        var fill = StretchFill(maxTransactionMilliseconds: 1000)
        XCTAssertNil(fill.findMore(units: 192, elapsed: 0.001), "the first transaction's finding is its bounds' alone")
        fill.recordCommit(seconds: 0.01)
        // 0.5 s - 0.001 s left, at 6.5 µs a row with the margin: 76,646 rows.
        XCTAssertEqual(Double(fill.findMore(units: 192, elapsed: 0.001) ?? 0), 76_646, accuracy: 1)
        // The commit takes no share of it: the finding is outside the transaction.
        fill.recordCommit(seconds: 0.3)
        XCTAssertEqual(Double(fill.findMore(units: 192, elapsed: 0.001) ?? 0), 76_646, accuracy: 1)
        XCTAssertNil(fill.findMore(units: 300_000, elapsed: 0.5), "half the limit spent")
        XCTAssertNil(fill.findMore(units: 300_000, elapsed: 0.48), "room for 9,600 rows: under a sixteenth")
        XCTAssertNotNil(fill.findMore(units: 300_000, elapsed: 0.4))
        // Found in pieces as they come, the finding stops within half the limit, whatever a
        // row costs, and past what its first piece found.
        for perUnit in [0.000_000_5, 0.000_005, 0.000_05] {
            var (units, elapsed) = (192, 0.0002 + perUnit * 192)
            var pieces = 1
            while let more = fill.findMore(units: units, elapsed: elapsed) {
                (units, elapsed, pieces) = (units + more, elapsed + perUnit * Double(more), pieces + 1)
                if pieces > 20 { break }
            }
            XCTAssertLessThanOrEqual(elapsed, 0.5, "\(perUnit) s a row")
            XCTAssertGreaterThan(elapsed, 0.35, "\(perUnit) s a row: \(units) rows in \(pieces) pieces")
            XCTAssertLessThanOrEqual(pieces, 20)
        }
    }

    /// A read of the finding before a transaction is cut to what fits in half the limit at the
    /// last read's cost per row, with the margin; as asked where it fits or no cost is known.
    func testAReadBeforeATransactionFitsInHalfTheLimit() {
        let fill = StretchFill(maxTransactionMilliseconds: 1000)
        // 0.5 s at 1.25 µs a row with the margin: 400,000 rows.
        XCTAssertEqual(fill.findPiece(1_000_000, secondsPerRow: 0.000_001), 400_000)
        XCTAssertEqual(fill.findPiece(300_000, secondsPerRow: 0.000_001), 300_000)
        XCTAssertEqual(fill.findPiece(1_000_000, secondsPerRow: nil), 1_000_000, "no read yet")
        XCTAssertEqual(fill.findPiece(1_000, secondsPerRow: 10), 1, "at least one row")
        XCTAssertEqual(StretchFill(maxTransactionMilliseconds: 50).findPiece(1_000_000, secondsPerRow: 0.000_001), 20_000)
    }

    /// `extend` takes contiguous pieces after the bounds while they fit, then the rest only
    /// where it is all that is left and fits within the limit, and says where it ended.
    func testExtendTakesPiecesThenTheRestOnlyWhereItFits() throws {
        var fill = StretchFill(maxTransactionMilliseconds: 1000)
        fill.recordCommit(seconds: 0.1)
        let perUnit = 0.000_01
        func run(units total: Int64) throws -> (upTo: Int64, units: Int, pieces: [ClosedRange<Int64>], seconds: Double) {
            var clock = Date(timeIntervalSince1970: 0)
            let started = clock
            clock += perUnit * 10_000  // the bounds' 10,000 units, applied
            var pieces: [ClosedRange<Int64>] = []
            let ended = try fill.extend(
                BatchBounds(after: 0, upTo: 10_000, size: 10_000), started: started, now: { clock },
                nextBound: { after, size in after < total ? min(total, after + Int64(size)) : nil },
                apply: { after, upTo in
                    pieces.append((after + 1)...upTo)
                    clock += perUnit * Double(upTo - after)
                })
            return (ended.upTo, ended.units, pieces, clock.timeIntervalSince(started) + 0.1)
        }
        // Room for 0.9 - 0.1 - 0.125 s: pieces each right after the one before it, within
        // 0.9 s with the commit.
        let long = try run(units: 1_000_000)
        XCTAssertEqual(long.pieces.first?.lowerBound, 10_001)
        XCTAssertEqual(zip(long.pieces, long.pieces.dropFirst()).filter { $0.upperBound + 1 != $1.lowerBound }.count, 0)
        XCTAssertEqual(long.pieces.last?.upperBound, long.upTo)
        XCTAssertLessThanOrEqual(long.seconds, 0.9)
        XCTAssertGreaterThan(long.seconds, 0.7)
        XCTAssertLessThan(long.upTo, 1_000_000, "the rest is far more than fits")
        // A rest that fits within 0.95 of the limit, not within the share: taken; one that
        // does not: left for a stretch of its own.
        let near = try run(units: long.upTo + 5000)
        XCTAssertEqual(near.upTo, long.upTo + 5000)
        XCTAssertGreaterThan(near.seconds, long.seconds)
        XCTAssertLessThanOrEqual(near.seconds, 0.95)
        let far = try run(units: long.upTo + 12_000)
        XCTAssertEqual(far.upTo, long.upTo)
        // Bounds that hold all the work: nothing more.
        let all = try run(units: 10_000)
        XCTAssertEqual(all.upTo, 10_000)
        XCTAssertEqual(all.units, 10_000)
        XCTAssertEqual(all.pieces, [])
    }
}
