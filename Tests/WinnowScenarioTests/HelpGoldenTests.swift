import Foundation
import WinnowTestSupport
import XCTest

/// Every command's `--help` at 80 columns, compared with golden files `Golden/help-*.txt`. The
/// commands are found from `winnow --help` itself, so a new command fails here until its help
/// has a golden file. To accept a deliberate change (or a new command), run
/// `WINNOW_UPDATE_GOLDEN=1 swift test --disable-swift-testing --filter HelpGoldenTests` and review
/// the diff of the golden files.
final class HelpGoldenTests: CLITestCase {
    static let width = 80

    static let goldenDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")

    /// `winnow ARGS --help` at ``width`` columns (COLUMNS decides when output is not a terminal).
    func help(_ command: [String]) throws -> String {
        let result = try TestSupport.winnow(command + ["--help"], in: dir, environment: ["COLUMNS": "\(Self.width)"])
        XCTAssertEqual(result.status, 0, "winnow \(command.joined(separator: " ")) --help: \(result.stderr)")
        return result.stdout
    }

    /// The subcommands a help text lists: the names in its SUBCOMMANDS section (which ends at
    /// the first empty line).
    static func subcommands(in help: String) -> [String] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("SUBCOMMANDS:") }) else { return [] }
        return lines[(start + 1)...].prefix { !$0.isEmpty }
            .filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    /// Every command path: `[]`, `["run"]`, `["schema", "inspect"]`, ...
    func commands(under prefix: [String] = []) throws -> [[String]] {
        let text = try help(prefix)
        var found = [prefix]
        for name in Self.subcommands(in: text) { found += try commands(under: prefix + [name]) }
        return found
    }

    func testEveryCommandsHelpMatchesItsGoldenFile() throws {
        let update = ProcessInfo.processInfo.environment["WINNOW_UPDATE_GOLDEN"] == "1"
        let commands = try commands()
        XCTAssertTrue(commands.contains(["run"]) && commands.contains(["schema", "inspect"]), "\(commands)")
        var names: Set<String> = []
        for command in commands {
            let name = "help-" + (command.isEmpty ? "winnow" : command.joined(separator: "-")) + ".txt"
            names.insert(name)
            let text = try help(command)
            let label = "winnow \(command.joined(separator: " "))"
            if !command.isEmpty, !text.contains("SUBCOMMANDS:") {
                XCTAssertTrue(text.contains("Examples:"), "\(label) --help has examples")
            }
            XCTAssertEqual(text.contains("junit"), command == ["check"], "\(label): junit only where it is accepted")
            XCTAssertFalse(text.contains("(plan: every duplicate group)"), "\(label): a --verbose of its own")
            let url = Self.goldenDirectory.appendingPathComponent(name)
            if update {
                try text.write(to: url, atomically: true, encoding: .utf8)
                continue
            }
            guard let expected = try? String(contentsOf: url, encoding: .utf8) else {
                XCTFail("no golden file \(name) for `\(label) --help`; run with WINNOW_UPDATE_GOLDEN=1")
                continue
            }
            XCTAssertEqual(text, expected, "`\(label) --help` differs from Golden/\(name)")
        }
        // A golden file of a command that no longer exists.
        let stale = Set(try FileManager.default.contentsOfDirectory(atPath: Self.goldenDirectory.path).filter { $0.hasPrefix("help-") })
            .subtracting(names)
        if update {
            for name in stale { try FileManager.default.removeItem(at: Self.goldenDirectory.appendingPathComponent(name)) }
        } else {
            XCTAssertEqual(stale, [], "golden files of commands that do not exist")
        }
    }

    /// The argument parser wraps each paragraph to the width; a line break written into the
    /// source breaks a sentence a second time ("a killed\nrun loses\nnothing"). A line of prose
    /// whose next line's first word would still have fitted on it was broken in the source.
    func testProseIsWrappedByTheParserOnly() throws {
        var broken: [String] = []
        for command in try commands() {
            let lines = try help(command).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for (a, b) in zip(lines, lines.dropFirst()) {
                if let problem = Self.sourceBreak(a, b) { broken.append("winnow \(command.joined(separator: " ")): \(problem)") }
            }
        }
        XCTAssertEqual(broken, [])
    }

    /// The two lines as the parser would not have broken them, or nil. Prose continues at
    /// column 0 (overview, discussion) or at column 26 (an option's or a subcommand's help).
    static func sourceBreak(_ a: String, _ b: String) -> String? {
        let indentB = b.prefix { $0 == " " }.count
        let rest = b.dropFirst(indentB)
        guard !a.trimmingCharacters(in: .whitespaces).isEmpty, let word = rest.split(separator: " ").first else { return nil }
        switch indentB {
        case 0:
            // Prose after prose; a heading ("OPTIONS:") or an example block starts anew.
            guard !a.hasPrefix(" "), !a.hasSuffix(":"), !rest.hasSuffix(":") else { return nil }
        case 26:
            // A continuation of the help text that starts at column 26 on the line above
            // (a label longer than the column stands alone on its line).
            let chars = Array(a)
            guard chars.count > 26, chars[24] == " ", chars[25] == " " || a.hasPrefix(String(repeating: " ", count: 26)) else {
                return nil
            }
        default:
            return nil
        }
        // The parser breaks at the last space within `width` characters (the line's indent
        // included), so a word fits when it and the space after it do.
        guard a.count + 1 + word.count + 1 <= width else { return nil }
        return "\"\(a)\" / \"\(b)\""
    }
}
