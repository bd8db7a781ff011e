import ArgumentParser
import Foundation
import WinnowCore

/// What the common options mean for one command, for its `--help`: each command says what
/// `--quiet` and `--verbose` do for it, and whether `--database` takes one store or many.
protocol CommandHelp {
    static var database: String { get }
    static var quiet: String { get }
    static var verbose: String { get }
}

extension CommandHelp {
    static var database: String {
        "Database file, postgresql:// URL, or a quoted glob ('tenants/*.sqlite'); repeat for several. Overrides the job's 'database:'."
    }
    static var quiet: String { "Print only errors (with --format json: the result, without progress lines)." }
    static var verbose: String { "Print more detail." }
}

/// The help of a command that does not describe its own.
enum GeneralHelp: CommandHelp {}

/// The common options with the general help.
typealias CommonOptions = CommandOptions<GeneralHelp>

/// Options every command takes; `Help` says what they mean for the command.
struct CommandOptions<Help: CommandHelp>: ParsableArguments {
    @Option(name: .customLong("database"), help: ArgumentHelp(Help.database, valueName: "database"))
    var databaseItems: [String] = []

    @Option(name: .long, help: ArgumentHelp("A file listing databases, one per line ('-': standard input).", valueName: "file"))
    var databasesFrom: String?

    /// The one database of a single-store command (the first named).
    var database: String? {
        get { databaseItems.first }
        set { databaseItems = newValue.map { [$0] } ?? [] }
    }

    @Option(name: .customLong("format"), help: "Output format: text for people, json for programs (one object per line).")
    var commonFormat: CommonFormat = .text

    /// The output format (`check` sets its own, which may be junit or github).
    var format: OutputFormat {
        get { commonFormat == .json ? .json : .text }
        set { commonFormat = newValue == .json ? .json : .text }
    }

    @Flag(name: .long, help: ArgumentHelp(Help.quiet))
    var quiet = false

    @Flag(name: .long, help: ArgumentHelp(Help.verbose))
    var verbose = false

    /// Whether the command prints its result: always in JSON (lines for programs, never
    /// chatter), in text unless `--quiet`.
    var printsResult: Bool { !quiet || format == .json }
}

/// The formats every command prints (`check` also takes junit and github).
enum CommonFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

extension CommandOptions {
    /// Every store named by `--database` (globs expanded) and `--databases-from`; empty when
    /// neither was given.
    func namedStores() throws -> [String] {
        var items = databaseItems
        if let list = databasesFrom {
            let text: String
            if list == "-" {
                text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                guard let contents = FileManager.default.contents(atPath: list) else {
                    throw WinnowError.notFound("--databases-from \(list): no such file")
                }
                text = String(decoding: contents, as: UTF8.self)
            }
            items += StoreList.parse(list: text)
        }
        return try StoreList.expand(items)
    }

    /// The stores a job runs on: the named ones, else the job's `database:` (a path or a glob).
    func stores(for job: Job) throws -> [String] {
        let named = try namedStores()
        if !named.isEmpty { return named }
        guard let database = job.database?.value else {
            throw WinnowError.usage("\(job.file): the job names no database; add 'database:' to it or pass --database PATH")
        }
        return try StoreList.expand([database])
    }

    /// A command that works on one database: more than one named is a usage error.
    func single(_ command: String) throws -> String? {
        let named = try namedStores()
        guard named.count <= 1 else { throw Self.oneAtATime(command, named.count) }
        return named.first
    }

    static func oneAtATime(_ command: String, _ count: Int) -> WinnowError {
        .usage("\(command) works on one database at a time (\(count) named); loop over them in the shell")
    }

    /// The databases of a command that takes a job file instead of `--database`
    /// (`winnow history jobs/contacts.yaml`): the named ones, else the job's.
    func databases(job: String?, command: String) throws -> [String] {
        if let job, !FileManager.default.fileExists(atPath: job) {
            throw WinnowError.usage("\(command): '\(job)' is not a job file (no such file); name a job file or pass --database PATH")
        }
        let named = try namedStores()
        if !named.isEmpty { return named }
        guard let job else { throw WinnowError.usage("\(command) needs --database PATH (or a job file that names its database)") }
        return try stores(for: JobLoader.load(path: job))
    }

    /// The one database of such a command.
    func database(job: String?, command: String) throws -> String {
        let databases = try databases(job: job, command: command)
        guard databases.count == 1 else { throw Self.oneAtATime(command, databases.count) }
        return databases[0]
    }
}
