import Foundation

/// Reports for CI: JUnit XML and GitHub Actions workflow commands.
extension Renderer {
    // MARK: JUnit

    package static func xmlEscape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// `check --format github`: one GitHub Actions workflow command per finding,
    /// `::error file=F,line=N,col=C,title=T::message`, at the job-file line of the failing rule
    /// or the schema-file line of the drifting table, column or index.
    public static func github(_ summaries: [RunSummary]) -> String {
        var lines: [String] = []
        for summary in summaries {
            let job = summary.job ?? "job"
            for rule in summary.rules where rule.counts.groups > 0 {
                var message =
                    "dedupe[\(rule.index)] \(rule.table) by \(rule.key.joined(separator: " + ")): "
                    + countsLine(rule.counts, wouldBe: true)
                for note in summary.notes { message += "; \(note)" }
                lines.append(workflowCommand(location: rule.location, fallbackFile: job, title: "winnow check: duplicates", message))
            }
            for drift in summary.driftFindings {
                let text = drift.table.isEmpty ? drift.message : drift.description
                lines.append(
                    workflowCommand(
                        location: drift.location, fallbackFile: summary.schemaFile ?? job, title: "winnow check: schema drift",
                        "\(text) (database \(summary.database))"))
            }
        }
        return lines.joined(separator: "\n")
    }

    static func workflowCommand(location: SourceLocation?, fallbackFile: String, title: String, _ message: String) -> String {
        // Workflow-command escaping: %, CR and LF in the message; also : and , in properties.
        func data(_ s: String) -> String {
            s.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\r", with: "%0D")
                .replacingOccurrences(of: "\n", with: "%0A")
        }
        func property(_ s: String) -> String {
            data(s).replacingOccurrences(of: ":", with: "%3A").replacingOccurrences(of: ",", with: "%2C")
        }
        // Annotations name files relative to the working directory (the repository's root in CI).
        var file = location?.file ?? fallbackFile
        let cwd = FileManager.default.currentDirectoryPath + "/"
        if file.hasPrefix(cwd) { file = String(file.dropFirst(cwd.count)) }
        var properties = ["file=\(property(file))", "line=\(location?.line ?? 1)"]
        if let column = location?.column { properties.append("col=\(column)") }
        properties.append("title=\(property(title))")
        return "::error \(properties.joined(separator: ","))::\(data(message))"
    }

    /// `check --format junit`: one test case per rule, failed when it leaves duplicates.
    public static func junit(_ summaries: [RunSummary], includeTimes: Bool = true) -> String {
        var lines = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>"]
        // A drift finding is one more test case (failing) in its job's suite.
        func tests(_ s: RunSummary) -> Int { s.rules.count + (s.drift.isEmpty ? 0 : 1) }
        func failures(_ s: RunSummary) -> Int { s.rules.filter { $0.counts.groups > 0 }.count + (s.drift.isEmpty ? 0 : 1) }
        let allTests = summaries.map(tests).reduce(0, +)
        let allFailures = summaries.map(failures).reduce(0, +)
        lines.append("<testsuites name=\"winnow check\" tests=\"\(allTests)\" failures=\"\(allFailures)\">")
        for summary in summaries {
            let suiteFailures = failures(summary)
            let time = includeTimes ? String(format: "%.3f", summary.seconds) : "0"
            lines.append(
                "  <testsuite name=\"\(xmlEscape(summary.job ?? "job"))\" tests=\"\(tests(summary))\" failures=\"\(suiteFailures)\" time=\"\(time)\">"
            )
            for rule in summary.rules {
                let name = xmlEscape("dedupe[\(rule.index)] \(rule.table) by \(rule.key.joined(separator: " + "))")
                if rule.counts.groups > 0 {
                    lines.append("    <testcase classname=\"winnow.check\" name=\"\(name)\">")
                    lines.append(
                        "      <failure message=\"\(xmlEscape(plural(rule.counts.groups, "duplicate group"))) left\">\(xmlEscape(([countsLine(rule.counts, wouldBe: true)] + summary.notes).joined(separator: "\n")))</failure>"
                    )
                    lines.append("    </testcase>")
                } else {
                    lines.append("    <testcase classname=\"winnow.check\" name=\"\(name)\"/>")
                }
            }
            if !summary.drift.isEmpty {
                lines.append("    <testcase classname=\"winnow.check\" name=\"schema\">")
                lines.append(
                    "      <failure message=\"\(xmlEscape(plural(summary.drift.count, "schema difference")))\">\(xmlEscape(summary.drift.joined(separator: "\n")))</failure>"
                )
                lines.append("    </testcase>")
            }
            lines.append("  </testsuite>")
        }
        lines.append("</testsuites>")
        return lines.joined(separator: "\n")
    }
}

extension Renderer {
    /// `check --format junit` over fleets: the single-store summaries as usual, then one test
    /// suite per store of each fleet (`job on store`); a store that could not be checked is a
    /// suite with one erroring test case.
    public static func junit(
        summaries: [RunSummary], fleets: [(job: String, outcomes: [StoreOutcome])], includeTimes: Bool = true
    ) -> String {
        var named = summaries
        var errors: [(name: String, message: String)] = []
        for fleet in fleets {
            for outcome in fleet.outcomes {
                if var summary = outcome.summary {
                    summary.job = "\(fleet.job) on \(outcome.store)"
                    named.append(summary)
                } else {
                    errors.append(("\(fleet.job) on \(outcome.store)", "\(outcome.status.rawValue): \(outcome.error?.description ?? "")"))
                }
            }
        }
        var lines = junit(named, includeTimes: includeTimes).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard !errors.isEmpty, lines.last == "</testsuites>" else { return lines.joined(separator: "\n") }
        lines.removeLast()
        for error in errors {
            lines.append("  <testsuite name=\"\(xmlEscape(error.name))\" tests=\"1\" failures=\"0\" errors=\"1\" time=\"0\">")
            lines.append("    <testcase classname=\"winnow.check\" name=\"store\">")
            lines.append("      <error message=\"\(xmlEscape(error.message))\"/>")
            lines.append("    </testcase>")
            lines.append("  </testsuite>")
        }
        lines.append("</testsuites>")
        return lines.joined(separator: "\n")
    }
}
