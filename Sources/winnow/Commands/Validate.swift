import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate", abstract: "Parse and check job and schema files; no database is opened.")

    @OptionGroup var options: CommonOptions
    @Argument(help: "Job files.") var files: [String]

    func run() throws {
        try Console.guarded(options) {
            for file in files {
                let result = try Validator.validate(path: file)
                if !options.quiet {
                    Console.out(options.format == .json ? Renderer.jsonValid(file: file, result) : "\(file): ok (\(result.summary))")
                }
            }
            return 0
        }
    }
}
