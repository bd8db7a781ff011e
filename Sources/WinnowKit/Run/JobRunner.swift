import Foundation
import GRDB
import GRDBSQLite

/// Options of `run`, `plan` and `check` that come from the command line.
public struct RunOptions: Sendable {
    /// `--database`, overriding the job's `database:`.
    public var database: String?
    /// `--batch-size`, overriding `batch.size`.
    public var batchSize: Int?
    /// `--dry-run`.
    public var dryRun = false
    /// `--wait SECONDS` for another run's lock.
    public var wait: TimeInterval?
    /// Groups listed per rule by `plan` (nil: all).
    public var sampleLimit: Int? = 20

    public init(database: String? = nil, batchSize: Int? = nil, dryRun: Bool = false, wait: TimeInterval? = nil,
                sampleLimit: Int? = 20) {
        self.database = database
        self.batchSize = batchSize
        self.dryRun = dryRun
        self.wait = wait
        self.sampleLimit = sampleLimit
    }
}

/// Carries out jobs: `run`, `plan` (a run whose writer writes nothing) and `check`.
public enum JobRunner {
    static func databasePath(_ job: Job, _ options: RunOptions) throws -> String {
        if let path = options.database { return path }
        if let path = job.database?.value { return path }
        throw WinnowError.usage("\(job.file): the job names no database; add 'database:' to it or pass --database PATH")
    }

    static func settings(_ job: Job, _ options: RunOptions) -> BatchSettings {
        var settings = job.batch
        if let size = options.batchSize { settings.size = size }
        return settings
    }

    /// The job's target schema, if it names one.
    static func target(_ job: Job) throws -> SchemaModel? {
        guard let schema = job.schema else { return nil }
        guard FileManager.default.fileExists(atPath: schema.value) else {
            throw WinnowError.notFound("\(schema.location.map { "\($0): " } ?? "")schema: \(schema.value): no such file")
        }
        return try SchemaLoader.load(path: schema.value)
    }

    /// Views and triggers of the database (a column they use cannot simply be dropped).
    static func dependents(_ db: Database) throws -> [(name: String, sql: String)] {
        try Row.fetchAll(db, sql: """
            SELECT name, sql FROM main.sqlite_master WHERE type IN ('view', 'trigger') AND sql IS NOT NULL
            AND lower(substr(name, 1, 7)) <> 'winnow_'
            """).map { ($0[0] as String, $0[1] as String) }
    }

    /// The steps that bring the database to `target`, or a refusal (exit 65).
    static func migrationPlan(_ db: Database, live: LiveSchema, job: Job, target: SchemaModel) throws -> MigrationPlan {
        let planner = MigrationPlanner(live: live, liveVersion: try SchemaVersions.recorded(db)?.version, target: target,
                                       allowDataLoss: job.allowDataLoss, dedupedTables: Set(job.dedupe.map(\.entity.value)),
                                       sqliteVersion: sqlite3_libversion_number(), dependents: try dependents(db))
        do {
            return try planner.plan()
        } catch let WinnowError.refused(message) {
            throw WinnowError.refused("\(job.schema?.value ?? "schema"): \(message)")
        }
    }

    static func compile(_ job: Job, _ db: Database) throws -> [CompiledRule] {
        let schema = try SchemaInspector.inspect(db)
        return try job.dedupe.map { try RuleCompiler.compile($0, schema: schema) }
    }

    static func ruleSummary(_ rule: CompiledRule, _ discovery: Discovery, _ counts: Counts, _ samples: [GroupSample]) -> RuleSummary {
        RuleSummary(index: rule.rule.index, table: rule.table,
                    key: rule.keyColumns.map { name in
                        let chain = rule.normalizers[name, default: []]
                        return chain.isEmpty ? name : "\(name) (\(chain.map(\.rawValue).joined(separator: ", ")))"
                    },
                    winner: rule.winnerDescription, references: rule.references.map(\.label),
                    discovery: discovery, counts: counts, samples: samples)
    }

    // MARK: plan

    /// What `run` would do, on a read-only connection: the same executor with a writer that
    /// writes nothing. Rules are evaluated against the database as it is now.
    public static func plan(_ job: Job, options: RunOptions = .init(), onEvent: @escaping (RunEvent) -> Void = { _ in }) throws -> RunSummary {
        let path = try databasePath(job, options)
        let target = try target(job)
        let started = Date()
        let queue = try DatabaseOpener.open(path: path, mode: .readOnly)
        do {
            return try queue.inDatabase { db in
                var notes: [String] = []
                // What `run` refuses before its first write, `plan` refuses too; with a migration,
                // the rules are evaluated on the rows as it will leave them.
                let checked = try preflight(job, target: target, db: db, settings: settings(job, options))
                let migration = checked.steps
                if let target, migration.isEmpty { notes.append("schema: the database already matches version \(target.version)") }
                if !checked.sources.isEmpty { notes.append("dedupe counts are of the rows as the migration will leave them") }
                if let seed = job.seed {
                    notes.append(try SchemaVersions.isSeeded(db, name: seed.name.value)
                                 ? "seed '\(seed.name.value)' was applied before; it is not applied again"
                                 : "seed '\(seed.name.value)' would copy \(seed.tables.map(\.value).joined(separator: ", ")) from \(seed.from.value)")
                }
                let rules = checked.rules
                var totals = Counts()
                var summaries: [RuleSummary] = []
                var batchNumber = 1
                for rule in rules {
                    let writer = DryRunWriter()
                    var executor = DedupeExecutor(db: db, rule: rule, writer: writer, settings: settings(job, options),
                                                  sampleLimit: options.sampleLimit ?? Int.max, onEvent: onEvent)
                    let state = try incrementalStates([rule], db: db, install: false)[rule.rule.index]
                    state?.limit(&executor)
                    let discovery = try executor.discover()
                    try writer.prepare(rule, db: db)
                    try executor.checkGuards(discovery)
                    onEvent(.ruleStarted(rule: rule.rule.index, table: rule.table, discovery: discovery))
                    var samples: [GroupSample] = []
                    var counts = try executor.execute(discovery, batchNumber: &batchNumber, totals: &totals, samples: &samples)
                    counts = counts + (try executor.fillHashes(batchNumber: &batchNumber, totals: &totals))
                    onEvent(.ruleFinished(rule: rule.rule.index, table: rule.table, counts: counts))
                    var ruleSummary = ruleSummary(rule, discovery, counts, samples)
                    ruleSummary.incremental = state?.tracking
                    ruleSummary.warnings = PlanAdvice.warnings(rule, discovery: discovery, settings: settings(job, options))
                    summaries.append(ruleSummary)
                }
                var summary = RunSummary(command: "plan", status: "planned", job: job.file, database: path, dryRun: true, counts: totals,
                                         migrationSteps: migration.count, seconds: Date().timeIntervalSince(started), rules: summaries)
                summary.migration = migration
                summary.notes = notes
                return summary
            }
        } catch {
            throw DatabaseOpener.map(error, path: path)
        }
    }

    // MARK: check

    /// Duplicates left under the job's rules. Uses grouped counts (an index on the key avoids a
    /// sort); when duplicates exist, the would-be counts of a dry run are filled in too.
    public static func check(_ job: Job, options: RunOptions = .init()) throws -> RunSummary {
        let path = try databasePath(job, options)
        let target = try target(job)
        let started = Date()
        let queue = try DatabaseOpener.open(path: path, mode: .readOnly)
        do {
            var drift: [String] = []
            var notes: [String] = []
            let found = try queue.inDatabase { db -> [RuleSummary] in
                if let target {
                    let live = SchemaModel(live: try SchemaInspector.inspect(db), version: try SchemaVersions.recorded(db)?.version ?? 0)
                    drift = live.drift(to: target).map(\.description)
                    if let recorded = try SchemaVersions.recorded(db), recorded.version != target.version {
                        drift.append("model version is \(recorded.version), the schema file is version \(target.version)")
                    }
                }
                let rules: [CompiledRule]
                do {
                    rules = try compile(job, db)
                } catch let error as WinnowError where !drift.isEmpty {
                    notes.append("dedupe rules not checked: \(error.description)")
                    return []
                }
                return try rules.map { rule in
                    let row = try Row.fetchOne(db, sql: duplicateCountSQL(rule))!
                    var counts = Counts()
                    counts.groups = row[0]
                    counts.deleted = row[1]
                    let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(rule.qualifiedTable)") ?? 0
                    return ruleSummary(rule, Discovery(groups: counts.groups, losers: counts.deleted, tableRows: rows), counts, [])
                }
            }
            var summaries = found
            if found.contains(where: { $0.counts.groups > 0 }), drift.isEmpty {
                var dry = options
                dry.sampleLimit = 0
                let planned = try plan(job, options: dry)
                summaries = planned.rules
            }
            let totals = summaries.reduce(Counts()) { $0 + $1.counts }
            let status = !drift.isEmpty ? "drift" : (totals.groups > 0 ? "duplicates" : "clean")
            var summary = RunSummary(command: "check", status: status, job: job.file, database: path,
                                     dryRun: true, counts: totals, seconds: Date().timeIntervalSince(started), rules: summaries)
            summary.drift = drift
            summary.notes = notes
            return summary
        } catch {
            throw DatabaseOpener.map(error, path: path)
        }
    }

    /// Duplicate groups and surplus rows of a rule, by one grouped count. With an index on the
    /// key (plain columns), SQLite walks the index in key order: no sort, no temporary B-tree.
    static func duplicateCountSQL(_ rule: CompiledRule) -> String {
        """
        SELECT count(*), coalesce(sum(n - 1), 0) FROM (
            SELECT count(*) AS n FROM \(rule.qualifiedTable) WHERE \(rule.candidateFilter())
            GROUP BY \(rule.groupExpressions().joined(separator: ", ")) HAVING count(*) > 1)
        """
    }

    // MARK: run

    /// Deduplicates as the job says, one transaction per batch, recording the run in
    /// `winnow_runs` and (with `archive: true`) every change in `winnow_journal`.
    public static func run(_ job: Job, options: RunOptions = .init(), onEvent: @escaping (RunEvent) -> Void = { _ in }) throws -> RunSummary {
        if options.dryRun { return try plan(job, options: options, onEvent: onEvent) }
        let path = try databasePath(job, options)
        let target = try target(job)
        let started = Date()
        // A job with a schema may start from no database at all: it is created, then migrated.
        let queue = try DatabaseOpener.open(path: path, mode: .readWrite(create: target != nil))
        let me = ProcessIdentity.current
        do {
            return try queue.inDatabase { db in
                let runID = try RunLock.withRetry(wait: options.wait) {
                    try begin(db, job: job, archive: job.dedupe.contains(where: \.archive), me: me)
                }
                DatabaseOpener.prepareForBatchWrites(db)
                var totals = Counts()
                var applied: [PlannedStep] = []
                do {
                    var notes: [String] = []
                    let summaries = try execute(job, target: target, options: options, db: db, runID: runID, totals: &totals,
                                                applied: &applied, notes: &notes, onEvent: onEvent)
                    let seconds = Date().timeIntervalSince(started)
                    try finish(db, runID: runID, status: "completed", totals: totals, seconds: seconds, message: nil, me: me)
                    var summary = RunSummary(command: "run", runID: runID, status: "completed", job: job.file, database: path,
                                             counts: totals, migrationSteps: applied.count, seconds: seconds, rules: summaries)
                    summary.migration = applied
                    summary.notes = notes
                    return summary
                } catch {
                    let mapped = DatabaseOpener.map(error, path: path)
                    let status = mapped.exitCode == 65 ? "refused" : "failed"
                    try? finish(db, runID: runID, status: status, totals: totals, seconds: Date().timeIntervalSince(started),
                                message: mapped.description, me: me)
                    throw mapped
                }
            }
        } catch {
            throw DatabaseOpener.map(error, path: path)
        }
    }

    /// Installs the bookkeeping tables, takes the lock and records the run, in one transaction.
    static func begin(_ db: Database, job: Job, archive: Bool, me: ProcessIdentity) throws -> Int64 {
        var runID: Int64 = 0
        try db.writeTransaction {
            try Bookkeeping.install(db)
            try RunLock.take(db, runID: nil, me: me)
            // Whatever was still marked running lost its lock: it was interrupted.
            try db.execute(sql: "UPDATE winnow_runs SET status = 'interrupted' WHERE status = 'running'")
            try db.execute(sql: "INSERT INTO winnow_runs (command, job, started_at, status, archive) VALUES ('run', ?, ?, 'running', ?)",
                           arguments: [job.file, Bookkeeping.timestamp(), archive])
            runID = db.lastInsertedRowID
            try db.execute(sql: "UPDATE winnow_lock SET run_id = ? WHERE id = 1", arguments: [runID])
            return
        }
        return runID
    }

    static func finish(_ db: Database, runID: Int64, status: String, totals: Counts, seconds: Double, message: String?,
                       me: ProcessIdentity) throws {
        if db.isInsideTransaction { try db.rollback() }
        try db.writeTransaction {
            try SQLiteBatchWriter(runID: runID).recordProgress(totals, db: db)
            try db.execute(sql: "UPDATE winnow_runs SET status = ?, finished_at = ?, seconds = ?, message = ? WHERE id = ?",
                           arguments: [status, Bookkeeping.timestamp(), seconds, message, runID])
            try RunLock.release(db, me: me)
            return
        }
    }

    static func execute(_ job: Job, target: SchemaModel?, options: RunOptions, db: Database, runID: Int64, totals: inout Counts,
                        applied: inout [PlannedStep], notes: inout [String],
                        onEvent: @escaping (RunEvent) -> Void) throws -> [RuleSummary] {
        // 1. Migrate (unique indexes of deduplicated tables wait for their rules).
        var deferred: [MigrationStep] = []
        let settings = settings(job, options)
        func apply(_ step: MigrationStep) throws {
            let started = Date()
            var current: String?
            if case let .rebuild(r) = step { current = try SchemaInspector.table(db, named: r.table)?.sql }
            if let remark = try MigrationExecutor(db: db, settings: settings).apply(step) { notes.append(remark) }
            let planned = PlannedStep(summary: step.summary, sql: MigrationSQL.statements(step, currentSQL: current), rebuildsTable: step.rebuildsTable)
            applied.append(planned)
            try db.execute(sql: "UPDATE winnow_runs SET migration_steps = ? WHERE id = ?", arguments: [applied.count, runID])
            onEvent(.migrationStep(index: applied.count, step: planned, seconds: Date().timeIntervalSince(started)))
        }
        // Everything the job can be refused for is checked before the first write.
        let plan = try preflight(job, target: target, db: db, settings: settings).plan
        // The old rows a finished cut-over set aside, left by a killed run.
        try TableRebuilder.finishRetired(db, settings: settings)
        if let plan {
            for step in plan.steps {
                if case let .createIndex(_, _, afterDedupe) = step, afterDedupe { deferred.append(step); continue }
                try apply(step)
            }
        }
        // An interrupted rebuild that this run did not resume (the target changed) is undone.
        try TableRebuilder.cleanUpInterrupted(db)
        // 2. Seed once.
        if let seed = job.seed {
            let outcome = try Seeder(db: db, spec: seed, runID: runID).run()
            notes.append(outcome.seeded ? "seed '\(seed.name.value)': \(outcome.rows) rows copied"
                                        : "seed '\(seed.name.value)' was applied before; not applied again")
        }
        // 3. Deduplicate.
        let summaries = try dedupe(job, options: options, db: db, runID: runID, totals: &totals, onEvent: onEvent)
        // 4. The unique indexes that keep the duplicates out, then the version.
        for step in deferred { try apply(step) }
        if let target {
            try db.writeTransaction {
                try SchemaVersions.record(db, version: target.version, checksum: try SchemaVersions.checksum(of: target), runID: runID)
                return
            }
        }
        return summaries
    }

    /// What the checks before a job's first write found.
    struct Preflight {
        /// The migration, when the job names a schema.
        var plan: MigrationPlan?
        /// Its steps as rehearsed on a copy of the schema (the SQL `run` executes).
        var steps: [PlannedStep] = []
        /// The rules compiled against the schema the migration leaves, reading the rows as it
        /// will leave them (``sources``).
        var rules: [CompiledRule] = []
        /// Each migrated table as a `SELECT` over the current tables; empty without a migration step.
        var sources: [String: String] = [:]
    }

    /// Everything a job can be refused for, checked before its first write (so a refused job
    /// changes nothing, and `plan` refuses what `run` would): the migration, rehearsed on a copy
    /// of the schema; every rule against the schema it leaves; the seed's file and tables; and,
    /// when there are migration steps, the data guards on the rows as the migration will leave them.
    static func preflight(_ job: Job, target: SchemaModel?, db: Database, settings: BatchSettings) throws -> Preflight {
        let live = try SchemaInspector.inspect(db)
        var checked = Preflight()
        var resulting = live
        if let target {
            let plan = try migrationPlan(db, live: live, job: job, target: target)
            let rehearsed = try ShadowSchema.rehearse(plan, from: db)
            checked.plan = plan
            checked.steps = rehearsed.steps
            resulting = rehearsed.result
        }
        checked.rules = try job.dedupe.map { try RuleCompiler.compile($0, schema: resulting) }
        if let seed = job.seed { try Seeder(db: db, spec: seed, runID: nil).check(against: resulting) }
        if let plan = checked.plan, !plan.steps.isEmpty {
            let preview = MigrationPreview(live: live, steps: plan.steps)
            for table in resulting.tables {
                if let rowID = table.rowIDExpression, let sql = preview.select(table.name, rowID: rowID) {
                    checked.sources[table.name.lowercased()] = sql
                }
            }
            for index in checked.rules.indices { checked.rules[index].sources = checked.sources }
            try checkGuardsBeforeMigrating(job, rules: checked.rules, plan: plan, preview: preview, resulting: resulting,
                                           db: db, settings: settings)
        }
        return checked
    }

    /// Refuses (exit 65, nothing changed) a job whose data guards would refuse after its migration:
    /// `max_delete_percent` and `references: restrict` of every rule, and every unique index the
    /// migration creates over keys that would still be duplicated once the table's rules ran.
    /// Evaluated on ``MigrationPreview``'s `SELECT`s over the tables as they are now, so no
    /// migration step has to run first. Rules of one table are found independently (their losers
    /// are united for the index check); rows a seed would add are not in the preview, and the
    /// same guards run again on the migrated tables before the first deletion.
    static func checkGuardsBeforeMigrating(_ job: Job, rules: [CompiledRule], plan: MigrationPlan, preview: MigrationPreview,
                                           resulting: LiveSchema, db: Database, settings: BatchSettings) throws {
        let uniqueIndexes = plan.steps.compactMap { step -> (table: String, index: IndexModel)? in
            if case let .createIndex(table, index, _) = step, index.unique { return (table, index) }
            return nil
        }
        let indexed = Set(uniqueIndexes.map { $0.table.lowercased() })
        let guarded = rules.filter {
            $0.rule.maxDeletePercent != nil || $0.rule.references == .restrict || indexed.contains($0.table.lowercased())
        }
        guard !guarded.isEmpty || !uniqueIndexes.isEmpty else { return }
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS winnow_preflight (tbl TEXT NOT NULL, rid INTEGER NOT NULL)")
        defer { try? db.execute(sql: "DROP TABLE IF EXISTS temp.winnow_preflight") }
        try db.execute(sql: "DELETE FROM temp.winnow_preflight")
        for compiled in guarded where preview.hasRows(compiled.table) {
            let executor = DedupeExecutor(db: db, rule: compiled, writer: DryRunWriter(), settings: settings)
            try executor.checkGuards(try executor.discover())
            try db.execute(sql: "INSERT INTO temp.winnow_preflight (tbl, rid) SELECT ?, rid FROM temp.winnow_queue",
                           arguments: [compiled.table.lowercased()])
        }
        for (table, index) in uniqueIndexes {
            guard preview.hasRows(table), let target = resulting.table(named: table), let rowID = target.rowIDExpression,
                  let source = preview.select(target.name, rowID: rowID), !index.columns.isEmpty else { continue }
            let columns = index.columns.map(\.sqlIdentifier)
            let row = try Row.fetchOne(db, sql: """
                SELECT count(*), coalesce(sum(n), 0) FROM (
                    SELECT count(*) AS n FROM (\(source))
                    WHERE \(columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND "))
                      AND \(rowID) NOT IN (SELECT rid FROM temp.winnow_preflight WHERE tbl = ?)
                    GROUP BY \(columns.joined(separator: ", ")) HAVING count(*) > 1)
                """, arguments: [target.name.lowercased()])!
            let groups: Int = row[0]
            guard groups == 0 else {
                let rows: Int = row[1]
                let after = job.dedupe.contains { $0.entity.value.caseInsensitiveCompare(table) == .orderedSame }
                    ? " that the job's dedupe rules leave" : ""
                throw WinnowError.refused("""
                    \(job.schema?.value ?? "schema"): cannot create unique index \(index.name) on \(table)(\(index.columns.joined(separator: ", "))): \
                    \(rows) rows in \(groups) group(s) share a key\(after); add a dedupe rule for that key; nothing was changed
                    """)
            }
        }
    }

    /// How an incremental rule runs now: limited to the changes up to `upTo`, or in full.
    struct IncrementalState {
        var tracking: Bool
        var upTo: Int64

        /// Limits `executor` to the changes up to ``upTo`` when the rule is tracked (else it runs in full).
        func limit(_ executor: inout DedupeExecutor) {
            guard tracking else { return }
            executor.scope = ChangeTracking.scope(executor.rule, upTo: upTo)
            executor.changesUpTo = upTo
        }
    }

    /// Tables whose tracking a job's rules want, and the state of each incremental rule. A run
    /// installs the triggers for a rule that is not tracked yet (its run is then a full one) and
    /// removes them from a table whose rules no longer say incremental.
    static func incrementalStates(_ rules: [CompiledRule], db: Database, install: Bool) throws -> [Int: IncrementalState] {
        var states: [Int: IncrementalState] = [:]
        let wanted = Set(rules.filter(\.rule.incremental).map { $0.table.lowercased() })
        for rule in rules {
            if rule.rule.incremental {
                let tracking = try ChangeTracking.isTracking(db, rule: rule)
                if !tracking && install { try ChangeTracking.start(db, rule: rule) }
                states[rule.rule.index] = IncrementalState(tracking: tracking, upTo: try ChangeTracking.lastChange(db, table: rule.table))
            } else if install, !wanted.contains(rule.table.lowercased()), try ChangeTracking.isInstalled(db, table: rule.table) {
                try db.writeTransaction { try ChangeTracking.stop(db, table: rule.table) }
            }
        }
        return states
    }

    static func dedupe(_ job: Job, options: RunOptions, db: Database, runID: Int64, totals: inout Counts,
                       onEvent: @escaping (RunEvent) -> Void) throws -> [RuleSummary] {
        let rules = try compile(job, db)
        let writer = SQLiteBatchWriter(runID: runID)
        let settings = settings(job, options)
        // Tracking starts before any discovery, so no change can fall between a full pass and the log.
        let incremental = try incrementalStates(rules, db: db, install: true)
        func executor(_ rule: CompiledRule) -> DedupeExecutor {
            var executor = DedupeExecutor(db: db, rule: rule, writer: writer, settings: settings, onEvent: onEvent)
            incremental[rule.rule.index]?.limit(&executor)
            return executor
        }
        // Every guard of every rule is checked before the first write, so a refused job changes nothing.
        var discoveries: [Discovery] = []
        for rule in rules {
            let discovery = try executor(rule).discover()
            try executor(rule).checkGuards(discovery)
            discoveries.append(discovery)
        }
        var summaries: [RuleSummary] = []
        var batchNumber = 1
        for (index, rule) in rules.enumerated() {
            let executor = executor(rule)
            var discovery = discoveries[index]
            // The temporary table holds the last discovery; with several rules, each is found
            // again right before it runs, since earlier rules may have changed its table.
            if rules.count > 1 {
                discovery = try executor.discover()
                try executor.checkGuards(discovery)
            }
            onEvent(.ruleStarted(rule: rule.rule.index, table: rule.table, discovery: discovery))
            try writer.prepare(rule, db: db)
            var samples: [GroupSample] = []
            // Duplicates first, then the stored hashes of the rows that remain.
            var counts = try executor.execute(discovery, batchNumber: &batchNumber, totals: &totals, samples: &samples)
            counts = counts + (try executor.fillHashes(batchNumber: &batchNumber, totals: &totals))
            if let state = incremental[rule.rule.index] {
                // The changes this rule covered are done; later ones wait for the next run.
                try db.writeTransaction {
                    try ChangeTracking.forget(db, table: rule.table, upTo: state.upTo)
                    try ChangeTracking.completed(db, table: rule.table, runID: runID)
                }
            }
            onEvent(.ruleFinished(rule: rule.rule.index, table: rule.table, counts: counts))
            var summary = ruleSummary(rule, discovery, counts, samples)
            summary.incremental = incremental[rule.rule.index]?.tracking
            summaries.append(summary)
        }
        return summaries
    }
}
