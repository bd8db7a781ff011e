import Foundation
import GRDB
import GRDBSQLite

/// What discovery found for one rule.
public struct Discovery: Sendable, Equatable {
    public var groups: Int
    public var losers: Int
    public var tableRows: Int
    /// `PRAGMA data_version` read before the discovery: while it is unchanged, no other
    /// connection has committed since, and the losers found need no re-validation.
    var dataVersion: Int64? = nil

    public init(groups: Int, losers: Int, tableRows: Int) {
        self.groups = groups
        self.losers = losers
        self.tableRows = tableRows
    }

    /// What was found; the data version is bookkeeping of the connection that found it.
    public static func == (a: Discovery, b: Discovery) -> Bool {
        (a.groups, a.losers, a.tableRows) == (b.groups, b.losers, b.tableRows)
    }
}

/// Progress of a run, reported as it happens.
public enum RunEvent: Sendable {
    case ruleStarted(rule: Int, table: String, discovery: Discovery)
    case batch(BatchReport)
    case ruleFinished(rule: Int, table: String, counts: Counts)
    case migrationStep(index: Int, step: PlannedStep, seconds: Double)
}

/// One committed batch (or, in a dry run, one batch that would be).
public struct BatchReport: Sendable, Codable, Equatable {
    public var rule: Int
    public var table: String
    public var batch: Int
    public var counts: Counts
    public var seconds: Double
    /// Losers done so far in this rule, and in all (for progress bars).
    public var done: Int
    public var total: Int
}

/// Runs one compiled rule against one connection: discovery into a temporary table, guards,
/// then batches. The same code serves `run` and `plan`; only the ``BatchWriter`` differs.
struct DedupeExecutor {
    let db: Database
    let rule: CompiledRule
    let writer: BatchWriter
    let settings: BatchSettings
    /// How many groups to keep as samples (plan output); 0 for none.
    var sampleLimit = 0
    /// For an incremental run: SQL that limits the rule to rows sharing a key with a changed row.
    var scope: String?
    /// For an incremental run: the last change id it covers (hashes are stored for those rows only).
    var changesUpTo: Int64?
    var onEvent: (RunEvent) -> Void = { _ in }

    static func prepareTemporaryTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TEMP TABLE IF NOT EXISTS winnow_batch (
                rid INTEGER PRIMARY KEY, winner INTEGER NOT NULL, rn INTEGER NOT NULL, tied INTEGER NOT NULL
            );
            CREATE INDEX IF NOT EXISTS temp.winnow_batch_winner ON winnow_batch (winner);
            CREATE TEMP TABLE IF NOT EXISTS winnow_swaps (cand INTEGER PRIMARY KEY, actual INTEGER NOT NULL UNIQUE);
            CREATE TEMP TABLE IF NOT EXISTS winnow_moves (
                path INTEGER NOT NULL, child INTEGER NOT NULL, winner INTEGER NOT NULL, PRIMARY KEY (path, child)
            ) WITHOUT ROWID;
            CREATE TEMP TABLE IF NOT EXISTS winnow_refs (
                path INTEGER NOT NULL, rid INTEGER NOT NULL, child INTEGER NOT NULL, PRIMARY KEY (path, rid, child)
            ) WITHOUT ROWID;
            CREATE TEMP TABLE IF NOT EXISTS winnow_mapped (rid INTEGER PRIMARY KEY);
            CREATE TEMP TABLE IF NOT EXISTS winnow_queue (
                first INTEGER NOT NULL, winner INTEGER NOT NULL, rn INTEGER NOT NULL, rid INTEGER NOT NULL, tied INTEGER NOT NULL,
                PRIMARY KEY (first, winner, rn)
            ) WITHOUT ROWID;
            """)
    }

    /// The window query that groups the candidate rows by key and ranks them by the rule's own
    /// winner terms. Sorting by the full order (every content column) would make the sort carry
    /// whole rows; instead a loser that ties the first row on the winner terms is flagged
    /// `tied`, and such groups get their winner from the full order when their batch is read.
    var discoverySQL: String {
        let order = rule.winnerOrderBy().map { " ORDER BY \($0)" } ?? ""
        // Only keys that occur more than once (one grouped count, no per-row window state):
        // the window then works on the duplicate groups alone. It pays where the key is plain
        // columns (cheap to read twice); normalised or hashed keys would be computed twice for
        // every row, which costs more than the window saves (measured). A NULL key part cannot
        // pass IN, so it also needs nulls: distinct.
        var duplicatesOnly = ""
        let plainKey = !rule.rule.hash && rule.keyColumns.allSatisfy { rule.normalizers[$0, default: []].isEmpty }
        if let scope { duplicatesOnly = " AND \(scope)" } else if plainKey && rule.rule.nulls == .distinct {
            let groups = rule.groupExpressions()
            let tuple = groups.count == 1 ? groups[0] : "(\(groups.joined(separator: ", ")))"
            duplicatesOnly = """
                 AND \(tuple) IN (SELECT \(groups.joined(separator: ", ")) FROM \(rule.qualifiedTable)
                    WHERE \(rule.candidateFilter()) GROUP BY \(groups.joined(separator: ", ")) HAVING count(*) > 1)
                """
        }
        // Each loser is filed under its group's first loser rowid (`first`): batches take the
        // queue in that order, so each deletes from a narrow stretch of the table and every page
        // is rewritten about once (in winner order every batch touched pages all over the table).
        // (The group's lowest rowid would cost no sort of its own, but it is often the winner's,
        // far from its losers: 10% slower at 1,000,000 rows, measured.)
        let partition = rule.groupExpressions().joined(separator: ", ")
        return """
        INSERT INTO temp.winnow_queue (first, winner, rn, rid, tied)
        SELECT min(winnow_r) OVER (PARTITION BY winnow_w), winnow_w, winnow_n, winnow_r, winnow_k FROM (
            SELECT \(rule.rowID) AS winnow_r,
                   row_number() OVER winnow_window AS winnow_n,
                   first_value(\(rule.rowID)) OVER winnow_window AS winnow_w,
                   (\(rule.tiedWithFirst(window: "winnow_window"))) + 2 * (\(rule.tiedWithPrevious(window: "winnow_window"))) AS winnow_k
            FROM \(rule.qualifiedTable)
            WHERE \(rule.candidateFilter())\(duplicatesOnly)
            WINDOW winnow_window AS (PARTITION BY \(partition)\(order)
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
        ) WHERE winnow_n > 1
        ORDER BY 1, 2, 3
        """
    }

    /// Fills `temp.winnow_queue` with every loser and its winner, in batch order.
    func discover() throws -> Discovery {
        try Self.prepareTemporaryTables(db)
        try db.execute(sql: "DELETE FROM temp.winnow_queue")
        let version = try Int64.fetchOne(db, sql: "PRAGMA main.data_version")
        try db.execute(sql: discoverySQL)
        let row = try Row.fetchOne(db, sql: "SELECT count(*), count(DISTINCT first) FROM temp.winnow_queue")!
        let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(rule.qualifiedTable)") ?? 0
        var discovery = Discovery(groups: row[1], losers: row[0], tableRows: rows)
        discovery.dataVersion = version
        return discovery
    }

    /// `max_delete_percent` and `references: restrict`, checked before anything is written.
    func checkGuards(_ discovery: Discovery) throws {
        if let limit = rule.rule.maxDeletePercent, discovery.tableRows > 0 {
            let share = Double(discovery.losers) * 100 / Double(discovery.tableRows)
            if share > limit {
                throw WinnowError.refused("""
                    \(rule.rule.keyPath) (\(rule.table)): would delete \(discovery.losers) of \(discovery.tableRows) rows \
                    (\(String(format: "%.1f", share))%), more than max_delete_percent \(limit.formatted6)%; nothing was changed
                    """)
            }
        }
        if rule.rule.references == .restrict {
            for path in rule.references {
                let join = zip(path.childColumns, path.parentColumns)
                    .map { "c.\($0.sqlIdentifier) = p.\($1.sqlIdentifier)" }.joined(separator: " AND ")
                let row = try Row.fetchOne(db, sql: """
                    SELECT count(*), min(p.\(rule.rowID)) FROM temp.winnow_queue AS l
                    JOIN \(rule.qualifiedTable) AS p ON p.\(rule.rowID) = l.rid
                    JOIN \(rule.qualified(path.childTable)) AS c ON \(join)
                    """)!
                let count: Int = row[0]
                if count > 0 {
                    throw WinnowError.refused("""
                        \(rule.rule.keyPath) (\(rule.table)): references: restrict, and \(count) row(s) of \(path.label) \
                        point at rows that would be deleted (first: rowid \(row[1] as Int64)); nothing was changed
                        """)
                }
            }
        }
    }

    /// Keeps `hash_column` equal to the key hash for every row, in batches of rowid ranges.
    func fillHashes(batchNumber: inout Int, totals: inout Counts) throws -> Counts {
        var counts = Counts()
        guard rule.hashColumn != nil else { return counts }
        if let upTo = changesUpTo {
            // Incremental: only the rows changed since the last run can have a stale hash.
            let changed = "\(rule.rowID) IN (SELECT rid FROM main.winnow_changes WHERE tbl = \(ChangeTracking.literal(rule.table)) AND id <= ?)"
            let filled = try writer.transaction(db) { () -> Int in
                let filled = try writer.fillHashes(rule: rule, selection: changed, arguments: [upTo], batch: batchNumber, db: db)
                var next = totals
                next.hashed += filled
                next.batches += 1
                try writer.recordProgress(next, db: db)
                return filled
            }
            counts.hashed = filled
            counts.batches = 1
            totals.hashed += filled
            totals.batches += 1
            batchNumber += 1
            return counts
        }
        var sizer = BatchSizer(configured: max(settings.size, 1000) * 10, maxTransactionMilliseconds: settings.maxTransactionMilliseconds,
                                start: BatchSizer.rowRangeStart)
        var after = Int64.min
        while true {
            guard let upTo = try Int64.fetchOne(db, sql: """
                SELECT max(r) FROM (SELECT \(rule.rowID) AS r FROM \(rule.qualifiedTable) WHERE \(rule.rowID) > ? ORDER BY \(rule.rowID) LIMIT ?)
                """, arguments: [after, sizer.current]) else { break }
            if counts.batches > 0 { try pause() }
            let started = Date()
            let filled = try writer.transaction(db) { () -> Int in
                let filled = try writer.fillHashes(rule: rule, selection: "\(rule.rowID) > ? AND \(rule.rowID) <= ?",
                                                   arguments: [after, upTo], batch: batchNumber, db: db)
                if filled > 0 {
                    var next = totals
                    next.hashed += filled
                    next.batches += 1
                    try writer.recordProgress(next, db: db)
                }
                return filled
            }
            sizer.record(size: sizer.current, seconds: Date().timeIntervalSince(started))
            if filled > 0 {
                counts.hashed += filled
                counts.batches += 1
                totals.hashed += filled
                totals.batches += 1
                batchNumber += 1
            }
            after = upTo
        }
        return counts
    }

    private func pause() throws {
        if settings.pauseMilliseconds > 0, writer.writes { Thread.sleep(forTimeInterval: Double(settings.pauseMilliseconds) / 1000) }
    }

    /// Resolves every group found by ``discover()``, batch by batch.
    func execute(_ discovery: Discovery, batchNumber: inout Int, totals: inout Counts, samples: inout [GroupSample]) throws -> Counts {
        var counts = Counts()
        var sizer = BatchSizer(configured: settings.size, maxTransactionMilliseconds: settings.maxTransactionMilliseconds)
        let sql = BatchStatements(rule)
        if !rule.mergeColumns.isEmpty { try db.execute(sql: sql.createMerged) }
        var state = BatchState(foundAt: discovery.dataVersion)
        if sql.mapsChildren, discovery.losers > 0 { try mapChildren(sql, state: &state) }
        // Deleting a parent row with enforcement on scans each child table without an index on
        // its referencing columns once per row; the batches check the references they touch instead.
        let suspended = try suspendForeignKeys()
        defer { if suspended { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
        // Where no index lets a batch look the children of its losers up again, the rule as a
        // whole is checked too: no more references to no row after it than before it.
        var danglingBefore: [Int] = []
        if suspended {
            for check in sql.danglingInTable { danglingBefore.append(try Int.fetchOne(db, sql: check.sql) ?? 0) }
        }
        var lastFirst = Int64.min
        var done = 0
        var gap = WriteGap(settings: settings)
        while true {
            guard let upTo = try Int64.fetchOne(db.cachedStatement(sql: sql.nextBatch), arguments: [lastFirst, sizer.current])
            else { break }
            if done > 0 {   // between batches only, never after the last
                if writer.writes { _ = gap.observe(db, version: state.version) }
                try pause()
            }
            let started = Date()
            let number = batchNumber
            let work = try writer.transaction(db) { () -> BatchWork in
                var work = try read(batch: number, after: lastFirst, upTo: upTo, sql: sql, state: &state,
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
            done += work.losers.count + work.skipped
            onEvent(.batch(BatchReport(rule: rule.rule.index, table: rule.table, batch: number, counts: batchCounts,
                                       seconds: seconds, done: done, total: discovery.losers)))
            batchNumber += 1
            lastFirst = upTo
        }
        for (check, before) in zip(sql.danglingInTable, danglingBefore) {
            let after = try Int.fetchOne(db, sql: check.sql) ?? 0
            if after > before {
                throw WinnowError.internal("""
                    \(rule.rule.keyPath) (\(rule.table)): \(after - before) row(s) of \(check.table) point at rows this run deleted; \
                    every batch is journaled: `winnow restore --run` puts them back
                    """)
            }
        }
        return counts
    }

    /// What the batches of one rule carry from one to the next.
    struct BatchState {
        /// `PRAGMA data_version` when the losers were found: while it holds, they are as found.
        var foundAt: Int64?
        /// `PRAGMA data_version` when `winnow_refs` was filled: while it holds, the map is exact.
        var mappedAt: Int64?
        /// `PRAGMA data_version` as the last batch read it.
        var version: Int64?
    }

    /// Turns foreign-key enforcement off for the rule's batches when the rule allows it
    /// (``CompiledRule/foreignKeysSuspendable``), enforcement is on, no transaction is open (the
    /// pragma is ignored inside one) and no user trigger on the table could write elsewhere.
    /// Returns whether it did; the caller turns it back on.
    private func suspendForeignKeys() throws -> Bool {
        guard writer.writes, rule.foreignKeysSuspendable, rule.sources.isEmpty, !db.isInsideTransaction,
              try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") == true else { return false }
        let triggers = try Int.fetchOne(db, sql: """
            SELECT count(*) FROM main.sqlite_master WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE AND name NOT LIKE 'winnow\\_%' ESCAPE '\\'
            """, arguments: [rule.table]) ?? 0
        guard triggers == 0 else { return false }
        try db.execute(sql: "PRAGMA foreign_keys = OFF")
        return try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") == false
    }

    /// Fills `winnow_refs` for every reference path without an index on its child columns: one
    /// scan of each such child table for the whole rule, instead of one per batch (or, with
    /// foreign-key enforcement on, one per deleted row).
    private func mapChildren(_ sql: BatchStatements, state: inout BatchState) throws {
        state.mappedAt = try Int64.fetchOne(db, sql: "PRAGMA main.data_version")
        try db.execute(sql: sql.fillMapped)
        try db.cachedStatement(sql: sql.clearMap).execute()
        for map in sql.mapChildren.compactMap({ $0 }) { try db.cachedStatement(sql: map).execute() }
    }

    /// The groups whose first loser's rowid (`first`) is in `(after, upTo]` as they are now: losers that
    /// still share their winner's key. When no other connection has committed since the
    /// discovery (`PRAGMA data_version` still as found, read inside the batch's transaction),
    /// the losers are as found and are taken without looking them up again; likewise the map of
    /// children is mapped again only after another connection's commit.
    func read(batch number: Int, after: Int64, upTo: Int64, sql: BatchStatements, state: inout BatchState,
              wantSamples: Bool) throws -> BatchWork {
        var work = BatchWork(number: number)
        let version = try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA main.data_version"))
        state.version = version
        let unchanged = state.foundAt != nil && version == state.foundAt
        if sql.mapsChildren, version != state.mappedAt { try mapChildren(sql, state: &state) }
        try db.cachedStatement(sql: sql.clearBatch).execute()
        try db.cachedStatement(sql: unchanged ? sql.fillBatchAsFound : sql.fillBatchRevalidated).execute(arguments: [after, upTo])
        let planned = unchanged ? db.changesCount
            : try Int.fetchOne(db.cachedStatement(sql: sql.countPlanned), arguments: [after, upTo]) ?? 0
        try settleWinners(sql)
        if sql.mapsChildren, let unmapped = try Int.fetchOne(db.cachedStatement(sql: sql.unmappedLosers)), unmapped > 0 {
            throw WinnowError.internal("\(rule.rule.keyPath) (\(rule.table)): \(unmapped) row(s) to delete whose children were not mapped; the batch was rolled back")
        }
        var groups: [(winner: Int64, losers: [Int64])] = []
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql.batchRows))
        while let row = try rows.next() {
            let rid: Int64 = row[0]
            let winner: Int64 = row[1]
            if groups.last?.winner == winner { groups[groups.count - 1].losers.append(rid) } else { groups.append((winner, [rid])) }
            work.losers.append(rid)
        }
        work.groups = groups.count
        work.skipped = planned - work.losers.count
        guard !groups.isEmpty else { return work }

        if !rule.mergeColumns.isEmpty { try readMerges(sql, into: &work) }
        if !rule.references.isEmpty { try db.cachedStatement(sql: sql.clearMoves).execute() }
        for (index, path) in rule.references.enumerated() {
            if path.uniqueKeys.isEmpty {
                // Nothing can collide: every child row of a loser moves to the winner, as a set.
                try db.cachedStatement(sql: sql.fillMoves[index]).execute()
                let moved = db.changesCount
                if moved > 0, rule.rule.references == .restrict {
                    throw WinnowError.refused("""
                        \(rule.rule.keyPath) (\(rule.table)): references: restrict, and \(moved) row(s) of \(path.label) \
                        point at rows that would be deleted
                        """)
                }
                work.moved.append((path: index, count: moved))
            } else {
                try readReferences(path, index: index, sql: sql, into: &work)
            }
        }
        if wantSamples { work.samples = try readSamples(groups, limit: sampleLimit) }
        return work
    }

    /// Makes the batch follow the full winner order: in groups whose first place was tied on the
    /// rule's winner terms, the first row by content becomes the winner; then every group's
    /// losers are numbered (`rn`) in full order, which merges and re-pointing follow.
    private func settleWinners(_ sql: BatchStatements) throws {
        try db.cachedStatement(sql: sql.clearSwaps).execute()
        try db.cachedStatement(sql: sql.findSwaps).execute()
        if db.changesCount > 0 {
            // The actual winner leaves the losers and the candidate takes its place.
            try db.cachedStatement(sql: sql.swapLosers).execute()
            try db.cachedStatement(sql: sql.swapWinners).execute()
        }
        // Only merges and collision decisions look at the order of the losers.
        guard !rule.mergeColumns.isEmpty || rule.references.contains(where: { !$0.uniqueKeys.isEmpty }) else { return }
        try db.cachedStatement(sql: sql.renumber).execute()
    }

    /// Resolves every group's merge (``MergeResolver``) into `temp.winnow_merged`.
    private func readMerges(_ sql: BatchStatements, into work: inout BatchWork) throws {
        // Closures, not key paths: a key path into a tuple is built at run time on every call.
        let strategies = rule.mergeColumns.map { $0.strategy }
        try db.cachedStatement(sql: sql.clearMerged).execute()
        let insert = RawStatement(try db.cachedStatement(sql: sql.insertMerged))
        var sets: [[Int]: DatabaseValue] = [:]
        var current: Int64?
        var rows: [[DatabaseValue]] = []
        func flush() throws {
            guard let winner = current else { return }
            let changes = MergeResolver.changes(strategies: strategies, rows: rows)
            guard !changes.isEmpty else { return }
            let columns = changes.map { $0.index }
            let set: DatabaseValue
            if let known = sets[columns] { set = known } else {
                set = BatchStatements.mergeSet(columns).databaseValue
                sets[columns] = set
                work.mergeColumnSets.append(columns)
            }
            var values = [DatabaseValue](repeating: .null, count: strategies.count + 2)
            values[0] = winner.databaseValue
            values[1] = set
            for change in changes { values[change.index + 2] = change.value }
            try insert.execute(values)
            work.merges += 1
        }
        let count = CInt(strategies.count)
        try RawStatement(db.cachedStatement(sql: sql.mergeRows)).forEachRow { row in
            let winner = sqlite3_column_int64(row, 0)
            if winner != current {
                try flush()
                current = winner
                rows.removeAll(keepingCapacity: true)
            }
            rows.append((1...count).map { DatabaseValue(sqliteStatement: row, index: $0) })
        }
        try flush()
    }

    /// Decides, for every child row that points at a loser, whether it is re-pointed or (when
    /// re-pointing would break a unique key of the child) deleted as a duplicate itself.
    private func readReferences(_ path: ReferencePath, index: Int, sql: BatchStatements, into work: inout BatchWork) throws {
        let keyColumns = Array(Set(path.uniqueKeys.flatMap { $0 })).sorted()
        var winnerKeys: [Int64: [DatabaseValue]] = [:]
        let keys = try Row.fetchCursor(db.cachedStatement(sql: sql.winnerKeys[index]))
        while let row = try keys.next() {
            winnerKeys[row[0]] = (1...path.parentColumns.count).map { row[$0] as DatabaseValue }
        }
        var occupied = Set<[DatabaseValue]>()
        var currentWinner: Int64?
        let children = try Row.fetchCursor(db.cachedStatement(sql: sql.groupChildren[index]))
        while let row = try children.next() {
            let childRowID: Int64 = row[0]
            let winner: Int64 = row[1]
            let rank: Int = row[2]
            if winner != currentWinner {
                occupied.removeAll()
                currentWinner = winner
            }
            guard let target = winnerKeys[winner] else { continue }
            var values: [String: DatabaseValue] = [:]
            for (offset, name) in keyColumns.enumerated() { values[name] = row[3 + offset] }
            if rank > 0 {
                if rule.rule.references == .restrict {
                    throw WinnowError.refused("""
                        \(rule.rule.keyPath) (\(rule.table)): references: restrict, and \(path.label) rowid \(childRowID) \
                        points at a row that would be deleted
                        """)
                }
                for (column, value) in zip(path.childColumns, target) { values[column] = value }
            }
            // The child row's unique-key tuples after re-pointing (tagged by key, so keys never mix).
            let tuples: [[DatabaseValue]] = path.uniqueKeys.enumerated().compactMap { keyIndex, key in
                let tuple = key.map { values[$0] ?? .null }
                return tuple.contains(where: \.isNull) ? nil : [keyIndex.databaseValue] + tuple
            }
            if rank == 0 || !tuples.contains(where: occupied.contains) {
                occupied.formUnion(tuples)
                if rank > 0 { work.repoints.append(.init(path: index, childRowID: childRowID, values: target)) }
            } else {
                work.childDeletes.append(.init(path: index, childRowID: childRowID))
            }
        }
    }

    private func readSamples(_ groups: [(winner: Int64, losers: [Int64])], limit: Int) throws -> [GroupSample] {
        let chosen = groups.prefix(limit)
        var keys: [Int64: [String]] = [:]
        let selected = rule.keyColumns.map { "quote(\($0.sqlIdentifier))" }.joined(separator: ", ")
        for group in chosen {
            if let row = try Row.fetchOne(db, sql: "SELECT \(selected) FROM \(rule.qualifiedTable) WHERE \(rule.rowID) = ?",
                                          arguments: [group.winner]) {
                keys[group.winner] = (0..<rule.keyColumns.count).map { row[$0] as String? ?? "NULL" }
            }
        }
        return chosen.map { GroupSample(key: keys[$0.winner] ?? [], winner: $0.winner, losers: $0.losers) }
    }
}
