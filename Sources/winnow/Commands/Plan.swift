import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore

struct Plan: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what run would do, on a read-only connection.",
        discussion: """
            Each migration step with its SQL, the seed, and per rule the duplicate groups (the first 20; --verbose for all), the rows to delete, the winners to update and the references to re-point. Nothing is written; a job run would refuse is refused here too (exit 65).

            Examples:
              winnow plan jobs/contacts.yaml
              winnow plan jobs/contacts.yaml --database copy.sqlite --verbose
              winnow plan jobs/contacts.yaml --format json | jq .rules
              winnow plan jobs/contacts.yaml --save reviewed.plan
              winnow run jobs/contacts.yaml --plan reviewed.plan   # applies exactly that
            """)

    enum Help: CommandHelp {
        static var quiet: String { "Print only errors (with --format json: the plan, as always)." }
        static var verbose: String { "List every duplicate group (default: the first 20 per rule) and each phase's time." }
    }

    @OptionGroup var options: CommandOptions<Help>
    @OptionGroup var jobOptions: JobOptions
    @OptionGroup var fleet: FleetFlags
    @Option(
        name: .customLong("save"),
        help: ArgumentHelp(
            "Also write the plan, with fingerprints of the job, the schemas and the duplicates, to FILE (for run --plan).",
            valueName: "file"))
    var saveTo: String?
    @Argument(help: "The job file.") var job: String

    func run() throws {
        try Console.guarded(options) {
            let loaded = try JobLoader.load(path: job)
            var runOptions = runOptions(options, jobOptions)
            let stores = try options.stores(for: loaded)
            if stores.count > 1 || fleet.given {
                guard saveTo == nil else { throw WinnowError.usage("plan --save saves the plan of one database; name one") }
                return planFleet(try JobRunner.readingTarget(loaded), stores: stores, runOptions: runOptions)
            }
            runOptions.database = stores.first
            runOptions.fingerprints = saveTo != nil
            let summary = try JobRunner.plan(loaded, options: runOptions, backend: BackendRouter(), onEvent: eventPrinter(options))
            if let saveTo, let fingerprints = summary.fingerprints {
                let saved = SavedPlan(job: job, database: summary.database, createdAt: Bookkeeping.timestamp(), fingerprints: fingerprints)
                try saved.write(to: saveTo, plan: summary)
            }
            printSummary(summary, options)
            if let saveTo, !options.quiet, options.format == .text {
                Console.out("saved to \(saveTo); apply exactly this plan with: winnow run \(job) --plan \(saveTo)")
            }
            return 0
        }
    }

    /// `plan` over a fleet: every store planned (read-only), then the stores grouped by their
    /// live schema, so one review covers every store in the same state: per group the plan of
    /// its first store, and per store what would change.
    func planFleet(_ job: Job, stores: [String], runOptions: RunOptions) -> Int32 {
        var planOptions = runOptions
        planOptions.fingerprints = true
        planOptions.sampleLimit = options.verbose ? nil : 3
        let shared = planOptions
        // (Text shows the groups of each schema group's first store only.)
        let plans = FleetPlans(stores: stores)
        let text = options.format == .text && !options.quiet
        let result = FleetReport.run(
            // (JSON: each store's plan, then the fleet's; text: the report below.)
            stores, flags: fleet, format: options.format == .json ? .json : nil, quiet: false, command: "plan",
            heard: { outcome in if text { plans.heard(outcome) } }
        ) { store in
            var storeOptions = shared
            storeOptions.database = store
            return (try JobRunner.plan(job, options: storeOptions, backend: BackendRouter()), 0)
        }
        guard text else { return result.code }
        Console.lines { line in Renderer.fleetPlan(result.outcomes, plans: plans.plans, line: line) }
        Console.out(Renderer.fleetTotal(result.outcomes, exitCode: result.code, seconds: result.seconds))
        return result.code
    }
}
