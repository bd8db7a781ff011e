import Foundation
import GRDB
import WinnowCore

/// Reads the journal and the group records for `winnow show`: images decoded from their
/// binary form (``ValueCodec``), rows named by rowid (or the rowid's alias column) or, in a
/// `WITHOUT ROWID` table, by primary key (kept packed), and each changed row read again as it
/// is now.
enum JournalReader {
    /// A table's rows as people name them: its `INTEGER PRIMARY KEY` column, else `rowid`; or
    /// its primary key's columns.
    struct Naming {
        var table: String
        var live: LiveTable?
        /// The name a rowid shows under (its alias column, else `rowid`): found once, not per row.
        let rowIDName: String
        /// A condition selecting the row named by ``values(_:)`` (one `?` per value).
        let selection: String?

        init(table: String, live: LiveTable?) {
            self.table = table
            self.live = live
            rowIDName = live?.rowIDAlias ?? "rowid"
            if let live, let rowID = live.rowIDExpression {
                selection = "\(rowID) = ?"
            } else if let live, !live.primaryKey.isEmpty {
                selection = live.primaryKey.map { "\($0.sqlIdentifier) = ?" }.joined(separator: " AND ")
            } else {
                selection = nil
            }
        }

        /// The values that name the row whose journaled identity is `rid`: its rowid, or its
        /// primary key's values unpacked.
        func values(_ rid: DatabaseValue) throws -> [DatabaseValue] {
            guard case let .blob(packed) = rid.storage else { return [rid] }
            return try ValueCodec.decode([UInt8](packed))
        }

        func key(_ rid: DatabaseValue) throws -> RowKey {
            let literals = try values(rid).map { SQLValue($0).quotedLiteral }
            if case .blob = rid.storage, let live, !live.hasRowID {
                return RowIdentity.primaryKey(live.primaryKey).key(literals: literals)
            }
            let literal = literals.first ?? "NULL"
            return RowKey(stored: literal, parts: [RowKey.Part(column: rowIDName, literal: literal)])
        }
    }

    final class Tables {
        let db: Database
        private var known: [String: Naming] = [:]

        init(_ db: Database) { self.db = db }

        func naming(_ table: String) throws -> Naming {
            if let naming = known[table.lowercased()] { return naming }
            let naming = Naming(table: table, live: try SchemaInspector.table(db, named: table))
            known[table.lowercased()] = naming
            return naming
        }
    }

    /// Runs `body` in a read transaction of its own, or in the one already open.
    static func reading(_ db: Database, _ body: () throws -> Void) throws {
        try db.readTransaction(body)
    }

    static func groups(_ db: Database, runID: Int64) throws -> [GroupRecord] {
        let tables = Tables(db)
        var recorded: [GroupRecord] = []
        try forEachRecorded(db, runID: runID, tables: tables) { recorded.append($0) }
        // The typed journal keeps each loser's winner beside it (no `winnow_run_groups` row):
        // its groups follow, in the order it kept them.
        guard let range = TypedJournal.range(runID) else { return recorded }
        var typed: [(order: [Int64], record: GroupRecord)] = []
        for journal in try TypedJournal.all(db) {
            try forEachTyped(db, journal: journal, range: range, tables: tables) { record, seq in
                typed.append(([Int64(record.rule), Int64(record.batch), seq], record))
            }
        }
        guard !typed.isEmpty else { return recorded }
        // By rule, then batch (a run's rules run one after another).
        let all = recorded.map { (order: [Int64($0.rule), Int64($0.batch), 0], record: $0) } + typed
        return all.enumerated().sorted { a, b in
            a.element.order == b.element.order ? a.offset < b.offset : a.element.order.lexicographicallyPrecedes(b.element.order)
        }.map(\.element.record)
    }

    /// `winnow_run_groups`' records of run `runID`, one at a time, in the order they were recorded.
    private static func forEachRecorded(_ db: Database, runID: Int64, tables: Tables, _ body: (GroupRecord) throws -> Void) throws {
        let rows = try Row.fetchCursor(
            db, sql: "SELECT rule, batch, tbl, winner, loser FROM winnow_run_groups WHERE run_id = ? ORDER BY id", arguments: [runID])
        while let row = try rows.next() {
            let naming = try tables.naming(row[2])
            try body(
                GroupRecord(
                    rule: row[0], batch: row[1], table: naming.live?.name ?? row[2], winner: try naming.key(row[3]),
                    loser: try naming.key(row[4])))
        }
    }

    /// One typed journal's records of the run whose entries are numbered in `range`, one at a
    /// time with their number, in the order it kept them.
    private static func forEachTyped(
        _ db: Database, journal: TypedJournal, range: ClosedRange<Int64>, tables: Tables, _ body: (GroupRecord, Int64) throws -> Void
    ) throws {
        let naming = try tables.naming(journal.table)
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT winnow_rule, winnow_batch, winnow_seq, winnow_winner, winnow_rid FROM \(journal.relation)
                WHERE winnow_seq BETWEEN ? AND ? ORDER BY winnow_seq
                """, arguments: [range.lowerBound, range.upperBound])
        while let row = try rows.next() {
            try body(
                GroupRecord(
                    rule: row[0], batch: row[1], table: naming.live?.name ?? journal.table, winner: try naming.key(row[3]),
                    loser: try naming.key(row[4])),
                row[2])
        }
    }

    /// ``groups(_:runID:)`` one at a time, read as they are given, where they are in one table
    /// (`winnow_run_groups`, or the journal of one shape); from several, merged in order in memory.
    static func forEachGroup(_ db: Database, runID: Int64, _ body: (GroupRecord) throws -> Void) throws {
        let recorded =
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM winnow_run_groups WHERE run_id = ?)", arguments: [runID]) ?? false
        var typed: [TypedJournal] = []
        let range = TypedJournal.range(runID)
        if let range {
            for journal in try TypedJournal.all(db)
            where try Bool.fetchOne(
                db, sql: "SELECT EXISTS (SELECT 1 FROM \(journal.relation) WHERE winnow_seq BETWEEN ? AND ?)",
                arguments: [range.lowerBound, range.upperBound]) ?? false
            {
                typed.append(journal)
            }
        }
        let tables = Tables(db)
        if typed.isEmpty {
            try forEachRecorded(db, runID: runID, tables: tables, body)
        } else if !recorded, typed.count == 1, let range {
            try forEachTyped(db, journal: typed[0], range: range, tables: tables) { record, _ in try body(record) }
        } else {
            for record in try groups(db, runID: runID) { try body(record) }
        }
    }

    static func records(_ db: Database, runID: Int64, batches: Set<Int>?, keep: ((JournalRecord) -> Bool)? = nil) throws -> [JournalRecord]
    {
        let tables = Tables(db)
        var shapes: [Int64: (table: String, columns: [String])] = [:]
        let filter = batches.map { " AND j.batch IN (\($0.sorted().map(String.init).joined(separator: ", ")))" } ?? ""
        var records: [JournalRecord] = []
        var identities: [[DatabaseValue]] = []
        var ids: [Int64] = []
        let rule = Bookkeeping.column("rule", in: try Bookkeeping.columns(of: "winnow_journal", SQLiteSession(db)))
        let cursor = try Row.fetchCursor(
            db,
            sql:
                "SELECT j.batch, j.op, j.shape_id, j.rid, j.image, \(rule), j.id FROM winnow_journal AS j WHERE j.run_id = ?\(filter) ORDER BY j.id",
            arguments: [runID])
        while let row = try cursor.next() {
            let shapeID: Int64 = row[2]
            if shapes[shapeID] == nil {
                guard
                    let shape = try Row.fetchOne(
                        db, sql: "SELECT tbl, columns FROM winnow_journal_shapes WHERE id = ?", arguments: [shapeID])
                else { throw WinnowError.io("journal shape \(shapeID) is missing") }
                shapes[shapeID] = (shape[0], try JSONDecoder().decode([String].self, from: Data((shape[1] as String).utf8)))
            }
            let shape = shapes[shapeID]!
            let naming = try tables.naming(shape.table)
            var record = JournalRecord(
                batch: row[0], rule: row[5], operation: (row[1] as String) == "delete" ? .delete : .update,
                table: naming.live?.name ?? shape.table, key: try naming.key(row[3]), columns: [], before: [])
            if let keep, !keep(record) { continue }
            record.columns = shape.columns
            record.before = try ValueCodec.decode([UInt8](row[4] as Data)).map { SQLValue($0).quotedLiteral }
            identities.append(try naming.values(row[3]))
            ids.append(row[6])
            records.append(record)
        }
        // Each changed row as it is now, by rowid or primary key: one statement per table and
        // columns, and a read transaction per thousand rows (outside one, SQLite takes and
        // drops its lock for every statement; one for the whole listing would keep a writer
        // waiting for all of it).
        var lookups: [[String]: String?] = [:]
        func lookup(_ record: JournalRecord) throws -> String? {
            let shape = [record.table] + record.columns
            if let known = lookups[shape] { return known }
            let naming = try tables.naming(record.table)
            var sql: String?
            if let live = naming.live, let selection = naming.selection, record.columns.allSatisfy({ live.column(named: $0) != nil }) {
                sql =
                    "SELECT \(record.columns.map(\.sqlIdentifier).joined(separator: ", ")) FROM main.\(live.name.sqlIdentifier) WHERE \(selection)"
            }
            lookups[shape] = .some(sql)  // a shape with no look-up is remembered too
            return sql
        }
        let updates = records.indices.filter { records[$0].operation == .update }
        for start in stride(from: 0, to: updates.count, by: 1000) {
            try reading(db) {
                for index in updates[start..<min(start + 1000, updates.count)] {
                    guard let sql = try lookup(records[index]),
                        let row = try Row.fetchOne(db.cachedStatement(sql: sql), arguments: StatementArguments(identities[index]))
                    else { continue }
                    records[index].now = row.databaseValues.map { SQLValue($0).quotedLiteral }
                }
            }
        }
        // The typed journal's deleted rows, each statement's after the entry it follows.
        guard let range = TypedJournal.range(runID) else { return records }
        let kept =
            batches.map { " AND winnow_batch IN (\($0.isEmpty ? "NULL" : $0.sorted().map(String.init).joined(separator: ", ")))" } ?? ""
        var typed: [(order: [Int64], record: JournalRecord)] = []
        for journal in try TypedJournal.all(db) {
            let naming = try tables.naming(journal.table)
            let values = journal.columns.map(\.sqlIdentifier).joined(separator: ", ")
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT winnow_after, winnow_rule, winnow_batch, winnow_seq, winnow_rid, \(values) FROM \(journal.relation)
                    WHERE winnow_seq BETWEEN ? AND ?\(kept) ORDER BY winnow_seq
                    """, arguments: [range.lowerBound, range.upperBound])
            {
                var record = JournalRecord(
                    batch: row[2], rule: row[1], operation: .delete, table: naming.live?.name ?? journal.table,
                    key: try naming.key(row[4]), columns: [], before: [])
                if let keep, !keep(record) { continue }
                record.columns = journal.columns
                record.before = journal.columns.indices.map { SQLValue(row[5 + $0] as DatabaseValue).quotedLiteral }
                typed.append(([row[0], 1, row[1], row[2], row[3]], record))
            }
        }
        guard !typed.isEmpty else { return records }
        let all = zip(ids, records).map { (order: [$0, 0], record: $1) } + typed
        return all.sorted { $0.order.lexicographicallyPrecedes($1.order) }.map(\.record)
    }
}
