import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "CI gate: exit 1 when duplicates are left under the jobs' rules, or the schema drifted.",
        discussion: """
            Takes job files and folders of job files (every *.yaml and *.yml in the folder, in name order).

            Examples:
              winnow check jobs/contacts.yaml
              winnow check jobs/ --database fixtures/app.sqlite --format junit > out.xml
              winnow check jobs/ --format github     # annotations at the failing lines
            """)

    @Option(name: .long, help: "Database file; overrides the jobs' 'database:'.") var database: String?
    @Option(name: .long, help: "Output format: text, json, junit or github.") var format: OutputFormat = .text
    @Flag(name: .long, help: "Print only what was found (one line per failing job) and errors.") var quiet = false
    @Flag(name: .long, help: "Print more detail.") var verbose = false
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
        common.database = database
        common.format = format == .json ? .json : .text
        common.quiet = quiet
        try Console.guarded(common) {
            let loaded = try Self.jobFiles(jobs).map { try JobLoader.load(path: $0) }
            var summaries: [RunSummary] = []
            for job in loaded {
                let summary = try JobRunner.check(job, options: RunOptions(database: database, sampleLimit: 0), backend: BackendRouter())
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
            if format == .junit { Console.out(Renderer.junit(summaries)) }
            if format == .github {
                let annotations = Renderer.github(summaries)
                if !annotations.isEmpty { Console.out(annotations) }
            }
            return summaries.contains(where: Renderer.checkFailed) ? ExitStatus.findings : ExitStatus.ok
        }
    }
}
