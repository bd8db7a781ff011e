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

    /// The job's target schema, if it names one: as read once for many stores
    /// (``readingTarget(_:)``), else read from its file now.
    package static func target(_ job: Job) throws -> SchemaModel? {
        if let read = job.readTarget { return read }
        guard let schema = job.schema else { return nil }
        guard FileManager.default.fileExists(atPath: schema.value) else {
            throw WinnowError.notFound("\(schema.location.map { "\($0): " } ?? "")schema: \(schema.value): no such file")
        }
        return try SchemaLoader.load(path: schema.value)
    }

    /// `job` with its target schema read, for a command over many stores: each store gets
    /// the same target, and a file that is missing or invalid stops the command once, before
    /// any store, instead of failing every store.
    public static func readingTarget(_ job: Job) throws -> Job {
        var read = job
        read.readTarget = try target(job)
        return read
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
            let checked = try preflight(job, target: target, session: session, settings: settings(job, options), options: options)
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

    /// What a plan depends on: the job file as it was loaded (``Job/digest``), the target
    /// schema, the live schema (as the preflight inspected it) and the rows each rule would
    /// delete (`rules` from a plan loop run with ``RunOptions/fingerprints``).
    package static func fingerprints(
        _ job: Job, target: SchemaModel?, live inspected: LiveSchema, session: any DatabaseSession, rules: [RuleSummary]
    ) throws -> SavedPlan.Fingerprints {
        let live = SchemaModel(live: inspected, version: try SchemaVersions.recorded(session)?.version ?? 0)
        return SavedPlan.Fingerprints(
            job: job.digest, targetSchema: try target.map(SchemaVersions.checksum(of:)) ?? "none",
            liveSchema: try SchemaVersions.checksum(of: live), duplicates: SavedPlan.duplicatesFingerprint(rules))
    }

    /// `run --plan`: refuses (65) unless the job, the schemas and the duplicates are still those
    /// of the approved plan. Called under the run lock, before the first write: the same checks
    /// and the same dry rule loop as `plan --save`.
    static func confirm(
        _ approved: SavedPlan.Fingerprints, job: Job, target: SchemaModel?, options: RunOptions, session: any DatabaseSession
    ) throws {
        let checked = try preflight(job, target: target, session: session, settings: settings(job, options), options: options)
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
            let deadline = RunDeadline(at: options.maxDuration.map { started.addingTimeInterval($0) }, stop: options.stop)
            let execution = RunExecution(
                job: job, target: target, options: options, session: session, record: record, deadline: deadline,
                notes: prepared.map { [$0] } ?? [], onEvent: onEvent)
            let summaries = try record.guarding(totals: { execution.totals }, started: started) { try execution.execute() }
            let totals = execution.totals
            var notes = execution.notes
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
                counts: totals, migrationSteps: execution.applied.count, seconds: seconds, rules: summaries)
            summary.migration = execution.applied
            summary.kept = execution.kept
            summary.notes = notes
            return summary
        }
    }

    package static func compile(_ job: Job, _ session: any DatabaseSession) throws -> [CompiledRule] {
        let schema = try session.inspect()
        return try job.dedupe.map { try RuleCompiler.compile($0, schema: schema, dialect: session.dialect) }
    }
}
