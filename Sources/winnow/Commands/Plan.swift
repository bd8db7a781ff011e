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
            """)

    @OptionGroup var options: CommonOptions
    @OptionGroup var jobOptions: JobOptions
    @Argument(help: "The job file.") var job: String

    func run() throws {
        try Console.guarded(options) {
            let loaded = try JobLoader.load(path: job)
            let summary = try JobRunner.plan(loaded, options: runOptions(options, jobOptions), onEvent: eventPrinter(options))
            printSummary(summary, options)
            return 0
        }
    }
}
