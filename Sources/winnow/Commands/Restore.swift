import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore

struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Undo one run's deletes and updates from its journal.",
        discussion: """
            Puts back the rows the run deleted and the values it changed, in one transaction. Schema changes are never undone (a database is never downgraded); a run that changed no rows has nothing to restore and is refused.

            Examples:
              winnow restore --database app.sqlite --run 12
              winnow restore jobs/contacts.yaml --run 12
            """)

    enum Help: CommandHelp {
        static var database: String { "Database file or postgresql:// URL (instead of a job's 'database:')." }
        static var quiet: String { "Print nothing on success; errors still go to standard error (with --format json: the summary line)." }
        static var verbose: String { "No more detail than without it." }
    }

    @OptionGroup var options: CommandOptions<Help>
    @Option(name: .customLong("run"), parsing: .unconditional, help: ArgumentHelp("The run to undo (see winnow history).", valueName: "id"))
    var runID: Int64
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Wait up to SECONDS for the database instead of exiting 75: for another run's lock, and for every lock another connection holds on a SQLite file (otherwise 5 s).",
            valueName: "seconds"))
    var wait: Double?
    @Argument(help: "A job file naming the database (instead of --database).") var job: String?

    func validate() throws {
        if let wait, wait < 0 || !wait.isFinite { throw ValidationError("--wait takes a number of seconds, 0 or more") }
    }

    func run() throws {
        try Console.guarded(options) {
            let database = try options.database(job: job, command: "restore")
            let summary = try RestoreRunner.restore(
                database: database, runID: runID, wait: wait, backend: BackendRouter(wait: wait))
            printSummary(summary, options)
            return 0
        }
    }
}
