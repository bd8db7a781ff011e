import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "What one run changed: per rule the groups, deleted and updated rows, re-pointed children.",
        discussion: """
            Lists, per rule, each duplicate group with its key values, the row kept and the rows deleted, the kept row's merged columns, and the child rows re-pointed or deleted, as the run's journal has them; a changed value shows as it was before the run and as it is now (what restore would put back). Text lists the first \(Show.groupsListed) groups of each rule (--verbose: all); JSON lists all, with every deleted row's values. A run with archive: false kept no journal: show gives its counts only. So does a run whose journal was pruned.

            Examples:
              winnow show --database app.sqlite --run 12
              winnow show jobs/contacts.yaml --run 12 --format json
            """)

    /// Groups listed per rule in text without --verbose.
    static let groupsListed = 10

    enum Help: CommandHelp {
        static var database: String { "Database file or postgresql:// URL (instead of a job's 'database:')." }
        static var quiet: String { "Print only errors (with --format json: the report, as always)." }
        static var verbose: String { "List every group of every rule (without it: the first \(groupsListed) of each)." }
    }

    @OptionGroup var options: CommandOptions<Help>
    @Option(name: .customLong("run"), parsing: .unconditional, help: ArgumentHelp("The run to show (see winnow history).", valueName: "id"))
    var runID: Int64
    @Argument(help: "A job file naming the database (instead of --database).") var job: String?

    func run() throws {
        try Console.guarded(options) {
            let database = try options.database(job: job, command: "show")
            // Text lists the first groups of each rule; --verbose and JSON every one.
            let limit = options.verbose || options.format == .json ? nil : Self.groupsListed
            let report = try History.show(database: database, runID: runID, groupLimit: limit, backend: BackendRouter())
            guard options.printsResult else { return 0 }
            if options.format == .json {
                Console.out { Renderer.json(report, write: $0) }
            } else {
                Console.out(Renderer.text(report))
            }
            return 0
        }
    }
}
