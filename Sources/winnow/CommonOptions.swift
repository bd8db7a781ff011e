import ArgumentParser
import Foundation
import WinnowCore

/// Options every command takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: "Database file; overrides the job's 'database:'.")
    var database: String?

    @Option(name: .customLong("format"), help: "Output format: text or json.")
    var commonFormat: CommonFormat = .text

    /// The output format (`check` sets its own, which may be junit or github).
    var format: OutputFormat {
        get { commonFormat == .json ? .json : .text }
        set { commonFormat = newValue == .json ? .json : .text }
    }

    @Flag(name: .long, help: "Print only errors.")
    var quiet = false

    @Flag(name: .long, help: "Print more detail (plan: every duplicate group).")
    var verbose = false
}

/// The formats every command prints (`check` also takes junit and github).
enum CommonFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

extension CommonOptions {
    /// The database a command works on: `--database`, else the `database:` of the job file
    /// given instead (`winnow history jobs/contacts.yaml`).
    func database(job: String?, command: String) throws -> String {
        if let job, !FileManager.default.fileExists(atPath: job) {
            throw WinnowError.usage("\(command): '\(job)' is not a job file (no such file); name a job file or pass --database PATH")
        }
        if let database { return database }
        if let job {
            let loaded = try JobLoader.load(path: job)
            if let path = loaded.database?.value { return path }
            throw WinnowError.usage("\(job): the job names no database; pass --database PATH")
        }
        throw WinnowError.usage("\(command) needs --database PATH (or a job file that names its database)")
    }
}
