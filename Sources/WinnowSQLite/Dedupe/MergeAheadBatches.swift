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
/// (``DedupeExecutor/mergeAhead(_:state:losers:batchNumber:totals:samples:)``); each stretch moves its part into `temp.winnow_merged`
/// and the writer applies it like a batch's merges (journaled when the rule archives), and
/// records the losers the merge took (`winnow_merged_losers`) in the same transaction. A merge
/// never takes a recorded loser again: neither a batch of this run that settles a group again
/// after another connection's commit, nor a run that finishes the job after this one was
/// killed. Only while no other connection has committed since the discovery (checked inside
/// each transaction; the stretch then stops the loop, and the batches settle the remaining
/// groups whole, as they are then).
struct MergeAheadBatches: BatchSource {
    let executor: DedupeExecutor
    let sql: BatchStatements
    /// `PRAGMA data_version` when the losers were found.
    let foundAt: Int64
    /// The sets of merge columns the decisions change (every stretch updates by each).
    let columnSets: [[Int]]

    init(executor: DedupeExecutor, sql: BatchStatements, foundAt: Int64, columnSets: [[Int]]) {
        self.executor = executor
        self.sql = sql
        self.foundAt = foundAt
        self.columnSets = columnSets
    }

    private var db: Database { executor.db }
    var writes: Bool { executor.writer.writes }
    var start: Int64 { .min }

    func nextBound(after: Int64, size: Int) throws -> Int64? {
        return try Int64.fetchOne(db.cachedStatement(sql: sql.nextDecided), arguments: [after, size])
    }

    mutating func apply(_ bounds: BatchBounds, number: Int, totals: Counts, wantSamples: Bool) throws -> BatchOutcome? {
        let (executor, sql, foundAt, columnSets) = (executor, sql, foundAt, columnSets)
        let work = try executor.writer.transaction(db) { () -> BatchWork? in
            let db = executor.db
            guard try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA main.data_version")) == foundAt else { return nil }
            try db.cachedStatement(sql: sql.clearMerged).execute()
            try db.cachedStatement(sql: sql.stageDecided).execute(arguments: [bounds.after, bounds.upTo])
            var work = BatchWork(number: number)
            work.merges = db.changesCount
            work.mergeColumnSets = columnSets
            work.recordsTakenLosers = true
            guard work.merges > 0 else { return work }
            try executor.writer.apply(work, rule: executor.rule, sql: sql, db: db)
            try executor.writer.recordProgress(totals + work.counts, db: db)
            return work
        }
        guard let work else { return nil }
        return BatchOutcome(counts: work.counts, units: bounds.size, done: 0, isBatch: work.merges > 0)
    }
}
