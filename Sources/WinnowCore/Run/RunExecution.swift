import Foundation

/// One `run` of a job on an open session: what it was given, and what it has done so far
/// (the run's record reads the totals if the run fails midway). The stages, in order:
/// migrate (unique indexes of deduplicated tables wait for their rules), seed once,
/// deduplicate against the schema as the migration left it, then the waiting indexes and the
/// schema version.
final class RunExecution {
    let job: Job
    let target: SchemaModel?
    let options: RunOptions
    let session: any DatabaseSession
    let record: RunRecord
    let deadline: RunDeadline
    let onEvent: (RunEvent) -> Void
    let settings: BatchSettings

    /// Counts of the batches committed so far.
    private(set) var totals = Counts()
    /// The migration steps applied so far.
    private(set) var applied: [PlannedStep] = []
    /// What the schema file does not mention and the migration keeps.
    private(set) var kept: [KeptObject] = []
    /// Remarks for the summary.
    var notes: [String]

    init(
        job: Job, target: SchemaModel?, options: RunOptions, session: any DatabaseSession, record: RunRecord, deadline: RunDeadline,
        notes: [String], onEvent: @escaping (RunEvent) -> Void
    ) {
        self.job = job
        self.target = target
        self.options = options
        self.session = session
        self.record = record
        self.deadline = deadline
        self.notes = notes
        self.onEvent = onEvent
        self.settings = JobRunner.settings(job, options)
    }

    /// Carries the run out; returns each rule's summary.
    func execute() throws -> [RuleSummary] {
        // 1. Migrate (unique indexes of deduplicated tables wait for their rules).
        var deferred: [MigrationStep] = []
        func apply(_ step: MigrationStep) throws {
            let started = Date()
            let sql = try session.statements(for: step)
            let described = session.describe(step)
            let name = "migration step \(applied.count + 1): \(described.summary)"
            onEvent(.phaseStarted(name))
            if let remark = try session.apply(
                step, settings: settings, progress: { [onEvent] in onEvent(.phaseProgress(name, done: $0, total: $1)) })
            {
                notes.append(remark)
            }
            onEvent(.phaseFinished(name, seconds: Date().timeIntervalSince(started)))
            let planned = PlannedStep(summary: described.summary, sql: sql, rebuildsTable: described.rebuildsTable)
            applied.append(planned)
            try record.record(migrationSteps: applied.count)
            onEvent(.migrationStep(index: applied.count, step: planned, seconds: Date().timeIntervalSince(started)))
        }
        // Everything the job can be refused for is checked before the first write.
        let plan = try JobRunner.preflight(job, target: target, session: session, settings: settings, options: options).plan
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
        let rules = try JobRunner.compile(job, session)
        try JobRunner.refuseRowSecurity(rules, options: options)
        let summaries: [RuleSummary]
        do {
            summaries = try JobRunner.dedupe(
                rules, mode: .run(record), options: options, job: job, session: session, deadline: deadline, totals: &totals,
                onEvent: onEvent)
        } catch WinnowError.guardRefused(var refusal) where !applied.isEmpty || seeded || totals.batches > 0 {
            // A rule refused at its turn (its table as the steps before it left it): those
            // steps stay committed, and the message must not say that nothing changed.
            if !applied.isEmpty { refusal.committed.append("\(applied.count) migration step(s)") }
            if seeded { refusal.committed.append("the seed") }
            if totals.batches > 0 { refusal.committed.append("\(totals.batches) batch(es)") }
            throw WinnowError.guardRefused(refusal)
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
}
