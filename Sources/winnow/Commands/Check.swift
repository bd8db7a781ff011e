import ArgumentParser
import Foundation
import WinnowBackends
import WinnowCore

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "CI gate: exit 1 when duplicates are left under the jobs' rules, or the schema drifted.",
        discussion: """
            Takes job files and folders of job files (every *.yaml and *.yml in the folder, in name order). The junit and github reports are printed even with --quiet.

            Examples:
              winnow check jobs/contacts.yaml
              winnow check jobs/ --database fixtures/app.sqlite --format junit > out.xml
              winnow check jobs/ --format github     # annotations at the failing lines
            """)

    @Option(
        name: .customLong("database"),
        help: ArgumentHelp(
            "Database file, postgresql:// URL, or a quoted glob ('fixtures/*.sqlite'); repeat for several. Overrides the jobs' 'database:'.",
            valueName: "database"))
    var databaseItems: [String] = []
    @Option(name: .long, help: ArgumentHelp("A file listing databases, one per line ('-': standard input).", valueName: "file"))
    var databasesFrom: String?
    @OptionGroup var fleet: FleetFlags
    @Option(name: .long, help: "Output format: text, json, junit or github.") var format: OutputFormat = .text
    @Flag(name: .long, help: "Print only what was found (one line per failing job; json: the failing jobs' objects) and errors.")
    var quiet = false
    @Flag(name: .long, help: "No more detail than without it; winnow plan JOB --verbose lists every duplicate group.") var verbose = false
    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Count duplicates in PostgreSQL tables under row-level security that the connection's role does not bypass "
                + "(it sees only some rows).")
    ) var allowRowSecurity = false
    @Argument(help: "Job files or folders of job files.") var jobs: [String]

    /// The job files named, folders expanded to their YAML files in name order.
    static func jobFiles(_ arguments: [String]) throws -> [String] {
        var files: [String] = []
        for argument in arguments {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory), isDirectory.boolValue else {
                files.append(argument)
                continue
            }
            let names = try FileManager.default.contentsOfDirectory(atPath: argument)
                .filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted()
            guard !names.isEmpty else { throw WinnowError.usage("\(argument): a folder without job files (*.yaml, *.yml)") }
            files += names.map { URL(fileURLWithPath: argument).appendingPathComponent($0).path }
        }
        return files
    }

    func run() throws {
        var common = CommonOptions()
        common.databaseItems = databaseItems
        common.databasesFrom = databasesFrom
        common.format = format == .json ? .json : .text
        common.quiet = quiet
        try Console.guarded(common) {
            let loaded = try Self.jobFiles(jobs).map { try JobLoader.load(path: $0) }
            var summaries: [RunSummary] = []
            var fleetCode: Int32?
            var fleetOutcomes: [(job: String, outcomes: [StoreOutcome])] = []
            for job in loaded {
                let stores = try common.stores(for: job)
                if stores.count > 1 || fleet.given {
                    let printed: OutputFormat? = format == .text || format == .json ? format : nil
                    let job = try JobRunner.readingTarget(job)
                    let result = FleetReport.run(stores, flags: fleet, format: printed, quiet: quiet, command: "check") { store in
                        let summary = try JobRunner.check(job, options: options(store), backend: BackendRouter())
                        return (summary, Renderer.checkFailed(summary) ? ExitStatus.findings : ExitStatus.ok)
                    }
                    fleetOutcomes.append((job.file, result.outcomes))
                    fleetCode = FleetRunner.worst([fleetCode ?? 0, result.code])
                    continue
                }
                let summary = try JobRunner.check(job, options: options(stores.first), backend: BackendRouter())
                summaries.append(summary)
                switch format {
                case .text where quiet:
                    if Renderer.checkFailed(summary) { Console.out("\(summary.job ?? "job"): \(Renderer.checkVerdict(summary))") }
                case .text:
                    Console.out(Renderer.text(summary))
                case .json where quiet:
                    if Renderer.checkFailed(summary) { Console.out(Renderer.json(summary)) }
                case .json:
                    Console.out(Renderer.json(summary))
                case .junit, .github:
                    break
                }
            }
            // The reports are what CI reads: printed even with --quiet.
            if format == .junit {
                Console.out(fleetOutcomes.isEmpty ? Renderer.junit(summaries) : Renderer.junit(summaries: summaries, fleets: fleetOutcomes))
            }
            if format == .github {
                let annotations = Renderer.github(summaries + fleetOutcomes.flatMap { $0.outcomes.compactMap(\.summary) })
                if !annotations.isEmpty { Console.out(annotations) }
            }
            let single = summaries.contains(where: Renderer.checkFailed) ? ExitStatus.findings : ExitStatus.ok
            return FleetRunner.worst([single, fleetCode ?? 0])
        }
    }

    /// The run options of one store.
    func options(_ store: String?) -> RunOptions {
        var options = RunOptions(database: store, sampleLimit: 0)
        options.allowRowSecurity = allowRowSecurity
        return options
    }
}
