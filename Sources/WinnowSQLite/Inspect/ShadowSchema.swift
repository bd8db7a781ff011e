import Foundation
import WinnowCore
import GRDB

/// An in-memory database holding only the schema (no rows) of a live database. Migration steps
/// are applied to it first: that yields the exact SQL each step runs (a rebuild's new table
/// depends on the steps before it) and proves every step works before the real database is
/// touched, so a migration that would fail is refused with nothing changed.
enum ShadowSchema {
    /// The planned steps and the schema they leave (what the job's rules will meet).
    static func rehearse(_ plan: MigrationPlan, from live: Database) throws -> (steps: [PlannedStep], result: LiveSchema) {
        guard !plan.steps.isEmpty else { return ([], try SchemaInspector.inspect(live)) }
        let objects = try Row.fetchAll(
            live,
            sql: """
                SELECT type, name, sql FROM main.sqlite_master
                WHERE sql IS NOT NULL AND \(SchemaInspector.userObjects)
                ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, rowid
                """)
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.prepareDatabase { db in try SQLFunctions.register(on: db) }
        let shadow = try DatabaseQueue(configuration: config)
        return try shadow.inDatabase { db in
            for object in objects {
                do {
                    try db.execute(sql: object[2])
                } catch {
                    throw WinnowError.refused("cannot read the schema of \(object[0] as String) \(object[1] as String): \(error)")
                }
            }
            var steps: [PlannedStep] = []
            for (index, step) in plan.steps.enumerated() {
                var current: String?
                if case let .rebuild(r) = step { current = try SchemaInspector.table(db, named: r.table)?.sql }
                steps.append(
                    PlannedStep(
                        summary: step.summary, sql: MigrationSQL.statements(step, currentSQL: current),
                        rebuildsTable: step.rebuildsTable))
                do {
                    try MigrationExecutor(db: db, settings: BatchSettings()).apply(step)
                } catch {
                    let reason = (error as? WinnowError)?.description ?? (error as? DatabaseError)?.message ?? "\(error)"
                    throw WinnowError.refused("migration step \(index + 1) (\(step.summary)) cannot be applied: \(reason)")
                }
            }
            return (steps, try SchemaInspector.inspect(db))
        }
    }
}
