import ArgumentParser
import Foundation
import WinnowCore

/// The options of commands that work on many stores at once.
struct FleetFlags: ParsableArguments {
    @Option(name: .long, help: "Stores worked on at once (default: the number of cores).")
    var parallel: Int?
    @Option(name: .long, help: "Run K stores first; stop the rollout if any of them fails.")
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
/// total (text), or each store's summary tagged with its path, then the fleet's (json).
enum FleetReport {
    /// Runs `work` over `stores`; returns the outcomes and the fleet's exit code.
    static func run(
        _ stores: [String], flags: FleetFlags, format: OutputFormat, quiet: Bool, command: String, stop: StopSignal? = nil,
        work: @escaping @Sendable (String) throws -> (RunSummary, Int32)
    ) -> (outcomes: [StoreOutcome], code: Int32) {
        let started = Date()
        let progress = FleetProgress(total: stores.count, enabled: !quiet && format == .text && Console.stderrIsTerminal)
        let outcomes = FleetRunner.run(
            stores, options: flags.options, stop: stop, work: work, started: { progress.started($0) },
            finished: { outcome in
                progress.finished(outcome.store)
                guard !quiet || outcome.exitCode != 0 else { return }
                switch format {
                case .json: Console.out(json(outcome))
                case .text: Console.out(Console.painted(line(outcome)))
                default: break
                }
            })
        progress.clear()
        for outcome in outcomes where outcome.status == .notRun && !quiet {
            if format == .json { Console.out(json(outcome)) } else if format == .text { Console.out(line(outcome)) }
        }
        let code = FleetRunner.exitCode(outcomes)
        if format == .json {
            Console.out(fleetJSON(outcomes, code: code, seconds: Date().timeIntervalSince(started), command: command))
        } else if format == .text, !quiet {
            Console.out(Console.painted(total(outcomes, code: code, seconds: Date().timeIntervalSince(started))))
        }
        return (outcomes, code)
    }

    static func line(_ outcome: StoreOutcome) -> String {
        switch outcome.status {
        case .done:
            guard let summary = outcome.summary else { return "\(outcome.store): done" }
            if summary.command == .check {
                return "\(outcome.store): \(Renderer.checkVerdict(summary))"
            }
            return "\(outcome.store): \(Renderer.line(summary))"
        case .locked, .failed:
            return
                "\(outcome.store): \(outcome.status == .locked ? "locked, skipped" : "failed") (exit \(outcome.exitCode)): \(outcome.error?.description ?? "")"
        case .notRun:
            return "\(outcome.store): not run: \(outcome.error?.description ?? "")"
        }
    }

    static func total(_ outcomes: [StoreOutcome], code: Int32, seconds: Double) -> String {
        var counts = Counts()
        var steps = 0
        for summary in outcomes.compactMap(\.summary) {
            counts = counts + summary.counts
            steps += summary.migrationSteps
        }
        func n(_ status: StoreOutcome.Status) -> Int { outcomes.filter { $0.status == status }.count }
        let findings = outcomes.filter { $0.status == .done && $0.exitCode == 1 }.count
        var parts = ["\(outcomes.count) stores", "\(n(.done)) done"]
        if findings > 0 { parts.append("\(findings) with findings") }
        if n(.locked) > 0 { parts.append("\(n(.locked)) locked") }
        if n(.failed) > 0 { parts.append("\(n(.failed)) failed") }
        if n(.notRun) > 0 { parts.append("\(n(.notRun)) not run") }
        let verdict = code == 0 ? "completed" : code == 1 ? "FAIL" : "failed"
        return """
            \(verdict): fleet of \(parts.joined(separator: ", ")); \(counts.groups) duplicate groups, \(counts.deleted) rows deleted, \
            \(counts.updated) updated, \(counts.repointed) references re-pointed, \(steps) migration steps in \(Renderer.duration(seconds)) (exit \(code))
            """
    }

    static func string(_ text: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])) ?? Data("[\"\"]".utf8)
        return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
    }

    static func json(_ outcome: StoreOutcome) -> String {
        var fields = [
            "\"store\":\(string(outcome.store))", "\"status\":\(string(outcome.status.rawValue))", "\"exit\":\(outcome.exitCode)",
        ]
        if let error = outcome.error { fields.append("\"error\":\(string(error.description))") }
        if let summary = outcome.summary {
            let body = Renderer.json(summary)
            if body.hasPrefix("{") { fields.append("\"summary\":\(body)") }
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    static func fleetJSON(_ outcomes: [StoreOutcome], code: Int32, seconds: Double, command: String) -> String {
        var counts = Counts()
        for summary in outcomes.compactMap(\.summary) { counts = counts + summary.counts }
        func n(_ status: StoreOutcome.Status) -> Int { outcomes.filter { $0.status == status }.count }
        return """
            {"fleet":{"command":\(string(command)),"stores":\(outcomes.count),"done":\(n(.done)),"locked":\(n(.locked)),\
            "failed":\(n(.failed)),"not_run":\(n(.notRun)),"findings":\(outcomes.filter { $0.status == .done && $0.exitCode == 1 }.count),\
            "groups":\(counts.groups),"deleted":\(counts.deleted),"updated":\(counts.updated),"repointed":\(counts.repointed),\
            "seconds":\(String(format: "%.3f", seconds)),"exit":\(code)}}
            """
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
