import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

extension DedupeExecutor {
    /// Fills `temp.winnow_queue` with every loser and its winner, in batch order.
    func discover() throws -> Discovery {
        try Self.prepareTemporaryTables(db)
        try db.execute(sql: "DELETE FROM temp.winnow_queue")
        let version = try Int64.fetchOne(db, sql: "PRAGMA main.data_version")
        // (Read before the table: a change of the schema from here on is seen, ``RowidWatch``.)
        let schema = try RowidWatch.current(db)
        // Tables without rowids (the rule's, its children's) are numbered first, in the same read
        // transaction as the discovery, so that every row the discovery finds has a number
        // (``RowNumbers``).
        let maps = ([RowNumbers(rule)] + rule.references.indices.map { RowNumbers(rule, path: $0) }).compactMap(\.fillMap)
        guard !maps.isEmpty else { return try discover(version: version, schema: schema) }
        return try db.readTransaction {
            for map in maps { try db.execute(sql: map) }
            return try discover(version: version, schema: schema)
        }
    }

    private func discover(version: Int64?, schema: Int64?) throws -> Discovery {
        // Groups whose losers a merge of an unfinished run took keep that merge's winner (read
        // from the copy of the record, so such a discovery reads the table itself).
        let pins = try mayHaveTakenLosers() && anyTakenRecorded()
        if pins { try fillTakenCopy() }
        // The groups are numbered over one sorted read where the rows' values tell them apart,
        // else by SQLite's window (``sortedComparisons()``).
        let exact = Self.discoversSorted ? try sortedComparisons() : nil
        // In a rollback journal, a read too long for `max_transaction_ms` is a copy first, which
        // counts the table's rows as it goes: the sorted read's own rows in sorted runs where
        // their order can be told outside SQLite, else the columns it reads.
        var runs: SortedRuns?
        var copy: (table: String, rows: Int)?
        if !pins {
            var sorted = SortedCopy.unavailable
            if let exact, Self.copiesSortedRuns { sorted = try copySortedRuns(sortedRead(exact, pinsTaken: false, from: nil)) }
            switch sorted {
            case let .runs(copied): runs = copied
            case .oneRead: break
            case .unavailable: copy = try copyForDiscovery(readPerCopy: discoveryPerCopy(sorted: exact != nil))
            }
        }
        let rows = try runs?.rows ?? copy?.rows ?? Int.fetchOne(db, sql: "SELECT count(*) FROM \(rule.qualifiedTable)") ?? 0
        try sizeWorkingMemory(rows: rows, sorting: true)
        let source = copy?.table ?? rule.qualifiedTable
        // Before the window, the grouped count keeps the keys that occur once out of it: on a
        // table with few duplicates the window then sorts a fraction of it. Where most rows are
        // duplicates, the window over every row costs less than looking up each row's key, so
        // the filter is used only where at most a third of the rows are in groups (the crossover
        // on the bench's shapes: docs/performance.md, "Discovery").
        // On a large table a sample of its keys tells first whether the count can pay at all.
        // The sorted read costs about what the count itself does, and never pays for it (a
        // table of 1,000,000 rows with no duplicates: 1.07 s without the count, 1.44 s with it).
        var duplicateKeys = false
        var counts = countsKeysFirst && exact == nil
        if counts, rows >= Self.estimateFromRows {
            let sample = try Row.fetchOne(db, sql: duplicateShareSQL(from: source))!
            counts = !Self.skipsGroupedCount(sampledRows: sample[0], sampledInGroups: sample[1])
        }
        if counts {
            try db.execute(sql: duplicateKeysSQL(from: source))
            let inGroups = try Int.fetchOne(db, sql: "SELECT coalesce(sum(n), 0) FROM temp.winnow_dupkeys") ?? 0
            duplicateKeys = inGroups * 3 <= rows
        }
        var filed: SortedFiling.Counts?
        if let exact {
            filed = try discoverSorted(exact, pinsTaken: pins, from: source, runs: runs)
        } else {
            try db.execute(sql: discoverySQL(duplicateKeys: duplicateKeys, pinsTaken: pins, from: source))
        }
        // Losers an unfinished run's merge took whose key another connection changed since
        // go with the winner that took them (then the queue is counted again).
        if pins, try fileTakenStrays() > 0 { filed = nil }
        if let copy { try db.execute(sql: "DROP TABLE \(copy.table)") }
        if runs != nil { try db.execute(sql: "DROP TABLE \(SortedRuns.table)") }
        if counts { try db.execute(sql: "DROP TABLE IF EXISTS temp.winnow_dupkeys") }
        try sizeWorkingMemory(rows: rows, sorting: false)
        // The losers, the groups, and the losers tied with the row before them on the winner
        // terms (those that are their group's second row: ties with the winner): counted as the
        // sorted read filed them, else in one pass over the queue.
        let counted: SortedFiling.Counts
        if let filed {
            counted = filed
        } else {
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*), \(filesByPosition ? "count(*) FILTER (WHERE rn = 2)" : "count(DISTINCT first)"),
                           count(*) FILTER (WHERE tied), count(*) FILTER (WHERE rn = 2 AND tied)
                    FROM temp.winnow_queue
                    """)!
            counted = SortedFiling.Counts(losers: row[0], groups: row[1], tied: row[2], tiedGroups: row[3])
        }
        // The queue is as of this data version: while it is unchanged, no other connection has
        // committed since, and the batches take the losers as found (kept beside the queue, so
        // the runner may hand this discovery to another executor on the same connection), with
        // its ties (``settleTiesAhead(_:state:)`` has nothing to settle without any).
        try db.execute(sql: "DELETE FROM temp.winnow_found")
        try db.execute(
            sql: "INSERT INTO temp.winnow_found (version, tied_rows, tied_groups, schema) VALUES (?, ?, ?, ?)",
            arguments: [version, counted.tied, counted.tiedGroups, schema])
        return Discovery(groups: counted.groups, losers: counted.losers, tableRows: rows)
    }

    /// `max_delete_percent` and `references: restrict`, checked before anything is written.
    func checkGuards(_ discovery: Discovery) throws {
        try rule.checkDeleteShare(discovery)
        if rule.rule.references == .restrict {
            for path in rule.references {
                let join = path.childJoin
                let numbers = RowNumbers(rule)
                let parent =
                    numbers.mapped
                    ? numbers.join("p", numbered: "l.rid")
                    : "JOIN \(rule.qualifiedTable) AS p ON p.\(rule.rowID) = l.rid"
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT count(*), min(l.rid) FROM temp.winnow_queue AS l
                        \(parent)
                        JOIN \(rule.qualified(path.childTable)) AS c ON \(join)
                        """)!
                let count: Int = row[0]
                if count > 0 {
                    throw rule.restrictRefusal(
                        """
                        \(count) row(s) of \(path.label) point at rows that would be deleted (first: \(try numbers.keys(db).key(row[1])))
                        """)
                }
            }
        }
    }
}
