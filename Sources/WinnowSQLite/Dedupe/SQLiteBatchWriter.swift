import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

/// Writes batches, journaling every deleted row and before-image when the rule archives.
final class SQLiteBatchWriter: BatchWriter {
    let runID: Int64
    /// The run's counts statement, spelled once (kept prepared by GRDB's statement cache).
    private let progressSQL = RunRecord.progressSQL(SQLiteDialect())
    var writes: Bool { true }
    /// Journal shape ids by table and column list, created and committed by ``prepare(_:db:)``
    /// before any batch, so a rolled-back batch can never leave a cached id without its row.
    private var shapes: [String: Int64] = [:]
    /// Journal statements by shape and selection, spelled once.
    private var journalSQL: [String: String] = [:]
    /// The typed journal of each rule table's deleted losers (``TypedJournal``) by shape key,
    /// with the statement that fills it, spelled once.
    private var typed: [String: (journal: TypedJournal, sql: [Bool: String])] = [:]
    /// The rule whose transactions first check that its rows cannot have moved (``RowidWatch``).
    private var watched: CompiledRule?

    init(runID: Int64) {
        self.runID = runID
    }

    private static func shapeKey(_ table: String, _ columns: [String]) -> String {
        ([table] + columns).joined(separator: "\u{1F}")
    }

    func prepare(_ rule: CompiledRule, db: Database) throws {
        watched = RowidWatch.applies(to: rule) ? rule : nil
        guard rule.rule.archive else { return }
        var needed = [(rule.table, rule.storedColumns)]
        if let column = rule.hashColumn { needed.append((rule.table, [column])) }
        needed += rule.references.map { ($0.childTable, $0.childStoredColumns) }
        try transaction(db) {
            for (table, columns) in needed {
                shapes[Self.shapeKey(table, columns)] = try Self.shapeID(db, table: table, columns: columns)
            }
            // The deleted losers go to a typed journal where it can hold them.
            let key = Self.shapeKey(rule.table, rule.storedColumns)
            if TypedJournal.holds(rule.storedColumns), TypedJournal.range(runID) != nil, let shape = shapes[key] {
                let journal = TypedJournal(shape: shape, table: rule.table, columns: rule.storedColumns)
                try journal.create(db)
                typed[key] = (journal, [:])
            }
            // (The typed journal's table may be new.)
            if watched != nil { try RowidWatch.note(db) }
        }
    }

    /// Copies the batch's losers, each with its winner, into `journal`.
    private func keepLosers(
        _ journal: TypedJournal, key: String, work: BatchWork, rule: CompiledRule, sql: BatchStatements, db: Database
    )
        throws
    {
        // Where the run's rows continue, and the `winnow_journal` entry they follow.
        let marks = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT (SELECT max(winnow_seq) FROM \(journal.relation)), (SELECT max(id) FROM main.winnow_journal)"))
        let range = TypedJournal.range(runID)!
        let first = (marks?[0] as Int64? ?? 0) < range.lowerBound
        let last = max(range.lowerBound, marks?[0] as Int64? ?? 0)
        guard last + Int64(work.deleted) <= range.upperBound else {
            throw WinnowError.internal("\(journal.relation) has no room for run \(runID)'s rows; the batch was rolled back")
        }
        let statement: String
        if let known = typed[key]?.sql[first] {
            statement = known
        } else {
            statement = sql.keepLosers(in: journal, first: first)
            typed[key]?.sql[first] = statement
        }
        try db.cachedStatement(sql: statement).execute(
            arguments: [last, runID, rule.rule.index, work.number, marks?[1] as Int64? ?? 0])
    }

    func transaction<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        var result: T?
        try db.writeTransaction {
            if let watched { try RowidWatch.verify(db, rule: watched) }
            result = try body()
            return
        }
        return result!
    }

    /// Records the moves of path `path`'s child rows in `(after, upTo]` that the record of the
    /// moves ahead holds (``BatchStatements/recordAhead``), packed in one row of
    /// `winnow_moved_ahead` for this run; nothing for a path without such a record.
    func recordAhead(_ sql: BatchStatements, path: Int, after: Int64, upTo: Int64, db: Database) throws {
        guard let select = sql.recordAhead[path], let ref = sql.aheadRefs[path] else { return }
        var record = MovedAheadRecord()
        let read = try db.cachedStatement(sql: select)
        read.setUncheckedArguments([after, upTo])
        try RawStatement(read).forEachRow { row in
            record.append(child: sqlite3_column_int64(row, 0), loser: sqlite3_column_int64(row, 1), winner: sqlite3_column_int64(row, 2))
        }
        guard record.count > 0 else { return }
        try db.cachedStatement(sql: "INSERT INTO main.winnow_moved_ahead (ref, run_id, moves) VALUES (?, ?, ?)")
            .execute(arguments: [ref, runID, Data(record.packed)])
    }

    /// Records every loser of the groups just merged (`temp.winnow_merged`) as taken by its
    /// winner, packed in one row of `winnow_taken_losers` for this run (``TakenLosersRecord``),
    /// and drops the copy of the record the batches read (``BatchStatements/dropTaken``).
    func recordTaken(_ sql: BatchStatements, db: Database) throws {
        var record = TakenLosersRecord()
        try RawStatement(try db.cachedStatement(sql: sql.takenToRecord)).forEachRow { row in
            record.append(loser: sqlite3_column_int64(row, 0), winner: sqlite3_column_int64(row, 1))
        }
        try db.execute(sql: sql.dropTaken)
        guard record.count > 0 else { return }
        try db.cachedStatement(sql: sql.recordTaken).execute(arguments: [runID, Data(record.packed)])
    }

    func noteGivenSettled(table: String, upTo end: Int64?, db: Database) throws {
        let record = "main.\(SQLiteDialect.givenMergesName)"
        guard let end else {
            try db.execute(sql: "DELETE FROM \(record) WHERE tbl = ?", arguments: [table])
            return
        }
        try db.execute(sql: "DELETE FROM \(record) WHERE tbl = ? AND settled_to IS NOT NULL", arguments: [table])
        try db.execute(
            sql: "INSERT INTO \(record) (tbl, run_id, columns, entries, settled_to) VALUES (?, ?, '[]', x'', ?)",
            arguments: [table, runID, end])
    }

    func recordProgress(_ totals: Counts, db: Database) throws {
        try db.cachedStatement(sql: progressSQL)
            .execute(arguments: SQLiteSession.arguments(RunRecord.progressArguments(totals, runID: runID)))
    }

    /// Journals the rows of `table` that `whereSQL` selects (with `arguments`) as `op`.
    private func journal(
        _ db: Database, op: String, rule: Int, batch: Int, table: String, rowID: String,
        columns: [String], whereSQL: String, arguments: StatementArguments
    ) throws {
        let key = Self.shapeKey(table, columns)
        guard let shape = shapes[key] else {
            throw WinnowError.internal("journal shape of \(table) was not prepared")
        }
        let sqlKey = key + "\u{1E}" + rowID + "\u{1E}" + whereSQL
        let sql: String
        if let known = journalSQL[sqlKey] {
            sql = known
        } else {
            sql = """
                INSERT INTO winnow_journal (run_id, rule, batch, op, shape_id, rid, image)
                SELECT ?, ?, ?, ?, ?, \(rowID), \(SQLFunctions.pack(columns.map(\.sqlIdentifier))) FROM main.\(table.sqlIdentifier) WHERE \(whereSQL)
                """
            journalSQL[sqlKey] = sql
        }
        try db.cachedStatement(sql: sql).execute(arguments: [runID, rule, batch, op, shape] + arguments)
    }

    func apply(_ work: BatchWork, rule: CompiledRule, sql: BatchStatements, db: Database) throws {
        let archive = rule.rule.archive
        // 1. Child rows that re-pointing would turn into duplicates: deleted first, so that the
        //    re-pointed rows never meet them on a unique key.
        for delete in work.childDeletes {
            let path = rule.references[delete.path]
            if archive {
                try journal(
                    db, op: "delete", rule: rule.rule.index, batch: work.number, table: path.childTable,
                    rowID: sql.childNumbers[delete.path].journalKey, columns: path.childStoredColumns,
                    whereSQL: sql.childNumbers[delete.path].numbered("?"), arguments: [delete.childRowID])
            }
            try db.cachedStatement(sql: sql.deleteChild[delete.path]).execute(arguments: [delete.childRowID])
        }
        // 2. Re-point references from losers to winners, before any loser is deleted, so that
        //    ON DELETE CASCADE finds nothing to take with it.
        for repoint in work.repoints {
            let path = rule.references[repoint.path]
            if archive {
                let key = sql.repointedKey[repoint.path]
                try journal(
                    db, op: "update", rule: rule.rule.index, batch: work.number, table: path.childTable,
                    rowID: key.sql, columns: path.childStoredColumns, whereSQL: sql.childNumbers[repoint.path].numbered("?"),
                    arguments: StatementArguments(key.values.map { repoint.values[$0] } + [repoint.childRowID.databaseValue]))
            }
            try db.cachedStatement(sql: sql.repointChild[repoint.path])
                .execute(arguments: StatementArguments(repoint.values + [repoint.childRowID.databaseValue]))
        }
        for (index, count) in work.moved where count > 0 {
            let path = rule.references[index]
            // The moves: a stretch of children's in the record of the moves ahead, a batch's in
            // `winnow_moves`.
            let moves: (children: String, key: String, apply: String, arguments: StatementArguments)
            if let range = work.movedAhead {
                guard let apply = sql.applyAhead[index], let children = sql.aheadChildren[index] else {
                    throw WinnowError.internal("\(path.label): moves ahead on a path not re-pointed ahead")
                }
                // (A path re-pointed ahead has no unique key, so the key that identifies a child
                // row in the journal is not among the columns the move changes.)
                moves = (children, sql.childNumbers[index].journalKey, apply, [range.after, range.upTo])
            } else {
                moves = (sql.movedChildren[index], sql.movedKey[index], sql.applyMoves[index], [])
            }
            if archive {
                try journal(
                    db, op: "update", rule: rule.rule.index, batch: work.number, table: path.childTable, rowID: moves.key,
                    columns: path.childStoredColumns, whereSQL: sql.childNumbers[index].among(moves.children),
                    arguments: moves.arguments)
            }
            try db.cachedStatement(sql: moves.apply).execute(arguments: moves.arguments)
            guard db.changesCount == count else {
                throw WinnowError.internal(
                    "\(path.label): \(count) row(s) to re-point, \(db.changesCount) re-pointed; the batch was rolled back")
            }
            // The moves a stretch applied outlast the run, until their losers are gone
            // (``SQLiteDialect/movedAheadTable``).
            if let range = work.movedAhead { try recordAhead(sql, path: index, after: range.after, upTo: range.upTo, db: db) }
        }
        // 3. Survivorship: the merged values, one statement per set of changed columns.
        if work.merges > 0 {
            if archive {
                try journal(
                    db, op: "update", rule: rule.rule.index, batch: work.number, table: rule.table, rowID: sql.numbers.journalKey,
                    columns: rule.storedColumns, whereSQL: sql.mergedSelection, arguments: [])
            }
            var updated = 0
            for columns in work.mergeColumnSets {
                try db.cachedStatement(sql: sql.mergeUpdate(columns)).execute()
                updated += db.changesCount
            }
            guard updated == work.merges else {
                throw WinnowError.internal(
                    "\(rule.table): \(work.merges) winner(s) to merge, \(updated) updated; the batch was rolled back")
            }
            if work.recordsTakenLosers { try recordTaken(sql, db: db) }
        }
        if let taken = work.taken {
            try db.cachedStatement(sql: sql.recordTaken).execute(arguments: [runID, Data(taken)])
            // (Into the copy keyed by loser where the connection has it, which the run's readers
            // would otherwise make again from the whole record.)
            if try Bool.fetchOne(db.cachedStatement(sql: BatchStatements.takenCopyExists)) == true {
                let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO temp.winnow_taken (loser, winner) VALUES (?, ?)")
                for pair in TakenLosersRecord.pairs(taken) ?? [] { try insert.execute(arguments: [pair.loser, pair.winner]) }
            }
        }
        // The values of the losers deleted before their winner's merge, kept until it is applied.
        if let given = work.given { try db.cachedStatement(sql: sql.recordGiven).execute(arguments: [runID, Data(given)]) }
        // 4. With foreign-key enforcement off, what SQLite would have checked row by row is
        //    checked here for the batch as a whole: no child row may point at a loser, and every
        //    re-pointed row reaches its winner. A failure rolls the batch back. Through an index
        //    the children of the losers are looked up again; a path without one re-points
        //    exactly the rows of its map (checked by the count above), and the map is exact: it is
        //    mapped again, under this transaction's lock, after any other connection's commit.
        if work.checksReferences {
            for (index, path) in rule.references.enumerated() where path.declared && path.indexed {
                let row = try Row.fetchOne(db.cachedStatement(sql: sql.danglingChildren[index]))!
                let count: Int = row[0]
                if count > 0 {
                    throw WinnowError.internal(
                        """
                        \(rule.rule.keyPath) (\(rule.table)): \(count) row(s) of \(path.label) would be left pointing at deleted rows \
                        (first: \(try sql.childNumbers[index].keys(db).key(row[1] as Int64? ?? 0))); the batch was rolled back
                        """)
                }
            }
            // (Only rows this batch re-pointed can point at a winner that is gone.)
            if work.counts.repointed > 0, let missing = try Int.fetchOne(db.cachedStatement(sql: sql.missingWinners)), missing > 0 {
                throw WinnowError.internal(
                    "\(rule.rule.keyPath) (\(rule.table)): \(missing) winner(s) of the batch no longer exist, so re-pointed rows would point at no row; the batch was rolled back"
                )
            }
        }
        // 5. The losers.
        if work.deleted > 0 {
            let key = Self.shapeKey(rule.table, rule.storedColumns)
            if archive, let journal = typed[key]?.journal {
                try keepLosers(journal, key: key, work: work, rule: rule, sql: sql, db: db)
            } else if archive {
                try journal(
                    db, op: "delete", rule: rule.rule.index, batch: work.number, table: rule.table, rowID: sql.numbers.journalKey,
                    columns: rule.storedColumns, whereSQL: sql.loserSelection, arguments: [])
                // Which winner each loser went to (`winnow show` lists the groups).
                try db.cachedStatement(sql: sql.recordGroups).execute(arguments: [runID, rule.rule.index, work.number, rule.table])
            }
            try db.cachedStatement(sql: sql.deleteLosers).execute()
        }
    }

    func fillHashes(rule: CompiledRule, selection: String, arguments: StatementArguments, batch: Int, db: Database) throws -> Int {
        guard let column = rule.hashColumn else { return 0 }
        let stale = "\(selection) AND \(column.sqlIdentifier) IS NOT \(rule.hashExpression())"
        if rule.rule.archive {
            try journal(
                db, op: "update", rule: rule.rule.index, batch: batch, table: rule.table, rowID: RowNumbers(rule).journalKey,
                columns: [column],
                whereSQL: stale, arguments: arguments)
        }
        try db.execute(
            sql: "UPDATE \(rule.qualifiedTable) SET \(column.sqlIdentifier) = \(rule.hashExpression()) WHERE \(stale)",
            arguments: arguments)
        return db.changesCount
    }

    /// The id of a journal shape (table + column list), created on first use.
    static func shapeID(_ db: Database, table: String, columns: [String]) throws -> Int64 {
        let json = String(decoding: try JSONEncoder().encode(columns), as: UTF8.self)
        try db.execute(sql: "INSERT OR IGNORE INTO winnow_journal_shapes (tbl, columns) VALUES (?, ?)", arguments: [table, json])
        guard
            let id = try Int64.fetchOne(
                db, sql: "SELECT id FROM winnow_journal_shapes WHERE tbl = ? AND columns = ?",
                arguments: [table, json])
        else {
            throw WinnowError.internal("journal shape for \(table) not found after insert")
        }
        return id
    }
}
