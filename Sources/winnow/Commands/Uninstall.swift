import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore

struct Uninstall: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove everything winnow keeps in a database; user tables and rows are not touched.",
        discussion: """
            Removes winnow's tables (history, journal, lock, schema version, seed markers, change log), the change-tracking triggers of incremental rules and, on PostgreSQL, winnow's trigger functions and its schema, in one transaction under the run lock: while a run or restore holds it, uninstall exits 75 and removes nothing. No run can be restored afterwards.

            --dry-run lists what would be removed and removes nothing. Otherwise uninstall asks for confirmation on a terminal; from a script, or to skip the question, pass --yes (without it, and without a terminal to ask on, it exits 64 and removes nothing).

            Examples:
              winnow uninstall --database app.sqlite --dry-run
              winnow uninstall --database app.sqlite --yes
              winnow uninstall --database postgresql://app@db/app --yes --format json
            """)

    enum Help: CommandHelp {
        static var database: String { "Database file or postgresql:// URL (instead of a job's 'database:')." }
        static var quiet: String { "Print nothing on success; errors still go to standard error (with --format json: the report line)." }
        static var verbose: String { "No more detail than without it." }
    }

    @OptionGroup var options: CommandOptions<Help>
    @Flag(name: .long, help: "List what would be removed; remove nothing.") var dryRun = false
    @Flag(name: .long, help: "Remove without asking (for scripts).") var yes = false
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
            let database = try options.database(job: job, command: "uninstall")
            if !dryRun && !yes {
                guard isatty(STDIN_FILENO) == 1 else {
                    throw WinnowError.usage(
                        "uninstall removes winnow's history and journal (no run can be restored afterwards); pass --yes to confirm, or --dry-run to list what it would remove"
                    )
                }
                let planned = try Uninstaller.uninstall(database: database, dryRun: true, backend: BackendRouter())
                Console.out(Renderer.text(planned, asking: true))
                guard !planned.objects.isEmpty else { return 0 }
                FileHandle.standardError.write(Data("Remove these? [y/N] ".utf8))
                guard let answer = readLine(), ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased()) else {
                    Console.err("nothing removed")
                    return 0
                }
            }
            let report = try Uninstaller.uninstall(
                database: database, dryRun: dryRun, wait: wait, backend: BackendRouter(wait: wait))
            guard options.printsResult else { return 0 }
            Console.out(options.format == .json ? Renderer.json(report) : Renderer.text(report))
            return 0
        }
    }
}
