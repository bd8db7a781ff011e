import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

extension DedupeExecutor {
    /// Whether the stretches of merges delete every loser in their rowids, also one whose
    /// winner a later stretch merges (its values kept in `winnow_given_merges` until then,
    /// ``GivenMergesRecord``), so that no second pass over the table deletes the losers they
    /// leave. Only where merging a winner with its given losers' values first and with the rest
    /// of its group later gives what one merge of the whole group gives, whatever the split:
    /// every merge column is merged by `sum`, `min` or `max`, and every value the decisions read
    /// (`decided`) is an integer or NULL (a sum of REALs depends on the order of its terms, and
    /// `min` and `max` keep the first of values that compare equal, as 1 and 1.0 do).
    func givesAhead(_ decided: BatchWork) -> Bool {
        Self.givesLosersAhead && decided.integersOnly && !rule.mergesRanked
            && rule.mergeColumns.allSatisfy { [.sum, .min, .max].contains($0.strategy) }
    }

    /// Whether stretches of merges may give losers ahead at all (tests compare both ways).
    nonisolated(unsafe) static var givesLosersAhead = true

    /// Whether a merge value is other than an integer or NULL (``givesAhead(_:)``).
    static func notAnInteger(_ value: SQLValue) -> Bool {
        switch value {
        case .integer, .null: return false
        default: return true
        }
    }

    /// The values of the losers filed in `(after, upTo]` whose winner lies after `reach` (a later
    /// stretch merges it), merged winner by winner with each column's strategy and packed
    /// (``GivenMergesRecord``); nil where there are none. A read: the stretch's writer records it.
    func givenAhead(_ sql: BatchStatements, after: Int64, upTo: Int64, reach: Int64) throws -> [UInt8]? {
        let strategies = rule.mergeColumns.map { $0.strategy }
        var record = GivenMergesRecord()
        var current: Int64?
        var losers: [Int64] = []
        var columns = [[SQLValue]](repeating: [], count: strategies.count)
        func flush() {
            guard let winner = current else { return }
            record.append(winner: winner, losers: losers, values: strategies.indices.map { Self.fold(strategies[$0], columns[$0]) })
            losers.removeAll(keepingCapacity: true)
            for index in columns.indices { columns[index].removeAll(keepingCapacity: true) }
        }
        let read = try db.cachedStatement(sql: sql.givenToRecord)
        read.setUncheckedArguments([after, upTo, reach])
        try RawStatement(read).forEachRow { row in
            let winner = sqlite3_column_int64(row, 0)
            if winner != current {
                flush()
                current = winner
            }
            losers.append(sqlite3_column_int64(row, 1))
            for index in columns.indices { columns[index].append(RawStatement.value(row, CInt(index + 2))) }
        }
        flush()
        return record.count > 0 ? record.packed : nil
    }

    /// ``MergeResolver/merge(_:_:by:order:)`` of `values` by `strategy`, folded here where every
    /// value is an integer or NULL and `strategy` is `sum`, `min` or `max` (the values a stretch
    /// gives ahead): the resolver's generic path took most of the stretches' time spent keeping
    /// them (merge-500 at 1,600,000 customers, `perf`). The same value: a sum that overflows, or
    /// any other value, goes to the resolver.
    static func fold(_ strategy: MergeStrategy, _ values: [SQLValue]) -> SQLValue {
        guard strategy == .sum || strategy == .min || strategy == .max else { return MergeResolver.merge(strategy, values) }
        var folded: Int64?
        for value in values {
            switch value {
            case .null: continue
            case let .integer(i):
                guard let before = folded else {
                    folded = i
                    continue
                }
                switch strategy {
                case .sum:
                    let (sum, overflow) = before.addingReportingOverflow(i)
                    if overflow { return MergeResolver.merge(strategy, values) }
                    folded = sum
                case .min: folded = Swift.min(before, i)
                case .max: folded = Swift.max(before, i)
                default: return MergeResolver.merge(strategy, values)
                }
            default: return MergeResolver.merge(strategy, values)
            }
        }
        guard let folded else { return MergeResolver.merge(strategy, values) }
        return .integer(folded)
    }

    /// Merges into their winners the values of the losers that stretches of merges deleted
    /// before their winner's merge, where that merge was never applied (the run was killed, or
    /// another connection committed and the stretches stopped): `winnow_given_merges`
    /// (``GivenMergesRecord``). An entry is done where its run recorded its winner as taking
    /// the entry's own losers (``TakenLosersRecord``: the winner's stretch merged the whole
    /// group as found, given losers included, or the run merged the entry after another
    /// connection's commit), and where its winner is gone (its values went with it, as a
    /// merged winner's do). The others are merged winner by winner, each column with the
    /// strategy the record names, in ascending rowid order, ``settlePiece`` winners a
    /// transaction, journaled as a batch's merges when the rule archives. Each transaction
    /// records its winners' given losers as taken by them (so each stays its group's winner,
    /// as a winner whose values hold its losers' does: ranked again by content, a winner whose
    /// sum grew could lose a tie) and notes how far it got (`settled_to`); the last empties the
    /// table's record. Returns the counts of its transactions; sets `state.skipsTaken` where it
    /// recorded any loser.
    ///
    /// A stretch gives losers ahead only where merging in two steps gives what one merge of the
    /// group gives (``givesAhead(_:)``), so the winner's later merge with the rest of its
    /// group, as the rows are then, ends as an uninterrupted run would.
    func settleGivenMerges(
        _ sql: BatchStatements, state: inout BatchState, batchNumber: inout Int, totals: inout Counts
    ) throws -> Counts {
        // (A dry run goes through it too, writing nothing: `plan` counts the winners it updates.)
        guard !rule.mergeColumns.isEmpty, try db.tableExists(SQLiteDialect.givenMergesName) else { return Counts() }
        // How far a run that merged them got (a read of the rows' small columns: the entries
        // are read one row at a time below).
        let own = "FROM main.\(SQLiteDialect.givenMergesName) WHERE tbl = ?"
        guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 \(own))", arguments: [rule.table]) == true else { return Counts() }
        let settledTo = try Int64.fetchOne(db, sql: "SELECT max(settled_to) \(own)", arguments: [rule.table]) ?? .min
        // The entries still to merge, each with its run and winner, by the first of its losers
        // (an entry's losers are recorded as taken together, in one transaction). Only these,
        // not the entries themselves: the values are read again below for the entries that
        // are not merged (holding every entry took a resumed merge-500 at 1,600,000 customers
        // from 75 MB to 133 MB of memory).
        var (runs, winnersOf): ([Int64], [Int64]) = ([], [])
        var byFirst: [Int64: Int] = [:]
        var sameFirst: [Int64: [Int]] = [:]
        try GivenMergesRecord.forEach(db, table: rule.table) { row in
            guard row.settledTo == nil else { return }
            for entry in row.entries where entry.winner > settledTo {
                let index = runs.count
                runs.append(row.runID)
                winnersOf.append(entry.winner)
                // (A rowid another connection's row took after its loser was given, given again.)
                guard let first = entry.losers.first else { continue }
                if byFirst[first] == nil { byFirst[first] = index } else { sameFirst[first, default: []].append(index) }
            }
        }
        // An entry is merged where its run recorded its winner as taking the entry's own
        // losers: the winner's stretch came (its merge decided over the group as found, given
        // losers included), or the run merged the entry here after another connection's
        // commit. Not where that run recorded the winner as taking other losers only: merging
        // an earlier run's kept values records their losers under the run that merges them,
        // which may then give more of the same winner's losers ahead before it is killed.
        var done = [Bool](repeating: false, count: runs.count)
        try TakenLosersRecord.forEach(db, table: rule.table) { _, run, pair in
            guard let index = byFirst[pair.loser] else { return }
            if runs[index] == run && winnersOf[index] == pair.winner { done[index] = true }
            for other in sameFirst[pair.loser] ?? [] where runs[other] == run && winnersOf[other] == pair.winner {
                done[other] = true
            }
        }
        (runs, winnersOf, byFirst, sameFirst) = ([], [], [:], [:])
        // Each winner's given losers, and their values by the rule's merge column with the
        // strategy recorded.
        let columnIndex = Dictionary(rule.mergeColumns.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        var given: [Int64: (losers: [Int64], values: [(column: Int, strategy: MergeStrategy, value: SQLValue)])] = [:]
        var index = 0
        try GivenMergesRecord.forEach(db, table: rule.table) { row in
            guard row.settledTo == nil else { return }
            let columns = row.columns.map { (index: columnIndex[$0.name], strategy: $0.strategy) }
            for entry in row.entries where entry.winner > settledTo {
                defer { index += 1 }
                guard index < done.count, !done[index] else { continue }
                given[entry.winner, default: ([], [])].losers += entry.losers
                for (column, value) in zip(columns, entry.values) where !value.isNull {
                    guard let merged = column.index else { continue }
                    given[entry.winner, default: ([], [])].values.append((merged, column.strategy, value))
                }
            }
        }
        guard index == done.count else {
            throw WinnowError.internal("winnow_given_merges changed while it was read; the run was stopped")
        }
        let winners = given.keys.sorted()
        var counts = Counts()
        var recorded = false
        var start = 0
        repeat {
            let chunk = winners[start..<min(start + Self.settlePiece, winners.count)]
            let last = start + chunk.count >= winners.count
            let work = try writer.transaction(db) { () -> BatchWork in
                var work = BatchWork(number: batchNumber)
                var taken = TakenLosersRecord()
                try db.cachedStatement(sql: sql.clearMerged).execute()
                let insert = RawStatement(try db.cachedStatement(sql: sql.insertMerged))
                var values = [SQLValue](repeating: .null, count: rule.mergeColumns.count + 2)
                for winner in chunk {
                    // (Gone: its values went with it.)
                    guard let row = try GRDB.Row.fetchOne(db.cachedStatement(sql: sql.mergeValuesOfRow), arguments: [winner]),
                        let entry = given[winner]
                    else { continue }
                    for loser in entry.losers { taken.append(loser: loser, winner: winner) }
                    var changed: [Int] = []
                    for index in values.indices { values[index] = .null }
                    for index in rule.mergeColumns.indices {
                        let parts = entry.values.filter { $0.column == index }
                        guard let strategy = parts.first?.strategy else { continue }
                        let current = SQLValue(row[index] as DatabaseValue)
                        let value = MergeResolver.merge(strategy, [current] + parts.map { $0.value })
                        if !ValueOrder.identical(value, current) {
                            changed.append(index)
                            values[index + 2] = value
                        }
                    }
                    guard !changed.isEmpty else { continue }
                    values[0] = .integer(winner)
                    values[1] = SQLValue(BatchStatements.mergeSet(changed))
                    if !work.mergeColumnSets.contains(changed) { work.mergeColumnSets.append(changed) }
                    try insert.execute(values)
                    work.merges += 1
                }
                if taken.count > 0 { work.taken = taken.packed }
                if work.merges > 0 || work.taken != nil { try writer.apply(work, rule: rule, sql: sql, db: db) }
                try writer.noteGivenSettled(table: rule.table, upTo: last ? nil : chunk.last, db: db)
                if work.merges > 0 { try writer.recordProgress(totals + work.counts, db: db) }
                return work
            }
            try Self.afterSettlePiece?(db)
            if work.taken != nil { recorded = true }
            if work.merges > 0 {
                counts = counts + work.counts
                totals = totals + work.counts
                batchNumber += 1
            }
            start += chunk.count
        } while start < winners.count
        if recorded { state.skipsTaken = true }
        return counts
    }

    /// The most winners one transaction of ``settleGivenMerges(_:state:batchNumber:totals:)`` merges.
    nonisolated(unsafe) static var settlePiece = 2000

    /// Tests: runs after each transaction of ``settleGivenMerges(_:state:batchNumber:totals:)`` has
    /// committed.
    nonisolated(unsafe) static var afterSettlePiece: ((Database) throws -> Void)?
}
