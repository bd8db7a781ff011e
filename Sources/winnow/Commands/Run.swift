import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Deduplicate as the jobs say, in batches with a commit after each.",
        discussion: """
            Migrates, seeds and deduplicates; every batch is one transaction, so a killed run loses nothing and the next run finishes the job. Review with `winnow plan` first.

            A SQLite file keeps its journal mode; a job with `sqlite: {journal_mode: wal}` switches it to WAL.

            Examples:
              winnow run jobs/contacts.yaml
              winnow run jobs/contacts.yaml --quiet --wait 60 --max-duration 300
              winnow run jobs/contacts.yaml --quiet --format json >> winnow.jsonl
              winnow run jobs/contacts.yaml --plan reviewed.plan
            """)

    enum Help: CommandHelp {
        static var quiet: String {
            "Print nothing on success; errors still go to standard error, in full. With --format json: only the summary line (no batch lines)."
        }
        static var verbose: String { "Print the per-rule detail and each phase's time (with --format json: a line per phase)." }
    }

    @OptionGroup var options: CommandOptions<Help>
    @OptionGroup var jobOptions: JobOptions
    @OptionGroup var fleet: FleetFlags
    @Flag(name: .long, help: "Write nothing; the same as plan.") var dryRun = false
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Wait up to SECONDS for the database instead of exiting 75: for another run's lock, and for every lock another connection holds on a SQLite file (a write transaction, BEGIN EXCLUSIVE, a checkpoint), which is otherwise waited for 5 s.",
            valueName: "seconds"))
    var wait: Double?
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Stop cleanly after the batch in flight once SECONDS have passed (status 'stopped', exit 0); the next run continues.",
            valueName: "seconds"))
    var maxDuration: Double?
    @Option(
        name: .customLong("plan"),
        help: ArgumentHelp(
            "Apply exactly the plan saved by plan --save FILE; refuse (exit 65, nothing changed) if anything it depends on changed.",
            valueName: "file"))
    var planFile: String?
    @Argument(help: ArgumentHelp("Job files, run in order.", valueName: "job")) var jobs: [String]

    func validate() throws {
        if let wait, wait < 0 || !wait.isFinite { throw ValidationError("--wait takes a number of seconds, 0 or more") }
        if planFile != nil, jobs.count != 1 { throw ValidationError("--plan applies one saved plan: name exactly one job") }
        if planFile != nil, dryRun { throw ValidationError("--plan and --dry-run do not go together: the plan is the dry run") }
        if let maxDuration, maxDuration <= 0 || !maxDuration.isFinite {
            throw ValidationError("--max-duration takes a number of seconds greater than 0")
        }
    }

    func run() throws {
        try Console.guarded(options) {
            let loaded = try jobs.map { try JobLoader.load(path: $0) }
            let approved = try planFile.map { try SavedPlan.load(path: $0).fingerprints }
            let started = Date()
            var code: Int32 = 0
            // --wait covers another connection's lock on a SQLite file too; a terminal shows a wait that lasts.
            let backend = BackendRouter(wait: wait, onWait: { Progress.shared.busy($0) })
            Progress.shared.waitLimit = backend.waitLimit
            for job in loaded {
                let stores = try options.stores(for: job)
                var runOptions = runOptions(options, jobOptions, dryRun: dryRun, wait: wait)
                // The limit covers the whole call: each job gets what is left of it.
                runOptions.maxDuration = maxDuration.map { max(0.001, $0 - Date().timeIntervalSince(started)) }
                runOptions.approvedPlan = approved
                if stores.count > 1 || fleet.given {
                    guard approved == nil else { throw WinnowError.usage("run --plan applies a plan saved for one database; name one") }
                    // After a failing store, the runs in flight stop after their batch (unless --continue-on-error).
                    runOptions.stop = StopSignal()
                    let shared = runOptions
                    let job = try JobRunner.readingTarget(job)
                    let result = FleetReport.run(
                        // JSON lines are data: --quiet leaves out the batch lines, not a store's summary.
                        stores, flags: fleet, format: options.format, quiet: options.quiet && options.format == .text, command: "run",
                        stop: runOptions.stop
                    ) { store in
                        var storeOptions = shared
                        storeOptions.database = store
                        // --max-duration covers the whole call: a store gets what is left when it starts.
                        storeOptions.maxDuration = maxDuration.map { max(0.001, $0 - Date().timeIntervalSince(started)) }
                        // json: each store's batch and migration events, tagged with its path.
                        let tagged = options.format == .json && !options.quiet
                        let summary = try JobRunner.run(job, options: storeOptions, backend: backend) { event in
                            if tagged, let line = Renderer.json(store: store, event: event) { Console.out(line) }
                        }
                        return (summary, 0)
                    }
                    code = FleetRunner.worst([code, result.code])
                    continue
                }
                runOptions.database = stores.first
                let summary = try JobRunner.run(job, options: runOptions, backend: backend, onEvent: eventPrinter(options))
                printSummary(summary, options)
                if summary.status == .stopped { break }
            }
            return code
        }
    }
}
