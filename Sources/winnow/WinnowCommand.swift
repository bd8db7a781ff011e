import ArgumentParser
import Foundation
import WinnowCore

@main
struct Winnow: ParsableCommand {
    static func main() {
        // A file-size limit (ulimit -f) must end in a clean I/O error (exit 74), not a signal.
        signal(SIGXFSZ, SIG_IGN)
        // A closed pipe (winnow ... | head) is an error on write, not a signal.
        signal(SIGPIPE, SIG_IGN)
        Self.main(nil)
    }

    /// `winnow` alone: the help, on standard error, and exit 64 (a command is missing).
    func run() throws {
        Console.err(Winnow.helpMessage())
        throw ExitCode(64)
    }

    static let configuration = CommandConfiguration(
        commandName: "winnow",
        abstract: "Deduplicates and migrates SQLite databases and PostgreSQL from declarative YAML jobs.",
        discussion: """
            A database is a SQLite file, a quoted glob of files (a fleet), or a PostgreSQL URL (postgresql://USER@HOST:PORT/DBNAME). Start with `winnow init --database PATH` for a starter job, review it with `winnow plan JOB` (read-only), then `winnow run JOB`; `winnow check JOB` is the CI gate. Every command's --help has examples.

            Exit codes: 0 done, 1 check found something, 64 usage, 65 invalid file or refused change, 66 missing database or unreachable server, 74 I/O error, 75 locked, 70 internal error.
            """,
        version: "0.1.0",
        subcommands: [
            Init.self, Validate.self, Plan.self, Run.self, Check.self, SchemaCommand.self, HistoryCommand.self, Show.self, Restore.self,
            Prune.self, Uninstall.self,
        ]
    )
}

extension OutputFormat: ExpressibleByArgument {}
