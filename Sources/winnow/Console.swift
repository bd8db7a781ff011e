import ArgumentParser
import Foundation
import WinnowCore

/// Printing and exit codes, shared by the commands.
enum Console {
    private static let lock = NSLock()

    /// One line on standard output (whole lines even from several threads). When the reader
    /// has gone (`winnow plan | head`), winnow stops quietly with exit 74 instead of trapping.
    static func out(_ line: String) { write(line, to: FileHandle.standardOutput) }

    static func err(_ line: String) { write(line, to: FileHandle.standardError) }

    /// One line on standard output written in pieces as `produce` makes them (a line too large
    /// to hold whole, `show --format json`), buffered in blocks of about 1 MiB.
    static func out(_ produce: (_ write: (String) -> Void) -> Void) {
        lock.withLock {
            var buffer = Data()
            produce { piece in
                buffer.append(contentsOf: piece.utf8)
                if buffer.count >= 1 << 20 {
                    emit(buffer, to: FileHandle.standardOutput)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            buffer.append(UInt8(ascii: "\n"))
            emit(buffer, to: FileHandle.standardOutput)
        }
    }

    /// Lines on standard output written as `produce` makes them (a text summary that lists
    /// every group), each as ``out(_:)-(String)`` would.
    static func lines(_ produce: (_ line: (String) -> Void) -> Void) {
        out { write in
            withoutActuallyEscaping(write) { write in
                var first = true
                produce { text in
                    write((first ? "" : "\n") + text)
                    first = false
                }
            }
        }
    }

    private static func write(_ line: String, to handle: FileHandle) {
        lock.withLock { emit(Data((line + "\n").utf8), to: handle) }
    }

    /// Writes `data` (the caller holds the lock); a closed reader ends winnow with exit 74.
    private static func emit(_ data: Data, to handle: FileHandle) {
        do {
            try handle.write(contentsOf: data)
        } catch {
            exit(WinnowError.io("output closed").exitCode)
        }
    }

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Colours on standard output: only on a terminal, never with `NO_COLOR` set (no-color.org)
    /// or `TERM=dumb`. Decided once: a text summary is painted line by line as it is written.
    static let usesColor: Bool = {
        let environment = ProcessInfo.processInfo.environment
        return isatty(STDOUT_FILENO) == 1 && (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
    }()

    /// A summary with its verdict coloured: green for done or clean, yellow for stopped, red for
    /// a finding or a failure. Unchanged when colours are off.
    static func painted(_ text: String) -> String {
        guard usesColor else { return text }
        let colours: [(prefix: String, code: String)] = [
            ("completed", "32"), ("planned", "32"), ("OK", "32"), ("restored", "32"), ("stopped", "33"), ("FAIL", "31"),
            ("refused", "31"), ("failed", "31"),
        ]
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            for (prefix, code) in colours where line.hasPrefix(prefix + ":") {
                return "\u{1B}[\(code)m\(prefix)\u{1B}[0m" + line.dropFirst(prefix.count)
            }
            return String(line)
        }.joined(separator: "\n")
    }

    /// Runs a command body, printing any ``WinnowError`` and exiting with its code.
    static func guarded<Help>(_ options: CommandOptions<Help>, _ body: () throws -> Int32) throws {
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

    static func report<Help>(_ error: WinnowError, _ options: CommandOptions<Help>) {
        Progress.shared.clear()
        if options.format == .json { out(Renderer.jsonError(error)) }
        err("winnow: error: \(error.description)")
    }
}
