import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore

struct Prune: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete old journal entries; a pruned run can no longer be restored.",
        discussion: """
            Deletes the journal (deleted rows and before-images) of the runs that finished more than DAYS days ago, or of one run, a few thousand entries per transaction, under the run lock. Each run goes whole: it is marked pruned first, so that restore refuses it from then on and history shows it so; a prune that is interrupted is finished by the next one. The runs stay in history with their counts. A job can do the same on every run with 'journal: {keep_days: N}'.

            Examples:
              winnow prune --database app.sqlite --older-than 30
              winnow prune --database app.sqlite --run 12
              winnow prune jobs/contacts.yaml --older-than 90 --format json
            """)

    enum Help: CommandHelp {
        static var database: String { "Database file or postgresql:// URL (instead of a job's 'database:')." }
        static var quiet: String { "Print nothing on success; errors still go to standard error (with --format json: the report line)." }
        static var verbose: String { "No more detail than without it." }
    }

    @OptionGroup var options: CommandOptions<Help>
    @Option(
        name: .customLong("older-than"), parsing: .unconditional,
        help: ArgumentHelp("Prune the runs that finished more than DAYS days ago.", valueName: "days"))
    var olderThan: Int?
    @Option(
        name: .customLong("run"), parsing: .unconditional,
        help: ArgumentHelp("Prune the journal of this run (see winnow history).", valueName: "id"))
    var runID: Int64?
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Wait up to SECONDS for the database instead of exiting 75: for another run's lock, and for every lock another connection holds on a SQLite file (otherwise 5 s).",
            valueName: "seconds"))
    var wait: Double?
    @Argument(help: "A job file naming the database (instead of --database).") var job: String?

    func validate() throws {
        guard (olderThan == nil) != (runID == nil) else {
            throw ValidationError("name what to prune: --older-than DAYS or --run ID (one of them)")
        }
        if let olderThan, olderThan < 0 { throw ValidationError("--older-than takes a number of days, 0 or more") }
        if let wait, wait < 0 || !wait.isFinite { throw ValidationError("--wait takes a number of seconds, 0 or more") }
    }

    func run() throws {
        try Console.guarded(options) {
            let database = try options.database(job: job, command: "prune")
            let selection: JournalPruner.Selection = runID.map { .run($0) } ?? .olderThan(days: olderThan ?? 0)
            let report = try JournalPruner.prune(
                database: database, selection: selection, wait: wait, backend: BackendRouter(wait: wait))
            guard options.printsResult else { return 0 }
            Console.out(options.format == .json ? Renderer.json(report) : Renderer.text(report))
            return 0
        }
    }
}
