import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

struct Plan: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show what run would do, on a read-only connection.")

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
