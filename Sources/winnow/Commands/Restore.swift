import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Undo one run's deletes and updates from its journal.")

    @OptionGroup var options: CommonOptions
    @Option(name: .customLong("run"), help: "The run to undo (see winnow history).") var runID: Int64
    @Option(name: .long, help: "Wait up to SECONDS for another run's lock instead of exiting 75.") var wait: Double?

    func run() throws {
        try Console.guarded(options) {
            guard let database = options.database else { throw WinnowError.usage("restore needs --database PATH") }
            let summary = try Restorer.restore(database: database, runID: runID, wait: wait)
            printSummary(summary, options)
            return 0
        }
    }
}
