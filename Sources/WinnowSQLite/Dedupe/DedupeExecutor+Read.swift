import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

extension DedupeExecutor {
    /// The groups filed under a `first` in `(after, upTo]` (see ``discoverySQL``) as they are now: losers that
    /// still share their winner's key. When no other connection has committed since the
    /// discovery (`PRAGMA data_version` still as found, read inside the batch's transaction),
    /// the losers are as found and are taken without looking them up again; likewise the map of
    /// children is mapped again only after another connection's commit.
    ///
    /// `takenUpTo`: only the losers whose winner is at or below it (a stretch of merges ahead,
    /// ``MergeAheadBatches``, deletes the losers its merges and the ones before it took). As
    /// found; after another connection's commit only for the stretches that delete the losers
    /// the merges recorded as taken (``BatchState/sweepsTaken``), and only those.
    func read(
        batch number: Int, after: Int64, upTo: Int64, sql: BatchStatements, state: inout BatchState,
        wantSamples: Bool, takenUpTo: Int64? = nil
    ) throws -> BatchWork {
        var work = BatchWork(number: number)
        let version = try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA main.data_version"))
        let previous = state.version
        state.version = version
        let unchanged = state.foundAt != nil && version == state.foundAt
        if takenUpTo != nil, !unchanged, !state.sweepsTaken {
            throw WinnowError.internal("\(rule.table): a stretch of merges read its losers after another connection's commit")
        }
        if !unchanged, version != previous {
            // Child rows another connection wrote since are numbered before the batch looks
            // for the children of its losers (tables without rowids only).
            for numbers in sql.childNumbers { if let topUp = numbers.topUp { try db.execute(sql: topUp) } }
        }
        // (A rule whose merges did not all go ahead settles whole groups from the start.)
        // (Not for a stretch of the losers merges took: it deletes in rowid order.)
        // (Before the children are mapped: they are mapped for the groups as filed now.)
        if (!unchanged && !staysByPosition) || (mergesAhead && !state.mergedAhead), filesByPosition, !state.refiled, takenUpTo == nil {
            // Another connection has committed: from now on batches settle whole groups (a
            // rule that only deletes goes on by position, each batch settling its part of its
            // groups, ``staysByPosition``).
            try db.execute(sql: sql.refileByGroup(after: after))
            state.refiled = true
            state.window = nil
        }
        if sql.mapsChildren, version != state.mappedAt {
            if unchanged {
                try mapChildren(sql, state: &state)
            } else if let version, state.window.map({ $0.version != version || upTo > $0.end }) ?? true {
                // Another connection has committed since the map was made, and may again
                // before long: the children of the next few batches' rows are mapped, not of
                // every row of every group.
                try mapWindow(sql, after: after, upTo: upTo, version: version, state: &state)
            }
        }
        try db.cachedStatement(sql: sql.clearBatch).execute()
        if let takenUpTo, unchanged {
            try db.cachedStatement(sql: sql.fillBatchTaken).execute(arguments: [after, upTo, takenUpTo])
        } else if let takenUpTo {
            try fillTakenCopy()
            try db.cachedStatement(sql: sql.fillBatchTakenRevalidated).execute(arguments: [after, upTo, takenUpTo])
        } else if unchanged {
            try db.cachedStatement(sql: sql.fillBatchAsFound).execute(arguments: [after, upTo])
        } else if state.skipsTaken {
            // A loser a merge took stays in its batch whatever another connection changed in it
            // (``BatchStatements/fillBatchRevalidatedKeepingTaken``).
            try fillTakenCopy()
            try db.cachedStatement(sql: sql.fillBatchRevalidatedKeepingTaken).execute(arguments: [after, upTo])
        } else {
            try db.cachedStatement(sql: staysByPosition ? sql.fillBatchRevalidatedByPosition : sql.fillBatchRevalidated)
                .execute(arguments: [after, upTo])
        }
        // (The losers such a stretch leaves are not skipped: they wait in the queue for the batches.)
        let planned =
            unchanged || takenUpTo != nil
            ? db.changesCount
            : try Int.fetchOne(db.cachedStatement(sql: sql.countPlanned), arguments: [after, upTo]) ?? 0
        try settleWinners(sql, laterFiledAfter: filesByPosition && !state.refiled && takenUpTo == nil ? upTo : nil)
        if sql.mapsChildren, let unmapped = try Int.fetchOne(db.cachedStatement(sql: sql.unmappedLosers)), unmapped > 0 {
            throw WinnowError.internal(
                "\(rule.rule.keyPath) (\(rule.table)): \(unmapped) row(s) to delete whose children were not mapped; the batch was rolled back"
            )
        }
        let size = try Row.fetchOne(db.cachedStatement(sql: filesByPosition ? sql.batchSizeByPosition : sql.batchSize))!
        work.deleted = size[0]
        work.groups = size[1]
        work.skipped = planned - work.deleted
        if !rule.references.isEmpty { try db.cachedStatement(sql: sql.clearMoves).execute() }
        // Children re-pointed ahead from a row that this batch no longer deletes go back to it
        // (only another connection's commit can make one; as found, every such loser goes).
        var movedBack = [Int](repeating: 0, count: rule.references.count)
        // (Not such a stretch's: the losers it leaves are not kept, only left for later.)
        if !unchanged, state.repointedAhead, takenUpTo == nil {
            if !state.aheadIndexed {
                try db.execute(sql: sql.indexAhead)
                state.aheadIndexed = true
            }
            for (index, back) in sql.moveBack.enumerated() {
                guard let back else { continue }
                try db.cachedStatement(sql: back).execute(arguments: [after, upTo])
                movedBack[index] = db.changesCount
            }
        }
        guard work.deleted > 0 else {
            work.moved = movedBack.enumerated().filter { $0.element > 0 }.map { (path: $0.offset, count: $0.element) }
            return work
        }

        // (A stretch's losers are taken: their values are in their winner.)
        if !rule.mergeColumns.isEmpty, takenUpTo == nil, !(state.mergedAhead && unchanged) {
            try readMerges(sql, into: &work, skipsTaken: state.skipsTaken)
        }
        for (index, path) in rule.references.enumerated() {
            if path.uniqueKeys.isEmpty {
                // Nothing can collide: every child row of a loser moves to the winner, as a set.
                try db.cachedStatement(sql: sql.fillMoves[index]).execute()
                let moved = db.changesCount + movedBack[index]
                if moved > 0, rule.rule.references == .restrict {
                    throw rule.restrictRefusal("\(moved) row(s) of \(path.label) point at rows that would be deleted")
                }
                work.moved.append((path: index, count: moved))
            } else {
                try readReferences(path, index: index, sql: sql, into: &work)
            }
        }
        if wantSamples {
            // A batch filed by position holds parts of groups: each group is shown whole, once, in
            // the batch that counts it (``batchGroups(_:whole:)``). Its other losers are found by
            // the queue's index by winner, made once a second batch is sampled (`plan --verbose`;
            // the first samples of a run come from the first batch, and read the queue once).
            if filesByPosition {
                if state.sampledBatches > 0 { try db.execute(sql: sql.indexQueueWinner) }
                state.sampledBatches += 1
            }
            work.samples = try readSamples(try batchGroups(sql, whole: filesByPosition), limit: sampleLimit, sql: sql)
        }
        return work
    }

    /// The batch's groups: each winner with its losers in winner order. `whole`: the groups the
    /// batch counts (those whose best loser it holds), each with every loser, also those filed
    /// in other batches (rules filed by position).
    func batchGroups(_ sql: BatchStatements, whole: Bool = false) throws -> [(winner: Int64, losers: [Int64])] {
        var groups: [(winner: Int64, losers: [Int64])] = []
        let rows = try Row.fetchCursor(db.cachedStatement(sql: whole ? sql.batchGroupRows : sql.batchRows))
        while let row = try rows.next() {
            let rid: Int64 = row[0]
            let winner: Int64 = row[1]
            if groups.last?.winner == winner { groups[groups.count - 1].losers.append(rid) } else { groups.append((winner, [rid])) }
        }
        return groups
    }

    /// Makes the batch follow the full winner order: in groups whose first place was tied on the
    /// rule's winner terms, the first row by content becomes the winner; then every group's
    /// losers are numbered (`rn`) in full order, which merges and re-pointing follow.
    /// `laterFiledAfter`: the batch is a stretch of a queue filed by position that ends there;
    /// the losers filed after it of a group whose winner it swapped are filed under the new one
    /// (``BatchStatements/refileSwapped``).
    func settleWinners(_ sql: BatchStatements, laterFiledAfter upTo: Int64? = nil) throws {
        try db.cachedStatement(sql: sql.clearRanks).execute()
        // (Rules that only delete settle their ties before the batches: a batch as found has none.)
        guard try Bool.fetchOne(db.cachedStatement(sql: sql.anyTied)) == true else { return }
        if sql.pinsTaken { try fillTakenCopy() }
        try db.cachedStatement(sql: sql.rankTied).execute()
        guard db.changesCount > 0 else { return }
        try db.cachedStatement(sql: sql.clearSwaps).execute()
        try db.cachedStatement(sql: sql.findSwaps).execute()
        if db.changesCount > 0 {
            // The actual winner leaves the losers and the candidate takes its place.
            try db.cachedStatement(sql: sql.swapLosers).execute()
            try db.cachedStatement(sql: sql.swapWinners).execute()
            if let upTo {
                try db.cachedStatement(sql: sql.refileSwapped).execute(arguments: [upTo])
                for case let (forget, map)? in sql.remapSwapped {
                    try db.cachedStatement(sql: forget).execute()
                    try db.cachedStatement(sql: map).execute()
                }
            }
        }
        // Only merges and collision decisions look at the order of the losers.
        guard !rule.mergeColumns.isEmpty || rule.references.contains(where: { !$0.uniqueKeys.isEmpty }) else { return }
        try db.cachedStatement(sql: sql.renumber).execute()
    }

    /// Makes the copy of the rule's table's records of taken losers, `temp.winnow_taken` keyed by
    /// loser, unless the connection has it already: today's packed records unpacked
    /// (``TakenLosersRecord``), and the rows of an earlier release's record where it is still
    /// there. Every reader of the record looks losers and winners up in it: made where a
    /// statement needs it (in a batch's transaction, a rollback takes it with it, and the next
    /// batch makes it again), and dropped by every transaction that records more
    /// (``BatchStatements/dropTaken``). Only a run that resumes a killed one, or settles groups
    /// again after another connection's commit, reads it.
    func fillTakenCopy() throws {
        guard try Bool.fetchOne(db.cachedStatement(sql: BatchStatements.takenCopyExists)) != true else { return }
        try db.execute(
            sql: """
                CREATE TEMP TABLE winnow_taken (loser INTEGER NOT NULL, winner INTEGER NOT NULL, PRIMARY KEY (loser, winner)) WITHOUT ROWID
                """)
        if try db.tableExists(SQLiteDialect.oldTakenLosersName) {
            try db.execute(
                sql:
                    "INSERT OR IGNORE INTO temp.winnow_taken SELECT loser, winner FROM main.\(SQLiteDialect.oldTakenLosersName) WHERE tbl = ?",
                arguments: [rule.table])
        }
        // Appended as recorded, then copied by loser in one sort: inserted one by one into the
        // copy keyed by loser, each pair went to a random place of it (a run resuming a killed
        // one of merge-500 at 1,600,000 customers: 8.2 s for 1,091,961 pairs).
        try db.execute(sql: "CREATE TEMP TABLE winnow_taken_recorded (loser INTEGER NOT NULL, winner INTEGER NOT NULL)")
        let insert = try db.cachedStatement(sql: "INSERT INTO temp.winnow_taken_recorded (loser, winner) VALUES (?, ?)")
        try TakenLosersRecord.forEach(db, table: rule.table) { _, _, pair in try insert.execute(arguments: [pair.loser, pair.winner]) }
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO temp.winnow_taken SELECT loser, winner FROM temp.winnow_taken_recorded ORDER BY loser, winner;
                DROP TABLE temp.winnow_taken_recorded
                """)
    }

    /// Whether any loser of the rule's table is recorded as taken by a merge (today's record, or
    /// an earlier release's).
    func anyTakenRecorded() throws -> Bool {
        for name in [SQLiteDialect.takenLosersName, SQLiteDialect.oldTakenLosersName] where try db.tableExists(name) {
            if try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM main.\(name) WHERE tbl = ?)", arguments: [rule.table]) == true {
                return true
            }
        }
        return false
    }

    /// Resolves every group's merge (``MergeResolver``) into `temp.winnow_merged`.
    /// `skipsTaken`: leaving out the losers a merge already took (``BatchStatements/mergeRowsUntaken``).
    /// `winners`: the groups of the queue whose winner is in `(after, upTo]`, read from its copy
    /// by winner (``BatchStatements/queueMergeRows``), instead of those of `temp.winnow_batch`.
    /// The column sets already in `work` are kept, so that it can gather several reads.
    func readMerges(
        _ sql: BatchStatements, into work: inout BatchWork, skipsTaken: Bool = false, winners: (after: Int64, upTo: Int64)? = nil
    ) throws {
        let wholeQueue = winners != nil
        // Closures, not key paths: a key path into a tuple is built at run time on every call.
        let strategies = rule.mergeColumns.map { $0.strategy }
        let orders = rule.mergeOrders
        let ranked = rule.mergesRanked
        try db.cachedStatement(sql: sql.clearMerged).execute()
        if skipsTaken { try fillTakenCopy() }
        let insert = RawStatement(try db.cachedStatement(sql: sql.insertMerged))
        var sets: [[Int]: SQLValue] = [:]
        for columns in work.mergeColumnSets { sets[columns] = SQLValue(BatchStatements.mergeSet(columns)) }
        var current: Int64?
        // The group's rows one after another, one value per merge column each.
        var rows: [SQLValue] = []
        var values = [SQLValue](repeating: .null, count: strategies.count + 2)
        func flush() throws {
            guard let winner = current else { return }
            if work.integersOnly, rows.contains(where: Self.notAnInteger) { work.integersOnly = false }
            let changes = MergeResolver.changes(strategies: strategies, orders: orders, flat: rows, ranked: ranked)
            guard !changes.isEmpty else { return }
            let columns = changes.map { $0.index }
            let set: SQLValue
            if let known = sets[columns] {
                set = known
            } else {
                set = SQLValue(BatchStatements.mergeSet(columns))
                sets[columns] = set
                work.mergeColumnSets.append(columns)
            }
            for index in values.indices { values[index] = .null }
            values[0] = .integer(winner)
            values[1] = set
            for change in changes { values[change.index + 2] = change.value }
            try insert.execute(values)
            work.merges += 1
        }
        let count = CInt(ranked ? 2 * strategies.count : strategies.count)
        // The queue's rows carry their winner's values first (read where its group starts),
        // then their own; the batch's rows come one per row, the winner first.
        let statement =
            wholeQueue
            ? (skipsTaken ? sql.queueMergeRowsUntaken : sql.queueMergeRows) : (skipsTaken ? sql.mergeRowsUntaken : sql.mergeRows)
        let own: CInt = wholeQueue ? count + 1 : 1
        let read = try db.cachedStatement(sql: statement)
        if let winners { read.setUncheckedArguments([winners.after, winners.upTo]) }
        try RawStatement(read).forEachRow { row in
            let winner = sqlite3_column_int64(row, 0)
            if winner != current {
                try flush()
                current = winner
                rows.removeAll(keepingCapacity: true)
                if wholeQueue { for column in 1...count { rows.append(RawStatement.value(row, column)) } }
            }
            for column in own..<(own + count) { rows.append(RawStatement.value(row, column)) }
        }
        try flush()
    }

    /// Decides, for every child row that points at a loser, whether it is re-pointed or (when
    /// re-pointing would break a unique key of the child) deleted as a duplicate itself.
    func readReferences(_ path: ReferencePath, index: Int, sql: BatchStatements, into work: inout BatchWork) throws {
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
                    throw rule.restrictRefusal(
                        "\(path.label) \(try sql.childNumbers[index].keys(db).key(childRowID)) points at a row that would be deleted")
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

    /// The first `limit` of `groups` as samples: each member's shown values, the merge its
    /// winner would get, and the child rows of each loser by reference.
    func readSamples(_ groups: [(winner: Int64, losers: [Int64])], limit: Int, sql: BatchStatements) throws -> [GroupSample] {
        let chosen = groups.prefix(limit)
        guard !chosen.isEmpty else { return [] }
        let columns = rule.sampleColumns()
        // The shown columns as SQL spells them, then the merge columns' values.
        let selected =
            columns.map { "quote(\($0.sqlIdentifier))" } + rule.mergeColumns.map { $0.name.sqlIdentifier }
            + (rule.mergesRanked ? rule.mergeRankColumns(alias: nil) : [])
        let numbers = RowNumbers(rule)
        let keys = numbers.keys(db)
        // Every member's row in one read, by the numbers of the members kept in a temporary
        // table (`plan --verbose` reads every group's rows: with one statement per row,
        // merge-archive-50's took 2.54 s, 2.15 s with this).
        try db.cachedStatement(sql: "DELETE FROM temp.winnow_sampled").execute()
        let add = try db.cachedStatement(sql: "INSERT OR IGNORE INTO temp.winnow_sampled (id) VALUES (?)")
        for group in chosen {
            for id in [group.winner] + group.losers { try add.execute(arguments: [id]) }
        }
        let sampled = numbers.among("SELECT id FROM temp.winnow_sampled")
        var found: [Int64: (values: [String], merge: [SQLValue])] = [:]
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: "SELECT \(numbers.number(of: nil)), \(selected.joined(separator: ", ")) FROM \(rule.qualifiedTable) WHERE \(sampled)"))
        while let row = try rows.next() {
            let values = (1..<columns.count + 1).map { row[$0] as String? ?? "NULL" }
            found[row[0]] = (values, (columns.count + 1..<selected.count + 1).map { SQLValue(row[$0] as DatabaseValue) })
        }
        // Each loser's child rows per reference, counted in one grouped read per reference, the
        // children reached as the batch reaches them: a path without an index through its map
        // (joined from the sampled rows, SQLite scanned the child table once per sampled row; a
        // plan of 160,000 customers with an unindexed reference did not finish in 5 minutes).
        var childRows: [[Int64: Int]] = []
        for count in sql.sampleChildren {
            var counts: [Int64: Int] = [:]
            let counted = try Row.fetchCursor(db.cachedStatement(sql: count))
            while let row = try counted.next() { counts[row[0]] = row[1] }
            childRows.append(counts)
        }
        let keyIndexes = rule.keyColumns.map { key in columns.firstIndex { $0.caseInsensitiveCompare(key) == .orderedSame } ?? 0 }
        var samples: [GroupSample] = []
        for group in chosen {
            var rows: [GroupSample.SampleRow] = []
            var mergeValues: [[SQLValue]] = []
            for id in [group.winner] + group.losers {
                guard let row = found[id] else { continue }
                rows.append(.init(row: try keys.key(id), values: row.values))
                mergeValues.append(row.merge)
            }
            var sample = GroupSample(
                key: rows.first.map { row in keyIndexes.map { row.values[$0] } } ?? [], winner: try keys.key(group.winner),
                losers: try group.losers.map(keys.key))
            sample.columns = columns
            sample.rows = rows
            // The same resolution as the batch: the winner's values, then the losers' in winner order.
            sample.recordMerges(rule, values: mergeValues)
            for (index, path) in rule.references.enumerated() {
                for loser in group.losers {
                    let count = childRows[index][loser] ?? 0
                    if count > 0 {
                        sample.children.append(
                            .init(
                                reference: path.label, loser: try keys.key(loser), rows: count,
                                mayCollide: !path.uniqueKeys.isEmpty))
                    }
                }
            }
            samples.append(sample)
        }
        return samples
    }
}
