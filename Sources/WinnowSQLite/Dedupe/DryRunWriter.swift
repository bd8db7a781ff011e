import Foundation
import WinnowCore
import GRDB

/// Writes nothing to the database. It remembers, in a temporary table, the rows a run would
/// have deleted, so that later counts (stored hashes) leave them out as a run would.
struct DryRunWriter: BatchWriter {
    var writes: Bool { false }
    func prepare(_ rule: CompiledRule, db: Database) throws {
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS winnow_dry_deleted (rid INTEGER PRIMARY KEY)")
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS winnow_dry_logged (rid INTEGER NOT NULL)")
        try db.execute(sql: "DELETE FROM temp.winnow_dry_deleted")
        try db.execute(sql: "DELETE FROM temp.winnow_dry_logged")
    }

    /// Moves the rows the batches logged as deleted into `temp.winnow_dry_deleted`, in rowid
    /// order. A batch appends its losers to `winnow_dry_logged` (it writes the table's last page
    /// only); adding them to the keyed table batch by batch wrote a page of it for nearly each
    /// loser, and each page again in the temporary journal, at every batch (merge-archive-50 in
    /// batches of 50: 1,066 batches, 340 MB; docs/performance.md, "plan").
    static func collectDeleted(_ db: Database) throws {
        try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO temp.winnow_dry_deleted (rid) SELECT rid FROM temp.winnow_dry_logged ORDER BY rid"
        ).execute()
        try db.cachedStatement(sql: "DELETE FROM temp.winnow_dry_logged").execute()
    }

    /// A deferred transaction that writes only temporary tables: the batch is read from one
    /// snapshot, as a run's batch is, and the temporary tables it fills are committed once, not
    /// once per statement (merge-500 at 200,000 rows: `plan` wrote 495 MB of temporary files,
    /// one page and its journal for each of 52,463 merged winners; docs/performance.md).
    func transaction<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        try db.readTransaction(body)
    }
    func apply(_ work: BatchWork, rule: CompiledRule, sql: BatchStatements, db: Database) throws {
        try db.cachedStatement(sql: "INSERT INTO temp.winnow_dry_logged (rid) SELECT rid FROM temp.winnow_batch").execute()
    }
    func fillHashes(rule: CompiledRule, selection: String, arguments: StatementArguments, batch: Int, db: Database) throws -> Int {
        guard let column = rule.hashColumn else { return 0 }
        try Self.collectDeleted(db)
        return try Int.fetchOne(
            db,
            sql: """
                SELECT count(*) FROM \(rule.qualifiedTable) WHERE \(selection)
                AND \(column.sqlIdentifier) IS NOT \(rule.hashExpression())
                AND NOT \(RowNumbers(rule).among("SELECT rid FROM temp.winnow_dry_deleted"))
                """, arguments: arguments) ?? 0
    }
    func noteGivenSettled(table: String, upTo end: Int64?, db: Database) throws {}
    func recordProgress(_ totals: Counts, db: Database) throws {}
}
