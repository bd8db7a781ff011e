import Foundation
import WinnowCore

/// Reads the `jsonb` journal and the group records for `winnow show`: values turned into SQL
/// literals on the server (numbers keep every digit), rows named by primary key, and each
/// changed row read again, by its key, as it is now.
struct PostgresJournalReader {
    let session: PostgresSession

    private var dialect: PostgresDialect { session.postgresDialect }

    /// `values` as a JSON array of their literals: what ``literals(ofArray:)`` gives for
    /// `jsonb_build_array` of them, without unnesting and aggregating an array for every row
    /// (the typed journal's keys). A NULL is `jsonb`'s `null` there, as in an array.
    static func literals(ofValues values: [String]) -> String {
        "jsonb_build_array(\(values.map { literal("coalesce(to_jsonb(\($0)), 'null')") }.joined(separator: ", ")))::text"
    }

    /// A `jsonb` value as an SQL literal (`NULL`, a bare number, quoted text or JSON).
    static func literal(_ value: String) -> String {
        """
        CASE jsonb_typeof(\(value)) WHEN 'null' THEN 'NULL' WHEN 'string' THEN quote_literal(\(value) #>> '{}') \
        WHEN 'number' THEN (\(value))::text WHEN 'boolean' THEN (\(value))::text ELSE quote_literal((\(value))::text) END
        """
    }

    /// A `jsonb` array's elements as a JSON array of literals.
    static func literals(ofArray array: String) -> String {
        "(SELECT jsonb_agg(\(literal("a.value")) ORDER BY a.n) FROM jsonb_array_elements(\(array)) WITH ORDINALITY AS a(value, n))::text"
    }

    /// Columns' values as a JSON object of their literals, by column name: what
    /// ``literals(ofObject:)`` gives for `to_jsonb` of a row holding them, without expanding
    /// and aggregating an object for every row (the typed journal's rows: 1,066,499 read in
    /// 3.2 s instead of 15.0 s). `jsonb_build_object` takes at most 100 arguments, so the
    /// columns go 50 to an object, the objects joined.
    func literals(ofColumns columns: [(name: String, value: String)]) -> String {
        guard !columns.isEmpty else { return "'{}'" }
        let objects = stride(from: 0, to: columns.count, by: 50).map { start in
            let pairs = columns[start..<min(start + 50, columns.count)].map {
                "\(dialect.literal($0.name)), \(Self.literal("coalesce(to_jsonb(\($0.value)), 'null')"))"
            }
            return "jsonb_build_object(\(pairs.joined(separator: ", ")))"
        }
        return "(\(objects.joined(separator: " || ")))::text"
    }

    /// A `jsonb` object's values as a JSON object of literals.
    static func literals(ofObject object: String) -> String {
        "(SELECT jsonb_object_agg(e.key, \(literal("e.value"))) FROM jsonb_each(\(object)) AS e)::text"
    }

    static func decode<T>(_ json: String?, as: T.Type) -> T? {
        json.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? T }
    }

    /// Names a row's key values by the table's primary key columns (`key` when the table is gone).
    final class Naming {
        let schema: LiveSchema
        init(_ schema: LiveSchema) { self.schema = schema }

        func key(table: String, stored: String, literals: String?) -> RowKey {
            let values = PostgresJournalReader.decode(literals, as: [String].self) ?? [stored]
            let columns = schema.table(named: table)?.primaryKey ?? []
            let parts = values.enumerated().map { index, value in
                RowKey.Part(column: index < columns.count ? columns[index] : "key", literal: value)
            }
            return RowKey(stored: stored, parts: parts)
        }
    }

    /// One typed journal's group records of run `runID`, as a statement with the run's number
    /// written in (a cursor's statement takes no parameters): in the order it journaled them.
    private func typedGroupsSQL(_ journal: PostgresTypedJournal, runID: Int64) -> String {
        """
        SELECT r.winnow_rule, r.winnow_batch, r.winnow_seq, \(journal.winner(alias: "r"))::text, \(journal.rid(alias: "r"))::text,
            \(Self.literals(ofValues: journal.winnerColumns(alias: "r"))),
            \(Self.literals(ofValues: journal.ridColumns(alias: "r")))
        FROM \(journal.relation) AS r WHERE r.winnow_run = \(runID)
        ORDER BY r.winnow_seq, \(journal.key.map { "r.\($0.sqlIdentifier)" }.joined(separator: ", "))
        """
    }

    private func typedGroup(_ row: SQLRow, _ journal: PostgresTypedJournal, naming: Naming) throws -> GroupRecord {
        GroupRecord(
            rule: try row.int(0), batch: try row.int(1), table: naming.schema.table(named: journal.table)?.name ?? journal.table,
            winner: naming.key(table: journal.table, stored: try row.string(3), literals: row[5].string),
            loser: naming.key(table: journal.table, stored: try row.string(4), literals: row[6].string))
    }

    /// `winnow_run_groups`' records of run `runID`, in the order they were recorded.
    private func recordedGroupsSQL(runID: Int64) -> String {
        """
        SELECT g.rule, g.batch, g.tbl, g.winner::text, g.loser::text, \(Self.literals(ofArray: "g.winner")), \(Self.literals(ofArray: "g.loser"))
        FROM \(dialect.bookkeeping("winnow_run_groups")) AS g WHERE g.run_id = \(runID) ORDER BY g.id
        """
    }

    private func recordedGroup(_ row: SQLRow, naming: Naming) throws -> GroupRecord {
        let table = try row.string(2)
        return GroupRecord(
            rule: try row.int(0), batch: try row.int(1), table: naming.schema.table(named: table)?.name ?? table,
            winner: naming.key(table: table, stored: try row.string(3), literals: row[5].string),
            loser: naming.key(table: table, stored: try row.string(4), literals: row[6].string))
    }

    func groups(runID: Int64) throws -> [GroupRecord] {
        try groups(runID: runID, naming: Naming(try session.inspect()), journals: try PostgresTypedJournal.all(session))
    }

    private func groups(runID: Int64, naming: Naming, journals: [PostgresTypedJournal]) throws -> [GroupRecord] {
        // The typed journal keeps each loser's winner beside it (no `winnow_run_groups` row):
        // its groups follow, in the order it journaled them.
        var typed: [(order: [Int64], record: GroupRecord)] = []
        for journal in journals {
            for row in try session.rows(typedGroupsSQL(journal, runID: runID)) {
                typed.append(([try row.int64(0), try row.int64(1), try row.int64(2)], try typedGroup(row, journal, naming: naming)))
            }
        }
        let recorded = try session.rows(recordedGroupsSQL(runID: runID)).map { try recordedGroup($0, naming: naming) }
        guard !typed.isEmpty else { return recorded }
        // By rule, then batch (a run's rules run one after another).
        let all = recorded.map { (order: [Int64($0.rule), Int64($0.batch), 0], record: $0) } + typed
        return all.enumerated().sorted { a, b in
            a.element.order == b.element.order ? a.offset < b.offset : a.element.order.lexicographicallyPrecedes(b.element.order)
        }.map(\.element.record)
    }

    /// ``groups(runID:)`` one at a time, in the same order. Where the run's records are in one
    /// table (`winnow_run_groups`, or one typed journal) they are read through a cursor, a page
    /// at a time; where they are in several, the order between them is only known once all are
    /// read, so they are read whole, as ``groups(runID:)`` does.
    func forEachGroup(runID: Int64, _ body: (GroupRecord) throws -> Void) throws {
        let naming = Naming(try session.inspect())
        let journals = try PostgresTypedJournal.all(session)
        // Which tables hold the run's records, in one statement: `winnow_run_groups`, then each typed journal.
        let places = ["\(dialect.bookkeeping("winnow_run_groups")) WHERE run_id"] + journals.map { "\($0.relation) WHERE winnow_run" }
        let exists = places.map { "EXISTS (SELECT 1 FROM \($0) = \(runID))" }
        let holds = try session.rows("SELECT " + exists.joined(separator: ", ")).first?.values.map { $0.bool == true } ?? []
        let recorded = holds.first == true
        let typed = zip(journals, holds.dropFirst()).filter(\.1).map(\.0)
        switch (typed.count, recorded) {
        case (0, _):
            try session.forEachRow(recordedGroupsSQL(runID: runID)) { try body(try recordedGroup($0, naming: naming)) }
        case (1, false):
            try session.forEachRow(typedGroupsSQL(typed[0], runID: runID)) { try body(try typedGroup($0, typed[0], naming: naming)) }
        default:
            for record in try groups(runID: runID, naming: naming, journals: typed) { try body(record) }
        }
    }

    func records(runID: Int64, batches: Set<Int>?, keep: ((JournalRecord) -> Bool)? = nil) throws -> [JournalRecord] {
        let schema = try session.inspect()
        let naming = Naming(schema)
        let journal = dialect.bookkeeping("winnow_journal")
        let filter = batches.map { " AND j.batch IN (\($0.isEmpty ? "NULL" : $0.sorted().map(String.init).joined(separator: ", ")))" } ?? ""
        let rule = Bookkeeping.column("rule", in: try Bookkeeping.columns(of: "winnow_journal", session))
        var records: [JournalRecord] = []
        var position: [Int64: Int] = [:]
        var updated: [Int64: String] = [:]
        for row in try session.rows(
            """
            SELECT j.id, j.batch, \(rule), j.op, s.tbl, s.columns, j.rid::text, \(Self.literals(ofArray: "j.rid")),
                \(Self.literals(ofObject: "j.image")), j.shape_id
            FROM \(journal) AS j JOIN \(dialect.bookkeeping("winnow_journal_shapes")) AS s ON s.id = j.shape_id
            WHERE j.run_id = ?\(filter) ORDER BY j.id
            """, [SQLValue(runID)])
        {
            let table = try row.string(4)
            let operation: JournalRecord.Operation = try row.string(3) == "delete" ? .delete : .update
            var record = JournalRecord(
                batch: try row.int(1), rule: row[2].int, operation: operation, table: schema.table(named: table)?.name ?? table,
                key: naming.key(table: table, stored: try row.string(6), literals: row[7].string), columns: [], before: [])
            if let keep, !keep(record) { continue }
            let columns = Self.decode(row[5].string, as: [String].self) ?? []
            let image = Self.decode(row[8].string, as: [String: String].self) ?? [:]
            record.columns = columns
            record.before = columns.map { image[$0] ?? "NULL" }
            position[try row.int64(0)] = records.count
            if operation == .update { updated[try row.int64(9)] = table }
            records.append(record)
        }
        // Each changed row as it is now, shape by shape, found by its key after the change.
        for (shape, name) in updated {
            guard let table = schema.table(named: name), !table.primaryKey.isEmpty else { continue }
            let match = table.primaryKey.enumerated().map { index, column in
                "t.\(column.sqlIdentifier) = (j.rid->>\(index))::\(table.column(named: column)?.type ?? "text")"
            }.joined(separator: " AND ")
            for row in try session.rows(
                """
                SELECT j.id, \(literals(ofColumns: table.columns.map { ($0.name, "t.\($0.name.sqlIdentifier)") })) FROM \(journal) AS j
                JOIN \(dialect.table(table.name)) AS t ON \(match)
                WHERE j.run_id = ? AND j.shape_id = ? AND j.op = 'update'\(filter)
                """, [SQLValue(runID), SQLValue(shape)])
            {
                guard let index = position[try row.int64(0)], let now = Self.decode(row[1].string, as: [String: String].self) else {
                    continue
                }
                let columns = records[index].columns
                guard columns.allSatisfy({ now[$0] != nil }) else { continue }
                records[index].now = columns.map { now[$0]! }
            }
        }
        // The typed journal's deleted rows, each at its statement's place in the sequence both
        // journals number their entries by.
        let ids = position.sorted { $0.value < $1.value }.map(\.key)
        var typed: [(order: [Int64], record: JournalRecord)] = []
        for journal in try PostgresTypedJournal.all(session) {
            let name = schema.table(named: journal.table)?.name ?? journal.table
            let kept =
                batches.map { " AND r.winnow_batch IN (\($0.isEmpty ? "NULL" : $0.sorted().map(String.init).joined(separator: ", ")))" }
                ?? ""
            for row in try session.rows(
                """
                SELECT r.winnow_seq, r.winnow_batch, r.winnow_rule, \(journal.rid(alias: "r"))::text, \(Self.literals(ofValues: journal.ridColumns(alias: "r"))),
                    \(literals(ofColumns: journal.columns.map { ($0, "r.\($0.sqlIdentifier)") }))
                FROM \(journal.relation) AS r WHERE r.winnow_run = ?\(kept)
                ORDER BY r.winnow_seq, \(journal.key.map { "r.\($0.sqlIdentifier)" }.joined(separator: ", "))
                """, [SQLValue(runID)])
            {
                var record = JournalRecord(
                    batch: try row.int(1), rule: row[2].int, operation: .delete, table: name,
                    key: naming.key(table: journal.table, stored: try row.string(3), literals: row[4].string), columns: [], before: [])
                if let keep, !keep(record) { continue }
                let image = Self.decode(row[5].string, as: [String: String].self) ?? [:]
                record.columns = journal.columns
                record.before = journal.columns.map { image[$0] ?? "NULL" }
                typed.append(([try row.int64(0), Int64(typed.count)], record))
            }
        }
        guard !typed.isEmpty else { return records }
        let all = zip(ids, records).map { (order: [$0, -1], record: $1) } + typed
        return all.sorted { $0.order.lexicographicallyPrecedes($1.order) }.map(\.record)
    }
}
