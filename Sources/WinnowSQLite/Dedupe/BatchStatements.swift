import Foundation
import WinnowCore

/// The SQL of one rule's batches, spelled once per rule. Pure: built from a ``CompiledRule``
/// alone, it holds strings only. Every batch runs the same statements (prepared once and kept
/// by the connection's statement cache), so a batch of 50 groups costs its rows, not a
/// rebuilding and re-preparing of its SQL.
///
/// Temporary tables (created by ``DedupeExecutor/prepareTemporaryTables(_:)``):
/// - `winnow_queue(first, winner, rn, rid, tied)`: every loser found, in batch order (`tied`:
///   1 where it ties the row before it on the winner terms: its group's winner and order are
///   settled by content when the batch is read);
/// - `winnow_batch(rid, winner, rn, tied)`: the losers of the batch in flight;
/// - `winnow_ranks(rid, cand, pos)`: the rows of the batch's groups with ties, by candidate
///   winner, with their place in the full winner order;
/// - `winnow_swaps(cand, actual)`: tied groups whose winner by the full order is not the candidate;
/// - `winnow_merged(winner, set, v0, ...)`: the batch's merge results (created per rule);
/// - `winnow_moves(path, child, winner, loser)`: child rows of the batch's losers to re-point,
///   by path (`loser`: the loser a mapped move was found at);
/// - `winnow_mapped(rid)`, `winnow_refs(path, rid, child)`: for reference paths without an index
///   on the child columns, the rows whose children are mapped and those children, found in one
///   scan of each child table;
/// - `winnow_ahead(path, child, winner, loser)`: children re-pointed ahead of their losers'
///   batches (``AheadBatches``);
/// - `winnow_sampled(id)`: the rows of the groups a batch shows as samples
///   (``DedupeExecutor/readSamples(_:limit:)``).
struct BatchStatements {
    let rule: CompiledRule
    /// How the statements name the table's rows (rowids, or numbers mapped to primary keys).
    let numbers: RowNumbers
    /// The same for the child table of each reference path.
    let childNumbers: [RowNumbers]

    /// The last `first` of the next batch of groups.
    let nextBatch = RangeBound("first", in: "temp.winnow_queue", distinct: true)
    let clearBatch = "DELETE FROM temp.winnow_batch"
    /// The batch's losers as found (no other connection has committed since the discovery).
    let fillBatchAsFound = """
        INSERT INTO temp.winnow_batch (rid, winner, rn, tied)
        SELECT rid, winner, rn, tied FROM temp.winnow_queue WHERE first > ? AND first <= ?
        """
    /// The queue's losers in `(?1, ?2]` whose winner's merge has been applied (a winner at or
    /// below the third bound: a stretch of merges' own or an earlier one's).
    static let queuedTaken = "temp.winnow_queue WHERE first > ? AND first <= ? AND winner <= ?"
    /// ``fillBatchAsFound`` for a stretch of merges ahead (``MergeAheadBatches``): only the
    /// losers whose winner's merge has been applied (``queuedTaken``). The others wait in the
    /// queue for the batches after it.
    let fillBatchTaken = """
        INSERT INTO temp.winnow_batch (rid, winner, rn, tied)
        SELECT rid, winner, rn, tied FROM \(queuedTaken)
        """
    /// The losers a stretch of merges deleted (``fillBatchTaken``), out of the queue, so that no
    /// batch after it takes them again.
    let forgetQueuedTaken = "DELETE FROM \(queuedTaken)"
    /// How many losers a stretch of merges would delete (``fillBatchTaken``'s rows), counted
    /// before its transaction (``RowBudget``).
    let countQueuedTaken = "SELECT count(*) FROM \(queuedTaken)"
    /// The batch's losers that still share their winner's key, every one marked tied: each group
    /// is settled by the full winner order on its rows as they are now (another connection may
    /// have changed a winner term since the discovery).
    let fillBatchRevalidated: String
    /// ``fillBatchRevalidated`` for a stretch of a rule that stays filed by position
    /// (``DedupeExecutor/staysByPosition``): only the losers that their winner does not surely
    /// come before (``CompiledRule/surelyBefore(_:_:)``: another connection changed a winner
    /// term of either) are marked for ranking. Ranking every group of such a stretch took twice
    /// the rest of its batch (lower-500 at 1,600,000 customers: 7.7 s of 855 batches).
    let fillBatchRevalidatedByPosition: String
    /// ``fillBatchRevalidated`` that also keeps every loser a merge took (`temp.winnow_taken`,
    /// ``DedupeExecutor/fillTakenCopy()``) for the winner that took it, whatever its key is
    /// now: its values are in that winner already, so it goes, as if the other connection had
    /// changed it after a batch by group had deleted it. Left alone, it would be counted twice (in its winner, and as
    /// itself). (The batch's join reaches only winners that still exist: a loser whose winner
    /// is gone is settled as any other.)
    let fillBatchRevalidatedKeepingTaken: String
    let countPlanned = "SELECT count(*) FROM temp.winnow_queue WHERE first > ? AND first <= ?"
    /// ``fillBatchTaken`` after another connection's commit (``DeleteAheadBatches`` taking only
    /// the losers the stretches of merges took): the losers in `(?1, ?2]` recorded as taken by
    /// their winner (``DedupeExecutor/fillTakenCopy()``), each still there and its winner too,
    /// whatever their key is now. The others stay in the queue for the batches by group.
    let fillBatchTakenRevalidated: String
    /// The losers of `(?1, ?2]` that a stretch has just deleted (`winnow_batch`), out of the queue.
    let forgetQueuedDeleted =
        "DELETE FROM temp.winnow_queue WHERE first > ? AND first <= ? AND rid IN (SELECT rid FROM temp.winnow_batch)"
    let clearSwaps = "DELETE FROM temp.winnow_swaps"
    let clearRanks = "DELETE FROM temp.winnow_ranks"
    let anyTied = "SELECT EXISTS (SELECT 1 FROM temp.winnow_batch WHERE tied)"
    /// Every row (winner and losers) of the groups with ties, with its place in the full winner
    /// order: one ranking serves both the swap and the losers' order.
    let rankTied: String
    /// ``rankTied`` for every group of the queue whose winner ties its second row (rows filed
    /// by position, settled once before the batches: ``DedupeExecutor/settleTiesAhead(_:)``).
    let rankTiedQueue: String
    /// The swaps found by ``rankTiedQueue`` applied to the queue filed by position: the actual
    /// winner leaves the losers (the candidate takes its place, filed under its own rowid), and
    /// every loser of the group names the actual winner.
    let swapQueueLosers = """
        UPDATE temp.winnow_queue SET rid = s.cand, first = s.cand FROM temp.winnow_swaps AS s
        WHERE winnow_queue.first = s.actual AND winnow_queue.rid = s.actual
        """
    let swapQueueWinners = "UPDATE temp.winnow_queue SET winner = s.actual FROM temp.winnow_swaps AS s WHERE winnow_queue.winner = s.cand"
    let clearQueueTies = "UPDATE temp.winnow_queue SET tied = 0 WHERE tied"
    /// Files the losers filed after `?` (later stretches of a rule that stays filed by position,
    /// ``DedupeExecutor/staysByPosition``) of every group whose winner the batch swapped under
    /// the row that now comes first: their batches compare them with it. Only after a swap,
    /// which only another connection's change of a winner term makes: one scan of the queue.
    let refileSwapped = """
        UPDATE temp.winnow_queue SET winner = s.actual FROM temp.winnow_swaps AS s
        WHERE winnow_queue.winner = s.cand AND winnow_queue.first > ?
        """
    /// Files every loser left after `after` under its group's lowest loser left (rows filed by
    /// position, once another connection has committed): from then on every batch settles
    /// whole groups as they are now, as a batch of a rule filed by group does.
    func refileByGroup(after: Int64) -> String {
        """
        DROP TABLE IF EXISTS temp.winnow_refile;
        CREATE TEMP TABLE winnow_refile (winner INTEGER PRIMARY KEY, first INTEGER NOT NULL);
        INSERT INTO temp.winnow_refile (winner, first) SELECT winner, min(rid) FROM temp.winnow_queue WHERE first > \(after) GROUP BY winner;
        UPDATE temp.winnow_queue SET first = r.first FROM temp.winnow_refile AS r WHERE r.winner = winnow_queue.winner AND winnow_queue.first > \(after);
        DROP TABLE temp.winnow_refile;
        """
    }
    /// Groups tied on the winner terms: the first row by the full order, where it is not the candidate.
    let findSwaps = "INSERT INTO temp.winnow_swaps (cand, actual) SELECT cand, rid FROM temp.winnow_ranks WHERE pos = 1 AND rid <> cand"
    let swapLosers = "UPDATE temp.winnow_batch SET rid = s.cand FROM temp.winnow_swaps AS s WHERE winnow_batch.rid = s.actual"
    let swapWinners = "UPDATE temp.winnow_batch SET winner = s.actual FROM temp.winnow_swaps AS s WHERE winnow_batch.winner = s.cand"
    /// Numbers the losers of every group where some row ties another on the winner terms (or a
    /// swap happened) by their place in the full winner order (2, 3, ...: the first place is the
    /// winner's); elsewhere the discovery's order already is the full order. Merges and
    /// collision decisions follow it.
    let renumber = "UPDATE temp.winnow_batch SET rn = r.pos FROM temp.winnow_ranks AS r WHERE r.rid = winnow_batch.rid"
    let batchRows = "SELECT rid, winner FROM temp.winnow_batch ORDER BY winner, rn"
    /// Every loser of the groups the batch counts (for samples of a rule filed by position,
    /// whose batches hold parts of groups): the groups whose best loser (`rn` 2) it holds, as
    /// ``batchSizeByPosition`` counts them, so that each group is shown once over the run.
    let batchGroupRows = """
        SELECT rid, winner FROM temp.winnow_queue WHERE winner IN (SELECT winner FROM temp.winnow_batch WHERE rn = 2) ORDER BY winner, rn
        """
    /// Losers and groups of the batch (the winner index counts the groups).
    let batchSize = "SELECT count(*), count(DISTINCT winner) FROM temp.winnow_batch"
    /// ``batchSize`` for batches filed by position, which hold parts of groups: a group counts
    /// in the batch that holds its best loser (`rn` 2: one row of every group has it, also
    /// after a swap).
    let batchSizeByPosition = "SELECT count(*), count(*) FILTER (WHERE rn = 2) FROM temp.winnow_batch"
    /// Every row of the batch's groups with the merge columns, winner first, then losers in order.
    let mergeRows: String
    /// ``mergeRows`` without the losers whose values a merge already took into their winner
    /// (`winnow_taken_losers`: an earlier batch of this run, or a run that did not finish;
    /// read through its copy, ``DedupeExecutor/fillTakenCopy()``): the winner's value holds
    /// theirs, so a merge that took them again would count them twice.
    /// (Unless that winner is gone: another connection deleted it, and its values with it.)
    /// (Tables with rowids only: the only ones whose merges go ahead of their losers.)
    let mergeRowsUntaken: String
    /// The rule's rows of `winnow_taken_losers` (SQL over it), which
    /// ``DedupeExecutor/forgetRecord(_:own:)`` empties once the rule is done (every one of its
    /// losers is deleted).
    let takenOwn: String
    /// Every loser of the groups in `temp.winnow_merged` with its winner, by winner: what the
    /// transaction that writes the merged values records as taken (``recordTaken``).
    let takenToRecord: String
    /// Appends one packed record of taken losers (``TakenLosersRecord``; bound: the run, the blob).
    let recordTaken: String
    /// The losers of the queue filed in `(?1, ?2]` whose winner lies after `?3` (a later stretch
    /// of merges), each with its winner and its merge columns, by winner and in
    /// their order: what a stretch that deletes them before their winner's merge keeps
    /// (``GivenMergesRecord``).
    let givenToRecord: String
    /// Appends one packed record of given losers' values (bound: the run, the blob).
    let recordGiven: String
    /// The rule's merge columns as a record of given values names them
    /// (``GivenMergesRecord/columnsText(_:)``).
    let givenColumns: String
    /// The merge columns of the row numbered `?` of the rule's table, in the rule's order
    /// (``DedupeExecutor/settleGivenMerges(_:state:batchNumber:totals:)``).
    let mergeValuesOfRow: String
    /// Drops the copy of the records of taken losers (``DedupeExecutor/fillTakenCopy()``): every
    /// transaction that records more does, and the next statement that reads it makes it again.
    let dropTaken = "DROP TABLE IF EXISTS temp.winnow_taken"
    /// Whether the connection has the copy of the records of taken losers
    /// (``DedupeExecutor/fillTakenCopy()``).
    static let takenCopyExists = "SELECT EXISTS (SELECT 1 FROM sqlite_temp_master WHERE type = 'table' AND name = 'winnow_taken')"
    /// Whether the winner order keeps the winners of taken losers first (``init(_:pinsTaken:)``):
    /// the statements that rank by it read the copy of the record, which their callers make first.
    let pinsTaken: Bool
    /// Every loser of the queue whose winner is in `(?1, ?2]` with its own merge columns and its
    /// winner's, in winner order, the losers of a group in their order: the merge decisions of
    /// the rule, read in pieces of whole groups (``DedupeExecutor/decideMerges(_:skipsTaken:foundAt:)``).
    /// Read from the queue's copy by winner (``createTakeable``), so that nothing is sorted.
    let queueMergeRows: String
    /// ``queueMergeRows`` without the losers a merge already took (see ``mergeRowsUntaken``).
    let queueMergeRowsUntaken: String
    /// The rule's merge decisions, kept while the stretches of winners apply them
    /// (``MergeAheadBatches``), and the statements that move one stretch into `winnow_merged`.
    let createDecided: String
    let keepDecided = "INSERT INTO temp.winnow_decided SELECT * FROM temp.winnow_merged"
    let nextDecided = RangeBound("winner", in: "temp.winnow_decided")
    let stageDecided = "INSERT INTO temp.winnow_merged SELECT * FROM temp.winnow_decided WHERE winner > ? AND winner <= ?"
    /// The last winner of the next `?2` losers of the queue's copy by winner after winner `?1`:
    /// the end of a piece of the merge decisions (``queueMergeRows``), its groups whole.
    let nextTakeable = RangeBound("winner", in: "temp.winnow_takeable")
    /// The queue by winner, each group's losers in their order (samples of batches filed by
    /// position find a group's other losers through it).
    let indexQueueWinner = "CREATE INDEX IF NOT EXISTS temp.winnow_queue_winner ON winnow_queue (winner, rn, rid)"
    /// The queue's losers by winner, each group's in their order, with their merge columns
    /// (`c0`, `c1`, ...: ``queueMergeRows`` reads them from here), copied once before the
    /// stretches of merges ahead (``MergeAheadBatches``): ``queueMergeRows`` reads the groups in
    /// order from it, and ``recordTaken`` a stretch's losers (by winner only, each loser was a
    /// look-up in the queue: merge-500's recording took 67 ms instead of 24 ms). A copy, not an
    /// index of the queue: the stretches delete the losers they take from the queue, and an
    /// index by winner would be updated at a random place for each (above about 310,000 rows,
    /// where the temporary database is not held in memory, merge-500 at 1,600,000 customers
    /// wrote 2.5 GB to temporary files doing it). The losers' values are read as the queue is
    /// filed, in their rowids' order, and sorted with them: read by winner, each loser was a
    /// look-up at a random place of the table, a read from the file for most of them where the
    /// table is larger than the page cache.
    let createTakeable: String
    /// The queue's losers filed in `(?1, ?2]`, with their merge columns, appended to
    /// `temp.winnow_copied` (``createTakeable``), keyed by rowid: the stretches that give losers
    /// ahead read their values from it (``givenToRecord``); else it is dropped once sorted.
    let fillTakeable: String
    /// `temp.winnow_copied` sorted into the queue's copy by winner: one sort of
    /// the temporary database's rows, where copying each piece into the copy by winner
    /// inserted all over it (merge-500 at 1,600,000 customers: 2.0-2.1 s against 1.1-1.2 s for
    /// the copy in one read).
    let sortTakeable: String
    /// Drops the copy of the losers' values by rowid (``fillTakeable``).
    let dropCopied = "DROP TABLE IF EXISTS temp.winnow_copied"
    /// Drops the queue's copy by winner and the merge decisions, once the stretches of merges
    /// are over (or the decisions stopped at another connection's commit).
    let dropDecisions = """
        DROP TABLE IF EXISTS temp.winnow_decided; DROP TABLE IF EXISTS temp.winnow_takeable; DROP TABLE IF EXISTS temp.winnow_copied
        """
    /// ``rankTiedQueue`` for every group of the queue with any tied row (a merge follows the
    /// order of the losers too), and the queue's losers numbered by it.
    let rankEveryTiedQueue: String
    let renumberQueue = "UPDATE temp.winnow_queue SET rn = r.pos FROM temp.winnow_ranks AS r WHERE r.rid = winnow_queue.rid"
    /// The merge results of a batch: per winner, the columns that change (`set`, their indexes
    /// in the rule's merge columns, comma-separated) and the new values (`v0`, `v1`, ...).
    let createMerged: String
    let clearMerged = "DELETE FROM temp.winnow_merged"
    let insertMerged: String
    let mergedSelection: String
    let clearMoves = "DELETE FROM temp.winnow_moves"
    /// Per reference path: the child rows of the batch's losers into `winnow_moves`.
    let fillMoves: [String]
    /// Per reference path: the children of every group row (winners too), for paths whose
    /// re-pointing can collide with a unique key of the child (decided row by row).
    let groupChildren: [String]
    /// Per reference path: each winner's values of the parent columns.
    let winnerKeys: [String]
    /// Per reference path: re-points the path's rows of `winnow_moves` by child rowid.
    let applyMoves: [String]
    /// Per reference path: the numbers of its child rows that `winnow_moves` holds, which
    /// ``applyMoves`` re-points (the journal's selection).
    let movedChildren: [String]
    /// Per reference path: child rows that still point at a loser of the batch (must be none
    /// before the losers go, when the batch runs with foreign-key enforcement off).
    let danglingChildren: [String]
    /// Per path without an index on its child columns: maps the child rows of every queued row.
    let mapChildren: [String?]
    /// Per reference path: each row of `winnow_sampled` with its number of child rows, reached
    /// as the batch reaches its losers' children (by index, or through the map of a path without
    /// one, made again for the batch's groups after another connection's commit).
    let sampleChildren: [String]
    /// Per path without an index: forgets / maps again the children of the rows filed in
    /// `(?1, ?2]` only, while another connection keeps committing between batches
    /// (``DedupeExecutor/mapWindow(_:after:upTo:version:state:)``). `withWinners`: the losers
    /// and their winners, every row a batch of whole groups can delete; `losers`: the losers
    /// alone, for a rule that stays filed by position (a winner it deletes is one it swapped
    /// out, whose children ``remapSwapped`` maps as they are then). Where the reference holds
    /// the parent's rowid, the map reads only the child rows whose reference lies in `[?3, ?4]`
    /// (``windowRange``): a comparison per child row, where looking each up among the members
    /// took most of a scan.
    let windowMaps: [(withWinners: WindowMap, losers: WindowMap)?]
    /// The lowest and highest rowid among the losers filed in `(?1, ?2]`, and among their winners.
    let windowRange = "SELECT min(rid), max(rid), min(winner), max(winner) FROM temp.winnow_queue WHERE first > ?1 AND first <= ?2"
    /// One way to map a stretch of the queue again (``windowMaps``).
    struct WindowMap {
        let forget: String
        let map: String
        /// Whether `map` takes the range of the members' rowids as `?3` and `?4`.
        let bounded: Bool
    }
    /// Per path without an index: forgets / maps again the children of the winners the batch
    /// swapped out (`temp.winnow_swaps`), a batch of a rule that stays filed by position
    /// (``DedupeExecutor/staysByPosition``): earlier batches re-pointed children of the group's
    /// other losers to such a winner after the map was made, and they go on with it.
    let remapSwapped: [(forget: String, map: String)?]
    let clearMap = "DELETE FROM temp.winnow_refs"
    /// The rows whose children the map holds: every loser found, and the candidate winner of
    /// every group with rows tied on the winner terms (settling it may make it a loser);
    /// where re-pointing can collide, every winner (its children are compared too).
    let fillMapped: String
    /// ``fillMapped`` with each loser's settled winner (`winnow_mapped.winner`), read only by the
    /// moves ahead of the batches (``findAhead``): filled only for a run that makes them.
    let fillMappedSettled: String
    /// The same with every winner: mapped after another connection's commit, when every group
    /// is settled again (``fillBatchRevalidated``) and any winner may turn out a loser.
    let fillMappedEveryWinner: String
    /// Rows of the batch that are about to go although the map has not looked for their children.
    let unmappedLosers = "SELECT count(*) FROM temp.winnow_batch WHERE rid NOT IN (SELECT rid FROM temp.winnow_mapped)"
    /// Per child table of a declared path without an index that does not hold the parent's
    /// rowid: its references to no row (the whole table, counted before and after the rule).
    let danglingInTable: [(table: String, sql: String)]
    /// Per declared path without an index that holds the parent's rowid: its rows that point at
    /// a row the rule found (`winnow_mapped`) that is gone. None can before the rule (every such
    /// row was there when found), so one count after it says what the rule left: one scan of
    /// the child table probing the found rows, instead of two whole-table foreign-key checks.
    let danglingMapped: [(label: String, sql: String)]
    /// Paths whose children are re-pointed ahead of the batches, in child rowid order: no index
    /// on the child columns, which hold the parent's rowid, in another table, with no unique key
    /// that re-pointing could break.
    let aheadPaths: [Int]
    /// Per path re-pointed ahead (nil elsewhere): the last child rowid of a stretch.
    let nextAhead: [RangeBound?]
    /// Per path re-pointed ahead: its child rows in `(?1, ?2]` that point at a loser whose winner
    /// is settled (`winnow_mapped.winner`), as moves to that winner, into the record of the
    /// moves ahead (`winnow_ahead`, which ``moveBack`` reads): found before the write
    /// transaction that applies them (``applyAhead``) or, past those, inside it.
    let findAhead: [String?]
    /// Per path re-pointed ahead: ``findAhead`` with the settled winners looked up in memory
    /// (``SettledWinners``) instead of in `winnow_mapped`.
    let findAheadSettled: [String?]
    /// Per path re-pointed ahead: re-points its child rows whose moves ``findAhead`` recorded
    /// for child rows in `(?1, ?2]`, straight from the record. Copying them into `winnow_moves`
    /// first took a tenth of each stretch of children (merge-500 at 1,600,000 customers: 82 ms
    /// of 837).
    let applyAhead: [String?]
    /// Per path re-pointed ahead: forgets the recorded moves of its child rows in `(?1, ?2]`
    /// that no longer hold as the rows are now: the child no longer points at the loser, or the
    /// loser or its winner is gone, or they no longer share a key. A stretch after another
    /// connection's commit runs it before ``applyAhead`` (``AheadBatches``), so that it moves
    /// only children of a loser still beside its winner, to a row that exists, and the record
    /// (which the journal and ``moveBack`` read) holds only the moves made.
    let pruneAhead: [String?]
    /// Per path re-pointed ahead: the rowids of its child rows in `(?, ?]` that the record of the
    /// moves ahead holds, which ``applyAhead`` re-points (the journal's selection; its
    /// parameters are not numbered, as the journal's statement has parameters before them).
    let aheadChildren: [String?]
    /// Per path re-pointed ahead whose moves outlast the run (nil elsewhere): the reference's
    /// name in `winnow_moved_ahead` (``aheadRef(_:path:)``). Only where the child table keeps
    /// its rowids through a `VACUUM` (an `INTEGER PRIMARY KEY`, or an index, which a path
    /// looked up by index has): the record names children by rowid until the next run.
    let aheadRefs: [Int64?]
    /// Per path of ``aheadRefs``: the moves of its child rows in `(?1, ?2]`, by child, which
    /// the stretch that applied them records in its transaction, packed
    /// (``SQLiteBatchWriter/recordAhead(_:path:after:upTo:db:)``). Recorded once found, in a
    /// transaction of their own before the stretch, they took none of its time, but in a
    /// rollback journal that transaction and the stretch's came back to back: a writer waiting
    /// for the lock (which commits nothing, so none is seen) missed the gap between them, and
    /// merge-writer's worst waits went from 36-42 ms to 55-108 ms (tried, not kept;
    /// docs/performance.md).
    let recordAhead: [String?]
    /// The rule's rows of `winnow_moved_ahead` (SQL over it: its references of ``aheadRefs``);
    /// nil where it records none.
    let movedAheadOwn: String?
    /// How many moves of path `?1`'s child rows in `(?2, ?3]` the record of the moves ahead holds.
    let countAhead = "SELECT count(*) FROM temp.winnow_ahead WHERE path = ?1 AND child > ?2 AND child <= ?3"
    /// The `?4`th and the next of path `?1`'s moves found for child rows in `(?2, ?3]`, in child
    /// order (counted from 0): where both exist, more than `?4` moves lie there and a piece of
    /// a stretch that may apply only `?4` ends at the first (``AheadBatches``).
    let aheadMoveAt = "SELECT child FROM temp.winnow_ahead WHERE path = ?1 AND child > ?2 AND child <= ?3 ORDER BY child LIMIT 2 OFFSET ?4"
    /// Forgets the moves of path `?1` found past `?2` and never applied (its stretches ended).
    let forgetAhead = "DELETE FROM temp.winnow_ahead WHERE path = ?1 AND child > ?2"
    /// Per path re-pointed ahead: the map (`winnow_refs`) of its child rows in `(?1, ?2]`, after
    /// the stretch was re-pointed (children of losers whose winner is settled by content).
    let mapAhead: [String?]
    /// Looks the children re-pointed ahead up by their loser (only a batch after another
    /// connection's commit needs it).
    let indexAhead = "CREATE INDEX IF NOT EXISTS temp.winnow_ahead_loser ON winnow_ahead (loser)"
    let clearAhead = "DROP INDEX IF EXISTS temp.winnow_ahead_loser; DELETE FROM temp.winnow_ahead"
    /// Per path re-pointed ahead: after another connection's commit, children re-pointed ahead
    /// from a loser of groups `(?1, ?2]` that this batch neither deletes nor keeps as a winner
    /// (it left its group, or its winner is gone) go back to it, where it still exists and they
    /// still point where they were re-pointed.
    let moveBack: [String?]
    /// Per reference path: deletes / re-points one child row by rowid (paths whose re-pointing
    /// can collide are decided row by row).
    let deleteChild: [String]
    let repointChild: [String]
    /// Per reference path: a re-pointed child row's identity as the journal keeps it, after the
    /// re-pointing (the primary key of a child without rowids may hold the reference; a
    /// restore finds the row by it): for moves made as a set, and for a row re-pointed alone,
    /// whose new values (`values`: indexes into the path's child columns) are bound first.
    let movedKey: [String]
    let repointedKey: [(sql: String, values: [Int])]
    /// Winners of the batch that no longer exist (re-pointed children must reach theirs).
    let missingWinners: String
    let deleteLosers: String
    let loserSelection: String
    /// Which winner each loser of the batch went to, into `winnow_run_groups` (by rowid, or by
    /// the packed primary key).
    let recordGroups: String

    /// `pinsTaken`: the winner of a group whose losers a merge already took
    /// (`winnow_taken_losers`) stays its winner, ahead of the winner order: its values hold
    /// theirs, and may now sort it elsewhere (a `sum`, or content as the tie-break).
    init(_ rule: CompiledRule, pinsTaken: Bool = false) {
        self.rule = rule
        self.pinsTaken = pinsTaken
        let numbers = RowNumbers(rule)
        let winnerOrder = (pinsTaken ? "\(Self.takenPin(rule, alias: "t")), " : "") + rule.orderBy(alias: "t")
        self.numbers = numbers
        childNumbers = rule.references.indices.map { RowNumbers(rule, path: $0) }
        let table = rule.qualifiedTable
        let rowID = numbers.rowid
        // The queue's losers in `(?1, ?2]` whose row and winner's row both still exist, that
        // `keeps` keeps, into the batch (`tied`: whether each group is ranked again).
        func revalidated(tied: String, keeps: String) -> String {
            """
            INSERT INTO temp.winnow_batch (rid, winner, rn, tied)
            SELECT l.rid, l.winner, l.rn, \(tied) FROM temp.winnow_queue AS l
            \(numbers.join("a", numbered: "l.rid"))
            \(numbers.join("b", numbered: "l.winner"))
            WHERE l.first > ? AND l.first <= ? AND \(keeps)
            """
        }
        let taken = "EXISTS (SELECT 1 FROM temp.winnow_taken AS k WHERE k.loser = l.rid AND k.winner = l.winner)"
        fillBatchRevalidated = revalidated(tied: "1", keeps: rule.sameKey("a", "b"))
        fillBatchRevalidatedByPosition = revalidated(
            tied: "CASE WHEN \(rule.surelyBefore("b", "a")) THEN 0 ELSE 1 END", keeps: rule.sameKey("a", "b"))
        fillBatchTakenRevalidated = revalidated(tied: "0", keeps: "l.winner <= ? AND \(taken)")
        fillBatchRevalidatedKeepingTaken = revalidated(tied: "1", keeps: "(\(rule.sameKey("a", "b")) OR \(taken))")
        // Every row of the batch's groups: the winner (rn 0), then its losers.
        let groupRows =
            "(SELECT winner, winner AS rid, 0 AS rn FROM temp.winnow_batch GROUP BY winner UNION ALL SELECT winner, rid, rn FROM temp.winnow_batch)"
        // Every row of the queue's groups that `winners` selects, ranked by the full winner order.
        func rankQueue(_ winners: String) -> String {
            """
            INSERT INTO temp.winnow_ranks (rid, cand, pos)
            SELECT g.rid, g.winner, row_number() OVER (PARTITION BY g.winner ORDER BY \(winnerOrder))
            FROM (SELECT winner, winner AS rid FROM (\(winners))
                  UNION ALL SELECT winner, rid FROM temp.winnow_queue WHERE winner IN (\(winners))) AS g
            \(numbers.join("t", numbered: "g.rid"))
            """
        }
        rankTiedQueue = rankQueue("SELECT winner FROM temp.winnow_queue WHERE rn = 2 AND tied")
        rankEveryTiedQueue = rankQueue("SELECT DISTINCT winner FROM temp.winnow_queue WHERE tied")
        rankTied = """
            INSERT INTO temp.winnow_ranks (rid, cand, pos)
            SELECT g.rid, g.winner, row_number() OVER (PARTITION BY g.winner ORDER BY \(winnerOrder))
            FROM \(groupRows) AS g
            \(numbers.join("t", numbered: "g.rid"))
            WHERE g.winner IN (SELECT winner FROM temp.winnow_batch WHERE tied)
            """
        // A rule whose merges rank rows by another column reads that column after the merge
        // columns (``MergeResolver/changes(strategies:orders:flat:ranked:)``).
        let mergeColumns =
            rule.mergeColumns.map { "t.\($0.name.sqlIdentifier)" } + (rule.mergesRanked ? rule.mergeRankColumns(alias: "t") : [])
        let mergeSelected = mergeColumns.joined(separator: ", ")
        let carried = mergeColumns.indices.map { "c\($0)" }
        createTakeable = """
            DROP TABLE IF EXISTS temp.winnow_takeable;
            CREATE TEMP TABLE winnow_takeable (
                winner INTEGER NOT NULL, rn INTEGER NOT NULL, rid INTEGER NOT NULL\(carried.map { ", \($0)" }.joined()),
                PRIMARY KEY (winner, rn, rid)
            ) WITHOUT ROWID;
            DROP TABLE IF EXISTS temp.winnow_copied;
            CREATE TEMP TABLE winnow_copied (
                rid INTEGER PRIMARY KEY, winner INTEGER NOT NULL, rn INTEGER NOT NULL\(carried.map { ", \($0)" }.joined())
            );
            """
        fillTakeable = """
            INSERT INTO temp.winnow_copied (rid, winner, rn\(carried.map { ", \($0)" }.joined()))
            SELECT q.rid, q.winner, q.rn\(mergeSelected.isEmpty ? "" : ", \(mergeSelected)") FROM temp.winnow_queue AS q
            \(numbers.join("t", numbered: "q.rid")) WHERE q.first > ? AND q.first <= ?
            """
        sortTakeable = """
            INSERT INTO temp.winnow_takeable SELECT winner, rn, rid\(carried.map { ", \($0)" }.joined()) FROM temp.winnow_copied ORDER BY 1, 2, 3
            """
        func mergeRows(_ filter: String) -> String {
            """
            SELECT g.winner, \(mergeSelected) FROM \(groupRows) AS g
            \(numbers.join("t", numbered: "g.rid"))\(filter) ORDER BY g.winner, g.rn
            """
        }
        let tableLiteral = ChangeTracking.literal(rule.table)
        self.mergeRows = mergeRows("")
        // A recorded loser counts as taken while the winner that took it exists.
        func untaken(_ loser: String) -> String {
            """
            NOT EXISTS (
                SELECT 1 FROM temp.winnow_taken AS k WHERE k.loser = \(loser)
                AND EXISTS (SELECT 1 FROM \(table) AS w WHERE w.\(rowID ?? "rowid") = k.winner))
            """
        }
        mergeRowsUntaken = mergeRows("\nWHERE g.rn = 0 OR \(untaken("g.rid"))")
        let winnerSelected =
            (rule.mergeColumns.map { "v.\($0.name.sqlIdentifier)" } + (rule.mergesRanked ? rule.mergeRankColumns(alias: "v") : []))
            .joined(separator: ", ")
        func queueRows(_ filter: String) -> String {
            """
            SELECT q.winner, \(winnerSelected), \(carried.map { "q.\($0)" }.joined(separator: ", ")) FROM temp.winnow_takeable AS q
            \(numbers.join("v", numbered: "q.winner"))
            WHERE q.winner > ?1 AND q.winner <= ?2\(filter) ORDER BY q.winner, q.rn
            """
        }
        queueMergeRows = queueRows("")
        queueMergeRowsUntaken = queueRows(" AND \(untaken("q.rid"))")
        takenOwn = "tbl = \(tableLiteral)"
        // By winner, as the copy is keyed: nothing is sorted (``TakenLosersRecord`` packs each
        // winner as the step from the one before).
        takenToRecord = """
            SELECT q.rid, q.winner FROM temp.winnow_takeable AS q WHERE q.winner IN (SELECT winner FROM temp.winnow_merged)
            ORDER BY q.winner, q.rn, q.rid
            """
        recordTaken = "INSERT INTO main.winnow_taken_losers (tbl, run_id, pairs) VALUES (\(tableLiteral), ?, ?)"
        // From the copy of the losers' values by rowid, which the copy by winner is sorted from
        // (kept for this while the stretches run): read in the stretch's rowids, where a look-up
        // in the copy by winner for each loser took 1.6 s of merge-500's stretches at 1,600,000
        // customers, and one in the table 1.1 s.
        givenToRecord = """
            SELECT c.winner, c.rid\(rule.mergeColumns.indices.map { ", c.c\($0)" }.joined()) FROM temp.winnow_copied AS c
            WHERE c.rid > ?1 AND c.rid <= ?2 AND c.winner > ?3 ORDER BY c.winner, c.rn
            """
        givenColumns = GivenMergesRecord.columnsText(rule.mergeColumns.map { ($0.strategy, $0.name) })
        recordGiven = """
            INSERT INTO main.winnow_given_merges (tbl, run_id, columns, entries) VALUES (\(tableLiteral), ?, \(ChangeTracking.literal(givenColumns)), ?)
            """
        mergeValuesOfRow = """
            SELECT \(rule.mergeColumns.map { $0.name.sqlIdentifier }.joined(separator: ", ")) FROM \(table) WHERE \(numbers.numbered("?", alias: table))
            """
        let values = rule.mergeColumns.indices.map { "v\($0)" }
        func mergedTable(_ name: String) -> String {
            """
            DROP TABLE IF EXISTS temp.\(name);
            CREATE TEMP TABLE \(name) (winner INTEGER PRIMARY KEY, "set" TEXT NOT NULL\(values.map { ", \($0)" }.joined()));
            """
        }
        createMerged = mergedTable("winnow_merged")
        createDecided = mergedTable("winnow_decided")
        insertMerged = "INSERT INTO temp.winnow_merged VALUES (?, ?\(String(repeating: ", ?", count: values.count)))"
        mergedSelection = numbers.among("SELECT winner FROM temp.winnow_merged")
        var fillMoves: [String] = [], groupChildren: [String] = [], winnerKeys: [String] = []
        var applyMoves: [String] = [], movedChildren: [String] = [], dangling: [String] = [], mapChildren: [String?] = []
        var sampleChildren: [String] = []
        var deleteChild: [String] = [], repointChild: [String] = []
        var windowMaps: [(withWinners: WindowMap, losers: WindowMap)?] = []
        var remapSwapped: [(forget: String, map: String)?] = []
        var movedKey: [String] = [], repointedKey: [(sql: String, values: [Int])] = []
        let batchMembers = """
            SELECT rid FROM temp.winnow_queue WHERE first > ?1 AND first <= ?2 UNION SELECT winner FROM temp.winnow_queue WHERE first > ?1 AND first <= ?2
            """
        var aheadPaths: [Int] = [], nextAhead: [RangeBound?] = [], findAhead: [String?] = [], mapAhead: [String?] = []
        var findAheadSettled: [String?] = []
        var applyAhead: [String?] = [], aheadChildren: [String?] = [], pruneAhead: [String?] = []
        var moveBack: [String?] = []
        var aheadRefs: [Int64?] = [], recordAhead: [String?] = []
        for (index, path) in rule.references.enumerated() {
            let child = rule.qualified(path.childTable)
            let childNumbers = RowNumbers(rule, path: index)
            let join = path.childJoin
            // A reference to the rowid alias holds the parent's rowid itself: its children are
            // reached from the rowid without looking the parent row up.
            let holdsRowID = Self.holdsRowID(path, rowID: rowID)
            // How the children of the row whose rowid is `rid` are reached: by index, or through
            // the map. CROSS JOIN keeps SQLite's planner from driving the join from the (large)
            // child table.
            func reach(_ rid: String) -> String {
                let parent = holdsRowID ? "" : numbers.join("p", numbered: rid) + " "
                let match = holdsRowID ? "c.\(path.childColumns[0].sqlIdentifier) = \(rid)" : join
                return path.indexed
                    ? "\(parent)CROSS JOIN \(child) AS c ON \(match)"
                    : "\(parent)CROSS JOIN temp.winnow_refs AS m ON m.path = \(index) AND m.rid = \(rid) "
                        + childNumbers.join("c", numbered: "m.child") + " AND \(match)"
            }
            // The children of the batch's losers (`b`).
            let loserChildren = "FROM temp.winnow_batch AS b \(reach("b.rid"))"
            // Through the map, a reference that holds the rowid takes its moves from the map
            // alone, each with the loser it was mapped at; re-pointing then updates only the
            // child rows that still hold that loser (and the count check rolls back a batch
            // that finds any moved). Elsewhere the child rows are read as they are now: also in
            // a table that references itself, whose mapped children an earlier batch may have
            // deleted as losers.
            let mappedMoves = !path.indexed && holdsRowID && path.childTable.caseInsensitiveCompare(rule.table) != .orderedSame
            // The map (`winnow_refs`) of the child rows that point at the rows `members` selects,
            // and that `filter` (SQL over the child `c`) keeps: one scan of the child table,
            // membership by the members' key. A reference that does not hold the rowid is looked
            // up through the parent key's index.
            func mapRefs(_ members: String, filter: String = "", ordered: Bool = false, orIgnore: Bool = false) -> String? {
                guard !path.indexed else { return nil }
                let insert = "INSERT\(orIgnore ? " OR IGNORE" : "") INTO temp.winnow_refs (path, rid, child)"
                let tail = "\(filter.isEmpty ? "" : " AND \(filter)")\(ordered ? "\nORDER BY 1, 2, 3" : "")"
                return holdsRowID
                    ? """
                    \(insert)
                    SELECT \(index), c.\(path.childColumns[0].sqlIdentifier), \(childNumbers.number(of: "c")) FROM \(child) AS c
                    WHERE c.\(path.childColumns[0].sqlIdentifier) IN (\(members))\(tail)
                    """
                    : """
                    \(insert)
                    SELECT \(index), \(numbers.number(of: "p")), \(childNumbers.number(of: "c")) FROM \(child) AS c CROSS JOIN \(table) AS p ON \(join)
                    WHERE \(numbers.among(members, alias: "p"))\(tail)
                    """
            }
            // (Ahead goes in stretches of the child's rowids: a child without them waits for the
            // batches. Through an index too: batches by position would re-point the children of
            // a stretch of losers, which lie all over the child table.)
            let ahead =
                holdsRowID && path.childTable.caseInsensitiveCompare(rule.table) != .orderedSame && path.uniqueKeys.isEmpty
                && rule.rule.references != .restrict && !childNumbers.mapped
            if ahead { aheadPaths.append(index) }
            let reference = "c.\(path.childColumns[0].sqlIdentifier)"
            let childRowID = "c.\(path.childRowID)"
            nextAhead.append(
                ahead
                    ? RangeBound(path.childRowID, in: child)
                    : nil)
            // The moves of the stretch's child rows to the settled winner `winner` (SQL over
            // the child `c`, after `join`).
            func find(winner: String, join: String = "") -> String? {
                guard ahead else { return nil }
                return """
                    INSERT INTO temp.winnow_ahead (path, child, winner, loser)
                    SELECT \(index), \(childRowID), \(winner), \(reference) FROM \(child) AS c\(join)
                    WHERE \(childRowID) > ? AND \(childRowID) <= ? AND \(winner) IS NOT NULL
                    """
            }
            findAhead.append(find(winner: "m.winner", join: "\nCROSS JOIN temp.winnow_mapped AS m ON m.rid = \(reference)"))
            findAheadSettled.append(find(winner: "\(SettledWinners.function)(\(reference))"))
            applyAhead.append(
                ahead
                    ? """
                    UPDATE \(child) SET \(path.childColumns[0].sqlIdentifier) = mv.winner FROM temp.winnow_ahead AS mv
                    WHERE mv.path = \(index) AND mv.child > ?1 AND mv.child <= ?2
                    AND mv.child = \(child).\(path.childRowID) AND \(child).\(path.childColumns[0].sqlIdentifier) = mv.loser
                    """ : nil)
            pruneAhead.append(
                ahead
                    ? """
                    DELETE FROM temp.winnow_ahead WHERE path = \(index) AND child > ?1 AND child <= ?2 AND child NOT IN (
                      SELECT mv.child FROM temp.winnow_ahead AS mv
                      CROSS JOIN \(child) AS c ON \(childRowID) = mv.child AND \(reference) = mv.loser
                      \(numbers.join("a", numbered: "mv.loser"))
                      \(numbers.join("b", numbered: "mv.winner"))
                      WHERE mv.path = \(index) AND mv.child > ?1 AND mv.child <= ?2 AND \(rule.sameKey("a", "b")))
                    """ : nil)
            aheadChildren.append(ahead ? "SELECT child FROM temp.winnow_ahead WHERE path = \(index) AND child > ? AND child <= ?" : nil)
            let keepsRowIDs: Bool
            switch path.childIdentity {
            case .rowid(_, let alias): keepsRowIDs = alias != nil || path.indexed
            case .primaryKey: keepsRowIDs = false
            }
            let ref = ahead && keepsRowIDs ? Self.aheadRef(rule, path: path) : nil
            aheadRefs.append(ref)
            recordAhead.append(
                ref.map { _ in
                    "SELECT child, loser, winner FROM temp.winnow_ahead WHERE path = \(index) AND child > ?1 AND child <= ?2 ORDER BY child"
                })
            mapAhead.append(
                ahead ? mapRefs("SELECT rid FROM temp.winnow_mapped", filter: "\(childRowID) > ?1 AND \(childRowID) <= ?2") : nil)
            moveBack.append(
                ahead
                    ? """
                    INSERT INTO temp.winnow_moves (path, child, winner, loser)
                    SELECT \(index), a.child, a.loser, a.winner FROM temp.winnow_queue AS q
                    CROSS JOIN temp.winnow_ahead AS a ON a.loser = q.rid
                    CROSS JOIN \(child) AS c ON \(childRowID) = a.child AND \(reference) = a.winner
                    WHERE q.first > ? AND q.first <= ? AND a.path = \(index)
                      AND q.rid NOT IN (SELECT rid FROM temp.winnow_batch) AND q.rid NOT IN (SELECT winner FROM temp.winnow_batch)
                      AND EXISTS (SELECT 1 FROM \(table) AS p WHERE \(numbers.numbered("q.rid", alias: "p")))
                    """ : nil)
            // (OR IGNORE: a child moved back to its loser above is not also moved on.)
            fillMoves.append(
                mappedMoves
                    ? """
                    INSERT OR IGNORE INTO temp.winnow_moves (path, child, winner, loser)
                    SELECT \(index), m.child, b.winner, b.rid FROM temp.winnow_batch AS b
                    CROSS JOIN temp.winnow_refs AS m ON m.path = \(index) AND m.rid = b.rid
                    """
                    : ahead
                        ? """
                        INSERT OR IGNORE INTO temp.winnow_moves (path, child, winner, loser)
                        SELECT \(index), \(childNumbers.number(of: "c")), b.winner, b.rid \(loserChildren)
                        """
                        : """
                        INSERT INTO temp.winnow_moves (path, child, winner)
                        SELECT \(index), \(childNumbers.number(of: "c")), b.winner \(loserChildren)
                        """)
            dangling.append("SELECT count(*), min(\(childNumbers.number(of: "c"))) \(loserChildren)")
            sampleChildren.append("SELECT s.id, count(*) FROM temp.winnow_sampled AS s \(reach("s.id")) GROUP BY 1")
            let keyColumns = Array(Set(path.uniqueKeys.flatMap { $0 })).sorted()
            let selectedKeys = keyColumns.map { ", c.\($0.sqlIdentifier)" }.joined()
            groupChildren.append(
                """
                SELECT \(childNumbers.number(of: "c")), g.winner, g.rn\(selectedKeys)
                FROM \(groupRows) AS g \(reach("g.rid"))
                ORDER BY g.winner, g.rn, \(childNumbers.number(of: "c"))
                """)
            let parentValues = path.parentColumns.map { "p.\($0.sqlIdentifier)" }.joined(separator: ", ")
            winnerKeys.append(
                """
                SELECT g.winner, \(parentValues) FROM (SELECT DISTINCT winner FROM temp.winnow_batch) AS g
                \(numbers.join("p", numbered: "g.winner"))
                """)
            let targets = path.childColumns.map(\.sqlIdentifier).joined(separator: ", ")
            let sources = path.parentColumns.map { "p.\($0.sqlIdentifier)" }.joined(separator: ", ")
            let childTable = "main.\(path.childTable.sqlIdentifier)"
            deleteChild.append("DELETE FROM \(childTable) WHERE \(childNumbers.numbered("?"))")
            repointChild.append(
                """
                UPDATE \(childTable) SET \(path.childColumns.map { "\($0.sqlIdentifier) = ?" }.joined(separator: ", ")) \
                WHERE \(childNumbers.numbered("?"))
                """)
            let winnerValues =
                holdsRowID
                ? "SELECT mv.winner FROM temp.winnow_moves AS mv"
                : numbers.mapped
                    ? "SELECT \(sources) FROM temp.winnow_moves AS mv \(numbers.join("p", numbered: "mv.winner"))"
                    : "SELECT \(sources) FROM temp.winnow_moves AS mv JOIN main.\(rule.table.sqlIdentifier) AS p ON p.\(rowID!) = mv.winner"
            // (A child without rowids is reached from the move through its map, by primary key.)
            let (mapJoin, movedChild) =
                childNumbers.mapped
                ? (
                    " CROSS JOIN temp.\(childNumbers.map) AS c_id ON c_id.winnow_id = mv.child",
                    zip(childNumbers.key, childNumbers.key.indices).map { "\(childTable).\($0.sqlIdentifier) = c_id.winnow_k\($1)" }
                        .joined(separator: " AND ")
                )
                : ("", "mv.child = \(childTable).\(path.childRowID)")
            // The child's key after the move: a key column that is a child column takes the
            // winner's value (the winner's number itself where the reference holds the rowid).
            let keyIndexes = childNumbers.key.map { key in
                path.childColumns.firstIndex { $0.caseInsensitiveCompare(key) == .orderedSame }
            }
            if keyIndexes.contains(where: { $0 != nil }) {
                let moves =
                    holdsRowID
                    ? "temp.winnow_moves AS mv"
                    : numbers.mapped
                        ? "temp.winnow_moves AS mv \(numbers.join("p", numbered: "mv.winner"))"
                        : "temp.winnow_moves AS mv JOIN main.\(rule.table.sqlIdentifier) AS p ON p.\(rowID!) = mv.winner"
                let moved = zip(childNumbers.key, keyIndexes).map { key, column -> String in
                    guard let column else { return key.sqlIdentifier }
                    let value = holdsRowID ? "mv.winner" : "p.\(path.parentColumns[column].sqlIdentifier)"
                    return "(SELECT \(value) FROM \(moves) WHERE mv.path = \(index) AND mv.child = \(childNumbers.number(of: childTable)))"
                }
                movedKey.append(SQLFunctions.pack(moved))
                let repointed = zip(childNumbers.key, keyIndexes).map { key, column in column == nil ? key.sqlIdentifier : "?" }
                repointedKey.append((SQLFunctions.pack(repointed), keyIndexes.compactMap { $0 }))
            } else {
                movedKey.append(childNumbers.journalKey)
                repointedKey.append((childNumbers.journalKey, []))
            }
            movedChildren.append("SELECT child FROM temp.winnow_moves WHERE path = \(index)")
            // (Moves that name their loser (through the map, or re-pointed ahead, where the
            // reference holds the loser's rowid) are applied from the moves, by child rowid:
            // through a correlated subquery per child row, re-pointing the orders of merge-500
            // ahead took 1.1 s of its 5 s.)
            applyMoves.append(
                mappedMoves || ahead
                    ? """
                    UPDATE \(childTable) SET \(targets) = mv.winner FROM temp.winnow_moves AS mv\(mapJoin)
                    WHERE mv.path = \(index) AND \(movedChild) AND \(childTable).\(targets) = mv.loser
                    """
                    : """
                    UPDATE \(childTable) SET (\(targets)) = (
                        \(winnerValues) WHERE mv.path = \(index) AND mv.child = \(childNumbers.number(of: childTable)))
                    WHERE \(childNumbers.among(movedChildren[index]))
                    """)
            let windowLosers = "SELECT rid FROM temp.winnow_queue WHERE first > ?1 AND first <= ?2"
            let inRange = holdsRowID ? "\(reference) BETWEEN ?3 AND ?4" : ""
            // Forgets what the map holds of the rows `members` selects, before they are mapped again.
            func forgetRefs(_ members: String) -> String {
                "DELETE FROM temp.winnow_refs WHERE path = \(index) AND rid IN (\(members))"
            }
            func windowMap(_ members: String) -> WindowMap? {
                mapRefs(members, filter: inRange, orIgnore: true).map {
                    WindowMap(forget: forgetRefs(members), map: $0, bounded: holdsRowID)
                }
            }
            if let withWinners = windowMap(batchMembers), let losers = windowMap(windowLosers) {
                windowMaps.append((withWinners, losers))
            } else {
                windowMaps.append(nil)
            }
            let swapped = "SELECT cand FROM temp.winnow_swaps"
            remapSwapped.append(
                mapRefs(swapped, orIgnore: true).map {
                    (forget: forgetRefs(swapped), map: $0)
                })
            mapChildren.append(mapRefs("SELECT rid FROM temp.winnow_mapped", ordered: true))
        }
        let collides = rule.references.contains { !$0.indexed && !$0.uniqueKeys.isEmpty }
        // `winner`: where children can be re-pointed ahead, a loser's winner when its group's
        // winner is settled by the winner terms (the second row does not tie the first).
        let settled =
            aheadPaths.isEmpty
            ? "NULL" : "CASE WHEN winner NOT IN (SELECT winner FROM temp.winnow_queue WHERE rn = 2 AND tied) THEN winner END"
        // Each row of the queue is one loser, and no loser is a winner (a row is in one group):
        // the losers need no duplicates removed, only the winners, one row each however many
        // losers they have. (A `UNION` of the two halves sorted every loser too: merge-500's
        // fill took 0.55 s at 1,600,000 customers against 0.36 s, child-unindexed's 0.06-0.10 s
        // at 200,000 against 0.05-0.07 s.)
        func fill(_ winners: String, settled: String) -> String {
            """
            DELETE FROM temp.winnow_mapped;
            INSERT INTO temp.winnow_mapped (rid, winner) SELECT rid, \(settled) FROM temp.winnow_queue
            UNION ALL SELECT DISTINCT winner, NULL FROM temp.winnow_queue\(winners)
            """
        }
        fillMapped = fill(collides ? "" : " WHERE tied", settled: "NULL")
        fillMappedSettled = fill(collides ? "" : " WHERE tied", settled: settled)
        fillMappedEveryWinner = fill("", settled: "NULL")
        let checked = rule.references.filter { $0.declared && !$0.indexed }
        var tables: [String] = []
        for path in checked where !Self.holdsRowID(path, rowID: rowID) && !tables.contains(path.childTable) {
            tables.append(path.childTable)
        }
        danglingInTable = tables.map { ($0, "SELECT count(*) FROM pragma_foreign_key_check(\(ChangeTracking.literal($0)), 'main')") }
        danglingMapped = checked.filter { Self.holdsRowID($0, rowID: rowID) && !tables.contains($0.childTable) }.map { path in
            let column = "c.\(path.childColumns[0].sqlIdentifier)"
            return (
                path.label,
                """
                SELECT count(*) FROM \(rule.qualified(path.childTable)) AS c WHERE \(column) IN (SELECT rid FROM temp.winnow_mapped)
                AND NOT EXISTS (SELECT 1 FROM \(table) AS p WHERE \(numbers.numbered(column, alias: "p")))
                """
            )
        }
        self.fillMoves = fillMoves
        self.aheadPaths = aheadPaths
        self.nextAhead = nextAhead
        self.findAhead = findAhead
        self.findAheadSettled = findAheadSettled
        self.applyAhead = applyAhead
        self.pruneAhead = pruneAhead
        self.movedChildren = movedChildren
        self.aheadChildren = aheadChildren
        self.aheadRefs = aheadRefs
        self.recordAhead = recordAhead
        let refs = aheadRefs.compactMap { $0 }
        movedAheadOwn = refs.isEmpty ? nil : "ref IN (\(refs.map { String($0) }.joined(separator: ", ")))"
        self.mapAhead = mapAhead
        self.moveBack = moveBack
        self.groupChildren = groupChildren
        self.winnerKeys = winnerKeys
        self.applyMoves = applyMoves
        self.danglingChildren = dangling
        self.mapChildren = mapChildren
        self.sampleChildren = sampleChildren
        self.windowMaps = windowMaps
        self.remapSwapped = remapSwapped
        self.deleteChild = deleteChild
        self.repointChild = repointChild
        self.movedKey = movedKey
        self.repointedKey = repointedKey
        // Every winner of the batch, once (the re-pointed rows reach some of them).
        missingWinners = """
            SELECT count(*) FROM (SELECT DISTINCT winner FROM temp.winnow_batch) AS w
            WHERE NOT EXISTS (SELECT 1 FROM main.\(rule.table.sqlIdentifier) AS p WHERE \(numbers.numbered("w.winner", alias: "p")))
            """
        loserSelection = numbers.among("SELECT rid FROM temp.winnow_batch")
        recordGroups = """
            INSERT INTO winnow_run_groups (run_id, rule, batch, tbl, winner, loser)
            SELECT ?, ?, ?, ?, \(numbers.journalKey(numbered: "winner")), \(numbers.journalKey(numbered: "rid"))
            FROM temp.winnow_batch ORDER BY winner, rn
            """
        deleteLosers = "DELETE FROM \(table) WHERE \(loserSelection)"
    }

    /// Copies the batch's losers, each with its winner, into `journal` (``TypedJournal``), in
    /// rowid order. Binds: the last `winnow_seq` before these, the run, the rule, the batch, and
    /// the `winnow_journal` entry they follow. The run's `first` statement in the table numbers
    /// its rows from the run's stretch; later ones take the next rowids (SQLite's own, one more
    /// than the largest, so no window has to number the rows).
    func keepLosers(in journal: TypedJournal, first: Bool) -> String {
        let names = (TypedJournal.fixed + journal.columns.map(\.sqlIdentifier)).joined(separator: ", ")
        let values = journal.columns.map { "t.\($0.sqlIdentifier)" }.joined(separator: ", ")
        return """
            INSERT INTO \(journal.relation) (\(names))
            SELECT \(first ? "?1 + row_number() OVER ()" : "NULL"), ?2, ?3, ?4, ?5,
                \(numbers.journalKey(numbered: "b.rid")), \(numbers.journalKey(numbered: "b.winner")), \(values)
            FROM temp.winnow_batch AS b \(numbers.join("t", numbered: "b.rid"))
            """
    }

    /// The name of a reference in `winnow_moved_ahead`: a 31-bit FNV-1a hash of the rule's
    /// table, the child table and the child column (lowercased: SQLite compares names without case),
    /// the same in every run and on every machine, and four bytes a recorded child.
    static func aheadRef(_ rule: CompiledRule, path: ReferencePath) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        let name = [rule.table, path.childTable, path.childColumns[0]].map { $0.lowercased() }.joined(separator: "\u{1F}")
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(hash & 0x7FFF_FFFF)
    }

    /// Whether `path` references the parent's rowid (its alias column): its child column holds
    /// the parent's rowid itself. (Never for a table without one: `rowID` nil.)
    static func holdsRowID(_ path: ReferencePath, rowID: String?) -> Bool {
        path.parentColumns.count == 1 && path.parentColumns[0].sqlIdentifier == rowID
    }

    /// The leading winner term that keeps the winner of losers a merge took first (see
    /// ``init(_:pinsTaken:)``); `alias` names the rule's table. Reads the copy of the record
    /// (``DedupeExecutor/fillTakenCopy()``), which the statement's caller makes first.
    static func takenPin(_ rule: CompiledRule, alias: String?) -> String {
        "(\(RowNumbers(rule).number(of: alias)) IN (SELECT winner FROM temp.winnow_taken)) DESC"
    }

    /// Whether any path needs the map of children (no index on its child columns).
    var mapsChildren: Bool { mapChildren.contains { $0 != nil } }

    /// `set` of `temp.winnow_merged` for these merge columns.
    static func mergeSet(_ columns: [Int]) -> String { columns.map(String.init).joined(separator: ",") }

    /// Writes the merged values of the winners whose changed columns are `columns` (indexes
    /// into the rule's merge columns), by rowid.
    func mergeUpdate(_ columns: [Int]) -> String {
        let table = "main.\(rule.table.sqlIdentifier)"
        let targets = columns.map { rule.mergeColumns[$0].name.sqlIdentifier }.joined(separator: ", ")
        let sources = columns.map { "m.v\($0)" }.joined(separator: ", ")
        return """
            UPDATE \(table) SET (\(targets)) = (SELECT \(sources) FROM temp.winnow_merged AS m WHERE m.winner = \(numbers.number(of: table)))
            WHERE \(numbers.among("SELECT winner FROM temp.winnow_merged WHERE \"set\" = '\(Self.mergeSet(columns))'"))
            """
    }
}
