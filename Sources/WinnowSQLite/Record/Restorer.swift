import Foundation
import GRDB
import WinnowCore

/// Puts back what one run deleted and changed, from its journal (``RestoreRunner`` records the
/// restore as a run and holds the lock).
public enum Restorer {
    /// `winnow restore` on a SQLite file.
    public static func restore(database path: String, runID: Int64, wait: TimeInterval? = nil) throws -> RunSummary {
        try RestoreRunner.restore(database: path, runID: runID, wait: wait, backend: SQLiteBackend(busy: BusyWait(wait: wait)))
    }

    struct Shape {
        var table: String
        var columns: [String]
        /// The table's rowid; nil for a `WITHOUT ROWID` table, whose rows the journal names by
        /// primary key (packed).
        var rowID: String?
        /// Whether the rowid is one of `columns` (an INTEGER PRIMARY KEY alias).
        var rowIDInColumns: Bool
        /// The condition that selects a journaled row (one `?` per value of its identity).
        var selection: String
        var naming: JournalReader.Naming
        /// Where the journal names rows by a rowid that no column holds, the other reason such a
        /// rowid can be taken: `VACUUM` numbers the rows of a table without any index afresh.
        var renumberedHint: String {
            guard rowID != nil, !rowIDInColumns else { return "" }
            return " (or a VACUUM since then gave its rowid to another row: \(table) has no INTEGER PRIMARY KEY)"
        }
    }

    static func undo(_ db: Database, runID: Int64, restoreID: Int64) throws -> (Int, Int) {
        try RestoreRunner.checkRestorable(SQLiteSession(db), runID: runID)
        // The changes are undone newest first, one at a time, and a child row can pass through a
        // parent that is gone meanwhile (re-pointed ahead to a winner that another connection
        // deleted, then moved back): references are checked once, when the restore commits.
        // (The pragma holds until the end of the transaction the restore runs in.)
        try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
        var shapes: [Int64: Shape] = [:]
        func shape(_ id: Int64) throws -> Shape {
            if let shape = shapes[id] { return shape }
            guard let row = try Row.fetchOne(db, sql: "SELECT tbl, columns FROM winnow_journal_shapes WHERE id = ?", arguments: [id]) else {
                throw WinnowError.io("journal shape \(id) is missing")
            }
            let table: String = row[0]
            let columns = try JSONDecoder().decode([String].self, from: Data((row[1] as String).utf8))
            guard let live = try SchemaInspector.table(db, named: table) else {
                throw WinnowError.refused("cannot restore run \(runID): table '\(table)' no longer exists")
            }
            for column in columns where live.column(named: column) == nil {
                throw WinnowError.refused("cannot restore run \(runID): table '\(table)' no longer has column '\(column)'")
            }
            let naming = JournalReader.Naming(table: live.name, live: live)
            guard let selection = naming.selection else {
                throw WinnowError.refused("cannot restore run \(runID): '\(table)' has neither a rowid nor a primary key")
            }
            let rowID = live.rowIDExpression
            let result = Shape(
                table: live.name, columns: columns, rowID: rowID,
                rowIDInColumns: rowID == nil || (live.rowIDAlias.map { alias in columns.contains(alias) } ?? false),
                selection: selection, naming: naming)
            shapes[id] = result
            return result
        }
        var reinserted = 0
        var reverted = 0
        // Put back the rows a statement kept in a typed journal (``TypedJournal``), all at once.
        func reinsert(_ journal: TypedJournal, _ seqs: ClosedRange<Int64>) throws {
            let shape = try shape(journal.shape)
            let table = "main.\(shape.table.sqlIdentifier)"
            let match: String
            if let rowID = shape.rowID {
                match = "t.\(rowID) = j.winnow_rid"
            } else if let key = shape.naming.live?.primaryKey, key.allSatisfy(shape.columns.contains) {
                match = key.map { "t.\($0.sqlIdentifier) = j.\($0.sqlIdentifier)" }.joined(separator: " AND ")
            } else {
                let key = shape.naming.live?.primaryKey ?? []
                match = "\(SQLFunctions.pack(key.map { "t.\($0.sqlIdentifier)" })) = j.winnow_rid"
            }
            if let rid = try DatabaseValue.fetchOne(
                db,
                sql: """
                    SELECT j.winnow_rid FROM \(journal.relation) AS j WHERE j.winnow_seq BETWEEN ? AND ?
                    AND EXISTS (SELECT 1 FROM \(table) AS t WHERE \(match)) ORDER BY j.winnow_seq LIMIT 1
                    """, arguments: [seqs.lowerBound, seqs.upperBound])
            {
                throw WinnowError.refused(
                    "cannot restore run \(runID): \(shape.table) \(try shape.naming.key(rid)) was deleted by that run but exists again"
                        + shape.renumberedHint)
            }
            var names = shape.columns.map(\.sqlIdentifier)
            var values = names.map { "j.\($0)" }
            if !shape.rowIDInColumns, let rowID = shape.rowID {
                names.insert(rowID, at: 0)
                values.insert("j.winnow_rid", at: 0)
            }
            try db.execute(
                sql: """
                    INSERT INTO \(table) (\(names.joined(separator: ", ")))
                    SELECT \(values.joined(separator: ", ")) FROM \(journal.relation) AS j WHERE j.winnow_seq BETWEEN ? AND ? ORDER BY j.winnow_seq
                    """, arguments: [seqs.lowerBound, seqs.upperBound])
            reinserted += db.changesCount
        }
        try db.writeTransaction {
            // The typed journal's statements, newest first; each is undone before the
            // `winnow_journal` entries written before it. Consecutive ones of one table go back in
            // one statement.
            var typed = try TypedJournal.all(db).flatMap { try $0.statements(db, runID: runID) }.sorted {
                $1.order.lexicographicallyPrecedes($0.order)
            }
            func undoTyped(after id: Int64) throws {
                var pending: (journal: TypedJournal, seqs: ClosedRange<Int64>)?
                while let statement = typed.first, statement.after >= id {
                    typed.removeFirst()
                    if let held = pending, held.journal == statement.journal {
                        pending = (held.journal, statement.seqs.lowerBound...held.seqs.upperBound)
                    } else {
                        if let held = pending { try reinsert(held.journal, held.seqs) }
                        pending = (statement.journal, statement.seqs)
                    }
                }
                if let held = pending { try reinsert(held.journal, held.seqs) }
            }
            var before = Int64.max
            while true {
                let page = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT id, op, shape_id, rid, image FROM winnow_journal WHERE run_id = ? AND id < ? ORDER BY id DESC LIMIT 1000
                        """, arguments: [runID, before])
                guard let last = page.last else { break }
                before = last[0]
                for entry in page {
                    try undoTyped(after: entry[0])
                    let op: String = entry[1]
                    let shape = try shape(entry[2])
                    let rid: DatabaseValue = entry[3]
                    let identity = try shape.naming.values(rid)
                    let image: Data = entry[4]
                    let values = try ValueCodec.decode([UInt8](image))
                    guard values.count == shape.columns.count else { throw WinnowError.io("journal entry \(entry[0] as Int64) is corrupt") }
                    let table = "main.\(shape.table.sqlIdentifier)"
                    if op == "delete" {
                        var names = shape.columns.map(\.sqlIdentifier)
                        var arguments = values
                        if !shape.rowIDInColumns, let rowID = shape.rowID {
                            names.insert(rowID, at: 0)
                            arguments.insert(rid, at: 0)
                        }
                        if try Bool.fetchOne(
                            db, sql: "SELECT 1 FROM \(table) WHERE \(shape.selection)", arguments: StatementArguments(identity)) == true
                        {
                            throw WinnowError.refused(
                                "cannot restore run \(runID): \(shape.table) \(try shape.naming.key(rid)) was deleted by that run but exists again"
                                    + shape.renumberedHint)
                        }
                        let placeholders = Array(repeating: "?", count: names.count).joined(separator: ", ")
                        try db.cachedStatement(sql: "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(placeholders))")
                            .execute(arguments: StatementArguments(arguments))
                        reinserted += 1
                    } else {
                        let sets = shape.columns.map { "\($0.sqlIdentifier) = ?" }.joined(separator: ", ")
                        try db.cachedStatement(sql: "UPDATE \(table) SET \(sets) WHERE \(shape.selection)")
                            .execute(arguments: StatementArguments(values + identity))
                        guard db.changesCount == 1 else {
                            throw WinnowError.refused(
                                "cannot restore run \(runID): \(shape.table) \(try shape.naming.key(rid)), changed by that run, no longer exists"
                            )
                        }
                        reverted += 1
                    }
                }
            }
            try undoTyped(after: Int64.min)
            // The merges of the run are undone: the losers they took are no longer taken.
            // (And the values of the losers it gave ahead are back in them.)
            for record in [SQLiteDialect.takenLosersName, SQLiteDialect.oldTakenLosersName, SQLiteDialect.givenMergesName]
            where try db.tableExists(record) {
                try db.execute(sql: "DELETE FROM \(record) WHERE run_id = ?", arguments: [runID])
            }
            // So are its children re-pointed ahead.
            if try db.tableExists("winnow_moved_ahead") {
                try db.execute(sql: "DELETE FROM winnow_moved_ahead WHERE run_id = ?", arguments: [runID])
            }
            try db.execute(sql: "UPDATE winnow_runs SET restored_by = ? WHERE id = ?", arguments: [restoreID, runID])
            return
        }
        return (reinserted, reverted)
    }
}
