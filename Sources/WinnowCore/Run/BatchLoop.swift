import Foundation

/// One batch of a rule's work: the stretch `(after, upTo]` of the order in which a
/// ``BatchSource`` lays its work out (SQLite's queue of losers filed by a rowid of their group,
/// PostgreSQL's groups numbered on the server, a child table's rowids for re-pointing ahead).
public struct BatchBounds: Sendable, Equatable {
    public var after: Int64
    public var upTo: Int64
    /// The units the stretch was laid out for: the size its end was asked at (a loop over row
    /// ranges reports it to the sizer as the stretch's rows).
    public var size: Int

    public init(after: Int64, upTo: Int64, size: Int) {
        self.after = after
        self.upTo = upTo
        self.size = size
    }
}

/// What one batch did, as its source reports it to the loop.
public struct BatchOutcome: Sendable {
    public var counts: Counts
    /// Units of work it settled (groups, or rows of a stretch), for the sizer.
    public var units: Int
    /// Losers it handled (deleted, or skipped because they no longer are losers), for progress.
    public var done: Int
    public var samples: [GroupSample]
    /// Whether it counts as a batch: a stretch that found nothing to change commits no work,
    /// takes no batch number and is not reported.
    public var isBatch: Bool
    /// Where the batch ended, where its source took more than its bounds in the same
    /// transaction (``StretchFill``); nil: at its bounds' `upTo`.
    public var upTo: Int64?

    public init(
        counts: Counts, units: Int, done: Int, samples: [GroupSample] = [], isBatch: Bool = true, upTo: Int64? = nil
    ) {
        self.counts = counts
        self.units = units
        self.done = done
        self.samples = samples
        self.isBatch = isBatch
        self.upTo = upTo
    }
}

/// The primitives of one rule's batches on one engine: where the next batch ends, and how one
/// batch is applied. The loop that drives them (sizes, pauses, the deadline, progress events,
/// counting) is ``BatchLoop``, the same for every engine.
public protocol BatchSource {
    /// Whether batches write: only then does the loop pause between them and stop at the
    /// deadline (a dry run reads everything, fast, and leaves nothing half done).
    var writes: Bool { get }
    /// Where the work starts (the `after` of the first batch).
    var start: Int64 { get }
    /// The end of the next batch of about `size` units after `after`; nil when no work is left.
    /// Only reads: the loop may also ask it past a batch's end, to see whether a short rest is
    /// left (``BatchSizer/tailAllowance``), and the size a batch was laid out for comes with its
    /// bounds.
    mutating func nextBound(after: Int64, size: Int) throws -> Int64?
    /// Applies one batch (in one transaction, with the run's progress `totals` plus its own
    /// counts recorded in it), or reads it without writing. Nil stops the loop: the source's
    /// premise no longer holds (another connection committed under work that needs the rows as
    /// found), and what is left goes to the next stage.
    mutating func apply(_ bounds: BatchBounds, number: Int, totals: Counts, wantSamples: Bool) throws -> BatchOutcome?
    /// Runs between two batches, before the pause (a backend watches other writers here).
    mutating func betweenBatches() throws
}

extension BatchSource {
    public mutating func betweenBatches() throws {}
}

/// Thrown by a source whose batch committed part of its work before the rest failed (one
/// batch applied in two transactions): the loop adds `counts` to the run's totals, which the
/// run's record keeps when the run fails, before `error` goes on.
public struct PartlyCommittedBatch: Error {
    public var counts: Counts
    public var error: any Error

    public init(counts: Counts, error: any Error) {
        self.counts = counts
        self.error = error
    }
}

/// Drives a ``BatchSource`` batch after batch: the batch size adapts to `max_transaction_ms`
/// (``BatchSizer``), writing batches are `pause_ms` apart and stop once the deadline has passed
/// (after the batch in flight committed, never before the first), and each batch is reported as
/// a ``RunEvent/batch(_:)``.
public struct BatchLoop {
    public var rule: Int
    public var table: String
    /// Losers the rule found (the progress total).
    public var total: Int
    /// Losers an earlier loop of the same rule handled: the progress this loop reports starts
    /// from them (a rule's stretches ahead and its batches count toward one total).
    public var handledBefore = 0
    public var pauseMilliseconds: Int
    public var deadline: RunDeadline
    public var sampleLimit: Int
    public var onEvent: (RunEvent) -> Void
    /// How the loop waits `pause_ms` (replaced in tests).
    public var sleep: (TimeInterval) -> Void = { Thread.sleep(forTimeInterval: $0) }
    /// The time (replaced in tests).
    public var now: () -> Date = { Date() }

    public init(
        rule: Int, table: String, total: Int, pauseMilliseconds: Int, deadline: RunDeadline, sampleLimit: Int = 0,
        onEvent: @escaping (RunEvent) -> Void
    ) {
        self.rule = rule
        self.table = table
        self.total = total
        self.pauseMilliseconds = pauseMilliseconds
        self.deadline = deadline
        self.sampleLimit = sampleLimit
        self.onEvent = onEvent
    }

    /// How a loop ended.
    public struct Result {
        /// The counts of its batches.
        public var counts = Counts()
        /// Whether the source ran out of work (not stopped by the deadline or the source).
        public var finished = false
        /// Losers handled.
        public var done = 0
    }

    /// Runs `source` until it has no work left, the deadline has passed or it stops itself.
    /// `batchNumber`, `totals` and `samples` carry on from rule to rule and stage to stage.
    public func run<Source: BatchSource>(
        _ source: inout Source, sizer: BatchSizer, batchNumber: inout Int, totals: inout Counts, samples: inout SampleList
    ) throws -> Result {
        var sizer = sizer
        var result = Result()
        var after = source.start
        var batches = 0
        while true {
            guard var upTo = try source.nextBound(after: after, size: sizer.current) else {
                result.finished = true
                break
            }
            var size = sizer.current
            // A short rest goes with the stretch before it (loops over row ranges only,
            // ``BatchSizer/tailAllowance``): a stretch of children re-pointed through an index
            // rewrites most of that index whatever its size, and one more for the last few
            // thousand rows wrote it all again.
            let tail = sizer.tailAllowance
            if tail > 0, let end = try source.nextBound(after: upTo, size: tail),
                try source.nextBound(after: end, size: 1) == nil
            {
                upTo = end
                size += tail
            }
            if batches > 0 {  // between batches only, never before the first or after the last
                if source.writes, deadline.passed(now()) { break }
                try source.betweenBatches()
                if source.writes, pauseMilliseconds > 0 { sleep(Double(pauseMilliseconds) / 1000) }
                // The pause (or a backend's gap for other writers) may have taken the time left.
                if source.writes, deadline.passed(now()) { break }
            }
            let started = now()
            let number = batchNumber
            let applied: BatchOutcome?
            do {
                applied = try source.apply(
                    BatchBounds(after: after, upTo: upTo, size: size), number: number, totals: totals,
                    wantSamples: samples.count < sampleLimit)
            } catch let partly as PartlyCommittedBatch {
                totals = totals + partly.counts
                throw partly.error
            }
            guard let outcome = applied else { break }
            let seconds = now().timeIntervalSince(started)
            sizer.record(size: outcome.units, seconds: seconds)
            after = outcome.upTo ?? upTo
            guard outcome.isBatch else { continue }
            batches += 1
            result.counts = result.counts + outcome.counts
            totals = totals + outcome.counts
            try samples.append(contentsOf: outcome.samples.prefix(max(0, sampleLimit - samples.count)))
            result.done += outcome.done
            onEvent(
                .batch(
                    BatchReport(
                        rule: rule, table: table, batch: number, counts: outcome.counts, seconds: seconds,
                        done: handledBefore + result.done, total: total)))
            batchNumber += 1
        }
        return result
    }
}
