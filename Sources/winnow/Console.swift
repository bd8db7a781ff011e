import ArgumentParser
import Foundation
import WinnowCore

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
