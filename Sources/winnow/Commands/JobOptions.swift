import ArgumentParser
import Foundation
import WinnowCore

/// Options of the commands that carry out jobs, and what `plan`, `run` and `check` share:
/// the run options, the event printer and the summary printer.
struct JobOptions: ParsableArguments {
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Duplicate groups per transaction; overrides the job's batch.size.", valueName: "n"))
    var batchSize: Int?

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Run rules on PostgreSQL tables under row-level security that the connection's role does not bypass (it sees only some rows)."
        ))
    var allowRowSecurity = false

    func validate() throws {
        if let size = batchSize, size < 1 { throw ValidationError("--batch-size must be at least 1") }
    }
}

func runOptions<Help>(_ common: CommandOptions<Help>, _ job: JobOptions, dryRun: Bool = false, wait: Double? = nil) -> RunOptions {
    var options = RunOptions(
        database: common.database, batchSize: job.batchSize, dryRun: dryRun, wait: wait,
        sampleLimit: common.verbose ? nil : 20)
    options.allowRowSecurity = job.allowRowSecurity
    return options
}

func eventPrinter<Help>(_ options: CommandOptions<Help>) -> (RunEvent) -> Void {
    Progress.shared.enabled = options.format == .text && !options.quiet && Console.stderrIsTerminal
    Progress.shared.recordsTimings = options.verbose
    return { event in
        Progress.shared.handle(event)
        guard options.format == .json, !options.quiet else { return }
        switch event {
        case let .batch(report):
            Console.out(Renderer.json(report))
        case let .migrationStep(index, step, seconds):
            Console.out(Renderer.json(migrationStep: step, index: index, seconds: seconds))
        case let .phaseFinished(name, seconds) where options.verbose:
            Console.out(Renderer.json(phase: name, seconds: seconds))
        default:
            break
        }
    }
}

func printSummary<Help>(_ summary: RunSummary, _ options: CommandOptions<Help>) {
    Progress.shared.clear()
    // JSON is data, not chatter: --quiet leaves out the progress lines, never the summary.
    guard options.printsResult else { return }
    if options.format == .json {
        Console.out { write in Renderer.json(summary, write: write) }
        return
    }
    // Where nobody watches (cron, a log file), a run is one line; --verbose gives the detail.
    if summary.command == .run, !options.verbose, !Console.stdoutIsTerminal {
        Console.out(Renderer.line(summary))
        return
    }
    // Written as it is made: `plan --verbose` lists every group (``SampleList``).
    Console.lines { write in
        func line(_ text: String) { write(Console.painted(text)) }
        Renderer.text(summary, line: line)
        if options.verbose, !Progress.shared.timings.isEmpty {
            line("timings:")
            for timing in Progress.shared.timings { line("  \(Renderer.duration(timing.seconds))  \(timing.phase)") }
        }
    }
}
