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
                let groups = try session.tableExists("winnow_run_groups") ? try session.groupRecords(runID: runID) : []
                if groups.isEmpty {
                    report.rows = .groupsNotRecorded
                } else {
                    report.rows = .listed
                    try list(groups, into: &report, session: session, runID: runID)
                }
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

    /// Fills each rule's groups and children from the group records and the journal.
    static func list(_ records: [GroupRecord], into report: inout RunReport, session: any DatabaseSession, runID: Int64) throws {
        // Groups per rule, in the order they were resolved: (batch, winner) with its losers.
        struct Found {
            var batch: Int
            var table: String
            var winner: RowKey
            var losers: [RowKey]
        }
        var found: [Int: [Found]] = [:]
        var grouped: [String: Int] = [:]
        for record in records {
            let id = "\(record.rule)\u{1F}\(record.batch)\u{1F}\(record.winner.stored)"
            if let index = grouped[id] {
                found[record.rule]![index].losers.append(record.loser)
            } else {
                grouped[id] = found[record.rule, default: []].count
                found[record.rule, default: []].append(
                    Found(batch: record.batch, table: record.table, winner: record.winner, losers: [record.loser]))
            }
        }
        // The same order on every engine: by batch, then by the kept row's key.
        for rule in found.keys {
            found[rule]!.sort { $0.batch != $1.batch ? $0.batch < $1.batch : precedes($0.winner, $1.winner) }
            for index in found[rule]!.indices { found[rule]![index].losers.sort(by: precedes) }
        }
        for rule in found.keys where !report.rules.contains(where: { $0.index == rule }) {
            // A run killed inside a rule recorded its groups but not the rule's counts.
            let table = found[rule]?.first?.table ?? "?"
            report.rules.append(RunReport.Rule(index: rule, table: table, key: "?", counts: Counts()))
        }
        report.rules.sort { $0.index < $1.index }
        // A rule's batches: those of its groups; before them, stretches of children re-pointed
        // ahead of the groups (SQLite, unindexed references); after them, its stored key hashes
        // (not listed: the counts say how many).
        var span: [Int: (first: Int, last: Int)] = [:]
        for (rule, groups) in found {
            let batches = groups.map(\.batch)
            span[rule] = (batches.min()!, batches.max()!)
        }
        var listed: [Int: [Found]] = [:]
        var wanted: Set<Int>? = nil
        if let limit = report.groupLimit {
            // Only the batches of the groups listed, and the first stretches re-pointed ahead.
            var batches = Set<Int>()
            for (rule, groups) in found {
                let shown = Array(groups.prefix(limit))
                listed[rule] = shown
                batches.formUnion(shown.map(\.batch))
                let first = span[rule]!.first
                batches.formUnion(max(1, first - 2)..<first)
            }
            wanted = batches
        } else {
            listed = found
        }
        let journal = try session.journalRecords(runID: runID, batches: wanted)
        func slot(_ batch: Int, _ table: String, _ key: RowKey) -> String { "\(batch)\u{1F}\(table.lowercased())\u{1F}\(key.stored)" }
        var deletes: [String: Int] = [:]
        var updates: [String: Int] = [:]
        for (index, record) in journal.enumerated() {
            let id = slot(record.batch, record.table, record.key)
            switch record.operation {
            case .delete: deletes[id] = deletes[id] ?? index
            case .update: updates[id] = updates[id] ?? index
            }
        }
        var used = Set<Int>()
        var position: [Int: Int] = [:]
        for r in report.rules.indices {
            let rule = report.rules[r]
            position[rule.index] = r
            for group in listed[rule.index] ?? [] {
                let deleted = group.losers.map { loser -> RunReport.DeletedRow in
                    guard let index = deletes[slot(group.batch, group.table, loser)] else {
                        return RunReport.DeletedRow(table: group.table, key: loser, values: [])
                    }
                    used.insert(index)
                    return deletedRow(journal[index])
                }
                var updated: RunReport.ChangedRow?
                if let index = updates[slot(group.batch, group.table, group.winner)] {
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
        let rest = journal.indices.filter { !used.contains($0) }.sorted { a, b in
            let (x, y) = (journal[a], journal[b])
            if x.batch != y.batch { return x.batch < y.batch }
            if x.table != y.table { return x.table < y.table }
            return precedes(x.key, y.key)
        }
        for index in rest {
            let record = journal[index]
            guard let rule = record.rule, let r = position[rule], let span = span[rule], record.batch <= span.last else { continue }
            switch record.operation {
            case .delete: report.rules[r].childrenDeleted.append(deletedRow(record))
            case .update: report.rules[r].repointed.append(changedRow(record))
            }
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
