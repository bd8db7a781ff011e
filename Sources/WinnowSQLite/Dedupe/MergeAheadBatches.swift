import Foundation
import GRDB
import WinnowCore

/// Applies a rule's merges ahead of the deletions, in stretches of the winners' rowids, so that
/// the batches after it can delete the losers in stretches of theirs (``DedupeExecutor/filesByPosition``).
/// Batches by group would update a few hundred winners and delete their losers all over the
/// table in each transaction, and so rewrite most of its pages at every commit when the
/// duplicates are scattered, as real ones are; here every page is written about once for the
/// winners and once for the losers.
///
/// Every group's merge is decided once, over all its rows as found, into `temp.winnow_decided`
/// (``DedupeExecutor/mergeAhead(_:state:losers:checksReferences:batchNumber:totals:samples:)``); each stretch moves its part into `temp.winnow_merged`
/// and the writer applies it like a batch's merges (journaled when the rule archives), and
/// records the losers the merge took (`winnow_taken_losers`, ``TakenLosersRecord``) in the same
/// transaction. A merge never takes a recorded loser again: neither a batch of this run that
/// settles a group again after another connection's commit, nor a run that finishes the job
/// after this one was killed. Only while no other connection has committed since the discovery (checked inside
/// each transaction; the stretch then stops the loop, and the batches settle the remaining
/// groups whole, as they are then).
///
/// The same transaction then deletes, as a batch would (``DedupeExecutor/read(batch:after:upTo:sql:state:wantSamples:takenUpTo:)``),
/// the losers in the stretch's rowids whose winner's merge has been applied: this stretch's
/// or an earlier one's. The stretch has just written those pages for its winners, and a
/// loser whose values its winner holds is deleted without merging it again, whenever that
/// happens (also by a run that finishes the job after this one was killed), so no loser's
/// values need keeping. Only the losers whose winner lies in a later stretch wait, for the
/// stretches of their rowids after these (``DeleteAheadBatches``); the last stretch takes
/// every loser after it too, and every loser of a winner after its last (those winners'
/// merges change nothing). Where the rule's merges allow it (``gives``), none wait: the
/// stretch deletes them too, keeping the merge of their values for their winner in the same
/// transaction (``GivenMergesRecord``, ``DedupeExecutor/givenAhead(_:after:upTo:reach:)``).
///
/// A stretch is sized in winners, and its losers are counted before it: where its winners and
/// those losers are more rows than the latest time per row puts at half the limit, it takes
/// fewer winners (``RowBudget``: a row's time beyond the shortest stretch's, which the first
/// stretch measures). Further along the table more of a stretch's losers have their winner
/// merged, so a winner costs more from one stretch to the next.
struct MergeAheadBatches: BatchSource {
    let executor: DedupeExecutor
    let sql: BatchStatements
    /// `PRAGMA data_version` when the losers were found.
    let foundAt: Int64
    /// The sets of merge columns the decisions change (every stretch updates by each).
    let columnSets: [[Int]]
    /// What the batches carry from one to the next (the deletions read through it).
    var state: DedupeExecutor.BatchState
    /// Whether the deletions check the references they touch (foreign-key enforcement is off).
    let checksReferences: Bool
    /// Whether a stretch deletes every loser in its rowids, also one whose winner a later
    /// stretch merges, keeping its values until then (``DedupeExecutor/givesAhead(_:)``).
    let gives: Bool
    /// The time per row written of the latest stretch, and the rows it allows the next.
    private var budget: RowBudget

    init(
        executor: DedupeExecutor, sql: BatchStatements, foundAt: Int64, columnSets: [[Int]], state: DedupeExecutor.BatchState,
        checksReferences: Bool, gives: Bool = false
    ) {
        self.executor = executor
        self.sql = sql
        self.foundAt = foundAt
        self.columnSets = columnSets
        self.state = state
        // The stretch's losers are read after their winners' merges: nothing is merged again.
        self.state.mergedAhead = true
        self.checksReferences = checksReferences
        self.gives = gives
        budget = RowBudget(maxTransactionMilliseconds: executor.settings.maxTransactionMilliseconds)
    }

    private var db: Database { executor.db }
    var writes: Bool { executor.writer.writes }
    var start: Int64 { .min }

    func nextBound(after: Int64, size: Int) throws -> Int64? {
        try sql.nextDecided.next(db, after: after, size: size)
    }

    mutating func apply(_ bounds: BatchBounds, number: Int, totals: Counts, wantSamples: Bool) throws -> BatchOutcome? {
        let bounds = try budgeted(bounds)
        let started = Date()
        let (executor, sql, foundAt, columnSets, checksReferences) = (executor, sql, foundAt, columnSets, checksReferences)
        // The losers in the stretch's rowids whose winners are merged, its own or an earlier
        // stretch's: both bounds are its last winner (``reach(of:)``).
        let reach = try self.reach(of: bounds.upTo)
        // The losers deleted: those whose winner is merged by now, or all (``gives``).
        let takenUpTo = takenUpTo(reach)
        let piece = max(executor.settings.size, Self.pieceWinners)
        var state = self.state
        defer { self.state = state }
        let applied = try executor.writer.transaction(db) { () -> (counts: Counts, done: Int, samples: [GroupSample])? in
            let db = executor.db
            guard try executor.unchanged(since: foundAt) else { return nil }
            var merges = 0
            var counts = Counts()
            var samples: [GroupSample] = []
            // The stretch in pieces of its winners, each piece's merges and then its losers'
            // deletions: a page holding both is changed twice while it is in the cache, and
            // written once (a stretch larger than the cache, updating all its winners before
            // deleting any loser, wrote each page twice).
            var after = bounds.after
            while after < bounds.upTo {
                let upTo = min(try nextBound(after: after, size: piece) ?? bounds.upTo, bounds.upTo)
                try db.cachedStatement(sql: sql.clearMerged).execute()
                try db.cachedStatement(sql: sql.stageDecided).execute(arguments: [after, upTo])
                var merged = BatchWork(number: number)
                merged.merges = db.changesCount
                merged.mergeColumnSets = columnSets
                merged.recordsTakenLosers = true
                let deletesUpTo = upTo == bounds.upTo ? reach : upTo
                if takenUpTo > reach { merged.given = try executor.givenAhead(sql, after: after, upTo: deletesUpTo, reach: reach) }
                if merged.merges > 0 || merged.given != nil {
                    try executor.writer.apply(merged, rule: executor.rule, sql: sql, db: db)
                }
                merges += merged.merges
                let deleted = try executor.deleteTaken(
                    batch: number, after: after, upTo: deletesUpTo, takenUpTo: takenUpTo, sql: sql,
                    state: &state, wantSamples: wantSamples && samples.isEmpty, checksReferences: checksReferences)
                counts = counts + merged.counts + deleted.counts
                samples += deleted.samples
                after = upTo
            }
            try db.cachedStatement(sql: sql.forgetQueuedTaken).execute(arguments: [bounds.after, reach, takenUpTo])
            counts.batches = 1
            guard merges > 0 || counts.deleted > 0 else { return (counts, 0, []) }
            try executor.writer.recordProgress(totals + counts, db: db)
            return (counts, counts.deleted + counts.skipped, samples)
        }
        guard let applied else { return nil }
        let rows = applied.counts.updated + applied.counts.deleted
        budget.record(rows: rows, seconds: Self.secondsPerRow.map { $0 * Double(rows) } ?? Date().timeIntervalSince(started))
        return BatchOutcome(
            counts: applied.counts, units: bounds.size, done: applied.done, samples: applied.samples,
            isBatch: applied.counts.updated > 0 || applied.counts.deleted > 0, upTo: bounds.upTo)
    }

    /// `bounds`, with fewer winners where they and the losers the stretch would delete are more
    /// rows than ``RowBudget`` allows: the losers counted in the queue (a read of the temporary
    /// database, before the write transaction), the winners cut in proportion, at most
    /// ``budgetCounts`` times (the losers are not spread evenly along the table).
    private func budgeted(_ bounds: BatchBounds) throws -> BatchBounds {
        guard budget.room != nil else { return bounds }
        var (size, upTo) = (bounds.size, bounds.upTo)
        for _ in 0..<Self.budgetCounts {
            // (As far as the stretch reaches. Its winners as they lie: the last stretch's may be
            // fewer than its size.)
            let reach = try self.reach(of: upTo)
            let losers =
                try Int.fetchOne(db.cachedStatement(sql: sql.countQueuedTaken), arguments: [bounds.after, reach, takenUpTo(reach)]) ?? 0
            let winners = min(size, try sql.nextDecided.rows(db, after: bounds.after, upTo: upTo))
            guard let cut = budget.cut(units: winners, rows: winners + losers),
                let end = try nextBound(after: bounds.after, size: cut), end < upTo
            else { break }
            (size, upTo) = (cut, end)
        }
        return BatchBounds(after: bounds.after, upTo: upTo, size: size)
    }

    /// How far the deletions of a stretch of merges that ends at `upTo` reach: its last winner,
    /// or, for the last stretch, every loser left after it (those of the winners after it too:
    /// no merge of theirs changes anything, none was decided).
    private func reach(of upTo: Int64) throws -> Int64 {
        try nextBound(after: upTo, size: 1) == nil ? Int64.max : upTo
    }

    /// The last winner whose losers a stretch that reaches `reach` deletes: its own last, or,
    /// where it gives losers ahead, any.
    private func takenUpTo(_ reach: Int64) -> Int64 { gives ? .max : reach }

    /// The most times a stretch's losers are counted (``budgeted(_:)``).
    static let budgetCounts = 3

    /// Tests: the time a row written is taken to cost, in place of the time measured.
    nonisolated(unsafe) static var secondsPerRow: Double?

    /// The fewest winners in a piece of a stretch (or `batch.size`, where larger): a piece's
    /// rows, winners and losers around them, are a few hundred kilobytes of a table of short
    /// rows, well within SQLite's default page cache. Tests lower it to see many pieces.
    static var pieceWinners = 1000
}
