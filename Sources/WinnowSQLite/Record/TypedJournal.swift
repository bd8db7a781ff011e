import Foundation
import GRDB
import WinnowCore

/// The journal of a rule's deleted losers kept as the table's own values (docs/reference.md,
/// "Journal and restore"): one table per journal shape, `winnow_journal_rows_<shape>`, whose
/// columns are the user table's stored columns under their own names, declared without a type,
/// so that each value keeps exactly the storage class and bytes it had (no affinity converts
/// it, now or when the user table's declared types change). The batch copies its losers there
/// with one `INSERT ... SELECT` before deleting them: nothing is encoded, and each row carries
/// its winner, so no `winnow_run_groups` row is written.
///
/// Its other columns: `winnow_seq`, the rowid, which places run `r`'s rows in
/// `[r << 32, (r + 1) << 32)` (a run's rows are one stretch of the table, found without an
/// index); `winnow_run`, `winnow_rule`, `winnow_batch`; `winnow_after`, the last
/// `winnow_journal` entry written before the statement (`restore` and `show` place these rows
/// after it and before the next one); `winnow_rid` and `winnow_winner`, the loser's and the
/// winner's identities as `winnow_journal.rid` holds a row's (the rowid, or the primary key
/// packed).
struct TypedJournal: Equatable {
    static let prefix = "winnow_journal_rows_"
    static let fixed = ["winnow_seq", "winnow_run", "winnow_rule", "winnow_batch", "winnow_after", "winnow_rid", "winnow_winner"]

    /// The journal shape (`winnow_journal_shapes.id`).
    let shape: Int64
    /// The user table's name, as the shape records it.
    let table: String
    /// The table's stored columns, as journaled.
    let columns: [String]

    /// The journal table, qualified and quoted.
    var relation: String { "main.\((Self.prefix + String(shape)).sqlIdentifier)" }

    /// The most columns a table may have in SQLite as built by default (`SQLITE_MAX_COLUMN`).
    static let columnLimit = 2000

    /// Whether the rows of a table with these stored columns can be kept this way: none is
    /// named like winnow's own columns, and the journal table's columns stay within SQLite's
    /// limit (other rows stay in `winnow_journal`).
    static func holds(_ columns: [String]) -> Bool {
        columns.count + fixed.count <= columnLimit && !columns.contains { $0.lowercased().hasPrefix(Bookkeeping.tablePrefix) }
    }

    /// The first and last `winnow_seq` of run `runID`'s rows; nil for a run number too large to
    /// shift (its rows stay in `winnow_journal`).
    static func range(_ runID: Int64) -> ClosedRange<Int64>? {
        guard runID > 0, runID < 1 << 31 else { return nil }
        return (runID << 32)...((runID << 32) | 0xFFFF_FFFF)
    }

    /// Creates the journal table when missing (by a run's first use, or after it was dropped).
    func create(_ db: Database) throws {
        let definitions =
            Self.fixed.map { name -> String in
                switch name {
                case "winnow_seq": return "winnow_seq INTEGER PRIMARY KEY"
                case "winnow_rid": return "winnow_rid NOT NULL"
                case "winnow_winner": return "winnow_winner"
                default: return "\(name) INTEGER NOT NULL"
                }
            } + columns.map(\.sqlIdentifier)
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS \(relation) (\(definitions.joined(separator: ", ")))")
    }

    /// Every journal table in the file, by shape (none in a file without winnow's journal).
    static func all(_ db: Database) throws -> [TypedJournal] {
        guard try db.tableExists("winnow_journal_shapes") else { return [] }
        return try Row.fetchAll(
            db,
            sql: """
                SELECT s.id, s.tbl, s.columns FROM main.sqlite_master AS m JOIN main.winnow_journal_shapes AS s
                ON m.name = '\(prefix)' || s.id
                WHERE m.type = 'table' AND m.name LIKE 'winnow\\_journal\\_rows\\_%' ESCAPE '\\'
                ORDER BY s.id
                """
        ).map { row in
            TypedJournal(
                shape: row[0], table: row[1], columns: try JSONDecoder().decode([String].self, from: Data((row[2] as String).utf8)))
        }
    }

    /// The rows of run `runID` here.
    func count(_ db: Database, runID: Int64) throws -> Int {
        guard let range = Self.range(runID) else { return 0 }
        return try Int.fetchOne(
            db, sql: "SELECT count(*) FROM \(relation) WHERE winnow_seq BETWEEN ? AND ?", arguments: [range.lowerBound, range.upperBound])
            ?? 0
    }

    /// The runs with rows here, one probe of the rowid per run.
    func runs(_ db: Database) throws -> Set<Int64> {
        var runs: Set<Int64> = []
        var from: Int64 = 0
        let next = try db.cachedStatement(sql: "SELECT min(winnow_seq) FROM \(relation) WHERE winnow_seq >= ?")
        while let seq = try Int64.fetchOne(next, arguments: [from]) {
            let run = seq >> 32
            runs.insert(run)
            guard run < Int64.max >> 32 - 1 else { break }
            from = (run + 1) << 32
        }
        return runs
    }

    /// Deletes up to `limit` of run `runID`'s rows; returns how many.
    func delete(_ db: Database, runID: Int64, limit: Int) throws -> Int {
        guard let range = Self.range(runID) else { return 0 }
        try db.execute(
            sql: """
                DELETE FROM \(relation) WHERE winnow_seq IN (
                    SELECT winnow_seq FROM \(relation) WHERE winnow_seq BETWEEN ? AND ? ORDER BY winnow_seq LIMIT ?)
                """, arguments: [range.lowerBound, range.upperBound, limit])
        return db.changesCount
    }

    /// The rows' identities as `(run_id, tbl, rid)`.
    var identities: String {
        "SELECT winnow_run AS run_id, \(ChangeTracking.literal(table)) AS tbl, winnow_rid AS rid FROM \(relation)"
    }

    /// The statements of a run's rows here, oldest first: each with the place it takes among
    /// `winnow_journal`'s entries and its rows' `winnow_seq`s.
    func statements(_ db: Database, runID: Int64) throws -> [Statement] {
        guard let range = Self.range(runID) else { return [] }
        return try Row.fetchAll(
            db,
            sql: """
                SELECT winnow_after, winnow_rule, winnow_batch, min(winnow_seq), max(winnow_seq) FROM \(relation)
                WHERE winnow_seq BETWEEN ? AND ?
                GROUP BY winnow_after, winnow_rule, winnow_batch ORDER BY min(winnow_seq)
                """, arguments: [range.lowerBound, range.upperBound]
        ).map { Statement(journal: self, after: $0[0], rule: $0[1], batch: $0[2], seqs: ($0[3] as Int64)...($0[4] as Int64)) }
    }

    /// The rows one batch's statement kept here.
    struct Statement {
        let journal: TypedJournal
        /// The last `winnow_journal` entry written before it.
        let after: Int64
        let rule: Int
        let batch: Int
        let seqs: ClosedRange<Int64>

        /// Orders statements of one run: by the journal entry they follow, then as the run
        /// wrote them (rules one after another, batches in order).
        var order: [Int64] { [after, Int64(rule), Int64(batch)] }
    }
}
