import Foundation
import XCTest

@testable import WinnowCore

/// The one batch loop, against a modelled source: where it pauses, when it stops, what it
/// counts and reports. Time is a fake clock, so nothing here sleeps.
final class BatchLoopTests: XCTestCase {
    /// Work laid out as positions 1...units; each batch takes the next `size` of them.
    struct Source: BatchSource {
        var units: Int
        var writes: Bool
        /// Seconds each batch takes on the fake clock, per unit.
        var secondsPerUnit = 0.0
        /// Applying the batch that starts after this position returns nil (the premise broke).
        var stopAfter: Int64?
        /// Batches that change nothing (no batch), by the position they start after.
        var empty: Set<Int64> = []
        /// Units each batch takes beyond its bounds in the same transaction (``StretchFill``).
        var beyond = 0
        var clock: FakeClock
        var applied: [BatchBounds] = []
        var between = 0

        var start: Int64 { 0 }

        func nextBound(after: Int64, size: Int) throws -> Int64? {
            after < Int64(units) ? min(Int64(units), after + Int64(size)) : nil
        }

        mutating func apply(_ bounds: BatchBounds, number: Int, totals: Counts, wantSamples: Bool) throws -> BatchOutcome? {
            if bounds.after == stopAfter { return nil }
            applied.append(bounds)
            let end = min(Int64(units), bounds.upTo + Int64(beyond))
            let units = Int(end - bounds.after)
            clock.advance(secondsPerUnit * Double(units))
            var counts = Counts()
            counts.groups = units
            counts.deleted = units
            counts.batches = 1
            let samples =
                wantSamples
                ? [
                    GroupSample(
                        key: ["\(bounds.upTo)"], winner: RowIdentity.rowid(expression: "rowid", alias: nil).key(rowid: bounds.upTo),
                        losers: [])
                ] : []
            return BatchOutcome(
                counts: counts, units: units, done: units, samples: samples, isBatch: !empty.contains(bounds.after),
                upTo: end == bounds.upTo ? nil : end)
        }

        mutating func betweenBatches() throws { between += 1 }
    }

    final class FakeClock: @unchecked Sendable {
        var time = Date(timeIntervalSince1970: 1_000_000)
        var slept: [TimeInterval] = []
        func advance(_ seconds: TimeInterval) { time += seconds }
    }

    func loop(pause: Int = 0, deadline: RunDeadline = RunDeadline(at: nil), samples: Int = 0, clock: FakeClock) -> (BatchLoop, Box) {
        let box = Box()
        var loop = BatchLoop(
            rule: 3, table: "t", total: 10, pauseMilliseconds: pause, deadline: deadline, sampleLimit: samples,
            onEvent: { event in if case let .batch(report) = event { box.reports.append(report) } })
        loop.now = { clock.time }
        loop.sleep = { seconds in
            clock.slept.append(seconds)
            clock.advance(seconds)
        }
        return (loop, box)
    }

    /// Runs `loop` over `source` from batch 0 with fresh totals, in batches of `size` units.
    func run(_ loop: BatchLoop, _ source: inout Source, size: Int, maxTransactionMilliseconds: Int = 1000) throws -> BatchLoop.Result {
        var number = 0
        var totals = Counts()
        var samples = SampleList()
        return try loop.run(
            &source, sizer: BatchSizer(configured: size, maxTransactionMilliseconds: maxTransactionMilliseconds), batchNumber: &number,
            totals: &totals, samples: &samples)
    }

    final class Box: @unchecked Sendable {
        var reports: [BatchReport] = []
    }

    func testWritingBatchesPauseBetweenThemNeverBeforeTheFirstOrAfterTheLast() throws {
        let clock = FakeClock()
        var source = Source(units: 10, writes: true, clock: clock)
        let (loop, box) = loop(pause: 250, clock: clock)
        var number = 7
        var totals = Counts()
        var samples = SampleList()
        let result = try loop.run(
            &source, sizer: BatchSizer(configured: 4, maxTransactionMilliseconds: 1000), batchNumber: &number, totals: &totals,
            samples: &samples)
        XCTAssertEqual(source.applied.map(\.upTo), [4, 8, 10])
        XCTAssertEqual(source.applied.map(\.after), [0, 4, 8])
        XCTAssertEqual(clock.slept, [0.25, 0.25])
        XCTAssertEqual(source.between, 2)
        XCTAssertTrue(result.finished)
        XCTAssertEqual(result.counts.deleted, 10)
        XCTAssertEqual(result.counts.batches, 3)
        XCTAssertEqual(totals.deleted, 10)
        XCTAssertEqual(number, 10)
        XCTAssertEqual(box.reports.map(\.batch), [7, 8, 9])
        XCTAssertEqual(box.reports.map(\.done), [4, 8, 10])
        XCTAssertEqual(box.reports.map(\.total), [10, 10, 10])
        XCTAssertEqual(box.reports.map(\.rule), [3, 3, 3])
    }

    /// `plan` reads every batch without writing: no pause, whatever `pause_ms` says, and no
    /// deadline (a plan is never left half counted).
    func testADryRunNeverPausesAndIgnoresTheDeadline() throws {
        let clock = FakeClock()
        var source = Source(units: 10, writes: false, clock: clock)
        let deadline = RunDeadline(at: clock.time.addingTimeInterval(-1))
        let (loop, _) = loop(pause: 1000, deadline: deadline, clock: clock)
        var number = 0
        var totals = Counts()
        var samples = SampleList()
        let result = try loop.run(
            &source, sizer: BatchSizer(configured: 3, maxTransactionMilliseconds: 1000), batchNumber: &number, totals: &totals,
            samples: &samples)
        XCTAssertEqual(clock.slept, [])
        XCTAssertTrue(result.finished)
        XCTAssertEqual(result.counts.deleted, 10)
        XCTAssertEqual(number, 4)
    }

    /// A passed deadline stops a writing loop after the batch in flight, never before the first.
    func testTheDeadlineStopsBetweenBatchesAfterTheFirst() throws {
        let clock = FakeClock()
        var source = Source(units: 10, writes: true, secondsPerUnit: 1, clock: clock)
        let deadline = RunDeadline(at: clock.time.addingTimeInterval(5))
        let (loop, box) = loop(deadline: deadline, clock: clock)
        let result = try run(loop, &source, size: 3, maxTransactionMilliseconds: 100_000)
        // Batches of 3 units, 3 s each: the deadline (5 s) passes during the second.
        XCTAssertEqual(source.applied.count, 2)
        XCTAssertFalse(result.finished)
        XCTAssertEqual(result.counts.deleted, 6)
        XCTAssertEqual(box.reports.count, 2)

        let early = FakeClock()
        var first = Source(units: 10, writes: true, clock: early)
        let (passed, _) = self.loop(deadline: RunDeadline(at: early.time.addingTimeInterval(-60)), clock: early)
        _ = try run(passed, &first, size: 3)
        XCTAssertEqual(first.applied.count, 1, "a deadline already passed still lets one batch through")
    }

    /// No batch starts once the deadline has passed, also when it passed during the pause
    /// between two batches (`pause_ms`, or a backend's gap for other writers).
    func testADeadlinePassedDuringThePauseStartsNoBatch() throws {
        let clock = FakeClock()
        var source = Source(units: 10, writes: true, secondsPerUnit: 1, clock: clock)
        // Batches of 3 units take 3 s; the deadline (4 s) passes during the 2 s pause after the first.
        let (loop, box) = loop(pause: 2000, deadline: RunDeadline(at: clock.time.addingTimeInterval(4)), clock: clock)
        let result = try run(loop, &source, size: 3, maxTransactionMilliseconds: 100_000)
        XCTAssertEqual(source.applied.count, 1)
        XCTAssertEqual(clock.slept, [2])
        XCTAssertFalse(result.finished)
        XCTAssertEqual(box.reports.count, 1)
    }

    /// A source whose premise broke stops the loop; a stretch with nothing to change is no batch.
    func testASourceStopsTheLoopAndEmptyStretchesAreNoBatches() throws {
        let clock = FakeClock()
        var source = Source(units: 10, writes: true, stopAfter: 8, empty: [2], clock: clock)
        let (loop, box) = loop(pause: 10, clock: clock)
        var number = 0
        var totals = Counts()
        var samples = SampleList()
        let result = try loop.run(
            &source, sizer: BatchSizer(configured: 2, maxTransactionMilliseconds: 1000), batchNumber: &number, totals: &totals,
            samples: &samples)
        XCTAssertEqual(source.applied.map(\.after), [0, 2, 4, 6])
        XCTAssertFalse(result.finished)
        XCTAssertEqual(box.reports.map(\.batch), [0, 1, 2], "the empty stretch took no number")
        XCTAssertEqual(result.counts.batches, 3)
        XCTAssertEqual(result.counts.deleted, 6)
        XCTAssertEqual(number, 3)
    }

    /// A loop after an earlier one of the same rule reports its progress from what that one
    /// handled, toward the same total; its own result counts its own losers.
    func testProgressCarriesOnFromAnEarlierLoop() throws {
        let clock = FakeClock()
        var source = Source(units: 4, writes: true, clock: clock)
        var (loop, box) = loop(clock: clock)
        loop.handledBefore = 6
        let result = try run(loop, &source, size: 2)
        XCTAssertEqual(box.reports.map(\.done), [8, 10])
        XCTAssertEqual(box.reports.map(\.total), [10, 10])
        XCTAssertEqual(result.done, 4)
    }

    /// Batches shrink when they take longer than `max_transaction_ms`, and samples stop at the limit.
    func testTheSizerShrinksSlowBatchesAndSamplesStopAtTheLimit() throws {
        let clock = FakeClock()
        var source = Source(units: 1000, writes: true, secondsPerUnit: 0.001, clock: clock)
        let (loop, _) = loop(samples: 2, clock: clock)
        var number = 0
        var totals = Counts()
        var samples = SampleList()
        _ = try loop.run(
            &source, sizer: BatchSizer(configured: 200, maxTransactionMilliseconds: 50), batchNumber: &number, totals: &totals,
            samples: &samples)
        let sizes = source.applied.map { $0.upTo - $0.after }
        XCTAssertEqual(sizes.first, 200)
        XCTAssertLessThanOrEqual(sizes.dropFirst().max() ?? 0, 50, "sizes after the first slow batch: \(sizes)")
        XCTAssertEqual(samples.count, 2, "one sample per batch, up to the limit")
        XCTAssertEqual(samples.first?.key, ["200"])
    }

    /// A loop over row ranges takes a rest of at most a quarter of a stretch with that stretch
    /// (a stretch of children rewrites an index whatever its size); batches of groups never do.
    func testARowRangeLoopTakesAShortRestWithTheStretchBeforeIt() throws {
        let settings = BatchSettings(size: 500, maxTransactionMilliseconds: 1000)
        func sizes(units: Int, sizer: BatchSizer) throws -> [Int64] {
            let clock = FakeClock()
            var source = Source(units: units, writes: true, clock: clock)
            let (loop, _) = loop(clock: clock)
            var number = 0
            var totals = Counts()
            var samples = SampleList()
            _ = try loop.run(&source, sizer: sizer, batchNumber: &number, totals: &totals, samples: &samples)
            XCTAssertEqual(source.applied.last?.upTo, Int64(units), "every unit taken")
            return source.applied.map { $0.upTo - $0.after }
        }
        let rows = BatchSizer.rowRanges(settings)
        XCTAssertEqual(rows.current, 1000)
        XCTAssertEqual(try sizes(units: 1250, sizer: rows), [1250], "a quarter more: one stretch")
        XCTAssertEqual(try sizes(units: 1251, sizer: rows), [1000, 251], "more than a quarter: a stretch of its own")
        XCTAssertEqual(try sizes(units: 900, sizer: rows), [900])
        // The sizes the loop reports for the sizer's line are those of the stretches taken.
        let groups = BatchSizer(configured: 1000, maxTransactionMilliseconds: 1000)
        XCTAssertEqual(groups.tailAllowance, 0)
        XCTAssertEqual(try sizes(units: 1200, sizer: groups), [1000, 200], "batches of groups keep the job's size")
        // Never beyond the configured maximum.
        var capped = BatchSizer.rowRanges(BatchSettings(size: 1, maxTransactionMilliseconds: 1000), upTo: 1)
        XCTAssertEqual(capped.configured, 1000)
        XCTAssertEqual(capped.tailAllowance, 0)
        capped.record(size: 1000, seconds: 0.001)
        XCTAssertEqual(try sizes(units: 1100, sizer: capped), [1000, 100])
    }

    /// Each stretch's bounds carry the size it was asked at, a taken rest included: sources
    /// over row ranges report it to the sizer as the stretch's rows.
    func testTheBoundsCarryTheSizeEachStretchWasAskedAt() throws {
        let clock = FakeClock()
        var source = Source(units: 18_100, writes: true, secondsPerUnit: 0.000_01, clock: clock)
        let (loop, _) = loop(clock: clock)
        var number = 0
        var totals = Counts()
        var samples = SampleList()
        _ = try loop.run(
            &source, sizer: BatchSizer.rowRanges(BatchSettings(size: 500, maxTransactionMilliseconds: 1000)),
            batchNumber: &number, totals: &totals, samples: &samples)
        // 1,000 rows in 10 ms grow the next stretch sixteen times; its rest of 1,100 rows is
        // within a quarter of it.
        XCTAssertEqual(source.applied.map(\.size), [1000, 16_000 + 4000])
        XCTAssertEqual(source.applied.map { $0.upTo - $0.after }, [1000, 17_100])
    }

    /// A batch that took more than its bounds in its transaction (a filled stretch): the next
    /// one starts where it ended, so every unit is taken once, and the sizer is told its rows.
    func testTheNextBatchStartsWhereASourceThatTookMoreEnded() throws {
        let clock = FakeClock()
        var source = Source(units: 10_000, writes: true, secondsPerUnit: 0.000_01, clock: clock)
        source.beyond = 500
        let (loop, box) = loop(clock: clock)
        let result = try run(loop, &source, size: 1000)
        XCTAssertEqual(source.applied.map(\.after), [0, 1500, 3000, 4500, 6000, 7500, 9000])
        XCTAssertEqual(result.done, 10_000)
        XCTAssertEqual(box.reports.map(\.counts.deleted), [1500, 1500, 1500, 1500, 1500, 1500, 1000])
        XCTAssertTrue(result.finished)
    }
}
