import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

@main
struct Winnow: ParsableCommand {
    static func main() {
        // A file-size limit (ulimit -f) must end in a clean I/O error (exit 74), not a signal.
        signal(SIGXFSZ, SIG_IGN)
        // A closed pipe (winnow ... | head) is an error on write, not a signal.
        signal(SIGPIPE, SIG_IGN)
        Self.main(nil)
    }

    static let configuration = CommandConfiguration(
        commandName: "winnow",
        abstract: "Keeps SQLite databases clean: deterministic deduplication from declarative YAML jobs.",
        version: "0.1.0",
        subcommands: [Validate.self, Plan.self, Run.self, Check.self, SchemaCommand.self, HistoryCommand.self, Restore.self]
    )
}

extension OutputFormat: ExpressibleByArgument {}
