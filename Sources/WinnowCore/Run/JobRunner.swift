import Foundation

/// Carries out jobs: `run`, `plan` (a run whose rule executions write nothing) and `check`.
///
/// The pipeline of one job: load (the job and schema files, done by the caller) -> inspect
/// (the live schema) -> plan (``preflight(_:target:session:settings:)``: the migration and the
/// compiled rules, every refusal found before the first write) -> execute (migration steps, the
/// seed, the shared rule loop ``dedupe(_:mode:options:session:totals:onEvent:)``) -> record
/// (``RunRecord``). Every step talks to a ``DatabaseSession``; `backend` opens it.
public enum JobRunner {
    package static func databasePath(_ job: Job, _ options: RunOptions) throws -> String {
        if let path = options.database { return path }
        if let path = job.database?.value { return path }
        throw WinnowError.usage("\(job.file): the job names no database; add 'database:' to it or pass --database PATH")
    }

    package static func settings(_ job: Job, _ options: RunOptions) -> BatchSettings {
        var settings = job.batch
        if let size = options.batchSize { settings.size = size }
        return settings
    }

    /// The job's target schema, if it names one.
    package static func target(_ job: Job) throws -> SchemaModel? {
        guard let schema = job.schema else { return nil }
        guard FileManager.default.fileExists(atPath: schema.value) else {
            throw WinnowError.notFound("\(schema.location.map { "\($0): " } ?? "")schema: \(schema.value): no such file")
        }
        return try SchemaLoader.load(path: schema.value)
    }

    // MARK: plan

    /// What `run` would do, on a read-only connection: the same rule loop with executions that
    /// write nothing. Rules are evaluated against the database as it is now.
    public static func plan(
        _ job: Job, options: RunOptions = .init(), backend: any DatabaseBackend,
        onEvent: @escaping (RunEvent) -> Void = { _ in }
    ) throws -> RunSummary {
        let path = try databasePath(job, options)
        let target = try target(job)
        let started = Date()
        return try backend.withSession(path, mode: .readOnly) { session in
            var notes: [String] = []
            // What `run` refuses before its first write, `plan` refuses too; with a migration,
            // the rules are evaluated on the rows as it will leave them.
            let checked = try preflight(job, target: target, session: session, settings: settings(job, options))
            let migration = checked.steps
            if let target, migration.isEmpty { notes.append("schema: the database already matches version \(target.version)") }
            if !checked.sources.isEmpty { notes.append("dedupe counts are of the rows as the migration will leave them") }
            if let seed = job.seed {
                notes.append(
                    try SchemaVersions.isSeeded(session, name: seed.name.value)
                        ? "seed '\(seed.name.value)' was applied before; it is not applied again"
                        : "seed '\(seed.name.value)' would copy \(seed.tables.map(\.value).joined(separator: ", ")) from \(seed.from.value)"
                )
            }
            var totals = Counts()
            let summaries = try dedupe(
                checked.rules, mode: .plan, options: options, job: job, session: session, totals: &totals,
                onEvent: onEvent)
            let fingerprints =
                options.fingerprints
                ? try self.fingerprints(job, target: target, live: checked.live, session: session, rules: summaries) : nil
            var summary = RunSummary(
                command: .plan, status: .planned, job: job.file, database: DatabaseURL.redacted(path), dryRun: true, counts: totals,
                migrationSteps: migration.count, seconds: Date().timeIntervalSince(started), rules: summaries)
            summary.migration = migration
            summary.kept = checked.plan?.kept ?? []
            summary.notes = notes
            summary.fingerprints = fingerprints
            return summary
        }
    }

    /// What a plan depends on: the job file, the target schema, the live schema (as the
    /// preflight inspected it) and the rows each rule would delete (`rules` from a plan loop run
    /// with ``RunOptions/fingerprints``).
    package static func fingerprints(
        _ job: Job, target: SchemaModel?, live inspected: LiveSchema, session: any DatabaseSession, rules: [RuleSummary]
    ) throws -> SavedPlan.Fingerprints {
        let live = SchemaModel(live: inspected, version: try SchemaVersions.recorded(session)?.version ?? 0)
        return SavedPlan.Fingerprints(
            job: try SavedPlan.fingerprint(jobFile: job.file), targetSchema: try target.map(SchemaVersions.checksum(of:)) ?? "none",
            liveSchema: try SchemaVersions.checksum(of: live), duplicates: SavedPlan.duplicatesFingerprint(rules))
    }

    /// `run --plan`: refuses (65) unless the job, the schemas and the duplicates are still those
    /// of the approved plan. Called under the run lock, before the first write: the same checks
    /// and the same dry rule loop as `plan --save`.
    static func confirm(
        _ approved: SavedPlan.Fingerprints, job: Job, target: SchemaModel?, options: RunOptions, session: any DatabaseSession
    ) throws {
        let checked = try preflight(job, target: target, session: session, settings: settings(job, options))
        var dry = options
        dry.fingerprints = true
        dry.sampleLimit = 0
        var totals = Counts()
        let rules = try dedupe(checked.rules, mode: .plan, options: dry, job: job, session: session, totals: &totals, onEvent: { _ in })
        let differences = try fingerprints(job, target: target, live: checked.live, session: session, rules: rules)
            .differences(from: approved)
        guard differences.isEmpty else {
            throw WinnowError.refused(
                "the approved plan no longer matches: \(differences.joined(separator: "; ")); nothing was changed. "
                    + "Save and review a new plan (winnow plan --save FILE)")
        }
    }

    // MARK: run

    /// Deduplicates as the job says, one transaction per batch, recording the run in
    /// `winnow_runs` and (with `archive: true`) every change in `winnow_journal`.
    public static func run(
        _ job: Job, options: RunOptions = .init(), backend: any DatabaseBackend,
        onEvent: @escaping (RunEvent) -> Void = { _ in }
    ) throws -> RunSummary {
        if options.dryRun { return try plan(job, options: options, backend: backend, onEvent: onEvent) }
        let path = try databasePath(job, options)
        let target = try target(job)
        let started = Date()
        // A job with a schema may start from no database at all: it is created, then migrated.
        return try backend.withSession(path, mode: .readWrite(create: target != nil)) { session in
            let record = try RunRecord.begin(
                session, command: .run, job: job.file, archive: job.dedupe.contains(where: \.archive),
                wait: options.wait, onEvent: onEvent)
            let prepared = session.prepareForBatchWrites(job.sqlite)
            if let approved = options.approvedPlan {
                try record.guarding(totals: { nil }, started: started) {
                    try confirm(approved, job: job, target: target, options: options, session: session)
                }
            }
            var totals = Counts()
            var applied: [PlannedStep] = []
            var kept: [KeptObject] = []
            var notes: [String] = prepared.map { [$0] } ?? []
            let deadline = RunDeadline(at: options.maxDuration.map { started.addingTimeInterval($0) }, stop: options.stop)
            let summaries = try record.guarding(totals: { totals }, started: started) {
                try execute(
                    job, target: target, options: options, session: session, record: record, deadline: deadline,
                    totals: &totals, applied: &applied, kept: &kept, notes: &notes, onEvent: onEvent)
            }
            // Journal retention: the entries of runs older than `keep_days` go.
            if let days = job.journal?.keepDays.value,
                let note = try record.guarding(
                    totals: { totals }, started: started, { try JournalPruner.retain(session, days: days, current: record.id) })
            {
                notes.append(note)
            }
            let seconds = Date().timeIntervalSince(started)
            let status: RunStatus = deadline.reached ? .stopped : .completed
            var message: String?
            if deadline.reached, options.stop?.isRaised == true {
                message =
                    "stopped after the batch in flight: another store of the fleet failed; the next run continues where this one stopped"
                notes.append(message!)
            } else if deadline.reached, let limit = options.maxDuration {
                // The limit is what was left of the call's when this job began: to the millisecond.
                let shown = String(format: "%g", (limit * 1000).rounded() / 1000)
                message = "stopped after --max-duration \(shown) s; the next run continues where this one stopped"
                notes.append(message!)
            }
            try record.guarding(totals: { totals }, started: started) {
                try record.finish(status, totals: totals, seconds: seconds, message: message)
            }
            var summary = RunSummary(
                command: .run, runID: record.id, status: status, job: job.file, database: DatabaseURL.redacted(path),
                counts: totals, migrationSteps: applied.count, seconds: seconds, rules: summaries)
            summary.migration = applied
            summary.kept = kept
            summary.notes = notes
            return summary
        }
    }

    package static func execute(
        _ job: Job, target: SchemaModel?, options: RunOptions, session: any DatabaseSession, record: RunRecord,
        deadline: RunDeadline,
        totals: inout Counts, applied: inout [PlannedStep], kept: inout [KeptObject], notes: inout [String],
        onEvent: @escaping (RunEvent) -> Void
    ) throws -> [RuleSummary] {
        // 1. Migrate (unique indexes of deduplicated tables wait for their rules).
        var deferred: [MigrationStep] = []
        let settings = settings(job, options)
        func apply(_ step: MigrationStep) throws {
            let started = Date()
            let sql = try session.statements(for: step)
            let described = session.describe(step)
            let name = "migration step \(applied.count + 1): \(described.summary)"
            onEvent(.phaseStarted(name))
            if let remark = try session.apply(step, settings: settings, progress: { onEvent(.phaseProgress(name, done: $0, total: $1)) }) {
                notes.append(remark)
            }
            onEvent(.phaseFinished(name, seconds: Date().timeIntervalSince(started)))
            let planned = PlannedStep(summary: described.summary, sql: sql, rebuildsTable: described.rebuildsTable)
            applied.append(planned)
            try record.record(migrationSteps: applied.count)
            onEvent(.migrationStep(index: applied.count, step: planned, seconds: Date().timeIntervalSince(started)))
        }
        // Everything the job can be refused for is checked before the first write.
        let plan = try preflight(job, target: target, session: session, settings: settings).plan
        kept = plan?.kept ?? []
        // The old rows a finished cut-over set aside, left by a killed run.
        try session.finishInterrupted(.retired, settings: settings)
        if let plan {
            for step in plan.steps {
                if step.waitsForDedupe {
                    deferred.append(step)
                    continue
                }
                try apply(step)
            }
        }
        // An interrupted rebuild that this run did not resume (the target changed) is undone.
        try session.finishInterrupted(.unfinishedRebuild, settings: settings)
        // 2. Seed once.
        var seeded = false
        if let seed = job.seed {
            let outcome = try session.seed(seed, runID: record.id, checkingAgainst: nil)
            seeded = outcome.seeded
            notes.append(
                outcome.seeded
                    ? "seed '\(seed.name.value)': \(outcome.rows) rows copied"
                    : "seed '\(seed.name.value)' was applied before; not applied again")
        }
        // 3. Deduplicate, against the schema as the migration left it.
        let rules = try compile(job, session)
        let summaries: [RuleSummary]
        do {
            summaries = try dedupe(
                rules, mode: .run(record), options: options, job: job, session: session, deadline: deadline, totals: &totals,
                onEvent: onEvent)
        } catch WinnowError.refused(let message) where !applied.isEmpty || seeded || totals.batches > 0 {
            // A rule refused at its turn (its table as the steps before it left it): those
            // steps stay committed, and the message must not say that nothing changed.
            throw WinnowError.refused(Self.refusedAfterCommits(message, steps: applied.count, seeded: seeded, batches: totals.batches))
        }
        // A run stopped by --max-duration leaves duplicates for the next run: the unique
        // indexes that wait for them, and the version, wait too.
        if deadline.reached { return summaries }
        // 4. The unique indexes that keep the duplicates out, then the version.
        for step in deferred { try apply(step) }
        if let target {
            try session.writeTransaction {
                try SchemaVersions.record(
                    session, version: target.version, checksum: try SchemaVersions.checksum(of: target),
                    runID: record.id)
            }
        }
        return summaries
    }

    /// The message of a refusal that came after the run had committed something.
    package static func refusedAfterCommits(_ message: String, steps: Int, seeded: Bool, batches: Int) -> String {
        var done: [String] = []
        if steps > 0 { done.append("\(steps) migration step(s)") }
        if seeded { done.append("the seed") }
        if batches > 0 { done.append("\(batches) batch(es)") }
        let refusal = message.hasSuffix("; nothing was changed") ? String(message.dropLast("; nothing was changed".count)) : message
        return "\(refusal); this rule changed nothing, but what the run did before it stays committed (\(done.joined(separator: ", ")))"
    }

    package static func compile(_ job: Job, _ session: any DatabaseSession) throws -> [CompiledRule] {
        let schema = try session.inspect()
        return try job.dedupe.map { try RuleCompiler.compile($0, schema: schema, dialect: session.dialect) }
    }
}
