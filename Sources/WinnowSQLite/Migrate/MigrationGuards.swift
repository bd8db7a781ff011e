import Foundation
import GRDB
import WinnowCore

/// The data guards a job's migration must pass, evaluated before any step runs.
enum MigrationGuards {
    /// Refuses (exit 65, nothing changed) a job whose data guards would refuse after its migration:
    /// `max_delete_percent` and `references: restrict` of `rules` (those the core chose,
    /// ``JobRunner/guardedBeforeMigrating(_:plan:preview:)``), and every unique index the
    /// migration creates over keys that would still be duplicated once the table's rules ran.
    /// Evaluated on ``MigrationPreview``'s `SELECT`s over the tables as they are now, so no
    /// migration step has to run first. Rules of one table are found independently (their losers
    /// are united for the index check); rows a seed would add are not in the preview, and the
    /// same guards run again on the migrated tables before the first deletion.
    static func check(
        _ job: Job, rules: [CompiledRule], plan: MigrationPlan, preview: MigrationPreview,
        resulting: LiveSchema, db: Database, settings: BatchSettings
    ) throws {
        let uniqueIndexes = plan.uniqueIndexes
        guard !rules.isEmpty || !uniqueIndexes.isEmpty else { return }
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS winnow_preflight (tbl TEXT NOT NULL, rid INTEGER NOT NULL)")
        defer { try? db.execute(sql: "DROP TABLE IF EXISTS temp.winnow_preflight") }
        try db.execute(sql: "DELETE FROM temp.winnow_preflight")
        for compiled in rules {
            let executor = DedupeExecutor(db: db, rule: compiled, writer: DryRunWriter(), settings: settings)
            try executor.checkGuards(try executor.discover())
            try db.execute(
                sql: "INSERT INTO temp.winnow_preflight (tbl, rid) SELECT ?, rid FROM temp.winnow_queue",
                arguments: [compiled.table.lowercased()])
        }
        for (table, index) in uniqueIndexes {
            guard preview.hasRows(table), let target = resulting.table(named: table), let rowID = target.rowIDExpression,
                let source = preview.select(target.name, rowID: rowID), !index.columns.isEmpty
            else { continue }
            let columns = index.columns.map(\.sqlIdentifier)
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*), coalesce(sum(n), 0) FROM (
                        SELECT count(*) AS n FROM (\(source))
                        WHERE \(columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND "))
                          AND \(rowID) NOT IN (SELECT rid FROM temp.winnow_preflight WHERE tbl = ?)
                        GROUP BY \(columns.joined(separator: ", ")) HAVING count(*) > 1)
                    """, arguments: [target.name.lowercased()])!
            let groups: Int = row[0]
            guard groups == 0 else { throw JobRunner.uniqueIndexRefusal(job, table: table, index: index, rows: row[1], groups: groups) }
        }
    }
}
