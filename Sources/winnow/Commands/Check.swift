import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

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
