import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore
import WinnowSQLite

struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Undo one run's deletes and updates from its journal.",
        discussion: """
            Puts back the rows the run deleted and the values it changed, in one transaction. Schema
            changes are never undone (a database is never downgraded); a run that changed no rows has
            nothing to restore and is refused.

            Examples:
              winnow restore --database app.sqlite --run 12
              winnow restore jobs/contacts.yaml --run 12
            """)

    @OptionGroup var options: CommonOptions
    @Option(name: .customLong("run"), help: "The run to undo (see winnow history).") var runID: Int64
    @Option(name: .long, help: "Wait up to SECONDS for another run's lock instead of exiting 75.") var wait: Double?
    @Argument(help: "A job file naming the database (instead of --database).") var job: String?

    func run() throws {
        try Console.guarded(options) {
            let database = try options.database(job: job, command: "restore")
            let summary = try RestoreRunner.restore(database: database, runID: runID, wait: wait, backend: BackendRouter())
            printSummary(summary, options)
            return 0
        }
    }
}
