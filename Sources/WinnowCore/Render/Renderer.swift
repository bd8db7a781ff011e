import Foundation

/// Renders events and summaries as text for people, JSON lines for machines, and JUnit XML for CI.
/// Pure functions of their input, so their output is golden-tested.
public enum Renderer {
    // MARK: JSON lines

    package static func jsonLine(_ object: [String: Any]) -> String {
        let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    package static func countsObject(_ c: Counts) -> [String: Any] {
        [
            "groups": c.groups, "deleted": c.deleted, "updated": c.updated, "repointed": c.repointed,
            "children_deleted": c.childrenDeleted, "hashed": c.hashed, "skipped": c.skipped, "batches": c.batches,
        ]
    }

    package static func rounded(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }

    /// `{"event":"batch", ...}`: one committed batch.
    public static func json(_ report: BatchReport) -> String {
        var object = countsObject(report.counts)
        object["event"] = "batch"
        object["rule"] = report.rule
        object["table"] = report.table
        object["batch"] = report.batch
        object["seconds"] = rounded(report.seconds)
        return jsonLine(object)
    }

    /// `{"event":"summary", ...}`: the final object of `run`, `plan`, `check` and `restore`.
    public static func json(_ summary: RunSummary, includeTimes: Bool = true) -> String {
        var object = countsObject(summary.counts)
        object["event"] = "summary"
        object["command"] = summary.command.rawValue
        object["run_id"] = summary.runID.map { $0 as Any } ?? NSNull()
        object["status"] = summary.status.rawValue
        object["job"] = summary.job ?? NSNull()
        object["database"] = summary.database
        object["dry_run"] = summary.dryRun
        object["migration_steps"] = summary.migrationSteps
        object["seconds"] = includeTimes ? rounded(summary.seconds) : 0
        if let message = summary.message { object["message"] = message }
        if let reinserted = summary.reinserted { object["reinserted"] = reinserted }
        if let reverted = summary.reverted { object["reverted"] = reverted }
        if !summary.migration.isEmpty {
            object["migration"] = summary.migration.map {
                ["summary": $0.summary, "sql": $0.sql, "rebuild": $0.rebuildsTable] as [String: Any]
            }
        }
        if !summary.drift.isEmpty { object["drift"] = summary.drift }
        if !summary.notes.isEmpty { object["notes"] = summary.notes }
        object["rules"] = summary.rules.map { rule -> [String: Any] in
            var r = countsObject(rule.counts)
            r["index"] = rule.index
            r["table"] = rule.table
            r["key"] = rule.key
            r["winner"] = rule.winner
            r["references"] = rule.references
            r["table_rows"] = rule.discovery.tableRows
            if let incremental = rule.incremental { r["incremental"] = incremental }
            if !rule.warnings.isEmpty { r["warnings"] = rule.warnings }
            if !rule.samples.isEmpty {
                r["sample_groups"] = rule.samples.map { ["key": $0.key, "winner": $0.winner, "losers": $0.losers] as [String: Any] }
            }
            return r
        }
        return jsonLine(object)
    }

    /// `{"event":"valid", ...}`: one file accepted by `validate`.
    public static func jsonValid(file: String, _ result: Validator.Result) -> String {
        switch result {
        case let .job(job, schema):
            var object: [String: Any] = ["event": "valid", "file": file, "kind": "job", "rules": job.dedupe.count]
            if let schema { object["schema_version"] = schema.version }
            return jsonLine(object)
        case let .schema(model):
            return jsonLine(["event": "valid", "file": file, "kind": "schema", "version": model.version, "tables": model.tables.count])
        }
    }

    /// `{"event":"migration", ...}`: one applied migration step.
    public static func json(migrationStep step: PlannedStep, index: Int, seconds: Double) -> String {
        jsonLine([
            "event": "migration", "step": index, "summary": step.summary, "sql": step.sql, "rebuild": step.rebuildsTable,
            "seconds": rounded(seconds),
        ])
    }

    /// `{"event":"error", ...}`: printed by the command line before a non-zero exit in JSON mode.
    public static func jsonError(_ error: WinnowError) -> String {
        jsonLine(["event": "error", "status": "error", "exit_code": Int(error.exitCode), "message": error.description])
    }

    /// One object per run, for `history --format json`.
    public static func json(_ entry: HistoryEntry) -> String {
        var object = countsObject(entry.counts)
        object["event"] = "run"
        object["run_id"] = entry.runID
        object["command"] = entry.command.rawValue
        object["job"] = entry.job ?? NSNull()
        object["started_at"] = entry.startedAt
        object["finished_at"] = entry.finishedAt ?? NSNull()
        object["status"] = entry.status.rawValue
        object["archive"] = entry.archive
        object["migration_steps"] = entry.migrationSteps
        object["seconds"] = rounded(entry.seconds)
        object["restores_run"] = entry.restoresRun.map { $0 as Any } ?? NSNull()
        object["restored_by"] = entry.restoredBy.map { $0 as Any } ?? NSNull()
        object["message"] = entry.message ?? NSNull()
        return jsonLine(object)
    }

    // MARK: Text

    package static func plural(_ n: Int, _ word: String, _ plural: String? = nil) -> String {
        "\(n) \(n == 1 ? word : (plural ?? word + "s"))"
    }

    package static func countsLine(_ c: Counts, wouldBe: Bool) -> String {
        let verb = wouldBe ? "to " : ""
        var parts = [
            plural(c.groups, "duplicate group"),
            "\(plural(c.deleted, "row")) \(verb)\(wouldBe ? "delete" : "deleted")",
            "\(c.updated) \(wouldBe ? "to update" : "updated")",
            "\(plural(c.repointed, "reference")) \(wouldBe ? "to re-point" : "re-pointed")",
        ]
        if c.childrenDeleted > 0 {
            parts.append("\(plural(c.childrenDeleted, "duplicate child row")) \(wouldBe ? "to delete" : "deleted")")
        }
        if c.hashed > 0 { parts.append("\(plural(c.hashed, "key hash", "key hashes")) \(wouldBe ? "to store" : "stored")") }
        if c.skipped > 0 { parts.append("\(c.skipped) skipped (changed meanwhile)") }
        return parts.joined(separator: ", ")
    }

    /// The text summary of `run`, `plan` and `check`.
    public static func text(_ summary: RunSummary, includeTimes: Bool = true) -> String {
        var lines: [String] = []
        let wouldBe = summary.dryRun
        switch summary.command {
        case .plan: lines.append("Plan for \(summary.job ?? "?") on \(summary.database) (nothing is written)")
        case .check: lines.append("Check of \(summary.job ?? "?") on \(summary.database)")
        case .restore: lines.append("Restore on \(summary.database)")
        default: lines.append("Run \(summary.runID.map(String.init) ?? "?") of \(summary.job ?? "?") on \(summary.database)")
        }
        if !summary.migration.isEmpty {
            lines.append("migration: \(plural(summary.migration.count, "step"))\(summary.dryRun ? "" : " applied")")
            for (index, step) in summary.migration.enumerated() {
                lines.append("  \(index + 1). \(step.summary)\(step.rebuildsTable ? " [rebuilds the table]" : "")")
                if summary.command == .plan {
                    for sql in step.sql { lines.append(sql.split(separator: "\n").map { "       \($0)" }.joined(separator: "\n")) }
                }
            }
        }
        for difference in summary.drift { lines.append("drift: \(difference)") }
        for note in summary.notes { lines.append("note: \(note)") }
        for rule in summary.rules {
            lines.append("dedupe[\(rule.index)] \(rule.table) by \(rule.key.joined(separator: " + "))")
            lines.append("  winner: \(rule.winner)")
            if let incremental = rule.incremental {
                lines.append(
                    incremental
                        ? "  incremental: only keys of rows added or changed since the last run"
                        : "  incremental: full pass (change tracking starts now)")
            }
            if !rule.references.isEmpty { lines.append("  references: \(rule.references.joined(separator: ", "))") }
            for warning in rule.warnings { lines.append("  warning: \(warning)") }
            lines.append("  " + countsLine(rule.counts, wouldBe: wouldBe))
            for sample in rule.samples {
                let losers = sample.losers.map { "rowid \($0)" }.joined(separator: ", ")
                lines.append("  group \(sample.key.joined(separator: ", ")): keep rowid \(sample.winner); delete \(losers)")
            }
            if rule.samples.count < rule.counts.groups, !rule.samples.isEmpty {
                lines.append("  ... \(rule.counts.groups - rule.samples.count) more groups (--verbose lists all)")
            }
        }
        if summary.rules.isEmpty, summary.command != .restore, summary.migration.isEmpty, summary.notes.isEmpty, summary.drift.isEmpty {
            lines.append("no dedupe rules")
        }
        switch summary.command {
        case .check where !summary.drift.isEmpty:
            lines.append(
                "FAIL: \(plural(summary.drift.count, "schema difference")) from the target schema"
                    + (summary.counts.groups > 0 ? ", and \(plural(summary.counts.groups, "duplicate group"))" : ""))
        case .check:
            lines.append(
                summary.counts.groups > 0
                    ? "FAIL: \(plural(summary.counts.groups, "duplicate group")) (\(summary.counts.deleted) extra rows) left under the job's rules"
                    : "OK: no duplicates under the job's rules")
        case .restore:
            lines.append("restored: \(summary.reinserted ?? 0) rows re-inserted, \(summary.reverted ?? 0) rows reverted")
        default:
            let time = includeTimes ? String(format: " in %.2f s", summary.seconds) : ""
            lines.append(
                "\(summary.status): \(countsLine(summary.counts, wouldBe: wouldBe)) in \(plural(summary.counts.batches, "batch", "batches"))\(time)"
            )
        }
        return lines.joined(separator: "\n")
    }

    /// `winnow history` as a table, newest first.
    public static func text(_ entries: [HistoryEntry]) -> String {
        guard !entries.isEmpty else { return "no runs recorded" }
        let widths = [5, 8, 12, 25, 7, 8, 8, 10]
        func row(_ cells: [String]) -> String {
            zip(cells, widths).map { $0.padding(toLength: max($1, $0.count + 1), withPad: " ", startingAt: 0) }.joined()
                + (cells.count > widths.count ? cells[widths.count] : "")
        }
        var lines = [row(["run", "command", "status", "started", "groups", "deleted", "updated", "repointed", "job"])]
        for e in entries {
            let restore = e.restoresRun.map { " (restores run \($0))" } ?? ""
            let restoredBy = e.restoredBy.map { " (restored by run \($0))" } ?? ""
            lines.append(
                row([
                    String(e.runID), e.command.rawValue, e.status.rawValue, e.startedAt, String(e.counts.groups), String(e.counts.deleted),
                    String(e.counts.updated), String(e.counts.repointed), (e.job ?? "-") + restore + restoredBy,
                ]))
            if let message = e.message, e.status != .completed { lines.append("     \(message)") }
        }
        return lines.joined(separator: "\n")
    }

    // MARK: JUnit

    package static func xmlEscape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// `check --format junit`: one test case per rule, failed when it leaves duplicates.
    public static func junit(_ summaries: [RunSummary], includeTimes: Bool = true) -> String {
        var lines = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>"]
        let cases = summaries.flatMap { s in s.rules.map { (s, $0) } }
        let failures = cases.filter { $0.1.counts.groups > 0 }.count
        lines.append("<testsuites name=\"winnow check\" tests=\"\(cases.count)\" failures=\"\(failures)\">")
        for summary in summaries {
            let suiteFailures = summary.rules.filter { $0.counts.groups > 0 }.count
            let time = includeTimes ? String(format: "%.3f", summary.seconds) : "0"
            lines.append(
                "  <testsuite name=\"\(xmlEscape(summary.job ?? "job"))\" tests=\"\(summary.rules.count)\" failures=\"\(suiteFailures)\" time=\"\(time)\">"
            )
            for rule in summary.rules {
                let name = xmlEscape("dedupe[\(rule.index)] \(rule.table) by \(rule.key.joined(separator: " + "))")
                if rule.counts.groups > 0 {
                    lines.append("    <testcase classname=\"winnow.check\" name=\"\(name)\">")
                    lines.append(
                        "      <failure message=\"\(xmlEscape(plural(rule.counts.groups, "duplicate group"))) left\">\(xmlEscape(countsLine(rule.counts, wouldBe: true)))</failure>"
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
