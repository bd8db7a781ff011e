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

/// Options of the commands that carry out jobs.
struct JobOptions: ParsableArguments {
    @Option(name: .long, help: "Duplicate groups per transaction; overrides batch.size.")
    var batchSize: Int?

    func validate() throws {
        if let size = batchSize, size < 1 { throw ValidationError("--batch-size must be at least 1") }
    }
}

func runOptions(_ common: CommonOptions, _ job: JobOptions, dryRun: Bool = false, wait: Double? = nil) -> RunOptions {
    RunOptions(
        database: common.database, batchSize: job.batchSize, dryRun: dryRun, wait: wait,
        sampleLimit: common.verbose ? nil : 20)
}

func eventPrinter(_ options: CommonOptions) -> (RunEvent) -> Void {
    Progress.shared.enabled = options.format == .text && !options.quiet && Console.stderrIsTerminal
    return { event in
        switch event {
        case let .batch(report):
            if options.format == .json, !options.quiet { Console.out(Renderer.json(report)) }
            Progress.shared.update(report)
        case let .migrationStep(index, step, seconds):
            if options.format == .json, !options.quiet { Console.out(Renderer.json(migrationStep: step, index: index, seconds: seconds)) }
        default:
            break
        }
    }
}

func printSummary(_ summary: RunSummary, _ options: CommonOptions) {
    Progress.shared.clear()
    guard !options.quiet else { return }
    Console.out(options.format == .json ? Renderer.json(summary) : Renderer.text(summary))
}

struct Plan: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show what run would do, on a read-only connection.")

    @OptionGroup var options: CommonOptions
    @OptionGroup var jobOptions: JobOptions
    @Argument(help: "The job file.") var job: String

    func run() throws {
        try Console.guarded(options) {
            let loaded = try JobLoader.load(path: job)
            let summary = try JobRunner.plan(loaded, options: runOptions(options, jobOptions), onEvent: eventPrinter(options))
            printSummary(summary, options)
            return 0
        }
    }
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Deduplicate as the jobs say, in batches with a commit after each.")

    @OptionGroup var options: CommonOptions
    @OptionGroup var jobOptions: JobOptions
    @Flag(name: .long, help: "Write nothing; the same as plan.") var dryRun = false
    @Option(name: .long, help: "Wait up to SECONDS for another run's lock instead of exiting 75.") var wait: Double?
    @Argument(help: "Job files, run in order.") var jobs: [String]

    func validate() throws {
        if let wait, wait < 0 || !wait.isFinite { throw ValidationError("--wait takes a number of seconds, 0 or more") }
    }

    func run() throws {
        try Console.guarded(options) {
            let loaded = try jobs.map { try JobLoader.load(path: $0) }
            for job in loaded {
                let summary = try JobRunner.run(
                    job, options: runOptions(options, jobOptions, dryRun: dryRun, wait: wait),
                    onEvent: eventPrinter(options))
                printSummary(summary, options)
            }
            return 0
        }
    }
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "CI gate: exit 1 when duplicates are left under the jobs' rules.")

    @Option(name: .long, help: "Database file; overrides the job's 'database:'.") var database: String?
    @Option(name: .long, help: "Output format: text, json or junit.") var format: OutputFormat = .text
    @Flag(name: .long, help: "Print only errors.") var quiet = false
    @Flag(name: .long, help: "Print more detail.") var verbose = false
    @Argument(help: "Job files.") var jobs: [String]

    func run() throws {
        var common = CommonOptions()
        common.database = database
        common.format = format == .junit ? .text : format
        common.quiet = quiet
        try Console.guarded(common) {
            let loaded = try jobs.map { try JobLoader.load(path: $0) }
            var summaries: [RunSummary] = []
            for job in loaded {
                let summary = try JobRunner.check(job, options: RunOptions(database: database, sampleLimit: 0))
                summaries.append(summary)
                if !quiet, format != .junit {
                    Console.out(format == .json ? Renderer.json(summary) : Renderer.text(summary))
                }
            }
            if format == .junit, !quiet { Console.out(Renderer.junit(summaries)) }
            return summaries.contains { $0.counts.groups > 0 || !$0.drift.isEmpty } ? ExitStatus.findings : ExitStatus.ok
        }
    }
}

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

struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "history", abstract: "List the runs recorded in a database, newest first.")

    @OptionGroup var options: CommonOptions
    @Option(name: .long, help: "Show at most N runs.") var limit: Int?

    func run() throws {
        try Console.guarded(options) {
            guard let database = options.database else { throw WinnowError.usage("history needs --database PATH") }
            let entries = try History.entries(database: database, limit: limit)
            guard !options.quiet else { return 0 }
            if options.format == .json {
                entries.forEach { Console.out(Renderer.json($0)) }
            } else {
                Console.out(Renderer.text(entries))
            }
            return 0
        }
    }
}

struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Undo one run's deletes and updates from its journal.")

    @OptionGroup var options: CommonOptions
    @Option(name: .customLong("run"), help: "The run to undo (see winnow history).") var runID: Int64
    @Option(name: .long, help: "Wait up to SECONDS for another run's lock instead of exiting 75.") var wait: Double?

    func run() throws {
        try Console.guarded(options) {
            guard let database = options.database else { throw WinnowError.usage("restore needs --database PATH") }
            let summary = try Restorer.restore(database: database, runID: runID, wait: wait)
            printSummary(summary, options)
            return 0
        }
    }
}
