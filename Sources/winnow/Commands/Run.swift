import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Deduplicate as the jobs say, in batches with a commit after each.")

    @OptionGroup var options: CommonOptions
    @OptionGroup var jobOptions: JobOptions
    @Flag(name: .long, help: "Write nothing; the same as plan.") var dryRun = false
    @Option(name: .long, help: "Wait up to SECONDS for another run's lock instead of exiting 75.") var wait: Double?
    @Argument(help: "Job files, run in order.") var jobs: [String]

    func validate() throws {
        if let wait, wait < 0 || !wait.isFinite { throw ValidationError("--wait takes a number of seconds, 0 or more") }
    }

    func run() throws {
        try Console.guarded(options) {
            let loaded = try jobs.map { try JobLoader.load(path: $0) }
            for job in loaded {
                let summary = try JobRunner.run(
                    job, options: runOptions(options, jobOptions, dryRun: dryRun, wait: wait),
                    onEvent: eventPrinter(options))
                printSummary(summary, options)
            }
            return 0
        }
    }
}
