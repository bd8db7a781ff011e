import Foundation
import GRDB
import WinnowCore

/// Re-points the children of the losers ahead of the batches, in the child table's rowid order,
/// for one path that allows it (``BatchStatements/aheadPaths``: no index on the reference,
/// which holds the parent's rowid): each transaction takes the next stretch of child rows,
/// re-points those that point at a loser whose winner is settled, and maps the rest of the
/// stretch for the batches (``DedupeExecutor/mapChildren(_:state:ahead:)`` left these paths
/// out). Every page of the child table is so rewritten about once, where batches by group
/// rewrite most of its pages each time (the children of a batch's losers lie all over it).
///
/// Only while no other connection has committed since the discovery (checked inside each
/// transaction; the stretch then stops the loop), so that every loser and its winner are as
/// found; a group whose winner ties its second row on the winner terms is settled by content in
/// its batch, and re-pointed there. A batch that, after another connection's commit, no longer
/// deletes a loser whose children went ahead moves them back (``BatchStatements/moveBack``).
/// Each stretch is journaled and committed as a batch of its own; a stretch with nothing to
/// move is no batch. Not for a run that may stop early (`--max-duration`, a fleet): it would
/// leave children on the winners of groups it never reached.
struct AheadBatches: BatchSource {
    let executor: DedupeExecutor
    let sql: BatchStatements
    let path: Int
    /// `PRAGMA data_version` when the losers were found.
    let foundAt: Int64
    private let next: String?
    private let moves: String?
    private let map: String?

    init(executor: DedupeExecutor, sql: BatchStatements, path: Int, foundAt: Int64) {
        self.executor = executor
        self.sql = sql
        self.path = path
        self.foundAt = foundAt
        next = sql.nextAhead[path]
        moves = sql.aheadMoves[path]
        map = sql.mapAhead[path]
    }

    /// Whether the path has the statements of this stage (a path with an index on its
    /// reference has no map to keep).
    var ready: Bool { next != nil && moves != nil && (map != nil || sql.rule.references[path].indexed) }
    private var db: Database { executor.db }
    var writes: Bool { executor.writer.writes }
    var start: Int64 { .min }

    func nextBound(after: Int64, size: Int) throws -> Int64? {
        guard let next else { return nil }
        return try Int64.fetchOne(db.cachedStatement(sql: next), arguments: [after, size])
    }

    mutating func apply(_ bounds: BatchBounds, number: Int, totals: Counts, wantSamples: Bool) throws -> BatchOutcome? {
        guard let moves else { return nil }
        let map = self.map
        let (executor, sql, path, foundAt) = (executor, sql, path, foundAt)
        let work = try executor.writer.transaction(db) { () -> BatchWork? in
            let db = executor.db
            guard try executor.unchanged(since: foundAt) else { return nil }
            try db.cachedStatement(sql: sql.clearMoves).execute()
            try db.cachedStatement(sql: moves).execute(arguments: [bounds.after, bounds.upTo])
            var work = BatchWork(number: number)
            work.moved = [(path: path, count: db.changesCount)]
            if work.counts.repointed > 0 {
                try db.cachedStatement(sql: sql.recordAhead).execute()
                try executor.writer.apply(work, rule: executor.rule, sql: sql, db: db)
                try executor.writer.recordProgress(totals + work.counts, db: db)
            }
            if let map { try db.cachedStatement(sql: map).execute(arguments: [bounds.after, bounds.upTo]) }
            return work
        }
        guard let work else { return nil }
        return BatchOutcome(counts: work.counts, units: bounds.size, done: 0, isBatch: work.counts.repointed > 0)
    }
}
