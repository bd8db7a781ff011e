import Foundation
import GRDB
import WinnowCore

/// Deletes, in stretches of their rowids, the losers that the stretches of merges ahead left
/// (``MergeAheadBatches``: those in a stretch's rowids whose winner lay in a later stretch).
/// Every merge has been applied by then and every child re-pointed ahead, so a loser needs
/// nothing but its deletion; batches of `batch.size` groups would commit a few dozen or a few
/// hundred of them at a time (merge-archive-50 at 1,600,000 customers: 326,000 losers in about
/// 3,120 batches of 50 groups, 3.1 s and a third of the run's bytes; 4 stretches took 0.8-0.9
/// s). Each stretch grows, as the stretches before it did, up to the size the time limit
/// allows, and from the second on takes more losers while its time allows (``StretchFill``):
/// it writes each page of the table about once.
///
/// While no other connection has committed since the discovery, every loser of a stretch is
/// taken. After such a commit (``DedupeExecutor/BatchState/sweepsTaken``) a stretch deletes only
/// the losers the merges recorded as taken, each still there with the winner that took it,
/// whatever its key is now: its values are in that winner. The other losers (their groups'
/// merges never went ahead) wait for the batches by group, which settle them as they are then.
/// Each stretch forgets the losers it deleted from the queue, so the batches after it see only
/// those it did not reach.
struct DeleteAheadBatches: BatchSource {
    let executor: DedupeExecutor
    let sql: BatchStatements
    /// `PRAGMA data_version` when the losers were found.
    let foundAt: Int64
    /// What the batches carry from one to the next (the deletions read through it).
    var state: DedupeExecutor.BatchState
    /// Whether the deletions check the references they touch (foreign-key enforcement is off).
    let checksReferences: Bool
    /// Whether and how far a stretch takes more losers than its bounds (``StretchFill``).
    private var fill: StretchFill
    /// The gap after each stretch while another connection commits (as between batches).
    private var gap: WriteGap
    private var held: TimeInterval = 0

    init(executor: DedupeExecutor, sql: BatchStatements, foundAt: Int64, state: DedupeExecutor.BatchState, checksReferences: Bool) {
        self.executor = executor
        self.sql = sql
        self.foundAt = foundAt
        self.state = state
        self.checksReferences = checksReferences
        fill = StretchFill(maxTransactionMilliseconds: executor.settings.maxTransactionMilliseconds)
        gap = WriteGap(settings: executor.settings, version: foundAt)
    }

    mutating func betweenBatches() throws {
        guard writes, state.sweepsTaken else { return }
        gap.waitWhileShared(after: held, db: db)
    }

    private var db: Database { executor.db }
    var writes: Bool { executor.writer.writes }
    var start: Int64 { .min }

    func nextBound(after: Int64, size: Int) throws -> Int64? {
        try sql.nextBatch.next(db, after: after, size: size)
    }

    mutating func apply(_ bounds: BatchBounds, number: Int, totals: Counts, wantSamples: Bool) throws -> BatchOutcome? {
        let (executor, sql, checksReferences) = (executor, sql, checksReferences)
        let source = self
        var state = self.state
        defer { self.state = state }
        // Beside another writer a stretch takes its bounds alone (as a stretch of children does).
        let fills = !(state.sweepsTaken && gap.observe(db))
        let started = Date()
        defer { held = Date().timeIntervalSince(started) }
        // Every winner's merge is applied: every loser of the stretch is taken (after another
        // connection's commit, those recorded as taken). More of them in the same transaction
        // while its time allows (``StretchFill``).
        guard
            let ended = try executor.filledStretch(
                bounds, number: number, totals: totals, foundAt: foundAt, revalidates: state.sweepsTaken, fills: fills, fill: &fill,
                nextBound: source.nextBound,
                apply: { after, upTo, asFound, work in
                    work.absorb(
                        try executor.deleteTaken(
                            batch: number, after: after, upTo: upTo, takenUpTo: .max, sql: sql, state: &state,
                            wantSamples: wantSamples && work.samples.isEmpty, checksReferences: checksReferences))
                    if asFound {
                        try executor.db.cachedStatement(sql: sql.forgetQueuedTaken).execute(arguments: [after, upTo, Int64.max])
                    } else {
                        try executor.db.cachedStatement(sql: sql.forgetQueuedDeleted).execute(arguments: [after, upTo])
                    }
                })
        else { return nil }
        let work = ended.work
        let counts = work.counts
        return BatchOutcome(
            counts: counts, units: ended.units, done: work.deleted + work.skipped, samples: work.samples,
            isBatch: counts.changedAnything, upTo: ended.upTo)
    }
}
