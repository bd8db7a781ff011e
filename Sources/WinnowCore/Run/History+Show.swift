import Foundation

extension History {
    /// What one run changed: its record, what each rule did, and, from an archiving run's
    /// journal, per rule the groups (key values, the row kept, the rows deleted, the merged
    /// columns) and the child rows re-pointed or deleted. `groupLimit` lists only the first
    /// groups of each rule (and reads only their batches of the journal); nil lists all.
    public static func show(
        database location: String, runID: Int64, groupLimit: Int? = nil, backend: any DatabaseBackend
    ) throws -> RunReport {
        try backend.withSession(location, mode: .readOnly) { session in
            guard let entry = try entry(session, runID: runID) else {
                throw WinnowError.usage("\(location): no run \(runID) in this database; see winnow history")
            }
            var report = RunReport(run: entry)
            report.groupLimit = groupLimit
            report.rules = try rules(session, runID: runID)
            report.journal = try journalTables(session, runID: runID)
            let changed = entry.counts.deleted + entry.counts.updated + entry.counts.repointed + entry.counts.childrenDeleted > 0
            if let at = entry.prunedAt {
                report.rows = .pruned(at)
            } else if report.journal.isEmpty {
                report.rows = changed ? .notJournaled : .unchanged
            } else {
                let recorded =
                    try session.tableExists("winnow_run_groups")
                    && list({ try session.forEachGroupRecord(runID: runID, $0) }, into: &report, session: session, runID: runID)
                report.rows = recorded ? .listed : .groupsNotRecorded
            }
            return report
        }
    }

    /// `winnow_run_rules` of the run.
    static func rules(_ session: any DatabaseSession, runID: Int64) throws -> [RunReport.Rule] {
        guard try session.tableExists("winnow_run_rules") else { return [] }
        let keyColumns = Bookkeeping.column("key_columns", in: try Bookkeeping.columns(of: "winnow_run_rules", session))
        return try session.rows(
            """
            SELECT rule, tbl, key, \(keyColumns), \(Counts.columns.joined(separator: ", "))
            FROM \(session.dialect.bookkeeping("winnow_run_rules")) WHERE run_id = ? ORDER BY rule
            """, [SQLValue(runID)]
        ).map { row in
            var rule = RunReport.Rule(
                index: try row.int(0), table: try row.string(1), key: try row.string(2), counts: try Counts(row, from: 4))
            if let json = row[3].string, let columns = try? JSONDecoder().decode([String].self, from: Data(json.utf8)) {
                rule.keyColumns = columns
            }
            return rule
        }
    }

    /// The journal's rows per table, by table name.
    static func journalTables(_ session: any DatabaseSession, runID: Int64) throws -> [RunReport.Journaled] {
        guard try session.tableExists("winnow_journal") else { return [] }
        var tables: [String: RunReport.Journaled] = [:]
        var order: [String] = []
        for (table, rows) in try session.typedJournalDeletes(runID: runID) {
            tables[table] = RunReport.Journaled(table: table)
            tables[table]!.deleted = rows
            order.append(table)
        }
        for row in try session.rows(
            """
            SELECT s.tbl, j.op, count(*) FROM \(session.dialect.bookkeeping("winnow_journal")) AS j
            JOIN \(session.dialect.bookkeeping("winnow_journal_shapes")) AS s ON s.id = j.shape_id
            WHERE j.run_id = ? GROUP BY s.tbl, j.op ORDER BY min(j.id)
            """, [SQLValue(runID)])
        {
            let table = try row.string(0)
            if tables[table] == nil {
                tables[table] = RunReport.Journaled(table: table)
                order.append(table)
            }
            if try row.string(1) == "delete" {
                tables[table]!.deleted += try row.int(2)
            } else {
                tables[table]!.updated += try row.int(2)
            }
        }
        return order.sorted { $0.lowercased() < $1.lowercased() }.compactMap { tables[$0] }
    }

    /// Fills each rule's groups and children from the group records (`records` gives them one
    /// at a time, and can be read again) and the journal; returns false, having done nothing,
    /// where there are none.
    static func list(
        _ records: (_ body: (GroupRecord) throws -> Void) throws -> Void, into report: inout RunReport, session: any DatabaseSession,
        runID: Int64
    ) throws -> Bool {
        // Groups per rule, in the order they were resolved: each winner with its losers. A rule
        // batched by position deletes a group's losers in several batches (each records its
        // part): the parts are one group, listed where its first part is, and each loser is
        // looked up in the batch that deleted it.
        struct Found {
            var table: String
            var winner: RowKey
            var losers: [(key: RowKey, batch: Int)]
            var batches: Set<Int>
            /// The batch of its first part.
            var batch: Int { batches.min()! }
        }
        struct OutOfOrder: Error {}
        var found: [Int: [Found]] = [:]
        var grouped: [Place: Int] = [:]
        // A rule's batches: those of its groups; before them, stretches applied ahead of the
        // groups (SQLite: children re-pointed, merges); after them, its stored key hashes (not
        // listed: the counts say how many).
        var span: [Int: (first: Int, last: Int)] = [:]
        // With a limit, every group's rows, so that the rows the groups not listed deleted and
        // merged are not taken for child rows (and their journal entries are not read).
        var winners = Set<Place>()
        var losers = Set<Place>()
        // With a limit, and the records in batch order within each rule (as the engines keep
        // them): a group first seen in a later batch comes after every group seen before it, so
        // once a rule has `limit` groups from its batches before the one being read, it takes
        // no new ones (their rows are in `winners` and `losers`). Records out of that order are
        // read again, every group kept.
        let limit = report.groupLimit
        var inOrder = limit != nil
        while true {
            found = [:]
            grouped = [:]
            span = [:]
            winners = []
            losers = []
            var lastBatch: [Int: Int] = [:]
            var full = Set<Int>()
            do {
                try records { record in
                    let rule = record.rule
                    span[rule] =
                        span[rule].map { (min($0.first, record.batch), max($0.last, record.batch)) } ?? (record.batch, record.batch)
                    let id = row(rule, record.table, record.winner)
                    if limit != nil {
                        winners.insert(id)
                        losers.insert(slot(record.batch, record.table, record.loser))
                    }
                    if let limit, inOrder, record.batch != lastBatch[rule] {
                        if let last = lastBatch[rule], record.batch < last { throw OutOfOrder() }
                        if found[rule]?.count ?? 0 >= limit { full.insert(rule) }
                        lastBatch[rule] = record.batch
                    }
                    if let index = grouped[id] {
                        found[rule]![index].losers.append((record.loser, record.batch))
                        found[rule]![index].batches.insert(record.batch)
                    } else if !full.contains(rule) {
                        grouped[id] = found[rule, default: []].count
                        found[rule, default: []].append(
                            Found(
                                table: record.table, winner: record.winner, losers: [(record.loser, record.batch)], batches: [record.batch])
                        )
                    }
                }
            } catch is OutOfOrder {
                inOrder = false
                continue
            }
            break
        }
        guard !found.isEmpty else { return false }
        // The same order on every engine: by batch, then by the kept row's key.
        for rule in found.keys {
            found[rule]!.sort { $0.batch != $1.batch ? $0.batch < $1.batch : precedes($0.winner, $1.winner) }
            for index in found[rule]!.indices { found[rule]![index].losers.sort { precedes($0.key, $1.key) } }
        }
        for rule in found.keys where !report.rules.contains(where: { $0.index == rule }) {
            // A run killed inside a rule recorded its groups but not the rule's counts.
            let table = found[rule]?.first?.table ?? "?"
            report.rules.append(RunReport.Rule(index: rule, table: table, key: "?", counts: Counts()))
        }
        report.rules.sort { $0.index < $1.index }
        var listed: [Int: [Found]] = [:]
        var wanted: Set<Int>? = nil
        if let limit = report.groupLimit {
            // Only the batches of the groups listed, and the last stretches applied ahead.
            var batches = Set<Int>()
            for (rule, groups) in found {
                let shown = Array(groups.prefix(limit))
                listed[rule] = shown
                for group in shown { batches.formUnion(group.batches) }
                let first = span[rule]!.first
                batches.formUnion(max(1, first - 2)..<first)
            }
            wanted = batches
        } else {
            listed = found
        }
        // (When only the first groups are listed, the rows the others deleted are their losers,
        // and a kept row's merge is no re-pointed child row.)
        var keep: ((JournalRecord) -> Bool)? = nil
        if let limit = report.groupLimit {
            var listedLosers = Set<Place>()
            var listedWinners = Set<Place>()
            for group in listed.values.joined() {
                listedWinners.insert(place(group.table, group.winner))
                for loser in group.losers { listedLosers.insert(slot(loser.batch, group.table, loser.key)) }
            }
            keep = firstEntries(
                limit: limit, span: span, listedLosers: listedLosers, listedWinners: listedWinners, winners: winners, losers: losers)
        }
        let journal = try session.journalRecords(runID: runID, batches: wanted, keep: keep)
        var deletes: [Place: Int] = [:]
        var updates: [Place: Int] = [:]
        // A row's first update by a rule, in whichever batch: a merge applied ahead of the
        // deletions is journaled in a stretch of its own, before its group's batches.
        var firstUpdates: [Place: Int] = [:]
        for (index, record) in journal.enumerated() {
            let id = slot(record.batch, record.table, record.key)
            switch record.operation {
            case .delete: deletes[id] = deletes[id] ?? index
            case .update:
                updates[id] = updates[id] ?? index
                if let rule = record.rule {
                    let id = row(rule, record.table, record.key)
                    firstUpdates[id] = firstUpdates[id] ?? index
                }
            }
        }
        var used = Set<Int>()
        var position: [Int: Int] = [:]
        for r in report.rules.indices {
            let rule = report.rules[r]
            position[rule.index] = r
            for group in listed[rule.index] ?? [] {
                let deleted = group.losers.map { loser -> RunReport.DeletedRow in
                    guard let index = deletes[slot(loser.batch, group.table, loser.key)] else {
                        return RunReport.DeletedRow(table: group.table, key: loser.key, values: [])
                    }
                    used.insert(index)
                    return deletedRow(journal[index])
                }
                var updated: RunReport.ChangedRow?
                let update =
                    group.batches.sorted().lazy.compactMap { updates[slot($0, group.table, group.winner)] }.first
                    ?? firstUpdates[row(rule.index, group.table, group.winner)].flatMap { journal[$0].batch < group.batch ? $0 : nil }
                if let index = update, !used.contains(index) {
                    used.insert(index)
                    updated = changedRow(journal[index])
                }
                let key =
                    deleted.first.map { row in
                        rule.keyColumns.compactMap { column in
                            row.values.first { $0.column.caseInsensitiveCompare(column) == .orderedSame }
                        }
                    } ?? []
                report.rules[r].groups.append(RunReport.Group(key: key, kept: group.winner, deleted: deleted, updated: updated))
            }
        }
        // What else a rule's batches journaled: its children, by batch, table and key.
        let rest = journal.indices.filter { !used.contains($0) }.sorted { listedBefore(journal[$0], journal[$1]) }
        for index in rest {
            let record = journal[index]
            guard let rule = record.rule, let r = position[rule], let span = span[rule], record.batch <= span.last else { continue }
            switch record.operation {
            case .delete:
                if report.groupLimit != nil, losers.contains(slot(record.batch, record.table, record.key)) { continue }
                report.rules[r].childrenDeleted.append(deletedRow(record))
            case .update:
                if report.groupLimit != nil, winners.contains(row(rule, record.table, record.key)) { continue }
                report.rules[r].repointed.append(changedRow(record))
            }
        }
        return true
    }

    /// A row as the journal names it (its table in any case, its stored key), in one batch, by
    /// one rule, or anywhere: a key of the sets and maps that match journal entries to groups,
    /// without a string built for each (a run of 1,600,000 customers has a million losers).
    struct Place: Hashable {
        /// The batch (0 or more), the rule (-1 - rule), or neither (`Int.min`).
        var scope: Int
        var table: String
        var stored: String
    }

    /// A row's place in a batch's journal.
    static func slot(_ batch: Int, _ table: String, _ key: RowKey) -> Place {
        Place(scope: batch, table: table.lowercased(), stored: key.stored)
    }

    /// A row as one rule changed it, in whichever batch.
    static func row(_ rule: Int, _ table: String, _ key: RowKey) -> Place {
        Place(scope: -1 - rule, table: table.lowercased(), stored: key.stored)
    }

    /// A row, in whichever batch and by whichever rule.
    static func place(_ table: String, _ key: RowKey) -> Place { Place(scope: Int.min, table: table.lowercased(), stored: key.stored) }

    /// The order of child rows in a listing: by batch, table and row.
    static func listedBefore(_ x: JournalRecord, _ y: JournalRecord) -> Bool {
        if x.batch != y.batch { return x.batch < y.batch }
        if x.table != y.table { return x.table < y.table }
        return precedes(x.key, y.key)
    }

    /// The journal entries `show` without `--verbose` needs, judged before their values are
    /// decoded and their rows read again: every deletion at a listed loser's place and every
    /// change of a listed kept row; no other group's; and of the rest (child rows), those among
    /// the first `limit` of their rule and operation in the listing's order so far (the
    /// listing shows no more). At 1,600,000 customers, decoding every entry of the listed
    /// groups' batches (every batch, when they were filed by position) took most of the 26 s
    /// and 1.6 GB that `show` took.
    static func firstEntries(
        limit: Int, span: [Int: (first: Int, last: Int)], listedLosers: Set<Place>, listedWinners: Set<Place>,
        winners: Set<Place>, losers: Set<Place>
    ) -> (JournalRecord) -> Bool {
        struct List: Hashable {
            var rule: Int
            var operation: JournalRecord.Operation
        }
        var heads: [List: [JournalRecord]] = [:]
        return { record in
            switch record.operation {
            case .delete:
                let at = slot(record.batch, record.table, record.key)
                if listedLosers.contains(at) { return true }
                if losers.contains(at) { return false }
            case .update:
                if listedWinners.contains(place(record.table, record.key)) { return true }
                if let rule = record.rule, winners.contains(row(rule, record.table, record.key)) { return false }
            }
            guard let rule = record.rule, let span = span[rule], record.batch <= span.last, limit > 0 else { return false }
            let list = List(rule: rule, operation: record.operation)
            var head = heads[list, default: []]
            if head.count >= limit {
                guard let last = head.last, listedBefore(record, last) else { return false }
                head.removeLast()
            }
            // After the entries it does not precede: the listing's sort keeps the journal's order among equals.
            head.insert(record, at: head.firstIndex { listedBefore(record, $0) } ?? head.count)
            heads[list] = head
            return true
        }
    }

    /// Rows in key order: column by column, numbers by value, text by its characters.
    static func precedes(_ a: RowKey, _ b: RowKey) -> Bool {
        for (x, y) in zip(a.parts, b.parts) where x.literal != y.literal {
            if let i = Double(x.literal), let j = Double(y.literal) { return i < j }
            return x.literal < y.literal
        }
        return a.parts.count < b.parts.count
    }

    static func deletedRow(_ record: JournalRecord) -> RunReport.DeletedRow {
        RunReport.DeletedRow(
            table: record.table, key: record.key,
            values: zip(record.columns, record.before).map { RunReport.Value(column: $0, literal: $1) })
    }

    /// A changed row: the columns whose value now differs from the before-image.
    static func changedRow(_ record: JournalRecord) -> RunReport.ChangedRow {
        guard let now = record.now, now.count == record.before.count else {
            return RunReport.ChangedRow(table: record.table, key: record.key, changes: [], exists: false)
        }
        let changes = record.columns.indices.compactMap { i -> RunReport.Change? in
            record.before[i] == now[i] ? nil : RunReport.Change(column: record.columns[i], before: record.before[i], now: now[i])
        }
        return RunReport.ChangedRow(table: record.table, key: record.key, changes: changes, exists: true)
    }
}
