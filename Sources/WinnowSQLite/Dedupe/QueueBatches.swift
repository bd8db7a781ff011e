import Foundation
import GRDB
import WinnowCore

/// The batches of one rule on SQLite, for the core's ``BatchLoop``: stretches of
/// `temp.winnow_queue` (each loser filed under one rowid of its group, ``DedupeExecutor/discoverySQL``),
/// each read as it is now (``DedupeExecutor/read(batch:after:upTo:sql:state:wantSamples:)``) and
/// applied by the executor's ``BatchWriter`` in one transaction with the run's progress.
struct QueueBatches: BatchSource {
    let executor: DedupeExecutor
    let sql: BatchStatements
    var state: DedupeExecutor.BatchState
    /// Whether the batches check the references they touch (foreign-key enforcement is off).
    let checksReferences: Bool
    var gap: WriteGap
    /// Losers per group: the sizer of a queue filed by position counts losers, so once the
    /// queue is filed by group again, a batch takes `size / perGroup` groups (the configured
    /// number of groups, as a rule filed by group has from the start).
    let perGroup: Double

    init(executor: DedupeExecutor, sql: BatchStatements, state: DedupeExecutor.BatchState, checksReferences: Bool, perGroup: Double = 1) {
        self.executor = executor
        self.sql = sql
        self.state = state
        self.checksReferences = checksReferences
        self.perGroup = perGroup
        self.gap = WriteGap(settings: executor.settings, version: state.foundAt)
    }

    /// The first batch's share of `batch.size` when another connection has committed since the
    /// duplicates were found: 1/8. Beside merge-500's writer under `max_transaction_ms: 50`
    /// (docs/performance.md, "A writer beside the batches"), a first batch of 500 groups held the
    /// lock for 80-98 ms and set that writer's worst wait in WAL.
    static let firstBatchShareBesideWriter = 8

    /// Beside another writer (a connection has committed since the duplicates were found, as
    /// ``WriteGap`` sees it), holds the first batch back to ``firstBatchShareBesideWriter`` of
    /// the size, and the sizer grows the next from its time (``BatchSizer/holdBack(to:)``): a
    /// `batch.size` too large for `max_transaction_ms` would otherwise hold SQLite's lock past
    /// the limit once, before the sizer has a time to go by, and that writer waits for all of it.
    mutating func holdBackFirstBatch(_ sizer: inout BatchSizer) {
        guard writes, gap.observe(db) else { return }
        sizer.holdBack(to: sizer.configured / Self.firstBatchShareBesideWriter)
    }

    /// How long the last batch's transaction held the write lock.
    private var held: TimeInterval = 0

    /// Whether the bounds count groups of a queue that was filed by position (and the sizer losers).
    private var countsGroupsOfLosers: Bool { executor.filesByPosition && state.refiled }

    private var db: Database { executor.db }
    var writes: Bool { executor.writer.writes }
    var start: Int64 { .min }

    func nextBound(after: Int64, size: Int) throws -> Int64? {
        let groups = countsGroupsOfLosers ? max(1, Int((Double(size) / perGroup).rounded())) : size
        return try sql.nextBatch.next(db, after: after, size: groups)
    }

    /// Another connection's commit widens the checkpoint (``WriteGap``), and while one has
    /// committed in the last seconds (since discovery, or between two batches) the next batch
    /// waits as long as the last one held the lock (`pause_ms: 0`): SQLite's write lock has no
    /// queue, and back-to-back batches leave gaps that a writer's busy handler, sleeping 1, 2,
    /// 5, ... 100 ms between tries, almost never lands in. Without another connection's commit
    /// the batches go on at once.
    mutating func betweenBatches() throws {
        guard writes else { return }
        gap.waitWhileShared(after: held, db: db, version: state.version)
    }

    mutating func apply(_ bounds: BatchBounds, number: Int, totals: Counts, wantSamples: Bool) throws -> BatchOutcome? {
        var state = self.state
        defer { self.state = state }
        let executor = executor
        let started = Date()
        defer { held = Date().timeIntervalSince(started) }
        let work = try executor.writer.transaction(db) { () -> BatchWork in
            var work = try executor.read(
                batch: number, after: bounds.after, upTo: bounds.upTo, sql: sql, state: &state, wantSamples: wantSamples)
            work.checksReferences = checksReferences
            try executor.writer.apply(work, rule: executor.rule, sql: sql, db: executor.db)
            try executor.writer.recordProgress(totals + work.counts, db: executor.db)
            return work
        }
        // The sizer counts what the bounds count: losers where they are filed by position.
        let units =
            !executor.filesByPosition
            ? work.groups
            : state.refiled ? Int((Double(work.groups) * perGroup).rounded()) : work.deleted + work.skipped
        return BatchOutcome(counts: work.counts, units: units, done: work.deleted + work.skipped, samples: work.samples)
    }
}
