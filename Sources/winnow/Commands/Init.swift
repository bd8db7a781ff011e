import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a starter schema file and a starter job from a live database (read-only).",
        discussion: """
            Per table: candidate keys (columns named like identifiers, a person's name, a lookup table's name) with the duplicate groups each finds as stored and after trim + lowercase, a winner guess, and the references found (declared foreign keys; Core Data's Z-columns). Tables without duplicates get a commented-out rule. Never overwrites a file (exit 65).

            Examples:
              winnow init --database app.sqlite    # jobs/app.yaml, schemas/app.yaml
              winnow init --database app.sqlite --job ci/job.yaml --schema ci/schema.yaml
              winnow plan jobs/app.yaml            # then review what it would do
            """)

    enum Help: CommandHelp {
        static var database: String { "The database file or postgresql:// URL to inspect (read-only)." }
        static var quiet: String { "Print only errors; the files are written all the same (with --format json: what was written)." }
        static var verbose: String { "No more detail than without it: the starter job explains each rule." }
    }

    @OptionGroup var options: CommandOptions<Help>
    @Option(
        name: .long,
        help: ArgumentHelp("The job file to write (default: jobs/NAME.yaml, NAME from the database file).", valueName: "file"))
    var job: String?
    @Option(name: .long, help: ArgumentHelp("The schema file to write (default: schemas/NAME.yaml).", valueName: "file"))
    var schema: String?

    func run() throws {
        try Console.guarded(options) {
            guard let database = try options.single("init") else { throw WinnowError.usage("init needs --database PATH") }
            let name = DatabaseURL.shortName(database)
            let result = try Starter.write(
                database: database, jobPath: job ?? "jobs/\(name).yaml", schemaPath: schema ?? "schemas/\(name).yaml",
                backend: BackendRouter())
            guard options.printsResult else { return 0 }
            if options.format == .json {
                Console.out(Renderer.json(starter: result))
            } else {
                Console.out(Renderer.text(starter: result))
            }
            return 0
        }
    }
}
