import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Work with schemas.",
        subcommands: [Inspect.self])

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the live schema as a schema file.")
        @OptionGroup var options: CommonOptions

        func run() throws {
            try Console.guarded(options) {
                guard let database = options.database else { throw WinnowError.usage("schema inspect needs --database PATH") }
                Console.out(try SchemaPrinter.inspect(database: database))
                return 0
            }
        }
    }
}
