import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore

struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", abstract: "List the runs recorded in a database, newest first.",
        discussion: """
            Examples:
              winnow history --database app.sqlite
              winnow history jobs/contacts.yaml --limit 5
              winnow history --database app.sqlite --format json
            """)

    enum Help: CommandHelp {
        static var database: String {
            "Database file, postgresql:// URL, or a quoted glob ('tenants/*.sqlite'); repeat for several. Instead of a job's 'database:'."
        }
        static var quiet: String { "Print only errors (with --format json: the runs, as always)." }
        static var verbose: String { "No more detail than without it: every run is one line." }
    }

    @OptionGroup var options: CommandOptions<Help>
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Show at most N runs.", valueName: "n")) var limit: Int?
    @Argument(help: "A job file naming the database (instead of --database).") var job: String?

    func run() throws {
        try Console.guarded(options) {
            let databases = try options.databases(job: job, command: "history")
            for database in databases {
                let entries = try History.entries(database: database, limit: limit, backend: BackendRouter())
                guard options.printsResult else { continue }
                if options.format == .json {
                    // Over several stores every entry is tagged with its store.
                    entries.forEach { Console.out(databases.count > 1 ? Renderer.json(store: database, entry: $0) : Renderer.json($0)) }
                } else {
                    if databases.count > 1 { Console.out("== \(database)") }
                    Console.out(Renderer.text(entries))
                }
            }
            return 0
        }
    }
}
