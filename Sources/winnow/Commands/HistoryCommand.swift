import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", abstract: "List the runs recorded in a database, newest first.",
        discussion: """
            Examples:
              winnow history --database app.sqlite
              winnow history jobs/contacts.yaml --limit 5
              winnow history --database app.sqlite --format json
            """)

    @OptionGroup var options: CommonOptions
    @Option(name: .long, help: "Show at most N runs.") var limit: Int?
    @Argument(help: "A job file naming the database (instead of --database).") var job: String?

    func run() throws {
        try Console.guarded(options) {
            let database = try options.database(job: job, command: "history")
            let entries = try History.entries(database: database, limit: limit, backend: BackendRouter())
            guard !options.quiet else { return 0 }
            if options.format == .json {
                entries.forEach { Console.out(Renderer.json($0)) }
            } else {
                Console.out(Renderer.text(entries))
            }
            return 0
        }
    }
}
