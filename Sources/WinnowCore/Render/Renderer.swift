import Foundation

/// Renders events and summaries as text for people, JSON lines for machines, and JUnit XML for CI.
/// Pure functions of their input, so their output is golden-tested.
public enum Renderer {
    // MARK: JSON lines

    /// One JSON object on one line, keys sorted. Every event carries `"time"` (UTC, ISO 8601
    /// with milliseconds), so cron logs can be read back in order; `stamped: false` leaves it
    /// out (golden files).
    package static func jsonLine(_ object: [String: Any], stamped: Bool = true) -> String {
        var object = object
        if stamped, object["time"] == nil { object["time"] = Bookkeeping.timestamp() }
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
    public static func json(_ report: BatchReport, stamped: Bool = true) -> String {
        jsonLine(batchObject(report), stamped: stamped)
    }

    package static func batchObject(_ report: BatchReport) -> [String: Any] {
        var object = countsObject(report.counts)
        object["event"] = "batch"
        object["rule"] = report.rule
        object["table"] = report.table
        object["batch"] = report.batch
        object["seconds"] = rounded(report.seconds)
        return object
    }

    /// `{"event":"summary", ...}`: the final object of `run`, `plan`, `check` and `restore`.
    public static func json(_ summary: RunSummary, includeTimes: Bool = true) -> String {
        jsonLine(summaryObject(summary, includeTimes: includeTimes), stamped: includeTimes)
    }

    package static func summaryObject(_ summary: RunSummary, includeTimes: Bool = true) -> [String: Any] {
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
        if !summary.kept.isEmpty {
            object["kept"] = summary.kept.map {
                ["kind": $0.kind.rawValue, "table": $0.table, "name": $0.name, "drop_with": $0.dropKey] as [String: Any]
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
                r["sample_groups"] = rule.samples.map { sample -> [String: Any] in
                    var object: [String: Any] = [
                        "key": sample.key.map(jsonValue(sqlLiteral:)), "identity": sample.winner.parts.map(\.column),
                        "winner": jsonValue(sample.winner), "losers": sample.losers.map(jsonValue(_:)),
                    ]
                    if !sample.rows.isEmpty {
                        object["columns"] = sample.columns
                        object["rows"] = sample.rows.map {
                            ["row": jsonValue($0.row), "keep": $0.row == sample.winner, "values": $0.values.map(jsonValue(sqlLiteral:))]
                                as [String: Any]
                        }
                        object["merge"] = sample.merged.map {
                            ["column": $0.column, "before": jsonValue(sqlLiteral: $0.before), "after": jsonValue(sqlLiteral: $0.after)]
                                as [String: Any]
                        }
                        object["repoint"] = sample.children.map {
                            [
                                "reference": $0.reference, "from": jsonValue($0.loser), "to": jsonValue(sample.winner), "rows": $0.rows,
                                "duplicates_deleted": $0.mayCollide ? "where the winner has the same row" : "never",
                            ] as [String: Any]
                        }
                    }
                    return object
                }
            }
            return r
        }
        return object
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
        jsonLine(migrationObject(step, index: index, seconds: seconds))
    }

    package static func migrationObject(_ step: PlannedStep, index: Int, seconds: Double) -> [String: Any] {
        [
            "event": "migration", "step": index, "summary": step.summary, "sql": step.sql, "rebuild": step.rebuildsTable,
            "seconds": rounded(seconds),
        ]
    }

    /// `{"event":"phase", ...}` (`--verbose`): how long a phase took.
    public static func json(phase: String, seconds: Double) -> String {
        jsonLine(["event": "phase", "phase": phase, "seconds": rounded(seconds)])
    }

    /// `{"event":"error", ...}`: printed by the command line before a non-zero exit in JSON mode.
    public static func jsonError(_ error: WinnowError) -> String {
        var object: [String: Any] = ["event": "error", "status": "error", "exit_code": Int(error.exitCode), "message": error.description]
        if case let .invalidFile(location?, message) = error {
            object["file"] = location.file
            object["line"] = location.line
            object["column"] = location.column
            object["detail"] = message
        }
        if case let .guardRefused(refusal) = error {
            // Which guard refused, what it refused, and what the run had committed before it.
            switch refusal.kind {
            case .deleteShare: object["guard"] = "max_delete_percent"
            case .restrictedReference: object["guard"] = "references_restrict"
            case .uniqueIndex: object["guard"] = "unique_index"
            }
            object["detail"] = refusal.message
            object["committed"] = refusal.committed
        }
        return jsonLine(object)
    }

    /// One object per run, for `history --format json`.
    public static func json(_ entry: HistoryEntry) -> String { jsonLine(historyObject(entry)) }

    package static func historyObject(_ entry: HistoryEntry) -> [String: Any] {
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
        if let reinserted = entry.reinserted { object["reinserted"] = reinserted }
        if let reverted = entry.reverted { object["reverted"] = reverted }
        object["pruned_at"] = entry.prunedAt ?? NSNull()
        return object
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
        for object in summary.kept { lines.append("kept: \(object)") }
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
                let losers = sample.losers.map(\.description).joined(separator: ", ")
                lines.append("  group \(sample.key.joined(separator: ", ")): keep \(sample.winner); delete \(losers)")
                lines += sampleDetail(sample, wouldBe: wouldBe)
            }
            if rule.samples.count < rule.counts.groups, !rule.samples.isEmpty {
                lines.append("  ... \(rule.counts.groups - rule.samples.count) more groups (--verbose lists all)")
            }
        }
        if summary.rules.isEmpty, summary.command != .restore, summary.migration.isEmpty, summary.notes.isEmpty, summary.drift.isEmpty {
            lines.append("no dedupe rules")
        }
        lines.append(statusLine(summary, includeTimes: includeTimes))
        return lines.joined(separator: "\n")
    }

    /// The last line of a summary: the verdict of a check, what a restore put back, or the
    /// status and counts of a run or plan.
    static func statusLine(_ summary: RunSummary, includeTimes: Bool = true) -> String {
        switch summary.command {
        case .check:
            return checkVerdict(summary)
        case .restore:
            return "restored: \(summary.reinserted ?? 0) rows re-inserted, \(summary.reverted ?? 0) rows reverted"
        default:
            let time = includeTimes ? String(format: " in %.2f s", summary.seconds) : ""
            return "\(summary.status): \(countsLine(summary.counts, wouldBe: summary.dryRun)) "
                + "in \(plural(summary.counts.batches, "batch", "batches"))\(time)"
        }
    }

    /// `winnow history` as a table, newest first.
    public static func text(_ entries: [HistoryEntry]) -> String {
        guard !entries.isEmpty else { return "no runs recorded" }
        let header = ["run", "command", "status", "started (UTC)", "duration", "groups", "deleted", "updated", "repointed", "job"]
        var rows: [[String]] = []
        var messages: [Int: String] = [:]
        for e in entries {
            let restored = e.reinserted.flatMap { reinserted in
                e.reverted.map { ": \(plural(reinserted, "row")) re-inserted, \(plural($0, "row")) reverted" }
            }
            let restore = e.restoresRun.map { " (restores run \($0)\(restored ?? ""))" } ?? ""
            let restoredBy = e.restoredBy.map { " (restored by run \($0))" } ?? ""
            let pruned = e.prunedAt.map { " (journal pruned \(shortTimestamp($0)))" } ?? ""
            rows.append([
                String(e.runID), e.command.rawValue, e.status.rawValue, shortTimestamp(e.startedAt),
                e.finishedAt == nil ? "-" : duration(e.seconds), String(e.counts.groups), String(e.counts.deleted),
                String(e.counts.updated), String(e.counts.repointed), (e.job ?? "-") + restore + restoredBy + pruned,
            ])
            if let message = e.message, e.status != .completed { messages[rows.count - 1] = message }
        }
        let lines = table(header, rows, numeric: [0, 4, 5, 6, 7, 8])
        var out = [lines[0]]
        for (index, line) in lines.dropFirst().enumerated() {
            out.append(line)
            if let message = messages[index] { out.append("    \(message)") }
        }
        return out.joined(separator: "\n")
    }

    /// A key value as SQL spells it (`'text'`, `42`, `1.5`, `NULL`, `X'00FF'`) as a JSON value:
    /// a string, a number, null, or `{"blob": "00ff"}`.
    /// A row's identity in JSON: its one value (a rowid, a one-column primary key), or the array
    /// of a composite key's values in key order.
    package static func jsonValue(_ key: RowKey) -> Any {
        key.parts.count == 1 ? jsonValue(sqlLiteral: key.parts[0].literal) : key.parts.map { jsonValue(sqlLiteral: $0.literal) }
    }

    package static func jsonValue(sqlLiteral literal: String) -> Any {
        if literal == "NULL" { return NSNull() }
        if literal.count >= 2, literal.hasPrefix("'"), literal.hasSuffix("'") {
            return String(literal.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'")
        }
        if literal.count >= 3, literal.hasPrefix("X'"), literal.hasSuffix("'") {
            return ["blob": literal.dropFirst(2).dropLast().lowercased()]
        }
        if let integer = Int64(literal) { return integer }
        if let real = Double(literal) { return real }
        return literal
    }

    /// `winnow init`: what was written and what each table's keys found.
    public static func text(starter result: Starter.Result) -> String {
        var lines = ["wrote \(result.schemaPath) (the schema as it is) and \(result.jobPath) (the starter job)"]
        let rows = result.findings.map { finding -> [String] in
            if finding.notDeduplicable != nil { return [finding.table, String(finding.rows), "-", "-", "no rule possible (see the job)"] }
            guard let chosen = finding.chosen else {
                if let vetoed = finding.vetoed.first {
                    return [
                        finding.table, String(finding.rows), vetoed.candidate.columns.joined(separator: " + "), String(vetoed.bestGroups),
                        "commented out (a stronger key finds none)",
                    ]
                }
                return [finding.table, String(finding.rows), finding.counts.isEmpty ? "-" : "none found", "0", "commented out"]
            }
            let key = chosen.candidate.columns.joined(separator: " + ") + (chosen.normalizes ? " (trim, lowercase)" : "")
            return [finding.table, String(finding.rows), key, String(chosen.bestGroups), "rule"]
        }
        if !rows.isEmpty { lines += table(["table", "rows", "key", "groups", "in the job"], rows, numeric: [1, 3]) }
        lines.append("next: read \(result.jobPath), then `winnow plan \(result.jobPath)`")
        return lines.joined(separator: "\n")
    }

    public static func json(starter result: Starter.Result) -> String {
        jsonLine([
            "event": "init", "job": result.jobPath, "schema": result.schemaPath,
            "tables": result.findings.map { finding -> [String: Any] in
                var object: [String: Any] = ["table": finding.table, "rows": finding.rows]
                object["candidates"] = finding.counts.map {
                    [
                        "key": $0.candidate.columns, "groups": $0.groups, "extra_rows": $0.surplus,
                        "normalized_groups": $0.normalizedGroups, "normalized_extra_rows": $0.normalizedSurplus,
                    ] as [String: Any]
                }
                object["rule"] = finding.chosen.map { $0.candidate.columns as Any } ?? NSNull()
                if let reason = finding.notDeduplicable { object["not_deduplicable"] = reason }
                return object
            },
        ])
    }

    /// An aligned table: each column as wide as its widest cell, two spaces apart, `numeric`
    /// columns right-aligned; the last column is not padded.
    package static func table(_ header: [String], _ rows: [[String]], numeric: Set<Int> = []) -> [String] {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        return all.map { cells in
            cells.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: max(0, widths[column] - cell.count))
                if column == cells.count - 1, !numeric.contains(column) { return cell }
                return numeric.contains(column) ? pad + cell : cell + pad
            }.joined(separator: "  ")
        }
    }

    /// `2026-11-21T10:00:05.123Z` as `2026-11-21 10:00:05`.
    package static func shortTimestamp(_ iso: String) -> String {
        let trimmed = iso.replacingOccurrences(of: "T", with: " ")
        return String(trimmed.prefix(19))
    }

    /// Seconds for people: `0.42 s`, `12.3 s`, `4 min 05 s`, `2 h 03 min`.
    package static func duration(_ seconds: Double) -> String {
        if seconds < 10 { return String(format: "%.2f s", seconds) }
        if seconds < 60 { return String(format: "%.1f s", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 3600 { return String(format: "%d min %02d s", whole / 60, whole % 60) }
        return String(format: "%d h %02d min", whole / 3600, (whole % 3600) / 60)
    }

    // MARK: JUnit

    package static func xmlEscape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// `check --format junit`: one test case per rule, failed when it leaves duplicates.
    /// A group's rows side by side (the kept row marked `keep`), what a merge changes in the
    /// kept row, and the children that move to it. Empty for a sample without rows.
    package static func sampleDetail(_ sample: GroupSample, wouldBe: Bool) -> [String] {
        guard !sample.rows.isEmpty else { return [] }
        let header = ["", sample.winner.columns] + sample.columns
        let rows = sample.rows.map { row in [row.row == sample.winner ? "keep" : "delete", row.row.literals] + row.values.map(cell) }
        var lines = table(header, rows, numeric: [1]).map { "      " + $0 }
        for merge in sample.merged {
            lines.append("      merge: \(merge.column) \(cell(merge.before)) -> \(cell(merge.after))")
        }
        for child in sample.children {
            lines.append(
                child.mayCollide
                    ? "      children: \(plural(child.rows, "row")) of \(child.reference) \(child.rows == 1 ? "points" : "point") at \(child.loser): each moves to \(sample.winner), or is deleted where \(sample.winner) already has the same row"
                    : "      re-point: \(plural(child.rows, "row")) of \(child.reference) from \(child.loser) to \(sample.winner)"
            )
        }
        return lines
    }

    /// A value for a table cell: long texts shortened, line breaks shown as `\n`.
    static func cell(_ literal: String) -> String {
        let flat = literal.replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\r", with: "\\r")
        return flat.count > 40 ? String(flat.prefix(37)) + "..." : flat
    }

    /// A run in one line, for logs and cron mails: `run 7 of JOB on DB: completed: ...`.
    public static func line(_ summary: RunSummary) -> String {
        let id = summary.runID.map { " \($0)" } ?? ""
        return "\(summary.command.rawValue)\(id) of \(summary.job ?? "?") on \(summary.database): \(statusLine(summary))"
    }

    /// The last line of a `check`: `OK: ...` or `FAIL: ...` with what was found.
    public static func checkVerdict(_ summary: RunSummary) -> String {
        if !summary.drift.isEmpty {
            return "FAIL: \(plural(summary.drift.count, "schema difference")) from the target schema"
                + (summary.counts.groups > 0 ? ", and \(plural(summary.counts.groups, "duplicate group"))" : "")
        }
        return summary.counts.groups > 0
            ? "FAIL: \(plural(summary.counts.groups, "duplicate group")) (\(summary.counts.deleted) extra rows) left under the job's rules"
            : "OK: no duplicates under the job's rules"
    }

    /// Whether a `check` found anything (exit 1).
    public static func checkFailed(_ summary: RunSummary) -> Bool { summary.counts.groups > 0 || !summary.drift.isEmpty }

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

// MARK: fleets

extension Renderer {
    /// `{"store": ..., "event": {...}}`: one store's batch or migration event in a fleet.
    public static func json(store: String, event: RunEvent) -> String? {
        switch event {
        case let .batch(report): return jsonLine(["store": store, "event": batchObject(report)])
        case let .migrationStep(index, step, seconds):
            return jsonLine(["store": store, "event": migrationObject(step, index: index, seconds: seconds)])
        default: return nil
        }
    }

    /// `{"store": ..., "entry": {...}}`: one history entry of a store, when several are listed.
    public static func json(store: String, entry: HistoryEntry) -> String { jsonLine(["store": store, "entry": historyObject(entry)]) }

    /// One store of a fleet: its status, exit code, error and summary.
    public static func json(_ outcome: StoreOutcome) -> String {
        var object: [String: Any] = ["store": outcome.store, "status": outcome.status.rawValue, "exit": Int(outcome.exitCode)]
        if let error = outcome.error { object["error"] = error.description }
        if let summary = outcome.summary { object["summary"] = summaryObject(summary) }
        return jsonLine(object)
    }

    /// `{"fleet": {...}}`: the fleet's totals after its stores.
    public static func json(fleet outcomes: [StoreOutcome], command: String, exitCode: Int32, seconds: Double) -> String {
        var totals = Counts()
        for summary in outcomes.compactMap(\.summary) { totals = totals + summary.counts }
        var fleet = countsObject(totals)
        func count(_ status: StoreOutcome.Status) -> Int { outcomes.filter { $0.status == status }.count }
        fleet["command"] = command
        fleet["stores"] = outcomes.count
        fleet["done"] = count(.done)
        fleet["locked"] = count(.locked)
        fleet["failed"] = count(.failed)
        fleet["not_run"] = count(.notRun)
        fleet["findings"] = outcomes.filter { $0.status == .done && $0.exitCode == ExitStatus.findings }.count
        fleet["seconds"] = rounded(seconds)
        fleet["exit"] = Int(exitCode)
        return jsonLine(["fleet": fleet])
    }
}

extension Renderer {
    /// One store of a fleet, as its line in the report.
    public static func text(_ outcome: StoreOutcome) -> String {
        switch outcome.status {
        case .done:
            guard let summary = outcome.summary else { return "\(outcome.store): done" }
            return "\(outcome.store): \(summary.command == .check ? checkVerdict(summary) : line(summary))"
        case .locked, .failed:
            let what = outcome.status == .locked ? "locked, skipped" : "failed"
            return "\(outcome.store): \(what) (exit \(outcome.exitCode)): \(outcome.error?.description ?? "")"
        case .notRun:
            return "\(outcome.store): not run: \(outcome.error?.description ?? "")"
        }
    }

    /// The last line of a fleet's report: stores by outcome and the counts of all.
    public static func fleetTotal(_ outcomes: [StoreOutcome], exitCode: Int32, seconds: Double) -> String {
        var counts = Counts()
        var steps = 0
        for summary in outcomes.compactMap(\.summary) {
            counts = counts + summary.counts
            steps += summary.migrationSteps
        }
        func count(_ status: StoreOutcome.Status) -> Int { outcomes.filter { $0.status == status }.count }
        let findings = outcomes.filter { $0.status == .done && $0.exitCode == ExitStatus.findings }.count
        var parts = ["\(outcomes.count) stores", "\(count(.done)) done"]
        if findings > 0 { parts.append("\(findings) with findings") }
        if count(.locked) > 0 { parts.append("\(count(.locked)) locked") }
        if count(.failed) > 0 { parts.append("\(count(.failed)) failed") }
        if count(.notRun) > 0 { parts.append("\(count(.notRun)) not run") }
        let verdict = exitCode == ExitStatus.ok ? "completed" : exitCode == ExitStatus.findings ? "FAIL" : "failed"
        return """
            \(verdict): fleet of \(parts.joined(separator: ", ")); \(counts.groups) duplicate groups, \(counts.deleted) rows deleted, \
            \(counts.updated) updated, \(counts.repointed) references re-pointed, \(steps) migration steps in \(duration(seconds)) (exit \(exitCode))
            """
    }
}

extension Renderer {
    /// `plan` over a fleet: the stores grouped by identical live schema (their plans'
    /// fingerprint), per group the plan of its first store and what each store would change;
    /// then the stores that could not be planned.
    public static func fleetPlan(_ outcomes: [StoreOutcome]) -> String {
        var groups: [(schema: String, outcomes: [StoreOutcome])] = []
        for outcome in outcomes {
            guard let schema = outcome.summary?.fingerprints?.liveSchema else { continue }
            if let index = groups.firstIndex(where: { $0.schema == schema }) {
                groups[index].outcomes.append(outcome)
            } else {
                groups.append((schema, [outcome]))
            }
        }
        var lines: [String] = []
        for (number, group) in groups.enumerated() {
            let changing = group.outcomes.filter {
                ($0.summary?.counts.changedAnything ?? false) || ($0.summary?.migration.isEmpty == false)
            }
            let stores = "\(group.outcomes.count) store\(group.outcomes.count == 1 ? "" : "s")"
            lines.append("== schema group \(number + 1) of \(groups.count): \(stores), \(changing.count) would change")
            if let first = group.outcomes.first?.summary { lines.append(text(first)) }
            lines.append("per store:")
            for outcome in group.outcomes {
                guard let summary = outcome.summary else { continue }
                lines.append("  \(outcome.store): \(countsLine(summary.counts, wouldBe: true)), \(summary.migration.count) migration steps")
            }
        }
        lines += outcomes.filter { $0.summary == nil }.map(text)
        return lines.joined(separator: "\n")
    }
}
