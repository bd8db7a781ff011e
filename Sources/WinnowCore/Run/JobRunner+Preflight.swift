import Foundation

extension JobRunner {
    /// What the checks before a job's first write found.
    package struct Preflight {
        /// The schema as inspected before anything ran.
        package var live = LiveSchema(tables: [])
        /// The migration, when the job names a schema.
        package var plan: MigrationPlan?
        /// Its steps as rehearsed on a copy of the schema (the SQL `run` executes).
        package var steps: [PlannedStep] = []
        /// The rules compiled against the schema the migration leaves, reading the rows as it
        /// will leave them (``sources``).
        package var rules: [CompiledRule] = []
        /// Each migrated table as a `SELECT` over the current tables; empty without a migration step.
        package var sources: [String: String] = [:]
    }

    /// Everything a job can be refused for, checked before its first write (so a refused job
    /// changes nothing, and `plan` refuses what `run` would): the migration, rehearsed on a copy
    /// of the schema; every rule against the schema it leaves; the seed's file and tables; and,
    /// when there are migration steps and `readingRows`, the data guards on the rows as the
    /// migration will leave them.
    package static func preflight(
        _ job: Job, target: SchemaModel?, session: any DatabaseSession, settings: BatchSettings, readingRows: Bool = true,
        options: RunOptions = RunOptions()
    ) throws -> Preflight {
        let live = try session.inspect()
        var checked = Preflight()
        checked.live = live
        var resulting = live
        if let target {
            let plan = try migrationPlan(session, live: live, job: job, target: target)
            let rehearsed = try session.rehearse(plan)
            checked.plan = plan
            checked.steps = rehearsed.steps
            resulting = rehearsed.result
        }
        checked.rules = try job.dedupe.map { try RuleCompiler.compile($0, schema: resulting, dialect: session.dialect) }
        if readingRows { try refuseRowSecurity(checked.rules, options: options) }
        if let seed = job.seed { _ = try session.seed(seed, runID: nil, checkingAgainst: resulting) }
        if readingRows, let plan = checked.plan, !plan.steps.isEmpty {
            let preview = MigrationPreview(live: live, steps: plan.steps, dialect: session.dialect)
            for table in resulting.tables {
                guard let identity = session.dialect.rowIdentity(of: table) else { continue }
                var rowID: String?
                if case let .rowid(expression, _) = identity { rowID = expression }
                if let sql = preview.select(table.name, rowID: rowID) {
                    checked.sources[table.name.lowercased()] = sql
                }
            }
            for index in checked.rules.indices { checked.rules[index].sources = checked.sources }
            try session.checkGuardsBeforeMigrating(
                job, rules: guardedBeforeMigrating(checked.rules, plan: plan, preview: preview), plan: plan, preview: preview,
                resulting: resulting, settings: settings)
        }
        return checked
    }

    /// The rules whose guards are checked before a migration, on every engine: those with a
    /// guard (`max_delete_percent`, `references: restrict`) or on a table the migration gives a
    /// unique index (their losers are left out of the index's check), over a table that has rows
    /// now (a table the migration creates has none to find).
    package static func guardedBeforeMigrating(_ rules: [CompiledRule], plan: MigrationPlan, preview: MigrationPreview) -> [CompiledRule] {
        let indexed = Set(plan.uniqueIndexes.map { $0.table.lowercased() })
        return rules.filter { rule in
            (rule.rule.maxDeletePercent != nil || rule.rule.references == .restrict || indexed.contains(rule.table.lowercased()))
                && preview.hasRows(rule.table)
        }
    }

    /// The refusal of a unique index the migration creates over a key that rows would still
    /// share once the job's rules ran (`rows` in `groups` groups), before anything changed.
    package static func uniqueIndexRefusal(_ job: Job, table: String, index: IndexModel, rows: Int, groups: Int) -> WinnowError {
        let after =
            job.dedupe.contains { $0.entity.value.caseInsensitiveCompare(table) == .orderedSame }
            ? " that the job's dedupe rules leave" : ""
        return .guardRefused(
            GuardRefusal(
                .uniqueIndex,
                """
                \(job.schema?.value ?? "schema"): cannot create unique index \(index.name) on \(table)(\(index.columns.joined(separator: ", "))): \
                \(rows) rows in \(groups) group(s) share a key\(after); add a dedupe rule for that key
                """))
    }

    /// A unique index that failed on duplicates while a run built it (rows written since the
    /// checks): the message both engines give.
    package static func uniqueIndexFailure(table: String, index: IndexModel, detail: String) -> WinnowError {
        .refused(
            "cannot create unique index \(index.name) on \(table)(\(index.columns.joined(separator: ", "))): the table holds duplicates of that key; add a dedupe rule for it (\(detail))"
        )
    }

    /// `validate JOB --database PATH`: what `plan` refuses about the job's files on this
    /// database, without reading its rows: the migration to the target schema (rehearsed), every
    /// rule against the schema the migration leaves, and the seed's file and tables.
    public static func validate(_ job: Job, database: String, backend: any DatabaseBackend) throws {
        let target = try target(job)
        try backend.withSession(database, mode: .readOnly) { session in
            _ = try preflight(job, target: target, session: session, settings: job.batch, readingRows: false)
        }
    }

    /// The steps that bring the database to `target`, or a refusal (exit 65).
    package static func migrationPlan(
        _ session: any DatabaseSession, live: LiveSchema, job: Job, target: SchemaModel
    ) throws -> MigrationPlan {
        let planner = MigrationPlanner(
            live: live, liveVersion: try SchemaVersions.recorded(session)?.version, target: session.dialect.stored(target),
            allowDataLoss: job.allowDataLoss, dedupedTables: Set(job.dedupe.map(\.entity.value)),
            dropsColumnInPlace: session.dialect.capabilities.dropsColumnInPlace, dependents: try session.dependents())
        do {
            return try planner.plan()
        } catch let WinnowError.refused(message) {
            throw WinnowError.refused("\(job.schema?.value ?? "schema"): \(message)")
        }
    }
}
