import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

struct Plan: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what run would do, on a read-only connection.",
        discussion: """
            Each migration step with its SQL, the seed, and per rule the duplicate groups (the first 20;
            --verbose for all), the rows to delete, the winners to update and the references to re-point.
            Nothing is written; a job run would refuse is refused here too (exit 65).

            Examples:
              winnow plan jobs/contacts.yaml
              winnow plan jobs/contacts.yaml --database copy.sqlite --verbose
              winnow plan jobs/contacts.yaml --format json | jq .rules
              winnow plan jobs/contacts.yaml --save reviewed.plan
              winnow run jobs/contacts.yaml --plan reviewed.plan   # applies exactly that
            """)

    @OptionGroup var options: CommonOptions
    @OptionGroup var jobOptions: JobOptions
    @Option(
        name: .customLong("save"),
        help: "Also write the plan, with fingerprints of the job, the schemas and the duplicates, to FILE (for run --plan).")
    var saveTo: String?
    @Argument(help: "The job file.") var job: String

    func run() throws {
        try Console.guarded(options) {
            let loaded = try JobLoader.load(path: job)
            var runOptions = runOptions(options, jobOptions)
            runOptions.fingerprints = saveTo != nil
            let summary = try JobRunner.plan(loaded, options: runOptions, backend: BackendRouter(), onEvent: eventPrinter(options))
            if let saveTo, let fingerprints = summary.fingerprints {
                let saved = SavedPlan(
                    job: job, database: summary.database, createdAt: Bookkeeping.timestamp(), fingerprints: fingerprints,
                    summaryJSON: Renderer.json(summary, includeTimes: false))
                do {
                    try saved.encoded().write(toFile: saveTo, atomically: true, encoding: .utf8)
                } catch {
                    throw WinnowError.io("\(saveTo): cannot write the plan (\(error.localizedDescription))")
                }
            }
            printSummary(summary, options)
            if let saveTo, !options.quiet, options.format == .text {
                Console.out("saved to \(saveTo); apply exactly this plan with: winnow run \(job) --plan \(saveTo)")
            }
            return 0
        }
    }
}
