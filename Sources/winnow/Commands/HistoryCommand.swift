import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "history", abstract: "List the runs recorded in a database, newest first.")

    @OptionGroup var options: CommonOptions
    @Option(name: .long, help: "Show at most N runs.") var limit: Int?

    func run() throws {
        try Console.guarded(options) {
            guard let database = options.database else { throw WinnowError.usage("history needs --database PATH") }
            let entries = try History.entries(database: database, limit: limit)
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
