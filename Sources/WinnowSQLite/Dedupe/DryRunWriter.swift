import Foundation
import WinnowCore
import GRDB

/// Writes nothing to the database. It remembers, in a temporary table, the rows a run would
/// have deleted, so that later counts (stored hashes) leave them out as a run would.
struct DryRunWriter: BatchWriter {
    var writes: Bool { false }
    func prepare(_ rule: CompiledRule, db: Database) throws {
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS winnow_dry_deleted (rid INTEGER PRIMARY KEY)")
        try db.execute(sql: "DELETE FROM temp.winnow_dry_deleted")
    }
    func transaction<T>(_ db: Database, _ body: () throws -> T) throws -> T { try body() }
    func apply(_ work: BatchWork, rule: CompiledRule, sql: BatchStatements, db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO temp.winnow_dry_deleted (rid) SELECT rid FROM temp.winnow_batch").execute()
    }
    func fillHashes(rule: CompiledRule, selection: String, arguments: StatementArguments, batch: Int, db: Database) throws -> Int {
        guard let column = rule.hashColumn else { return 0 }
        return try Int.fetchOne(
            db,
            sql: """
                SELECT count(*) FROM \(rule.qualifiedTable) WHERE \(selection)
                AND \(column.sqlIdentifier) IS NOT \(rule.hashExpression())
                AND NOT \(RowNumbers(rule).among("SELECT rid FROM temp.winnow_dry_deleted"))
                """, arguments: arguments) ?? 0
    }
    func recordProgress(_ totals: Counts, db: Database) throws {}
}
