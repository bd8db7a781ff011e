import Foundation
import PostgresNIO
import WinnowCore

/// The journal of a batch: shapes, before-images in the statement that changes the rows, and the groups a run recorded.
extension PostgresBatch {
    /// The journal shape of a table: its stored columns as a JSON array (images are `jsonb`
    /// objects; restore reads them through the table's row type).
    static func shape(session: PostgresSession, table: String, columns: [String]) throws -> Int64 {
        let data = (try? JSONSerialization.data(withJSONObject: columns, options: [.withoutEscapingSlashes])) ?? Data("[]".utf8)
        let json = String(decoding: data, as: UTF8.self)
        let shapes = session.postgresDialect.bookkeeping("winnow_journal_shapes")
        let arguments = [SQLValue(table), SQLValue(json)]
        // Found by the whole list; unique by its digest (a list sharing another's digest is
        // refused rather than taken for it).
        if let id = try session.value("SELECT id FROM \(shapes) WHERE tbl = ? AND columns = ?", arguments).int64 { return id }
        guard
            let id = try session.value(
                "INSERT INTO \(shapes) (tbl, columns) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING id", arguments
            ).int64
        else {
            throw WinnowError.internal("the journal shape of \(table) has the digest of another shape's columns")
        }
        return id
    }

    /// Journals rows of `table` (before-images) selected by `from` (a FROM clause aliasing the
    /// table `c`, with its bindings).
    /// `rid` is the row's key after the change (a re-pointed child's key may include the
    /// reference); `path` names the re-pointing whose columns take the winner's (`w`) values.
    /// `with` is a `WITH` clause the FROM clause may read (a data-modifying one whose
    /// `RETURNING` rows are the images). Returns false when nothing is journaled (no archive).
    @discardableResult
    func journal(
        _ op: String, table: String, keys: [String], from: String, binds: PostgresBindings, batch: Int, path: ReferencePath? = nil,
        with: String = ""
    ) throws -> Bool {
        guard let insert = journalSQL(op, table: table, keys: keys, from: from, batch: "\(batch)", path: path) else { return false }
        try link.command(with + insert, binds)
        return true
    }

    /// Runs `statement` (an UPDATE or DELETE of `table`'s rows selected as `from` selects them)
    /// and journals their before-images in the same statement: the journal's INSERT is a
    /// data-modifying `WITH` that reads the same snapshot, so it sees the rows as they were
    /// before `statement` changed them (one round trip instead of two: batches of 50 groups
    /// made two more a batch). Returns the rows `statement` changed.
    @discardableResult
    func journaled(
        _ statement: String, op: String, table: String, keys: [String], from: String, binds: PostgresBindings, batch: Int,
        path: ReferencePath? = nil, winnerValues: [String]? = nil
    ) throws -> Int {
        let insert = journalSQL(op, table: table, keys: keys, from: from, batch: "\(batch)", path: path, winnerValues: winnerValues)
        return try link.command((insert.map { "WITH winnow_journaled AS (\($0)) " } ?? "") + statement, binds)
    }

    /// The journal's `INSERT ... SELECT` (see ``journal(_:table:keys:from:binds:batch:path:with:)``);
    /// `batch` is the batch number's SQL (a literal or a parameter); `winnerValues`, the winner's
    /// values of `path`'s parent columns as expressions (else read from the winner row `w`).
    /// Nil without the journal.
    func journalSQL(
        _ op: String, table: String, keys: [String], from: String, batch: String, path: ReferencePath? = nil,
        winnerValues: [String]? = nil
    ) -> String? {
        guard archive, let shape = shapes[table], let runID = dedupe.runID else { return nil }
        let after = keys.map { key -> String in
            if let path, let index = path.childColumns.firstIndex(where: { $0.caseInsensitiveCompare(key) == .orderedSame }) {
                return winnerValues?[index] ?? "w.\(path.parentColumns[index].sqlIdentifier)"
            }
            return "c.\(key.sqlIdentifier)"
        }
        let rid = "jsonb_build_array(\(after.joined(separator: ", ")))"
        return """
            INSERT INTO \(dialect.bookkeeping("winnow_journal")) (run_id, rule, batch, op, shape_id, rid, image)
            SELECT \(runID), \(rule.rule.index), \(batch), '\(op)', \(shape), \(rid), to_jsonb(c) \(from)
            """
    }

    /// The typed journal's `INSERT ... SELECT` of a batch's deleted losers
    /// (``PostgresTypedJournal``): `from` gives them as `c`, `winners` their winners' keys;
    /// `batch`, the batch number's SQL (a literal or a parameter).
    func typedSQL(_ typed: PostgresTypedJournal, batch: String, winners: [String], from: String) -> String {
        typed.insertSQL(run: dedupe.runID ?? 0, rule: rule.rule.index, batch: batch, winners: winners, from: from, dialect: dialect)
    }

    /// `jsonb_build_array(...)` of key values: a row's identity as the journal's `rid` holds it.
    static func keyArray(_ values: [String]) -> String { "jsonb_build_array(\(values.joined(separator: ", ")))" }

    /// The head of the `INSERT ... SELECT winner, loser` that records which winner each loser
    /// of a batch went to (`winnow show` lists the groups from it); nil without the journal.
    func groupsSQL(batch: String) -> String? {
        guard archive, let runID = dedupe.runID else { return nil }
        return """
            INSERT INTO \(dialect.bookkeeping("winnow_run_groups")) (run_id, rule, batch, tbl, winner, loser)
            SELECT \(runID), \(rule.rule.index), \(batch), \(dialect.literal(rule.table)), winner, loser FROM (
            """
    }

    /// Records the batch's groups (the winner of each loser), in the batch's transaction.
    func recordGroups(_ groups: [Group], batch: Int) throws {
        guard let insert = groupsSQL(batch: "\(batch)"), !groups.isEmpty else { return }
        let losers = groups.flatMap(\.losers)
        let winners = groups.flatMap { group in group.losers.map { _ in group.winner } }
        let names = (0..<width).map { "k\($0)" } + (0..<width).map { "w\($0)" }
        let typed = { (prefix: String) in
            Self.keyArray(dedupe.primaryKey.enumerated().map { "m.\(prefix)\($0)::\(dedupe.type($1))" })
        }
        try link.command(
            """
            \(insert) SELECT \(typed("w")) AS winner, \(typed("k")) AS loser, m.o
                FROM unnest(\((1...(2 * width)).map { "$\($0)::text[]" }.joined(separator: ", "))) WITH ORDINALITY AS m(\(names.joined(separator: ", ")), o)
            ) AS p ORDER BY p.o
            """,
            PostgresDedupe.bindings(PostgresDedupe.columns(losers, width: width) + PostgresDedupe.columns(winners, width: width)))
    }
}
