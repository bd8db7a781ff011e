import Foundation
import WinnowCore

/// Puts back what one run deleted and changed, from its `jsonb` journal, newest change first,
/// one set-based statement per batch, operation and table: deleted rows inserted again
/// (`jsonb_populate_record`), changed rows set back to their before-images by primary key.
struct PostgresRestorer {
    let session: PostgresSession

    func undo(runID: Int64, restoreID: Int64) throws -> (reinserted: Int, reverted: Int) {
        try RestoreRunner.checkRestorable(session, runID: runID)
        let dialect = session.postgresDialect
        let journal = dialect.bookkeeping("winnow_journal")
        let shapes = dialect.bookkeeping("winnow_journal_shapes")
        let schema = try session.inspect()
        var reinserted = 0
        var reverted = 0
        try session.writeTransaction {
            // The `jsonb` journal's segments and the typed journal's statements, newest first
            // (both numbered by `winnow_journal`'s sequence).
            var segments: [Segment] = try session.rows(
                """
                SELECT j.batch, j.op, j.shape_id, s.tbl, min(j.id) AS first, s.columns FROM \(journal) AS j
                JOIN \(shapes) AS s ON s.id = j.shape_id WHERE j.run_id = ?
                GROUP BY j.batch, j.op, j.shape_id, s.tbl, s.columns
                """, [SQLValue(runID)]
            ).map {
                Segment(
                    batch: try $0.int64(0), op: try $0.string(1), shape: try $0.int64(2), table: try $0.string(3), first: try $0.int64(4),
                    columns: PostgresJournalReader.decode($0[5].string, as: [String].self) ?? [])
            }
            for typed in try PostgresTypedJournal.all(session) {
                segments += try session.rows(
                    "SELECT DISTINCT winnow_seq FROM \(typed.relation) WHERE winnow_run = ?", [SQLValue(runID)]
                ).map {
                    let statement = try $0.int64(0)
                    return Segment(
                        batch: 0, op: "delete", shape: typed.shape, table: typed.table, first: statement, last: statement,
                        columns: typed.columns, typed: typed)
                }
            }
            // Consecutive statements of one typed journal go back in one INSERT (no other entry
            // lies between them).
            var merged: [Segment] = []
            for segment in segments.sorted(by: { $0.first > $1.first }) {
                if let typed = segment.typed, let last = merged.last, last.typed == typed {
                    merged[merged.count - 1].first = segment.first
                } else {
                    merged.append(segment)
                }
            }
            for segment in merged {
                let (batch, op, shape, name) = (segment.batch, segment.op, segment.shape, segment.table)
                guard let table = schema.table(named: name) else {
                    throw WinnowError.refused("cannot restore run \(runID): table '\(name)' no longer exists")
                }
                guard !table.primaryKey.isEmpty else {
                    throw WinnowError.refused("cannot restore run \(runID): '\(name)' no longer has a primary key")
                }
                // The journaled columns go back, by name (a column added since takes its
                // default, or keeps its value); one dropped since stops the restore, as on SQLite.
                var journaled: [String] = []
                for name in segment.columns {
                    guard let column = table.column(named: name) else {
                        throw WinnowError.refused("cannot restore run \(runID): table '\(table.name)' no longer has column '\(name)'")
                    }
                    journaled.append(column.name)
                }
                let qualified = dialect.table(table.name)
                if let typed = segment.typed {
                    // The statements' rows under the table's names for their columns.
                    guard table.primaryKey.allSatisfy(journaled.contains) else {
                        throw WinnowError.refused(
                            "cannot restore run \(runID): the primary key of \(table.name) is not the one its rows were journaled with (\(typed.key.joined(separator: ", ")))"
                        )
                    }
                    let named = zip(typed.columns, journaled).map { "r.\($0.sqlIdentifier) AS \($1.sqlIdentifier)" }
                    let rows =
                        "SELECT \(named.joined(separator: ", ")) FROM \(typed.relation) AS r WHERE r.winnow_run = ? AND r.winnow_seq BETWEEN ? AND ?"
                    reinserted += try reinsert(
                        rows, arguments: [SQLValue(runID), SQLValue(segment.first), SQLValue(segment.last)], into: table,
                        columns: journaled,
                        runID: runID)
                    continue
                }
                let entries =
                    "SELECT j.rid AS winnow_rid, (jsonb_populate_record(NULL::\(qualified), j.image)).* FROM \(journal) AS j WHERE j.run_id = ? AND j.batch = ? AND j.op = ? AND j.shape_id = ?"
                let arguments = [SQLValue(runID), SQLValue(batch), SQLValue(op), SQLValue(shape)]
                let expected =
                    try session.value(
                        "SELECT count(*) FROM \(journal) AS j WHERE j.run_id = ? AND j.batch = ? AND j.op = ? AND j.shape_id = ?", arguments
                    ).int ?? 0
                // An update's row is found by its key after the change (`rid`).
                let current = table.primaryKey.enumerated().map { index, column in
                    "t.\(column.sqlIdentifier) = (r.winnow_rid->>\(index))::\(table.column(named: column)?.type ?? "text")"
                }.joined(separator: " AND ")
                if op == "delete" {
                    reinserted += try reinsert(entries, arguments: arguments, into: table, columns: journaled, runID: runID)
                } else {
                    let sets = journaled.map { "\($0.sqlIdentifier) = r.\($0.sqlIdentifier)" }
                    let count = try session.link.command(
                        PostgresSession.numbered(
                            "UPDATE \(qualified) AS t SET \(sets.joined(separator: ", ")) FROM (\(entries)) AS r WHERE \(current)"),
                        .init(values: arguments))
                    if count != expected {
                        throw WinnowError.refused(
                            "cannot restore run \(runID): \(expected - count) row(s) of \(name) changed by that run no longer exist")
                    }
                    reverted += count
                }
            }
            try session.execute(
                "UPDATE \(dialect.bookkeeping("winnow_runs")) SET restored_by = ? WHERE id = ?", [SQLValue(restoreID), SQLValue(runID)])
        }
        return (reinserted, reverted)
    }

    /// A `jsonb` journal segment (one batch's entries of one operation and shape) or statements
    /// of the typed journal, `first` their place in `winnow_journal`'s sequence (`first` to
    /// `last`: the typed journal's statements).
    struct Segment {
        var batch: Int64
        var op: String
        var shape: Int64
        var table: String
        var first: Int64
        var last: Int64 = 0
        /// The columns its rows were journaled with.
        var columns: [String]
        var typed: PostgresTypedJournal?
    }

    /// Inserts again the rows `source` gives (a query with the table's `columns` under their
    /// names; `arguments`, its parameters), from either journal: refused where one of them
    /// exists again (same primary key).
    private func reinsert(_ source: String, arguments: [SQLValue], into table: LiveTable, columns: [String], runID: Int64) throws -> Int {
        let qualified = session.postgresDialect.table(table.name)
        let match = table.primaryKey.map { "t.\($0.sqlIdentifier) = r.\($0.sqlIdentifier)" }.joined(separator: " AND ")
        let present = try session.value("SELECT count(*) FROM (\(source)) AS r JOIN \(qualified) AS t ON \(match)", arguments).int ?? 0
        if present > 0 {
            throw WinnowError.refused(
                "cannot restore run \(runID): \(present) row(s) of \(table.name) deleted by that run exist again (same primary key)")
        }
        let identity = table.columns.contains { $0.defaultSQL == nil && $0.primaryKeyIndex > 0 } ? " OVERRIDING SYSTEM VALUE" : ""
        let names = columns.map(\.sqlIdentifier).joined(separator: ", ")
        return try session.link.command(
            PostgresSession.numbered("INSERT INTO \(qualified) (\(names))\(identity) SELECT \(names) FROM (\(source)) AS r"),
            .init(values: arguments))
    }
}
