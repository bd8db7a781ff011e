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
            let segments = try session.rows(
                """
                SELECT j.batch, j.op, j.shape_id, s.tbl, min(j.id) AS first FROM \(journal) AS j
                JOIN \(shapes) AS s ON s.id = j.shape_id WHERE j.run_id = ?
                GROUP BY j.batch, j.op, j.shape_id, s.tbl ORDER BY first DESC
                """, [SQLValue(runID)])
            for segment in segments {
                let batch = try segment.int64(0)
                let op = try segment.string(1)
                let shape = try segment.int64(2)
                let name = try segment.string(3)
                guard let table = schema.table(named: name) else {
                    throw WinnowError.refused("cannot restore run \(runID): table '\(name)' no longer exists")
                }
                guard !table.primaryKey.isEmpty else {
                    throw WinnowError.refused("cannot restore run \(runID): '\(name)' no longer has a primary key")
                }
                let qualified = dialect.table(table.name)
                let columns = table.storedColumns.map(\.name.sqlIdentifier).joined(separator: ", ")
                let entries =
                    "SELECT j.rid AS winnow_rid, (jsonb_populate_record(NULL::\(qualified), j.image)).* FROM \(journal) AS j WHERE j.run_id = ? AND j.batch = ? AND j.op = ? AND j.shape_id = ?"
                let arguments = [SQLValue(runID), SQLValue(batch), SQLValue(op), SQLValue(shape)]
                let expected =
                    try session.value(
                        "SELECT count(*) FROM \(journal) AS j WHERE j.run_id = ? AND j.batch = ? AND j.op = ? AND j.shape_id = ?", arguments
                    ).int ?? 0
                let key = table.primaryKey.map(\.sqlIdentifier)
                let match = key.map { "t.\($0) = r.\($0)" }.joined(separator: " AND ")
                // An update's row is found by its key after the change (`rid`).
                let current = table.primaryKey.enumerated().map { index, column in
                    "t.\(column.sqlIdentifier) = (r.winnow_rid->>\(index))::\(table.column(named: column)?.type ?? "text")"
                }.joined(separator: " AND ")
                if op == "delete" {
                    let present =
                        try session.value(
                            "SELECT count(*) FROM (\(entries)) AS r JOIN \(qualified) AS t ON \(match)", arguments
                        ).int ?? 0
                    if present > 0 {
                        throw WinnowError.refused(
                            "cannot restore run \(runID): \(present) row(s) of \(name) deleted by that run exist again (same primary key)")
                    }
                    let identity =
                        table.columns.contains { $0.defaultSQL == nil && $0.primaryKeyIndex > 0 } ? " OVERRIDING SYSTEM VALUE" : ""
                    let count = try session.link.command(
                        PostgresSession.numbered(
                            "INSERT INTO \(qualified) (\(columns))\(identity) SELECT \(columns) FROM (\(entries)) AS r"),
                        .init(values: arguments))
                    reinserted += count
                } else {
                    let sets = table.storedColumns.map { "\($0.name.sqlIdentifier) = r.\($0.name.sqlIdentifier)" }
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
}
