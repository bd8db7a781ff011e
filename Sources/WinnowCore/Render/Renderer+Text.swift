import Foundation

/// Text for people: summaries, history, `init`, sample groups and one-line verdicts.
extension Renderer {
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
        text(summary, includeTimes: includeTimes) { lines.append($0) }
        return lines.joined(separator: "\n")
    }

    /// The text summary, given to `line` one line at a time as it is made (`plan --verbose`
    /// lists every group; see ``SampleList``).
    public static func text(_ summary: RunSummary, includeTimes: Bool = true, line: (String) -> Void) {
        let wouldBe = summary.dryRun
        switch summary.command {
        case .plan: line("Plan for \(summary.job ?? "?") on \(summary.database) (nothing is written)")
        case .check: line("Check of \(summary.job ?? "?") on \(summary.database)")
        case .restore: line("Restore on \(summary.database)")
        default: line("Run \(summary.runID.map(String.init) ?? "?") of \(summary.job ?? "?") on \(summary.database)")
        }
        if !summary.migration.isEmpty {
            line("migration: \(plural(summary.migration.count, "step"))\(summary.dryRun ? "" : " applied")")
            for (index, step) in summary.migration.enumerated() {
                line("  \(index + 1). \(step.summary)\(step.rebuildsTable ? " [rebuilds the table]" : "")")
                if summary.command == .plan {
                    for sql in step.sql { line(sql.split(separator: "\n").map { "       \($0)" }.joined(separator: "\n")) }
                }
            }
        }
        for object in summary.kept { line("kept: \(object)") }
        for difference in summary.drift { line("drift: \(difference)") }
        for note in summary.notes { line("note: \(note)") }
        for rule in summary.rules {
            line("dedupe[\(rule.index)] \(rule.table) by \(rule.key.joined(separator: " + "))")
            line("  winner: \(rule.winner)")
            if let incremental = rule.incremental {
                line(
                    incremental
                        ? "  incremental: only keys of rows added or changed since the last run"
                        : "  incremental: full pass (change tracking starts now)")
            }
            if !rule.references.isEmpty { line("  references: \(rule.references.joined(separator: ", "))") }
            for warning in rule.warnings { line("  warning: \(warning)") }
            line("  " + countsLine(rule.counts, wouldBe: wouldBe))
            linkLines(rule).forEach(line)
            for sample in rule.samples {
                let losers = sample.losers.map(\.description).joined(separator: ", ")
                // An `any:` rule's rows need not share one key: its group is named by its size.
                let name = rule.links.isEmpty ? sample.key.joined(separator: ", ") : "of \(sample.losers.count + 1) rows"
                line("  group \(name): keep \(sample.winner); delete \(losers)")
                sampleDetail(sample, wouldBe: wouldBe).forEach(line)
                for link in sample.linkedBy { line("      linked: \(link.row) to \(link.to) by \(link.key)") }
            }
            if let failure = rule.samples.readFailure {
                line("  ... the groups after these could not be read back: \(failure)")
            } else if rule.samples.count < rule.counts.groups, !rule.samples.isEmpty {
                line("  ... \(rule.counts.groups - rule.samples.count) more groups (--verbose lists all)")
            }
        }
        if summary.rules.isEmpty, summary.command != .restore, summary.migration.isEmpty, summary.notes.isEmpty, summary.drift.isEmpty {
            line("no dedupe rules")
        }
        line(statusLine(summary, includeTimes: includeTimes))
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
            func name(_ count: Starter.Count) -> String {
                count.candidate.columns.joined(separator: " + ") + (count.normalizes ? " (trim, lowercase)" : "")
            }
            let linked = finding.linked
            if !linked.isEmpty {
                return [
                    finding.table, String(finding.rows), "any of (" + linked.map(name).joined(separator: "; ") + ")",
                    String(finding.linkedGroups), "rule",
                ]
            }
            return [finding.table, String(finding.rows), name(chosen), String(chosen.bestGroups), "rule"]
        }
        if !rows.isEmpty { lines += table(["table", "rows", "key", "groups", "in the job"], rows, numeric: [1, 3]) }
        lines.append("next: read \(result.jobPath), then `winnow plan \(result.jobPath)`")
        return lines.joined(separator: "\n")
    }

    /// What each alternative of an `any:` rule added, and its largest groups (none for a rule
    /// with one key).
    static func linkLines(_ rule: RuleSummary) -> [String] {
        guard !rule.links.isEmpty else { return [] }
        let added = rule.links.enumerated().map { index, link in
            index == 0 ? "\(link.key) links \(plural(link.rows, "row"))" : "\(link.key) \(link.rows) more"
        }
        var lines = ["  keys: " + added.joined(separator: "; ")]
        if !rule.largestGroups.isEmpty {
            let limit = rule.maxGroupSize.map { " (max_group_size \($0))" } ?? ""
            lines.append("  largest groups: \(rule.largestGroups.map(String.init).joined(separator: ", ")) rows\(limit)")
        }
        return lines
    }

    /// A group's rows side by side (the kept row marked `keep`), what a merge changes in the
    /// kept row, and the children that move to it. Empty for a sample without rows.
    package static func sampleDetail(_ sample: GroupSample, wouldBe: Bool) -> [String] {
        guard !sample.rows.isEmpty else { return [] }
        let header = ["", sample.winner.columns] + sample.columns
        let rows = sample.rows.map { row in [row.row == sample.winner ? "keep" : "delete", row.row.literals] + row.values.map(cell) }
        var lines = table(header, rows, numeric: [1]).map { "      " + $0 }
        for merge in sample.merged {
            lines.append(
                "      merge: \(merge.column) \(cell(merge.before)) -> \(cell(merge.after))\(merge.from.map { " (from \($0))" } ?? "")")
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
        // Most values hold no line break: they skip Foundation's search and replace
        // (`plan --verbose` of lower-500, 53,277 groups listed: 8.9 s before, 6.1 s after).
        let breaks = literal.utf8.contains { $0 == 0x0A || $0 == 0x0D }
        let flat = !breaks ? literal : literal.replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\r", with: "\\r")
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
}
