import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore
import WinnowSQLite

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "What one run changed: per rule the groups, deleted and updated rows, re-pointed children.",
        discussion: """
            Examples:
              winnow show --database app.sqlite --run 12
              winnow show jobs/contacts.yaml --run 12 --format json
            """)

    enum Help: CommandHelp {
        static var database: String { "Database file or postgresql:// URL (instead of a job's 'database:')." }
        static var quiet: String { "Print only errors (with --format json: the report, as always)." }
        static var verbose: String { "No more detail than without it." }
    }

    @OptionGroup var options: CommandOptions<Help>
    @Option(name: .customLong("run"), parsing: .unconditional, help: ArgumentHelp("The run to show (see winnow history).", valueName: "id"))
    var runID: Int64
    @Argument(help: "A job file naming the database (instead of --database).") var job: String?

    func run() throws {
        try Console.guarded(options) {
            let database = try options.database(job: job, command: "show")
            let report = try History.show(database: database, runID: runID, backend: BackendRouter())
            guard options.printsResult else { return 0 }
            Console.out(options.format == .json ? Renderer.json(report) : Renderer.text(report))
            return 0
        }
    }
}
