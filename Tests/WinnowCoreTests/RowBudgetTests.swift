import Foundation
import WinnowTestFiles
import XCTest

@testable import WinnowCore

/// The bound on a stretch's rows written (``RowBudget``), alone and with the sizer of the
/// stretches of merges on a modelled table.
final class RowBudgetTests: XCTestCase {
    /// A stretch is cut in proportion to the rows that the latest stretch's time per row, beyond
    /// the shortest stretch's time, puts at half the limit; one that fits, one of a single unit,
    /// one before any measure and one without a limit are not.
    func testAStretchIsCutInProportionToTheRowsItsShareHolds() {
        var budget = RowBudget(maxTransactionMilliseconds: 1000)
        XCTAssertNil(budget.room, "nothing measured yet")
        XCTAssertNil(budget.cut(units: 50_000, rows: 10_000_000))
        budget.record(rows: 1038, seconds: 0.01)
        XCTAssertNil(budget.room, "the first stretch is the measure of what any stretch costs")
        XCTAssertEqual(budget.fixedCost, 0.01)
        budget.record(rows: 100_000, seconds: 0.26)  // 2.5 µs a row: 0.49 s holds 196,000
        XCTAssertEqual(budget.room, 196_000)
        XCTAssertEqual(budget.cut(units: 50_000, rows: 392_000), 25_000)
        XCTAssertEqual(budget.cut(units: 50_000, rows: 196_001), 49_999)
        XCTAssertNil(budget.cut(units: 50_000, rows: 196_000), "fits")
        XCTAssertNil(budget.cut(units: 1, rows: 10_000_000), "one unit is the least")
        XCTAssertEqual(budget.cut(units: 10, rows: 100_000_000), 1, "never below one unit")
        budget.record(rows: 0, seconds: 0.1)
        XCTAssertEqual(budget.room, 196_000, "a stretch that wrote nothing says nothing of a row")
        budget.record(rows: 100_000, seconds: 0.51)
        XCTAssertEqual(budget.room, 98_000, "the latest stretch's time per row")
        var unlimited = RowBudget(maxTransactionMilliseconds: 0)
        unlimited.record(rows: 1000, seconds: 0.01)
        unlimited.record(rows: 100_000, seconds: 0.25)
        XCTAssertNil(unlimited.room)
    }

    /// Stretches of merges on a modelled table: `winners` winners in rowid order, two losers
    /// each spread along the table, a stretch ending at a share `x` of it deleting with each of
    /// its winners the `2x` of its losers whose winners lie before its end; every row written
    /// costs `perRow` seconds, each stretch `fixed` more, times `noise(i)`. The sizer is the
    /// one SQLite's stretches of merges use (``BatchSizer/growLikeBatches()``, growth up to 64);
    /// with `budgeted`, each stretch is cut as ``RowBudget`` says, its rows counted up to three
    /// times as the executor does. Returns each stretch's seconds.
    func stretches(
        winners: Int, perRow: Double, fixed: Double, budgeted: Bool, noise: (Int) -> Double = { _ in 1 }
    ) -> [Double] {
        var sizer = BatchSizer.rowRanges(BatchSettings(size: 500, maxTransactionMilliseconds: 1000))
        sizer.growLikeBatches()
        sizer.growthLimit = 64
        var budget = RowBudget(maxTransactionMilliseconds: 1000)
        func rows(from start: Int, units: Int) -> Int {
            let end = min(winners, start + units)
            return (end - start) + Int(2 * Double(end - start) * Double(end) / Double(winners))
        }
        var done = 0
        var times: [Double] = []
        while done < winners {
            var units = min(sizer.current, winners - done)
            if budgeted {
                for _ in 0..<3 {
                    guard let cut = budget.cut(units: units, rows: rows(from: done, units: units)) else { break }
                    units = cut
                }
            }
            let written = rows(from: done, units: units)
            let seconds = (fixed + perRow * Double(written)) * noise(times.count)
            times.append(seconds)
            sizer.record(size: units, seconds: seconds)
            budget.record(rows: written, seconds: seconds)
            done += units
        }
        return times
    }

    /// The cost per winner of the stretches of merges rises along the table faster than the
    /// sizer predicts (merge-500's 530,000 winners at 1,600,000 customers, 2.1-2.6 µs a row):
    /// sized by winners alone a stretch passes 0.7 of the limit, and on a machine a fifth
    /// slower than the hour the model is fitted to, the limit; counted by the rows it writes,
    /// every stretch stays within 0.6 of it, and the stretches are at most half as many again.
    func testStretchesWhoseWinnersCostMoreFurtherOnStayUnderTheLimit() {
        for (winners, perRow) in [(530_000, 2.4e-6), (1_000_000, 1.5e-6), (200_000, 6e-6)] {
            let alone = stretches(winners: winners, perRow: perRow, fixed: 0.01, budgeted: false)
            let budgeted = stretches(winners: winners, perRow: perRow, fixed: 0.01, budgeted: true)
            XCTAssertGreaterThan(alone.max()!, 0.7, "the model shows the rise (\(winners) winners): \(alone)")
            XCTAssertLessThanOrEqual(budgeted.max()!, 0.6, "\(winners) winners: \(budgeted)")
            XCTAssertLessThanOrEqual(Double(budgeted.count), Double(alone.count) * 1.5 + 1, "\(alone) against \(budgeted)")
        }
    }

    /// A table whose winners the sizer takes in two stretches, the second within half the limit
    /// (about merge-500's 67,000 winners at 200,000 customers), keeps them: the first, a few
    /// milliseconds of mostly fixed cost, is no measure of a row (taken as one, its time per
    /// row cut the second stretch to two fifths, and the losers left at its end took another
    /// pass over the table).
    func testAShortFirstStretchDoesNotCutTheNext() {
        let alone = stretches(winners: 65_000, perRow: 2e-6, fixed: 0.005, budgeted: false)
        let budgeted = stretches(winners: 65_000, perRow: 2e-6, fixed: 0.005, budgeted: true)
        XCTAssertEqual(alone.count, 2, "\(alone)")
        XCTAssertEqual(budgeted, alone)
    }

    /// The same where stretch times vary by up to a quarter either way: no stretch passes 0.8
    /// of the limit.
    func testStretchesWhoseTimesVaryStayUnderTheLimit() {
        var rng = SplitMix64(seed: 94)
        let draws = (0..<1000).map { _ in Double.random(in: 0.75...1.25, using: &rng) }
        for (winners, perRow) in [(530_000, 2.4e-6), (1_000_000, 1.5e-6), (200_000, 6e-6)] {
            let budgeted = stretches(winners: winners, perRow: perRow, fixed: 0.01, budgeted: true) { draws[$0 % draws.count] }
            XCTAssertLessThanOrEqual(budgeted.max()!, 0.8, "\(winners) winners: \(budgeted)")
        }
    }
}
