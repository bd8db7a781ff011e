import Foundation
import GRDB
import WinnowCore

/// Re-points the children of the losers ahead of the batches, in the child table's rowid order,
/// for one path that allows it (``BatchStatements/aheadPaths``: a reference that holds the
/// parent's rowid, in another table, with no unique key that re-pointing could break): each
/// transaction takes the next stretch of child rows, re-points those that point at a loser
/// whose winner is settled, and maps the rest of the stretch for the batches (``DedupeExecutor/mapChildren(_:state:ahead:)`` left these paths
/// out). Every page of the child table is so rewritten about once, where batches by group
/// rewrite most of its pages each time (the children of a batch's losers lie all over it).
///
/// While no other connection has committed since the discovery (checked inside each
/// transaction), every loser and its winner are as found. After such a commit the stretches go
/// on (``revalidates``): each stretch first forgets the moves that no longer hold as the rows
/// are now (``BatchStatements/pruneAhead``: the child no longer points at the loser, the loser
/// or its winner is gone, or they no longer share a key), so it moves children only to a row
/// that exists, of a loser still beside it; the stretches then leave the lock free between them
/// as batches do beside another writer (``WriteGap``). A path without an index then maps
/// nothing for the batches: from such a commit on they map their own rows' children as they go
/// (``DedupeExecutor/mapWindow(_:after:upTo:version:state:)``), as the rows are then.
/// A group whose winner ties its second row on the winner terms is settled by content in
/// its batch, and re-pointed there. A batch that, after another connection's commit, no longer
/// deletes a loser whose children went ahead, or no longer keeps their winner, moves them back
/// or on (``BatchStatements/moveBack``, then the batch's own moves).
/// Each stretch is journaled and committed as a batch of its own; a stretch with nothing to
/// move is no batch. Where a stretch's commit is long (the child's index rewritten), a stretch
/// takes more rows than its bounds while its time allows (``StretchFill``), and the moves of
/// the rows it is likely to take are found before its write transaction (``findAhead(from:)``).
/// Not for a run that may stop early (`--max-duration`, a fleet): it would leave children on
/// the winners of groups it never reached.
struct AheadBatches: BatchSource {
    let executor: DedupeExecutor
    let sql: BatchStatements
    let path: Int
    /// `PRAGMA data_version` when the losers were found.
    let foundAt: Int64
    private let next: RangeBound
    private let find: String
    private let map: String?
    /// Whether and how far a stretch takes more rows than its bounds (``StretchFill``).
    private var fill: StretchFill
    /// Where the moves found so far end: `winnow_ahead` holds those of the path's child rows up
    /// to here; those past the last stretch's end are found and not yet applied. Nil: none.
    private var foundUpTo: Int64?
    /// Where the last stretch ended: the moves up to here are applied.
    private var appliedUpTo: Int64?
    /// The child rows the last stretch took.
    private var lastUnits = 0
    /// About how many child rows past where the last stretch ended have their moves found.
    private var aheadUnits = 0
    /// What finding the moves of a child row took in the last read (seconds; nil before one).
    private var findCost: Double?
    /// Whether a stretch goes on after another connection's commit, checking its moves as the
    /// rows are now.
    let revalidates: Bool
    /// The highest child rowid when the stage began: the stretches end there. Child rows
    /// another connection adds past it go with their losers' batches, which look for the
    /// children of their losers as the rows are then; stretches that followed them could
    /// chase a writer that appends children without end.
    private let end: Int64?
    /// The gap between two stretches while another connection commits (as between batches).
    private var gap: WriteGap
    /// How long the last stretch's transaction held the write lock.
    private var held: TimeInterval = 0
    /// The moves of the last stretch that applied any, and its transaction's time in seconds
    /// (``movesRoom(_:)``).
    private var lastMoving: (moves: Int, seconds: Double)?
    /// How many more child rows than the last stretch took (or than its bounds) the moves are
    /// found for before a stretch: a filled stretch may take more than the one before it, and
    /// what it does not take stays found for the next.
    static let foundAheadShare = 1.5

    /// Nil where the path lacks the statements of this stage (a path with an index on its
    /// reference has no map to keep). `settled`: the moves are found through the settled
    /// winners held in memory (``SettledWinners``, registered by the caller).
    init?(executor: DedupeExecutor, sql: BatchStatements, path: Int, foundAt: Int64, settled: Bool = false) throws {
        guard let next = sql.nextAhead[path], let find = (settled ? sql.findAheadSettled : sql.findAhead)[path],
            sql.mapAhead[path] != nil || sql.rule.references[path].indexed
        else { return nil }
        self.executor = executor
        self.sql = sql
        self.path = path
        self.foundAt = foundAt
        self.next = next
        self.find = find
        map = sql.mapAhead[path]
        revalidates = sql.pruneAhead[path] != nil
        end = try next.next(executor.db, after: .min, size: -1)
        fill = StretchFill(maxTransactionMilliseconds: executor.settings.maxTransactionMilliseconds)
        gap = WriteGap(settings: executor.settings, version: foundAt)
    }

    /// While another connection has committed in the last seconds, the next stretch waits as
    /// long as the last one held the lock (`pause_ms: 0`; ``QueueBatches/betweenBatches()``).
    mutating func betweenBatches() throws {
        guard writes else { return }
        gap.waitWhileShared(after: held, db: db)
    }

    private var db: Database { executor.db }
    var writes: Bool { executor.writer.writes }
    var start: Int64 { .min }

    func nextBound(after: Int64, size: Int) throws -> Int64? {
        guard let end, after < end else { return nil }
        return try next.next(db, after: after, size: size).map { min($0, end) }
    }

    mutating func apply(_ bounds: BatchBounds, number: Int, totals: Counts, wantSamples: Bool) throws -> BatchOutcome? {
        try findAhead(from: bounds)
        try Self.afterFindingMoves?(db)
        // Beside another writer a stretch takes its bounds alone, which the sizer aims at
        // ``BatchSizer/rowRangeAim`` of the limit: a stretch filled to 0.9 of it by the commits
        // seen so far may go past it, and the second stretch, filled by the first one's
        // few-millisecond commit where a full stretch commits most of the child's index, took
        // 76-90 ms under a 50 ms limit (merge-writer), with that writer waiting for it.
        let fills = !gap.observe(db)
        let stretch = self
        let progress = StretchProgress(foundUpTo: foundUpTo, fills: fills)
        // The stretch's own bounds hold no more moves than a stretch has applied before
        // (``movesRoom(_:)``).
        var bounds = bounds
        if let end = try stretch.movesBound(bounds.after, size: bounds.size, end: bounds.upTo, progress: progress, first: true) {
            bounds = BatchBounds(after: bounds.after, upTo: end, size: bounds.size - progress.overcount)
        }
        progress.overcount = 0
        let started = Date()
        progress.started = started
        defer { held = Date().timeIntervalSince(started) }
        // More of the child table in the same transaction while its time allows
        // (``StretchFill``): each stretch rewrites the child's index.
        guard
            let ended = try executor.filledStretch(
                bounds, number: number, totals: totals, foundAt: foundAt, revalidates: revalidates, fills: fills, fill: &fill,
                nextBound: { after, size in try stretch.movesBound(after, size: size, progress: progress) },
                apply: { try stretch.repoint(after: $0, upTo: $1, asFound: $2, into: &$3, progress: progress) })
        else { return nil }
        // (The pieces cut short by their moves took fewer rows than they were asked for.)
        let units = max(0, ended.units - progress.overcount)
        (appliedUpTo, lastUnits) = (ended.upTo, units)
        aheadUnits = (foundUpTo ?? ended.upTo) > ended.upTo ? max(0, aheadUnits - units) : 0
        foundUpTo = max(foundUpTo ?? ended.upTo, ended.upTo)
        let counts = ended.work.counts
        if counts.repointed > 0 { lastMoving = (counts.repointed, Date().timeIntervalSince(started)) }
        return BatchOutcome(counts: counts, units: units, done: 0, isBatch: counts.changedAnything, upTo: ended.upTo)
    }

    /// What the stretch in progress has done, for the bounds of its pieces (``movesBound``).
    final class StretchProgress {
        /// The moves it has applied.
        var moves = 0
        /// When its transaction began.
        var started = Date()
        /// Where the moves found so far end (before it, or inside it).
        var foundUpTo: Int64?
        /// The rows its pieces were asked for and did not take (cut short by their moves).
        var overcount = 0
        /// Whether it may take more than its bounds (no other connection is committing).
        let fills: Bool
        init(foundUpTo: Int64?, fills: Bool) { (self.foundUpTo, self.fills) = (foundUpTo, fills) }
    }

    /// How many more moves the stretch in progress may apply; nil without a limit. Where it
    /// has applied none, as many as the last stretch that applied any puts at the sizer's aim
    /// (``BatchSizer/rowRangeAim`` of the limit, of ``DedupeExecutor/aheadShareBesideWriter``
    /// of it beside another writer) at its time per move, commit included, and at most
    /// ``BatchSizer/rowRangeMaxGrowth`` times its moves (``DedupeExecutor/childrenAheadStart``
    /// before any, and at least that); else what the rest of ``StretchFill/share`` of the limit
    /// holds at the stretch's own time per move so far, the longest commit seen kept aside
    /// (both with ``StretchFill/margin``).
    ///
    /// The stretches and their pieces are laid out in child rows, and sized by the time their
    /// rows took; where the children of the losers are not spread evenly through the child
    /// table, rows that move nothing say nothing of rows that do. A child table whose older
    /// rows belong to rows without duplicates (merge-500's 1,600,000 customers with the
    /// losers' orders after all others), or a run after a kill amid the stretches, whose
    /// first child rows were moved already, grew the stretches over rows that moved nothing,
    /// then re-pointed 870,000 orders in one stretch of 4.6-4.8 s under a 1 s limit.
    func movesRoom(_ progress: StretchProgress) -> Int? {
        guard fill.limit > 0 else { return nil }
        guard progress.moves > 0 else {
            guard let last = lastMoving, last.seconds > 0 else { return DedupeExecutor.childrenAheadStart }
            let aim = fill.limit * BatchSizer.rowRangeAim * (progress.fills ? 1 : DedupeExecutor.aheadShareBesideWriter)
            let timed = aim / (last.seconds / Double(last.moves))
            return max(DedupeExecutor.childrenAheadStart, Int(min(timed, Double(last.moves) * BatchSizer.rowRangeMaxGrowth)))
        }
        let elapsed = Date().timeIntervalSince(progress.started)
        let left = fill.limit * StretchFill.share - elapsed - (fill.commitCost ?? 0) * StretchFill.margin
        guard left > 0, elapsed > 0 else { return 0 }
        return Int(min(left / (elapsed / Double(progress.moves) * StretchFill.margin), Double(Int.max / 2)))
    }

    /// The end of the stretch's next piece from `after`, asked for `size` child rows (`end`
    /// where already known), cut where more moves lie there than ``movesRoom(_:)`` holds;
    /// nil where the stretch should end. A piece goes no further than the moves found so far
    /// (`first`: the stretch's own bounds, which keep their end where none are found past
    /// `after`); the rows a piece is cut short by go to `progress.overcount`.
    func movesBound(_ after: Int64, size: Int, end: Int64? = nil, progress: StretchProgress, first: Bool = false) throws -> Int64? {
        guard let end = try end ?? nextBound(after: after, size: size) else { return nil }
        guard let room = movesRoom(progress) else { return end }
        guard room > 0, let found = progress.foundUpTo, found > after else { return first ? end : nil }
        var cut = min(end, found)
        // (A child row has one move at most: `size` rows hold no more than `room` where `size`
        // is no more, and nothing needs counting.)
        if size > room {
            let moves = try Int64.fetchAll(db.cachedStatement(sql: sql.aheadMoveAt), arguments: [path, after, cut, room - 1])
            if moves.count == 2 { cut = moves[0] }
        }
        if cut < end { progress.overcount += max(0, size - (try next.rows(db, after: after, upTo: cut))) }
        return cut
    }

    /// Once the stretches have ended: forgets the moves found for rows no stretch took (another
    /// connection committed first), so that `winnow_ahead` holds only the moves applied.
    func forgetUnapplied() throws {
        guard let foundUpTo, foundUpTo > appliedUpTo ?? .min else { return }
        try db.cachedStatement(sql: sql.forgetAhead).execute(arguments: [path, appliedUpTo ?? .min])
    }

    /// Tests: runs after a stretch's moves are found, before its write transaction.
    nonisolated(unsafe) static var afterFindingMoves: ((Database) throws -> Void)?

    /// Finds the moves of the child rows a stretch from `bounds` is likely to take, before its
    /// write transaction, in reads of their own: finding them took about a quarter of a
    /// stretch's time, which the transaction now spends on more children, so that the child's
    /// index is rewritten fewer times. Moves found for a stretch before and not taken by it
    /// stay found. A stretch applies them only while no other connection has committed since
    /// the discovery (checked inside its transaction, ``DedupeExecutor/filledStretch(_:number:totals:foundAt:fill:nextBound:apply:)``):
    /// the rows past the stretches before are then as they were when the moves were found.
    ///
    /// The moves are found for ``foundAheadShare`` times the rows of the stretch's bounds or of
    /// the stretch before, whichever is more, then, from the second stretch on, in further
    /// reads while the finding has taken less than its share of the limit
    /// (``StretchFill/findMore(units:elapsed:)``): the first stretch's few rows say little of
    /// what the second takes (merge-500 at 1,600,000 customers: the second stretch found nearly
    /// all its moves inside its transaction, 0.24 s of its 0.91 s, and re-pointed 206,000
    /// orders where the next three re-pointed 272,000 to 301,000).
    private mutating func findAhead(from bounds: BatchBounds) throws {
        let wanted = Int(Double(max(bounds.size, lastUnits)) * Self.foundAheadShare)
        var from = max(foundUpTo ?? bounds.after, bounds.after)
        // (The rows found before past the stretch's start count toward those wanted.)
        var left = from > bounds.after ? wanted - aheadUnits : wanted
        var size = left
        let started = Date()
        var units = 0
        while size > 0 {
            // (Each read within the finding's share of the limit, at the last read's cost per
            // row: the rows wanted after a long stretch took a read of 0.68 s at merge-500's
            // 1,600,000 customers under a 1 s limit.)
            let piece = fill.findPiece(size, secondsPerRow: findCost)
            guard let end = try nextBound(after: from, size: piece), end > from else { break }
            let read = Date()
            try db.cachedStatement(sql: find).execute(arguments: [from, end])
            findCost = Date().timeIntervalSince(read) / Double(piece)
            (foundUpTo, from, units, aheadUnits, left) = (end, end, units + piece, aheadUnits + piece, left - piece)
            size = left > 0 ? left : fill.findMore(units: units, elapsed: Date().timeIntervalSince(started)) ?? 0
        }
    }

    /// Re-points the children of the path's rows in `(after, upTo]` whose loser's winner is
    /// settled: their moves found before the transaction as far as those go, found here past
    /// them (into the record of the moves ahead, ``BatchStatements/findAhead``), applied from
    /// that record (``BatchStatements/applyAhead``, which the journal reads too); journals them
    /// into `work`'s batch, then maps the rest of those rows. Not `asFound` (another
    /// connection has committed since the discovery): the moves that no longer hold are
    /// forgotten first (``BatchStatements/pruneAhead``).
    private func repoint(after: Int64, upTo: Int64, asFound: Bool, into work: inout BatchWork, progress: StretchProgress) throws {
        let found = max(progress.foundUpTo ?? after, after)
        if upTo > found {
            try db.cachedStatement(sql: find).execute(arguments: [found, upTo])
            progress.foundUpTo = upTo
        }
        if !asFound, let prune = sql.pruneAhead[path] { try db.cachedStatement(sql: prune).execute(arguments: [after, upTo]) }
        var piece = BatchWork(number: work.number)
        let count = try Int.fetchOne(db.cachedStatement(sql: sql.countAhead), arguments: [path, after, upTo]) ?? 0
        piece.moved = [(path: path, count: count)]
        piece.movedAhead = (after, upTo)
        if piece.counts.repointed > 0 {
            try executor.writer.apply(piece, rule: executor.rule, sql: sql, db: db)
            work.absorb(piece)
            progress.moves += piece.counts.repointed
        }
        // (Only as found: after another connection's commit the batches map their rows'
        // children as they are then.)
        if asFound, let map { try db.cachedStatement(sql: map).execute(arguments: [after, upTo]) }
    }
}
