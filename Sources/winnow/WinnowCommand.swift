import ArgumentParser
import Foundation
import WinnowCore
import WinnowSQLite

@main
struct Winnow: ParsableCommand {
    static func main() {
        // A file-size limit (ulimit -f) must end in a clean I/O error (exit 74), not a signal.
        signal(SIGXFSZ, SIG_IGN)
        // A closed pipe (winnow ... | head) is an error on write, not a signal.
        signal(SIGPIPE, SIG_IGN)
        Self.main(nil)
    }

    static let configuration = CommandConfiguration(
        commandName: "winnow",
        abstract: "Keeps SQLite databases clean: deterministic deduplication from declarative YAML jobs.",
        version: "0.1.0",
        subcommands: [Validate.self, Plan.self, Run.self, Check.self, SchemaCommand.self, HistoryCommand.self, Restore.self]
    )
}

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

extension OutputFormat: ExpressibleByArgument {}

/// Printing and exit codes, shared by the commands.
enum Console {
    static func out(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func err(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Runs a command body, printing any ``WinnowError`` and exiting with its code.
    static func guarded(_ options: CommonOptions, _ body: () throws -> Int32) throws {
        let code: Int32
        do {
            code = try body()
        } catch let error as WinnowError {
            report(error, options)
            throw ExitCode(error.exitCode)
        } catch let error as ExitCode {
            throw error
        } catch {
            let wrapped = WinnowError.internal("\(error)")
            report(wrapped, options)
            throw ExitCode(wrapped.exitCode)
        }
        if code != 0 { throw ExitCode(code) }
    }

    static func report(_ error: WinnowError, _ options: CommonOptions) {
        Progress.shared.clear()
        if options.format == .json { out(Renderer.jsonError(error)) }
        err("winnow: error: \(error.description)")
    }
}

/// A one-line progress bar on standard error, drawn only when it is a terminal.
final class Progress {
    static let shared = Progress()
    private var drawn = false
    var enabled = false

    func update(_ report: BatchReport) {
        guard enabled, report.total > 0 else { return }
        let fraction = min(1, Double(report.done) / Double(report.total))
        let width = 30
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let line = String(
            format: "\r[%@] %3d%%  dedupe[%d] %@  batch %d  %d/%d rows", bar, Int(fraction * 100), report.rule,
            report.table, report.batch, report.done, report.total)
        FileHandle.standardError.write(Data(line.utf8))
        drawn = true
    }

    func clear() {
        guard drawn else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
        drawn = false
    }
}
