import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Work with schemas.",
        subcommands: [Inspect.self])

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the live schema as a schema file.",
            discussion: """
                Feeding the output back as the job's schema shows no drift.

                Examples:
                  winnow schema inspect --database app.sqlite > schemas/app.yaml
                  winnow schema inspect jobs/contacts.yaml --format json
                """)
        enum Help: CommandHelp {
            static var database: String { "The database file or postgresql:// URL to inspect (instead of a job's 'database:')." }
            static var quiet: String { "Changes nothing: the schema is the result and is always printed." }
            static var verbose: String { "No more detail than without it: the schema is complete." }
        }

        @OptionGroup var options: CommandOptions<Help>
        @Argument(help: "A job file naming the database (instead of --database).") var job: String?

        func run() throws {
            try Console.guarded(options) {
                let database = try options.database(job: job, command: "schema inspect")
                let model = try SchemaPrinter.model(database: database, backend: BackendRouter())
                Console.out(options.format == .json ? SchemaPrinter.json(model) : try SchemaPrinter.render(model))
                return 0
            }
        }
    }
}
