import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

extension DedupeExecutor {
    func pause() throws {
        if settings.pauseMilliseconds > 0, writer.writes { Thread.sleep(forTimeInterval: Double(settings.pauseMilliseconds) / 1000) }
    }

    /// Resolves every group found by ``discover()``, batch by batch.
    func execute(_ discovery: Discovery, batchNumber: inout Int, totals: inout Counts, samples: inout [GroupSample]) throws -> Counts {
        var counts = Counts()
        var sizer = BatchSizer(configured: settings.size, maxTransactionMilliseconds: settings.maxTransactionMilliseconds)
        let sql = BatchStatements(rule)
        if !rule.mergeColumns.isEmpty { try db.execute(sql: sql.createMerged) }
        var state = BatchState(foundAt: discovery.dataVersion)
        // Children re-pointed ahead of the batches (see ``repointAhead``): their paths are
        // mapped stretch by stretch there, not here.
        // (Only where the groups take more than one batch: one batch writes each child page once anyway.)
        let ahead =
            writer.writes && !sql.aheadPaths.isEmpty && discovery.groups > settings.size && deadline.at == nil && deadline.stop == nil
        if sql.mapsChildren, discovery.losers > 0 { try mapChildren(sql, state: &state, ahead: ahead) }
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
            try repointAhead(sql, losers: discovery.losers, state: &state, batchNumber: &batchNumber, totals: &totals, counts: &counts)
        }
        var lastFirst = Int64.min
        var done = 0
        var gap = WriteGap(settings: settings)
        while true {
            guard let upTo = try Int64.fetchOne(db.cachedStatement(sql: sql.nextBatch), arguments: [lastFirst, sizer.current])
            else { break }
            if done > 0 {  // between batches only, never after the last
                if writer.writes, deadline.passed() { break }
                if writer.writes { _ = gap.observe(db, version: state.version) }
                try pause()
            }
            let started = Date()
            let number = batchNumber
            let work = try writer.transaction(db) { () -> BatchWork in
                var work = try read(
                    batch: number, after: lastFirst, upTo: upTo, sql: sql, state: &state,
                    wantSamples: samples.count < sampleLimit)
                work.checksReferences = suspended
                try writer.apply(work, rule: rule, sql: sql, db: db)
                try writer.recordProgress(totals + work.counts, db: db)
                return work
            }
            let seconds = Date().timeIntervalSince(started)
            sizer.record(size: work.groups, seconds: seconds)
            let batchCounts = work.counts
            counts = counts + batchCounts
            totals = totals + batchCounts
            samples += work.samples.prefix(max(0, sampleLimit - samples.count))
            done += work.deleted + work.skipped
            onEvent(
                .batch(
                    BatchReport(
                        rule: rule.rule.index, table: rule.table, batch: number, counts: batchCounts,
                        seconds: seconds, done: done, total: discovery.losers)))
            batchNumber += 1
            lastFirst = upTo
        }
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
        /// Whether `winnow_mapped` holds every row of every group (``mapBatch(_:after:upTo:state:)``).
        var mappedEveryWinner = false
        /// Whether children were re-pointed ahead of their losers' batches
        /// (``DedupeExecutor/repointAhead(_:losers:state:batchNumber:totals:counts:)``).
        var repointedAhead = false
        /// Whether `winnow_ahead` has its index by loser (made by the first batch that moves back).
        var aheadIndexed = false
    }

    /// Re-points the children of the losers ahead of the batches, in the child table's rowid
    /// order, for the paths that allow it (``BatchStatements/aheadPaths``: no index on the
    /// reference, which holds the parent's rowid): each transaction takes the next stretch of
    /// child rows, re-points those that point at a loser whose winner is settled, and maps the
    /// rest of the stretch for the batches (``mapChildren(_:state:ahead:)`` left these paths
    /// out). Every page of the child table is so rewritten about once, where batches by group
    /// rewrite most of its pages each time (the children of a batch's losers lie all over it).
    /// Only while no other connection has committed since the discovery (checked inside each
    /// transaction), so that every loser and its winner are as found; a group whose winner ties
    /// its second row on the winner terms is settled by content in its batch, and re-pointed
    /// there. A batch that, after another connection's commit, no longer deletes a loser whose
    /// children went ahead moves them back (``BatchStatements/moveBack``). Each stretch is
    /// journaled and committed as a batch of its own. Not for a run that may stop early
    /// (`--max-duration`, a fleet): it would leave children on the winners of groups it never
    /// reached.
    func repointAhead(
        _ sql: BatchStatements, losers: Int, state: inout BatchState, batchNumber: inout Int, totals: inout Counts, counts: inout Counts
    ) throws {
        try db.execute(sql: sql.clearAhead)
        // The map of these paths is complete only once every stretch is done as found; else
        // the next batch maps every path again.
        let mappedAt = state.mappedAt
        state.mappedAt = nil
        guard let foundAt = state.foundAt, mappedAt == foundAt else { return }
        var sizer = BatchSizer(
            configured: max(settings.size, BatchSizer.rowRangeStart) * 64, maxTransactionMilliseconds: settings.maxTransactionMilliseconds,
            start: BatchSizer.rowRangeStart)
        for index in sql.aheadPaths {
            guard let next = sql.nextAhead[index], let moves = sql.aheadMoves[index], let map = sql.mapAhead[index] else { continue }
            var after = Int64.min
            while let upTo = try Int64.fetchOne(db.cachedStatement(sql: next), arguments: [after, sizer.current]) {
                if state.repointedAhead { try pause() }
                let started = Date()
                let number = batchNumber
                let work = try writer.transaction(db) { () -> BatchWork? in
                    guard try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA main.data_version")) == foundAt else { return nil }
                    try db.cachedStatement(sql: sql.clearMoves).execute()
                    try db.cachedStatement(sql: moves).execute(arguments: [after, upTo])
                    var work = BatchWork(number: number)
                    work.moved = [(path: index, count: db.changesCount)]
                    if work.counts.repointed > 0 {
                        try db.cachedStatement(sql: sql.recordAhead).execute()
                        try writer.apply(work, rule: rule, sql: sql, db: db)
                        try writer.recordProgress(totals + work.counts, db: db)
                    }
                    try db.cachedStatement(sql: map).execute(arguments: [after, upTo])
                    return work
                }
                // Another connection has committed: the batches take the rest as it is now.
                guard let work else { return }
                let seconds = Date().timeIntervalSince(started)
                sizer.record(size: sizer.current, seconds: seconds)
                after = upTo
                // A stretch without children to move is no batch (nothing written but the map).
                guard work.counts.repointed > 0 else { continue }
                state.repointedAhead = true
                counts = counts + work.counts
                totals = totals + work.counts
                onEvent(
                    .batch(
                        BatchReport(
                            rule: rule.rule.index, table: rule.table, batch: number, counts: work.counts, seconds: seconds, done: 0,
                            total: losers)))
                batchNumber += 1
            }
        }
        state.mappedAt = mappedAt
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

    /// Maps the children of the rows of groups `(after, upTo]` again, as they are now, for a
    /// batch of those groups; the rest of the map stays stale (`mappedAt` unchanged), and
    /// `winnow_mapped` holds every row of every group (any winner may become a loser once
    /// groups are settled again; the check after the rule reads it too).
    func mapBatch(_ sql: BatchStatements, after: Int64, upTo: Int64, state: inout BatchState) throws {
        if !state.mappedEveryWinner {
            try db.execute(sql: sql.fillMappedEveryWinner)
            state.mappedEveryWinner = true
        }
        for (forget, map) in zip(sql.forgetBatchChildren, sql.mapBatchChildren) {
            guard let forget, let map else { continue }
            try db.cachedStatement(sql: forget).execute(arguments: [after, upTo])
            try db.cachedStatement(sql: map).execute(arguments: [after, upTo])
        }
    }

    /// Fills `winnow_refs` for every reference path without an index on its child columns: one
    /// scan of each such child table for the whole rule, instead of one per batch (or, with
    /// foreign-key enforcement on, one per deleted row). `ahead`: the run re-points children
    /// ahead of the batches (``repointAhead(_:losers:state:batchNumber:totals:counts:)``), which
    /// maps those paths stretch by stretch and reads each loser's settled winner.
    func mapChildren(_ sql: BatchStatements, state: inout BatchState, ahead: Bool = false) throws {
        let version = try Int64.fetchOne(db, sql: "PRAGMA main.data_version")
        state.mappedAt = version
        // Rows as found: only a group with ties can change its winner. Else every group is
        // settled again, and any winner may become a loser.
        let asFound = state.foundAt != nil && version == state.foundAt
        try db.execute(sql: asFound ? (ahead ? sql.fillMappedSettled : sql.fillMapped) : sql.fillMappedEveryWinner)
        state.mappedEveryWinner = !asFound
        try db.cachedStatement(sql: sql.clearMap).execute()
        for (index, map) in sql.mapChildren.enumerated() where !(ahead && sql.aheadPaths.contains(index)) {
            if let map { try db.cachedStatement(sql: map).execute() }
        }
    }
}
