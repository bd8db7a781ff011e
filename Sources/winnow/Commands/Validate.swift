import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate", abstract: "Parse and check job and schema files; no database is opened unless --database is given.",
        discussion: """
            With --database, job files are also checked against that database (read-only, no rows read): the migration to the job's schema, every rule's table and columns, the seed.

            Examples:
              winnow validate jobs/*.yaml schemas/*.yaml
              winnow validate jobs/contacts.yaml --database app.sqlite
            """)

    enum Help: CommandHelp {
        static var database: String { "Also check the job files against this database file or postgresql:// URL (read-only)." }
        static var quiet: String { "Print only errors (with --format json: a line per file, as always)." }
        static var verbose: String { "No more detail than without it: each file gets one line." }
    }

    @OptionGroup var options: CommandOptions<Help>
    @Argument(help: ArgumentHelp("Job and schema files.", valueName: "file")) var files: [String]

    func run() throws {
        try Console.guarded(options) {
            for file in files {
                let result = try Validator.validate(path: file)
                var checked = ""
                if let database = try options.single("validate"), case let .job(job, _) = result {
                    try JobRunner.validate(job, database: database, backend: BackendRouter())
                    checked = ", checked against \(database)"
                }
                if options.printsResult {
                    Console.out(
                        options.format == .json ? Renderer.jsonValid(file: file, result) : "\(file): ok (\(result.summary)\(checked))")
                }
            }
            return 0
        }
    }
}
