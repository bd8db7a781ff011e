import ArgumentParser
import Foundation
import WinnowCore

/// Options every command takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: "Database file; overrides the job's 'database:'.")
    var database: String?

    @Option(name: .long, help: "Output format: text or json.")
    var format: OutputFormat = .text

    @Flag(name: .long, help: "Print only errors.")
    var quiet = false

    @Flag(name: .long, help: "Print more detail (plan: every duplicate group).")
    var verbose = false

    func validate() throws {
        if format == .junit { throw ValidationError("--format junit is only for check; use text or json") }
    }
}
