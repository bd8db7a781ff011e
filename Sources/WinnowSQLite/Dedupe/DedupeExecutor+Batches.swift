import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

extension DedupeExecutor {
    /// The core's batch loop over this rule, with the run's deadline, pauses and events.
    func loop(total: Int) -> BatchLoop {
        BatchLoop(
            rule: rule.rule.index, table: rule.table, total: total, pauseMilliseconds: settings.pauseMilliseconds,
            deadline: deadline, sampleLimit: sampleLimit, onEvent: onEvent)
    }

    /// Resolves every group found by ``discover()``, batch by batch (``QueueBatches`` driven
    /// by the core's ``BatchLoop``).
    func execute(_ discovery: Discovery, batchNumber: inout Int, totals: inout Counts, samples: inout SampleList) throws -> Counts {
        var counts = Counts()
        let mayHaveTaken = try mayHaveTakenLosers()
        let sql = BatchStatements(rule, pinsTaken: mayHaveTaken)
        if !rule.mergeColumns.isEmpty { try db.execute(sql: sql.createMerged) }
        var state = BatchState(foundAt: try Int64.fetchOne(db, sql: "SELECT version FROM temp.winnow_found"))
        if filesByPosition, discovery.losers > 0 { try settleTiesAhead(sql, state: &state) }
        try db.execute(sql: sql.dropTaken)
        if mayHaveTaken { state.skipsTaken = try anyTakenRecorded() }
        if mayHaveTaken, writer.writes, !state.skipsTaken { try retireOldTakenRecord() }
        // Children an unfinished run re-pointed ahead of losers that are no longer their
        // winners' go back to them first (another connection changed them since).
        counts = counts + (try moveStrayChildrenBack(sql, batchNumber: &batchNumber, totals: &totals))
        // Children re-pointed ahead of the batches (see ``AheadBatches``): their paths are
        // mapped stretch by stretch there, not here.
        // (Only where the groups take more than one batch: one batch writes each child page once anyway.)
        let ahead =
            writer.writes && !sql.aheadPaths.isEmpty && discovery.groups > settings.size && deadline.at == nil && deadline.stop == nil
        if sql.mapsChildren, discovery.losers > 0 {
            try mapChildren(sql, state: &state, ahead: ahead)
        } else if ahead, let foundAt = state.foundAt {
            // Only paths with an index on the reference: no map, but each loser's settled winner
            // as found (after another connection's commit too: each stretch then checks its
            // moves as the rows are, ``AheadBatches``).
            try db.execute(sql: sql.fillMappedSettled)
            state.mappedAt = foundAt
        }
        // Deleting a parent row with enforcement on scans each child table without an index on
        // its referencing columns once per row; the batches check the references they touch instead.
        let suspended = try suspendForeignKeys()
        defer { if suspended { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
        // Where no index lets a batch look the children of its losers up again, the rule as a
        // whole is checked too: no more references to no row after it than before it (see
        // ``BatchStatements/danglingInTable`` and ``BatchStatements/danglingMapped``).
        var danglingBefore: [Int] = []
        if suspended {
            for check in sql.danglingInTable { danglingBefore.append(try Int.fetchOne(db, sql: check.sql) ?? 0) }
        }
        if ahead {
            // A page cache of 32 MiB while children are re-pointed ahead (SQLite's default is
            // 2 MiB): a stretch re-points children through an index all over it, and a cache
            // smaller than the index writes pages out before the commit and again after
            // (merge-500 at 1,600,000 customers: the stretches took 70 s and wrote 9.0 GB with
            // the default, 36 s and 5.0 GB with this). Only here: the sorter sizes its memory by
            // the cache too, and a larger one for the whole run took dup67 at 10,000,000 rows
            // from 49 MB to 199 MB of memory.
            let cache = try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? -2000
            try db.execute(sql: "PRAGMA cache_size = -32768")
            defer { try? db.execute(sql: "PRAGMA cache_size = \(cache)") }
            // (Sized before the temporary cache is raised: that sizer reads it.)
            // Where another connection has committed since the discovery, the stretches (which
            // then check their moves, ``AheadBatches``) are sized to ``aheadShareBesideWriter``
            // of the limit.
            let sizer = try aheadSizer(besideWriter: state.foundAt.map { try !unchanged(since: $0) } ?? false)
            // The settled winners in memory for the paths whose reference compares with a
            // rowid by value (``SettledWinners``), as the map is when the stretches begin.
            let settled = state.mappedAt != nil && state.mappedAt == state.foundAt ? try holdSettledWinners(sql) : []
            defer { if !settled.isEmpty { SettledWinners.unregister(from: db) } }
            // The map's B-tree is read during the stretches only by a path not looked up in
            // memory, or mapped for the batches (no index on its reference).
            let readsMap = sql.aheadPaths.contains { !settled.contains($0) || sql.mapAhead[$0] != nil }
            let temporaryCache = readsMap ? try raiseTemporaryCacheForMap(losers: discovery.losers) : nil
            defer { if let temporaryCache { try? db.execute(sql: "PRAGMA temp.cache_size = \(temporaryCache)") } }
            try db.execute(sql: sql.clearAhead)
            // The map of these paths is complete only once every stretch is done as found;
            // else the next batch maps every path again.
            let mappedAt = state.mappedAt
            state.mappedAt = nil
            if let foundAt = state.foundAt, mappedAt == foundAt {
                var asFound = true
                for path in sql.aheadPaths {
                    guard
                        var stretches = try AheadBatches(
                            executor: self, sql: sql, path: path, foundAt: foundAt, settled: settled.contains(path))
                    else { continue }
                    let result = try loop(total: discovery.losers).run(
                        &stretches, sizer: sizer, batchNumber: &batchNumber, totals: &totals, samples: &samples)
                    // (The gap after the last stretch too, before the next stage's first write.)
                    try stretches.betweenBatches()
                    try stretches.forgetUnapplied()
                    counts = counts + result.counts
                    if result.counts.batches > 0 { state.repointedAhead = true }
                    if let warning = PlanAdvice.stretchesWarning(
                        rule.references[path], stretches: result.counts.batches, settings: settings)
                    {
                        notes.warnings.append(warning)
                    }
                    // Another connection has committed: the batches take the rest as it is now.
                    guard result.finished else {
                        asFound = false
                        break
                    }
                }
                if asFound { state.mappedAt = mappedAt }
            }
        }
        // The values of losers that a run's stretches of merges deleted before their winner's
        // merge, where that merge never came (a killed run), go to their winners first: every
        // merge from here on reads the winners' values.
        counts = counts + (try settleGivenMerges(sql, state: &state, batchNumber: &batchNumber, totals: &totals))
        // Then the merges, ahead of the deletions (only where the groups take more than one
        // batch, as for the children).
        // Each stretch deletes the losers its merges have taken in its rowids; the batches take the rest.
        var handledAhead = 0
        if mergesAhead, discovery.losers > 0, discovery.groups > settings.size, !state.refiled {
            let merged = try mergeAhead(
                sql, state: &state, losers: discovery.losers, checksReferences: suspended, batchNumber: &batchNumber,
                totals: &totals, samples: &samples)
            counts = counts + merged.counts
            handledAhead = merged.done
            // Another connection committed before every stretch had merged its winners: the
            // values of the losers given ahead to the others go to them before the batches.
            counts = counts + (try settleGivenMerges(sql, state: &state, batchNumber: &batchNumber, totals: &totals))
        }
        // Once another connection has committed, the first batch would file the queue by group
        // again, index the record of the children re-pointed ahead and list the rows whose
        // children it maps, all inside its write transaction (merge-writer: about 45 ms of a
        // first batch of 52 ms under a 50 ms limit, while that writer waited). All change
        // temporary tables only: done here, before the batches, with no lock on the database held.
        if writer.writes, let foundAt = state.foundAt, try !unchanged(since: foundAt) {
            if filesByPosition, !staysByPosition, !state.refiled {
                try db.execute(sql: sql.refileByGroup(after: .min))
                state.refiled = true
            }
            if state.repointedAhead, !state.aheadIndexed {
                try db.execute(sql: sql.indexAhead)
                state.aheadIndexed = true
            }
            // (400,000 customers: 0.5 s.)
            if sql.mapsChildren, discovery.losers > 0 { try listEveryRowOfEveryGroup(sql, state: &state) }
        }
        // (Not for a dry run: `plan` of merge-archive-50 took 4% longer with the flush.)
        if writer.writes { try flushTemporaryPages(expectedBatches: discovery.groups / max(1, settings.size), sql: sql) }
        // A batch filed by position holds the losers of about `batch.size` groups.
        let perGroup = filesByPosition && discovery.groups > 0 ? max(1, Double(discovery.losers) / Double(discovery.groups)) : 1
        var batches = QueueBatches(executor: self, sql: sql, state: state, checksReferences: suspended, perGroup: perGroup)
        var sizer = BatchSizer(
            configured: Int((Double(settings.size) * perGroup).rounded()), maxTransactionMilliseconds: settings.maxTransactionMilliseconds)
        batches.holdBackFirstBatch(&sizer)
        var batchLoop = loop(total: discovery.losers)
        batchLoop.handledBefore = handledAhead
        let result = try batchLoop.run(&batches, sizer: sizer, batchNumber: &batchNumber, totals: &totals, samples: &samples)
        counts = counts + result.counts
        // Every loser a merge took is gone now (or no longer a loser): the record has served.
        if result.finished, writer.writes, batches.state.skipsTaken {
            try forgetRecord(SQLiteDialect.takenLosersName, own: sql.takenOwn)
            try retireOldTakenRecord()
        }
        // So is every loser whose children went ahead.
        if result.finished, writer.writes { try forgetMovedAhead(sql) }
        for (check, before) in zip(sql.danglingInTable, danglingBefore) {
            let after = try Int.fetchOne(db, sql: check.sql) ?? 0
            if after > before {
                throw danglingAfterRule("\(after - before) row(s) of \(check.table) point at rows this run deleted")
            }
        }
        // (`winnow_mapped` holds this rule's rows once it has losers: mapped before the first batch.)
        for check in suspended && discovery.losers > 0 ? sql.danglingMapped : [] {
            let count = try Int.fetchOne(db, sql: check.sql) ?? 0
            if count > 0 {
                throw danglingAfterRule("\(count) row(s) of \(check.label) point at duplicates this rule found that are gone")
            }
        }
        return counts
    }

    /// Whether losers of the rule's table may be recorded as taken by a merge (the rule merges,
    /// the table has rowids and a record exists, today's or an earlier release's): groups then
    /// keep their recorded winner (``BatchStatements/init(_:pinsTaken:)``).
    func mayHaveTakenLosers() throws -> Bool {
        guard !rule.mergeColumns.isEmpty, !RowNumbers(rule).mapped else { return false }
        return try db.tableExists(SQLiteDialect.takenLosersName) || db.tableExists(SQLiteDialect.oldTakenLosersName)
    }

    /// Empties this rule's rows (`own`, SQL over `table`) of one of the records of work done
    /// ahead (`winnow_taken_losers`, `winnow_moved_ahead`), once its losers are gone. The
    /// records hold rowids that winnow wrote, so their freed pages are not zeroed
    /// (`secure_delete = FAST` for this statement only: on a build that zeroes deleted content,
    /// merge-500 wrote about 7 MB more doing it); and where a record holds no other rule's rows
    /// it is emptied whole, which frees its pages without rewriting them. `holdsValues`: the
    /// record holds values of the user's rows (`winnow_given_merges`), and its pages are
    /// zeroed as the database's own setting says.
    func forgetRecord(_ table: String, own: String, holdsValues: Bool = false) throws {
        let secure = try Int.fetchOne(db, sql: "PRAGMA main.secure_delete") ?? 0
        if !holdsValues { try db.execute(sql: "PRAGMA main.secure_delete = FAST") }
        defer { try? db.execute(sql: "PRAGMA main.secure_delete = \(secure == 2 ? "FAST" : String(secure))") }
        try writer.transaction(db) {
            let others = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM main.\(table) WHERE NOT (\(own)))") ?? true
            try db.execute(sql: "DELETE FROM main.\(table)" + (others ? " WHERE \(own)" : ""))
        }
    }

    /// Drops the record of taken losers of an earlier release (a row per loser,
    /// ``SQLiteDialect/oldTakenLosersName``) once this rule's rows of it are gone and no other
    /// table has a loser recorded in it; until then it is read beside today's.
    func retireOldTakenRecord() throws {
        guard try db.tableExists(SQLiteDialect.oldTakenLosersName) else { return }
        try forgetRecord(SQLiteDialect.oldTakenLosersName, own: "tbl = \(ChangeTracking.literal(rule.table))")
        try writer.transaction(db) {
            let old = "main.\(SQLiteDialect.oldTakenLosersName)"
            guard try Bool.fetchOne(db, sql: "SELECT NOT EXISTS (SELECT 1 FROM \(old))") == true else { return }
            try db.execute(sql: "DROP TABLE \(old)")
            try RowidWatch.note(db)
        }
    }

    /// The sizer of the stretches ahead of the deletions (children re-pointed, merges applied):
    /// row ranges bounded by `max_transaction_ms` alone (``BatchSizer/rowRanges(_:)``). A
    /// stretch of children rewrites most of the child's index whatever its size: on a large
    /// table fewer, larger stretches write less, as many fewer as the limit allows.
    ///
    /// Where the temporary database keeps its journal in memory (a small table's raised
    /// caches, ``workingMemoryRaised()``), a stretch's temporary tables are emptied into that
    /// journal, which grows with the stretch's rows and not with the rule's table (a child table
    /// may be far larger than its parent): there the stretches stay within 256 times
    /// `batch.size` (``BatchSizer/rowRanges(_:upTo:)``), as before.
    ///
    /// `share`: the share of `max_transaction_ms` the stretches are sized to.
    func aheadSizer(start: Int = aheadStart, share: Double = 1) throws -> BatchSizer {
        var settings = settings
        settings.maxTransactionMilliseconds = max(1, Int((Double(settings.maxTransactionMilliseconds) * share).rounded()))
        return try workingMemoryRaised()
            ? BatchSizer.rowRanges(settings, upTo: 256, start: start) : BatchSizer.rowRanges(settings, start: start)
    }

    /// The sizer of the stretches of children, and of the losers the merges took once another
    /// connection has committed: from ``childrenAheadStart`` rows, to ``aheadShareBesideWriter``
    /// of the limit `besideWriter`.
    func aheadSizer(besideWriter: Bool) throws -> BatchSizer {
        try aheadSizer(start: min(Self.aheadStart, Self.childrenAheadStart), share: besideWriter ? Self.aheadShareBesideWriter : 1)
    }

    /// The share of `max_transaction_ms` that stretches of children are sized to beside
    /// another writer. merge-writer in WAL (a writer committing every 2 ms, a 50 ms limit): the
    /// writer's worst waits 38.8, 54.4 and 42.1 ms with 0.7 against 57.0, 54.3 and 79.2 ms with
    /// the whole limit, for 4-15% more bytes written (a stretch rewrites most of the child's
    /// index); SQLite's busy handler sleeps 20 ms after 33 ms of tries, so a stretch that holds
    /// the lock past about 33 ms of a writer's tries makes it wait 53 ms or more.
    static let aheadShareBesideWriter = 0.7

    /// The most rows the first stretch of children takes. It is there to measure a stretch and
    /// its commit before the next ones fill (``StretchFill``), and each child it re-points
    /// rewrites two pages of the child's index, at random: at ``aheadStart``'s 1,000 rows,
    /// merge-500's first stretch at 1,600,000 customers re-pointed 667 orders and wrote about
    /// 18 MB (the index pages and their journal), a third of a full stretch's bytes.
    static let childrenAheadStart = 128

    /// The size of the first stretch ahead (rows of a child table, or winners): SQLite's
    /// executor starts where every loop over row ranges does (``BatchSizer/rowRangeStart``).
    /// Tests lower it to see several stretches on a small table.
    static var aheadStart = BatchSizer.rowRangeStart

    /// Decides every group's merge once, over its rows as found, and applies the decisions
    /// in stretches of the winners' rowids (``MergeAheadBatches``), each deleting the losers in
    /// its rowids that the merges have taken, then deletes the losers they left in stretches of
    /// theirs (``DeleteAheadBatches``). Sets `state.mergedAhead` when every stretch of merges
    /// was applied as found; else the batches settle the rest by group. Returns the stretches'
    /// counts and the losers they handled.
    func mergeAhead(
        _ sql: BatchStatements, state: inout BatchState, losers: Int, checksReferences: Bool, batchNumber: inout Int,
        totals: inout Counts, samples: inout SampleList
    ) throws -> (counts: Counts, done: Int) {
        guard let foundAt = state.foundAt, try unchanged(since: foundAt) else { return (Counts(), 0) }
        guard let decided = try decideMerges(sql, skipsTaken: state.skipsTaken, foundAt: foundAt) else { return (Counts(), 0) }
        let gives = givesAhead(decided)
        if !gives { try db.execute(sql: sql.dropCopied) }
        var stretches = MergeAheadBatches(
            executor: self, sql: sql, foundAt: foundAt, columnSets: decided.mergeColumnSets, state: state,
            checksReferences: checksReferences, gives: gives)
        var sizer = try aheadSizer()
        sizer.growthLimit = Self.mergeStretchMaxGrowth
        // Their cost per winner rises from one stretch to the next.
        sizer.growLikeBatches()
        let result = try loop(total: losers).run(
            &stretches, sizer: sizer, batchNumber: &batchNumber, totals: &totals, samples: &samples)
        // What the stretches' deletions read and mapped carries on to the batches.
        state = stretches.state
        if result.counts.batches > 0 { state.skipsTaken = true }
        state.mergedAhead = result.finished
        // Every winner's merge is applied: the values of the losers given ahead are in them.
        // (Emptied as the other records of work done ahead are: most often the whole table,
        // which frees its pages without rewriting them.)
        if result.finished, result.counts.batches > 0, try db.tableExists(SQLiteDialect.givenMergesName) {
            try forgetRecord(SQLiteDialect.givenMergesName, own: sql.takenOwn, holdsValues: true)
        }
        try db.execute(sql: sql.dropDecisions)
        var (counts, done) = (result.counts, result.done)
        // The losers the stretches of merges left, in stretches of their rowids; returns
        // whether they all went.
        func deleteLeft(sizer: BatchSizer) throws -> Bool {
            var left = DeleteAheadBatches(executor: self, sql: sql, foundAt: foundAt, state: state, checksReferences: checksReferences)
            var sweep = loop(total: losers)
            sweep.handledBefore = done
            let swept = try sweep.run(&left, sizer: sizer, batchNumber: &batchNumber, totals: &totals, samples: &samples)
            // (The gap after the last stretch too, before the batches' first write.)
            try left.betweenBatches()
            state = left.state
            (counts, done) = (counts + swept.counts, done + swept.done)
            return swept.finished
        }
        if result.finished, try deleteLeft(sizer: aheadSizer()) { return (counts, done) }
        // Another connection has committed: the losers the merges took and left go next, in
        // stretches of their rowids (none of them is merged again, and each goes with the
        // winner that took it whatever that connection changes in it), so that the time in
        // which that connection can change a loser whose values are already in its winner
        // is a few stretches, not the rest of the run; the batches by group settle the rest.
        guard result.counts.batches > 0 else { return (counts, done) }
        state.sweepsTaken = true
        defer { state.sweepsTaken = false }
        _ = try deleteLeft(sizer: aheadSizer(besideWriter: true))
        return (counts, done)
    }

    /// Decides every group's merge before the stretches of merges (``MergeAheadBatches``) into
    /// `temp.winnow_decided`, and returns the decisions' count and column sets. The queue's
    /// losers are copied by winner with their values (``BatchStatements/fillTakeable``), in
    /// pieces of the queue, then the groups are read with their winners' values and decided in
    /// pieces of whole groups, each piece read within half of `max_transaction_ms`
    /// (``piecesAsFound(_:foundAt:then:piece:)``), the first of ``aheadStart`` losers. In a
    /// rollback journal a read holds back every other connection's commit: at merge-500's
    /// 1,600,000 customers the decisions were one read of 2.5 s under a 1 s limit. Each piece
    /// first reads `PRAGMA data_version` in its own transaction: after another connection's
    /// commit since the losers were found (`foundAt`) no stretch would apply a decision, and
    /// the pieces stop there (nil, the tables dropped) for the batches, which decide their
    /// groups as the rows are.
    func decideMerges(_ sql: BatchStatements, skipsTaken: Bool, foundAt: Int64) throws -> BatchWork? {
        try db.inTransaction(.deferred) {
            try db.execute(sql: sql.createTakeable)
            try db.execute(sql: sql.createDecided)
            return .commit
        }
        // The copy too in pieces of the queue (filed by position): one read of the losers'
        // values took 1.0-1.4 s at merge-500's 1,600,000 customers under a 1 s limit
        // (`WINNOW_SQL_PROFILE=trace`).
        let copied = try piecesAsFound(sql.nextBatch, foundAt: foundAt, then: Self.afterCopyingMergeRows) { after, upTo in
            try db.cachedStatement(sql: sql.fillTakeable).execute(arguments: [after, upTo])
        }
        guard copied else {
            try db.execute(sql: sql.dropDecisions)
            return nil
        }
        try db.inTransaction(.deferred) {
            try db.execute(sql: sql.sortTakeable)
            return .commit
        }
        var decided = BatchWork(number: 0)
        // (A transaction for each piece: one read of the rows, and no commit of the temporary
        // database after each decision.)
        let asFound = try piecesAsFound(sql.nextTakeable, foundAt: foundAt, then: Self.afterDecidingMerges) { after, upTo in
            try readMerges(sql, into: &decided, skipsTaken: skipsTaken, winners: (after, upTo))
            try db.execute(sql: sql.keepDecided)
        }
        guard asFound else {
            try db.execute(sql: sql.dropDecisions)
            return nil
        }
        return decided
    }

    /// Runs `piece` over the ranges of `next` (the values of a temporary table), from
    /// ``aheadStart`` units, each in a deferred transaction of its own, the next as many as
    /// fit in half of `max_transaction_ms` at the cost per unit just measured
    /// (``StretchFill/findPiece(_:secondsPerRow:)``), with `then` after each, outside it.
    /// Each first reads `PRAGMA data_version`: false, where another connection has committed
    /// since `foundAt`, with nothing more read.
    private func piecesAsFound(
        _ next: RangeBound, foundAt: Int64, then: ((Database) throws -> Void)?, piece: (_ after: Int64, _ upTo: Int64) throws -> Void
    ) throws -> Bool {
        let fill = StretchFill(maxTransactionMilliseconds: settings.maxTransactionMilliseconds)
        var (after, size) = (Int64.min, Self.aheadStart)
        while let upTo = try next.next(db, after: after, size: size) {
            let started = Date()
            var changed = false
            try db.inTransaction(.deferred) {
                changed = try !unchanged(since: foundAt)
                if !changed { try piece(after, upTo) }
                return .commit
            }
            if changed { return false }
            let secondsPerUnit = Date().timeIntervalSince(started) / Double(size)
            try then?(db)
            after = upTo
            size = fill.findPiece(Int(Int32.max), secondsPerRow: secondsPerUnit)
        }
        return true
    }

    /// Called after each piece of the copy of the queue's losers with their values
    /// (``decideMerges(_:skipsTaken:foundAt:)``), outside any transaction: tests commit from
    /// another connection there.
    nonisolated(unsafe) static var afterCopyingMergeRows: ((Database) throws -> Void)?

    /// Called after each piece of the merge decisions (``decideMerges(_:skipsTaken:foundAt:)``), with
    /// the connection, outside any transaction: tests commit from another connection there.
    nonisolated(unsafe) static var afterDecidingMerges: ((Database) throws -> Void)?

    /// Whether no other connection has committed since the losers were found (`PRAGMA
    /// data_version` still `foundAt`). Inside a write transaction the answer holds until its
    /// commit: each stretch ahead asks first and stops where the rows are no longer as found.
    func unchanged(since foundAt: Int64) throws -> Bool {
        try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA main.data_version")) == foundAt
    }

    /// Reads the losers filed in `(after, upTo]` whose winner's merge is applied (a winner at
    /// or below `takenUpTo`) and deletes them as a batch would, checking the references they
    /// touch where `checksReferences`: a stretch of merges and a stretch of the losers the
    /// merges left. Only as found (``read(batch:after:upTo:sql:state:wantSamples:takenUpTo:)``).
    func deleteTaken(
        batch number: Int, after: Int64, upTo: Int64, takenUpTo: Int64, sql: BatchStatements, state: inout BatchState,
        wantSamples: Bool, checksReferences: Bool
    ) throws -> BatchWork {
        var work = try read(
            batch: number, after: after, upTo: upTo, sql: sql, state: &state, wantSamples: wantSamples, takenUpTo: takenUpTo)
        work.checksReferences = checksReferences
        if work.deleted > 0 || !work.moved.isEmpty { try writer.apply(work, rule: rule, sql: sql, db: db) }
        return work
    }

    /// The most a stretch of merges grows from one to the next (``BatchSizer/rowRangeMaxGrowth``
    /// is 16): a stretch's time grows with its winners (its pieces keep the pages they change in
    /// the cache), and every boundary between two stretches leaves the losers before it whose
    /// winners lie after it to the batches, which write their pages again. merge-500 at 100,000
    /// customers took stretches of 1,000, 16,000 and 16,000 winners growing by 16 and wrote
    /// 95,400 blocks, of 1,000 and 32,000 growing by 64 and wrote 71,000-72,000 (129,000-130,000
    /// instead of 158,500 at 200,000). Still only up to the size the latest stretch's time puts at
    /// half the limit.
    static let mergeStretchMaxGrowth = 64.0

    /// Settles, before the batches, the winner of every group whose candidate ties its second
    /// row on the winner terms (by the full winner order, as a batch of a rule filed by group
    /// does), so that batches filed by position can delete any loser apart from its group.
    /// Only on the rows as found; after another connection's commit each batch settles its
    /// groups as they are then: its own part of each (``staysByPosition``), or whole groups,
    /// the queue filed by group again (``BatchStatements/refileByGroup(after:)``).
    func settleTiesAhead(_ sql: BatchStatements, state: inout BatchState) throws {
        let version = try Int64.fetchOne(db, sql: "PRAGMA main.data_version")
        guard state.foundAt != nil, version == state.foundAt else {
            guard !staysByPosition else { return }
            try db.execute(sql: sql.refileByGroup(after: .min))
            state.refiled = true
            return
        }
        // Discovery counted the ties: without any there is nothing to rank or to clear (each
        // of those statements reads the whole queue).
        let ties = try Row.fetchOne(db, sql: "SELECT tied_rows, tied_groups FROM temp.winnow_found")
        let (tiedRows, tiedGroups): (Int, Int) = (ties?[0] ?? 1, ties?[1] ?? 1)
        guard tiedRows > 0 else { return }
        // A merge follows the order of the losers too: every group with a tie is ranked.
        let merges = !rule.mergeColumns.isEmpty
        if merges || tiedGroups > 0 {
            try db.cachedStatement(sql: sql.clearRanks).execute()
            if sql.pinsTaken { try fillTakenCopy() }
            try db.cachedStatement(sql: merges ? sql.rankEveryTiedQueue : sql.rankTiedQueue).execute()
            if db.changesCount > 0 {
                try db.cachedStatement(sql: sql.clearSwaps).execute()
                try db.cachedStatement(sql: sql.findSwaps).execute()
                if db.changesCount > 0 {
                    try db.cachedStatement(sql: sql.swapQueueLosers).execute()
                    try db.cachedStatement(sql: sql.swapQueueWinners).execute()
                }
                if merges { try db.cachedStatement(sql: sql.renumberQueue).execute() }
            }
        }
        // Every winner is settled: no batch ranks its rows again (a tie between two losers
        // orders nothing a rule that only deletes does).
        try db.cachedStatement(sql: sql.clearQueueTies).execute()
    }

    /// The failure of a rule whose committed batches left `what` (references to no row).
    func danglingAfterRule(_ what: String) -> WinnowError {
        let undo =
            rule.rule.archive
            ? "every batch is journaled: `winnow restore --run` puts them back"
            : "the rule does not archive, so its committed batches cannot be restored; `PRAGMA foreign_key_check` lists the rows"
        return .internal("\(rule.rule.keyPath) (\(rule.table)): \(what); \(undo)")
    }

    /// What the batches of one rule carry from one to the next.
    struct BatchState {
        /// `PRAGMA data_version` when the losers were found: while it holds, they are as found.
        var foundAt: Int64?
        /// `PRAGMA data_version` when `winnow_refs` was filled: while it holds, the map is exact.
        var mappedAt: Int64?
        /// `PRAGMA data_version` as the last batch read it.
        var version: Int64?
        /// Whether `winnow_mapped` holds every row of every group (``mapWindow(_:after:upTo:version:state:)``).
        var mappedEveryWinner = false
        /// After another connection's commit: the stretch of the queue whose rows' children
        /// `winnow_refs` holds as they were at `PRAGMA data_version` `version`, from the batch
        /// that mapped it to `end` (``mapWindow(_:after:upTo:version:state:)``).
        var window: (version: Int64, end: Int64)?
        /// How many batches the next such stretch maps.
        var windowBatches = DedupeExecutor.fewestWindowBatches
        /// Whether children were re-pointed ahead of their losers' batches
        /// (``AheadBatches``).
        var repointedAhead = false
        /// Whether `winnow_ahead` has its index by loser (made by the first batch that moves back).
        var aheadIndexed = false
        /// Whether a queue filed by position has been filed by group again (after another
        /// connection's commit, ``BatchStatements/refileByGroup(after:)``).
        var refiled = false
        /// Whether every merge was applied ahead of the deletions, as found (``MergeAheadBatches``):
        /// the batches then only delete.
        var mergedAhead = false
        /// Whether merges leave out the losers a merge already took (`winnow_taken_losers`
        /// holds some for the table).
        var skipsTaken = false
        /// Whether stretches delete the losers the stretches of merges took after another
        /// connection's commit (``DeleteAheadBatches``, only those recorded as taken).
        var sweepsTaken = false
        /// Batches filed by position that read samples (the second makes the queue's index by
        /// winner: ``read(batch:after:upTo:sql:state:wantSamples:)``).
        var sampledBatches = 0
    }

    /// Turns foreign-key enforcement off for the rule's batches when the rule allows it
    /// (``CompiledRule/foreignKeysSuspendable``), enforcement is on, no transaction is open (the
    /// pragma is ignored inside one) and no user trigger on the table could write elsewhere.
    /// Returns whether it did; the caller turns it back on.
    func suspendForeignKeys() throws -> Bool {
        guard writer.writes, rule.foreignKeysSuspendable, rule.sources.isEmpty, !db.isInsideTransaction,
            try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") == true
        else { return false }
        let triggers =
            try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM main.sqlite_master WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE AND name NOT LIKE 'winnow\\_%' ESCAPE '\\'
                    """, arguments: [rule.table]) ?? 0
        guard triggers == 0 else { return false }
        try db.execute(sql: "PRAGMA foreign_keys = OFF")
        return try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") == false
    }

    /// Maps the children of the rows filed in `(after, upTo]`, and in the next batches' stretches
    /// of the queue, again as they are now (at `PRAGMA data_version` `version`), for batches
    /// after another connection's commit: one scan of each child table, exact for every batch of
    /// the stretch while no other connection commits. The rest of the map stays stale
    /// (`mappedAt` unchanged), and `winnow_mapped` holds every row of every group (any winner
    /// may become a loser once groups are settled again; the check after the rule reads it too).
    /// A rule that stays filed by position maps its losers alone (``BatchStatements/windowMaps``).
    ///
    /// The stretch covers ``BatchState/windowBatches`` batches the size of this one: doubled (up
    /// to ``mostWindowBatches``) each time a stretch is used up before another commit, halved
    /// (down to ``fewestWindowBatches``) each time another commit comes first. Each commit of a
    /// writer beside the run then costs about one scan of each such child table, where a scan
    /// per batch, and at first a map of every row of every group too, took 400,000 customers
    /// with unindexed orders from 2.3 s alone to 262 s beside a writer committing every 0.5 s.
    func mapWindow(_ sql: BatchStatements, after: Int64, upTo: Int64, version: Int64, state: inout BatchState) throws {
        try listEveryRowOfEveryGroup(sql, state: &state)
        if let window = state.window {
            if window.version == version {
                state.windowBatches = min(2 * state.windowBatches, Self.mostWindowBatches)
            } else if upTo <= window.end {
                state.windowBatches = max(Self.fewestWindowBatches, state.windowBatches / 2)
            }
        }
        var end = upTo
        let units = try sql.nextBatch.rows(db, after: after, upTo: upTo)
        if let bound = try sql.nextBatch.next(db, after: after, size: state.windowBatches * max(1, units)) {
            end = max(upTo, bound)
        }
        state.window = (version, end)
        guard let range = try Row.fetchOne(db.cachedStatement(sql: sql.windowRange), arguments: [after, end]),
            let lowest = range[0] as Int64?, let highest = range[1] as Int64?
        else { return }
        let losersOnly = staysByPosition
        let low = losersOnly ? lowest : min(lowest, range[2] as Int64? ?? lowest)
        let high = losersOnly ? highest : max(highest, range[3] as Int64? ?? highest)
        for case let maps? in sql.windowMaps {
            let window = losersOnly ? maps.losers : maps.withWinners
            try db.cachedStatement(sql: window.forget).execute(arguments: [after, end])
            try db.cachedStatement(sql: window.map).execute(arguments: window.bounded ? [after, end, low, high] : [after, end])
        }
    }

    /// Lists every row of every group in `winnow_mapped` (the rows whose children batches map
    /// after another connection's commit), unless it does already.
    func listEveryRowOfEveryGroup(_ sql: BatchStatements, state: inout BatchState) throws {
        guard !state.mappedEveryWinner else { return }
        try db.execute(sql: sql.fillMappedEveryWinner)
        state.mappedEveryWinner = true
    }

    /// The fewest and the most batches a stretch of ``mapWindow(_:after:upTo:version:state:)``
    /// maps. Mapping a batch's children costs little beside the scan that finds them
    /// (200,000 customers with unindexed orders: about 1.4 ms a batch against 50-100 ms a
    /// scan), so a stretch that another commit cuts short wastes little.
    static let fewestWindowBatches = 8
    static let mostWindowBatches = 64

    /// Whether the settled winners may be looked up in memory (``SettledWinners``; tests turn it
    /// off to compare both ways).
    static var holdsSettledWinners = true

    /// Runs with the number of paths whose settled winners are looked up in memory (tests).
    static var holdingSettledWinners: ((Int) -> Void)?

    /// The most memory the settled winners are held in (``SettledWinners``: 4 bytes a rowid
    /// between the lowest and the highest loser, about 4.2 million rowids). Above the size where
    /// the map's own cache is no longer raised (about 1.9 million rows) the slots come on top of
    /// the stretches' caches: merge-500 peaked at 92.3 MB with 22 MB of slots at 5,500,000
    /// customers, where without them a run of this shape stays near 73 MB; this keeps such a
    /// run under about 90 MB.
    static let settledWinnersLimitKiB = 16 * 1024

    /// Loads `temp.winnow_mapped`'s settled winners into memory and registers their SQL function,
    /// where some path re-pointed ahead has a reference that compares with a rowid by value and
    /// the map fits ``settledWinnersLimitKiB``; returns those paths (empty: nothing registered).
    func holdSettledWinners(_ sql: BatchStatements) throws -> Set<Int> {
        guard Self.holdsSettledWinners else { return [] }
        let paths = try sql.aheadPaths.filter { index in
            let path = rule.references[index]
            guard path.childColumns.count == 1, let declared = try declaration(of: path.childColumns[0], in: path.childTable) else {
                return false
            }
            return Self.comparesByValue(declared.type)
        }
        guard !paths.isEmpty, let map = try SettledWinners.load(db, limitKiB: Self.settledWinnersLimitKiB) else { return [] }
        try map.register(on: db)
        Self.holdingSettledWinners?(paths.count)
        return Set(paths)
    }

    /// Whether a column of declared type `declared` compares with a rowid without converting
    /// either (INTEGER, REAL or NUMERIC affinity: its integers and reals compare by value, its
    /// text and blobs equal no number); a column of TEXT or no affinity has its numeric text
    /// converted by the comparison.
    static func comparesByValue(_ declared: String) -> Bool {
        [" INTEGER", " REAL", " NUMERIC"].contains(affinityType(declared))
    }

    /// Fills `winnow_refs` for every reference path without an index on its child columns: one
    /// scan of each such child table for the whole rule, instead of one per batch (or, with
    /// foreign-key enforcement on, one per deleted row). `ahead`: the run re-points children
    /// ahead of the batches (``AheadBatches``), which
    /// maps those paths stretch by stretch and reads each loser's settled winner. Where another
    /// connection has committed since the discovery, such a run maps nothing here: the
    /// stretches take each loser's settled winner as found and check every move as the rows
    /// are then, and the batches map the children of their rows as they go
    /// (``mapWindow(_:after:upTo:version:state:)``).
    func mapChildren(_ sql: BatchStatements, state: inout BatchState, ahead: Bool = false) throws {
        let version = try Int64.fetchOne(db, sql: "PRAGMA main.data_version")
        state.mappedAt = version
        // Rows as found: only a group with ties can change its winner. Else every group is
        // settled again, and any winner may become a loser.
        let asFound = state.foundAt != nil && version == state.foundAt
        if ahead, !asFound, let foundAt = state.foundAt {
            // (As for a run whose references all have an index: the stretches start from the
            // settled winners as found, which `mappedAt` at `foundAt` stands for.)
            try db.execute(sql: sql.fillMappedSettled)
            try db.cachedStatement(sql: sql.clearMap).execute()
            state.mappedAt = foundAt
            return
        }
        try db.execute(sql: asFound ? (ahead ? sql.fillMappedSettled : sql.fillMapped) : sql.fillMappedEveryWinner)
        state.mappedEveryWinner = !asFound
        try db.cachedStatement(sql: sql.clearMap).execute()
        for (index, map) in sql.mapChildren.enumerated() where !(ahead && sql.aheadPaths.contains(index)) {
            if let map { try db.cachedStatement(sql: map).execute() }
        }
    }
}
