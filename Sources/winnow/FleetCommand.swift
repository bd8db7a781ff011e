import ArgumentParser
import Foundation
import WinnowCore

/// The options of commands that work on many stores at once.
struct FleetFlags: ParsableArguments {
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Stores worked on at once (default: the number of cores).", valueName: "n"))
    var parallel: Int?
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Run K stores first; stop the rollout if any of them fails.", valueName: "k"))
    var canary: Int?
    @Flag(name: .long, help: "Keep starting stores after one fails (default: stop starting new ones).")
    var continueOnError = false

    func validate() throws {
        if let parallel, parallel < 1 { throw ValidationError("--parallel takes a number of stores, 1 or more") }
        if let canary, canary < 0 { throw ValidationError("--canary takes a number of stores, 0 or more") }
    }

    var given: Bool { parallel != nil || canary != nil || continueOnError }

    var options: FleetOptions {
        FleetOptions(
            parallel: parallel ?? ProcessInfo.processInfo.activeProcessorCount, canary: canary ?? 0, continueOnError: continueOnError)
    }
}

/// Runs a command over a fleet and prints one report: a line per store as it ends, then the
/// total (text), or each store's object tagged with its path, then the fleet's (json).
enum FleetReport {
    /// Runs `work` over `stores`; returns the outcomes, the fleet's exit code and its time.
    /// `format` nil prints nothing (the caller reports: junit, github, plan's groups). `heard`
    /// hears of each store as it ends, with its sample groups (the outcomes keep none).
    static func run(
        _ stores: [String], flags: FleetFlags, format: OutputFormat?, quiet: Bool, command: String, stop: StopSignal? = nil,
        heard: @escaping @Sendable (StoreOutcome) -> Void = { _ in },
        work: @escaping @Sendable (String) throws -> (RunSummary, Int32)
    ) -> (outcomes: [StoreOutcome], code: Int32, seconds: Double) {
        let started = Date()
        let progress = FleetProgress(total: stores.count, enabled: !quiet && format == .text && Console.stderrIsTerminal)
        @Sendable func report(_ outcome: StoreOutcome) {
            // A failed store's message also goes to standard error in JSON mode, where a cron
            // mail or a CI log shows it while the lines go to a file.
            if format == .json, outcome.status == .failed || outcome.status == .locked {
                Console.err("winnow: error: \(Renderer.text(outcome))")
            }
            guard !quiet || outcome.exitCode != 0 else { return }
            if format == .json { Console.out(Renderer.json(outcome)) }
            if format == .text { Console.out(Console.painted(Renderer.text(outcome))) }
        }
        let outcomes = FleetRunner.run(
            stores, options: flags.options, stop: stop, work: work, started: { progress.started($0) },
            finished: { outcome in
                progress.finished(outcome.store)
                report(outcome)
                heard(outcome)
            })
        progress.clear()
        for outcome in outcomes where outcome.status == .notRun { report(outcome) }
        let code = FleetRunner.exitCode(outcomes)
        let seconds = Date().timeIntervalSince(started)
        if format == .json {
            Console.out(Renderer.json(fleet: outcomes, command: command, exitCode: code, seconds: seconds))
        } else if format == .text, !quiet {
            Console.out(Console.painted(Renderer.fleetTotal(outcomes, exitCode: code, seconds: seconds)))
        }
        return (outcomes, code, seconds)
    }
}

/// One line on standard error for the fleet: stores done of all, the rate, the time left and
/// the stores in flight.
final class FleetProgress: @unchecked Sendable {
    private let lock = NSLock()
    private let total: Int
    private let enabled: Bool
    private let begin = Date()
    private var done = 0
    private var inFlight: [String] = []

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    func started(_ store: String) {
        lock.withLock {
            inFlight.append(store)
            draw()
        }
    }

    func finished(_ store: String) {
        lock.withLock {
            inFlight.removeAll { $0 == store }
            done += 1
            draw()
        }
    }

    private func draw() {
        guard enabled else { return }
        let elapsed = Date().timeIntervalSince(begin)
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let left = rate > 0 ? Renderer.duration(Double(total - done) / rate) : "?"
        let names = inFlight.prefix(3).map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: ", ")
        let width = 24
        let filled = total > 0 ? width * done / total : width
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let text = "[\(bar)] \(done)/\(total) stores, \(String(format: "%.1f", rate))/s, \(left) left; in flight: \(names)"
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + text).utf8))
    }

    func clear() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
