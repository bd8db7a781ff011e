import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

/// A ``DatabaseSession`` over one GRDB connection, valid while GRDB lends it (inside
/// `inDatabase`). The stages reached through it are SQLite's own: discovery and batches by
/// rowid through temporary tables and the C API, rebuilds for what `ALTER TABLE` cannot do,
/// rehearsal on an in-memory copy of the schema, trigger-based change tracking.
public final class SQLiteSession: DatabaseSession {
    public let db: Database
    public let location: String
    /// The connection's busy wait (named in a "locked" error).
    let busy: BusyWait
    public var dialect: any SQLDialect { SQLiteDialect() }

    public init(_ db: Database, location: String = "", busy: BusyWait = BusyWait()) {
        self.db = db
        self.location = location
        self.busy = busy
    }

    static func arguments(_ values: [SQLValue]) -> StatementArguments {
        StatementArguments(values.map(\.databaseValue))
    }

    public func execute(_ sql: String, _ arguments: [SQLValue]) throws {
        try db.execute(sql: sql, arguments: Self.arguments(arguments))
    }

    public func rows(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
        try Row.fetchAll(db, sql: sql, arguments: Self.arguments(arguments)).map { row in
            SQLRow(row.databaseValues.map(SQLValue.init))
        }
    }

    public func writeTransaction(_ body: () throws -> Void) throws { try db.writeTransaction(body) }

    /// Temporary tables are written in autocommit: they take no lock on the database file.
    public func scratch(_ body: () throws -> Void) throws { try body() }

    public func rollbackIfNeeded() {
        if db.isInsideTransaction { try? db.rollback() }
    }

    public func tableExists(_ name: String) throws -> Bool { try db.tableExists(name) }

    public func claimRunLock() throws -> Bool? { nil }

    /// (SQLite has no lock of its own beside the row: nothing to take over.)
    public func takeOverRunLock() throws -> Bool { true }

    public func mapError(_ error: Error) -> WinnowError { DatabaseOpener.map(error, path: location, busy: busy) }

    public func inspect() throws -> LiveSchema { try SchemaInspector.inspect(db) }

    public func dependents() throws -> [(name: String, sql: String)] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT name, sql FROM main.sqlite_master WHERE type IN ('view', 'trigger') AND sql IS NOT NULL
                AND \(SchemaInspector.userObjects)
                """
        ).map { ($0[0] as String, $0[1] as String) }
    }

    func tableDefinition(_ table: String) throws -> String? { try SchemaInspector.table(db, named: table)?.sql }

    public func prepareForBatchWrites(_ sqlite: SQLiteSettings) -> String? {
        DatabaseOpener.prepareForBatchWrites(db, journalMode: sqlite.journalMode)
    }

    public func rehearse(_ plan: MigrationPlan) throws -> (steps: [PlannedStep], result: LiveSchema) {
        try ShadowSchema.rehearse(plan, from: db)
    }

    public func statements(for step: MigrationStep) throws -> [String] {
        var current: String?
        if case let .rebuild(r) = step { current = try tableDefinition(r.table) }
        return MigrationSQL.statements(step, currentSQL: current)
    }

    public func apply(_ step: MigrationStep, settings: BatchSettings, progress: @escaping (Int, Int) -> Void) throws -> String? {
        var executor = MigrationExecutor(db: db, settings: settings)
        executor.progress = progress
        return try executor.apply(step)
    }

    public func finishInterrupted(_ work: InterruptedWork, settings: BatchSettings) throws {
        switch work {
        case .retired: try TableRebuilder.finishRetired(db, settings: settings)
        case .unfinishedRebuild: try TableRebuilder.cleanUpInterrupted(db)
        }
    }

    public func checkGuardsBeforeMigrating(
        _ job: Job, rules: [CompiledRule], plan: MigrationPlan, preview: MigrationPreview,
        resulting: LiveSchema, settings: BatchSettings
    ) throws {
        try MigrationGuards.check(job, rules: rules, plan: plan, preview: preview, resulting: resulting, db: db, settings: settings)
    }

    public func seed(_ spec: SeedSpec, runID: Int64?, checkingAgainst schema: LiveSchema?) throws -> SeedOutcome {
        let seeder = Seeder(db: db, spec: spec, runID: runID)
        if let schema {
            try seeder.check(against: schema)
            return SeedOutcome(seeded: false, rows: 0)
        }
        let outcome = try seeder.run()
        return SeedOutcome(seeded: outcome.seeded, rows: outcome.rows)
    }

    public func ruleExecution(_ rule: CompiledRule, runID: Int64?, options: RuleExecutionOptions) -> any RuleExecution {
        let writer: BatchWriter = runID.map { SQLiteBatchWriter(runID: $0) } ?? DryRunWriter()
        var executor = DedupeExecutor(
            db: db, rule: rule, writer: writer, settings: options.settings,
            sampleLimit: options.sampleLimit, onEvent: options.onEvent)
        executor.deadline = options.deadline
        if let upTo = options.changesUpTo {
            executor.scope = ChangeTracking.scope(rule, upTo: upTo)
            executor.changesUpTo = upTo
        }
        return executor
    }

    public var changeTracker: any ChangeTracker { SQLiteChangeTracker(db: db) }

    public func undo(runID: Int64, restoreID: Int64) throws -> (reinserted: Int, reverted: Int) {
        try Restorer.undo(db, runID: runID, restoreID: restoreID)
    }

    public func journalRecords(runID: Int64, batches: Set<Int>?, keep: ((JournalRecord) -> Bool)?) throws -> [JournalRecord] {
        try JournalReader.records(db, runID: runID, batches: batches, keep: keep)
    }

    public func groupRecords(runID: Int64) throws -> [GroupRecord] { try JournalReader.groups(db, runID: runID) }

    public func forEachGroupRecord(runID: Int64, _ body: (GroupRecord) throws -> Void) throws {
        try JournalReader.forEachGroup(db, runID: runID, body)
    }

    public func typedJournalDeletes(runID: Int64) throws -> [String: Int] {
        var deletes: [String: Int] = [:]
        for journal in try TypedJournal.all(db) {
            let count = try journal.count(db, runID: runID)
            if count > 0 { deletes[journal.table, default: 0] += count }
        }
        return deletes
    }

    public func typedJournalRuns() throws -> Set<Int64> {
        return try TypedJournal.all(db).reduce(into: []) { $0.formUnion(try $1.runs(db)) }
    }

    public func deleteTypedJournal(runID: Int64) throws -> Int {
        for journal in try TypedJournal.all(db) {
            let deleted = try journal.delete(db, runID: runID, limit: JournalPruner.batchSize)
            if deleted > 0 { return deleted }
        }
        return 0
    }

    public func typedJournalIdentities() throws -> String? {
        let all = try TypedJournal.all(db)
        return all.isEmpty ? nil : all.map(\.identities).joined(separator: " UNION ALL ")
    }

    public func winnowObjects() throws -> [WinnowObject] { try InstalledObjects.list(db) }

    public func remove(_ objects: [WinnowObject]) throws { try InstalledObjects.remove(objects, db: db) }
}
