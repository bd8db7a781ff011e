import Foundation

extension Renderer {
    /// `winnow show`: the run, what each rule did (counts), then per rule its groups and child
    /// rows as the journal has them, then the journal's rows per table.
    public static func text(_ report: RunReport) -> String {
        let run = report.run
        var lines = [
            "Run \(run.runID): \(run.command.rawValue) of \(run.job ?? "-"), \(run.status.rawValue), started \(shortTimestamp(run.startedAt)) UTC"
                + (run.finishedAt == nil ? "" : ", \(duration(run.seconds))")
        ]
        if let restores = run.restoresRun { lines.append("restores run \(restores)") }
        if let by = run.restoredBy { lines.append("restored by run \(by)") }
        if let message = run.message { lines.append("message: \(message)") }
        if run.migrationSteps > 0 { lines.append("migration: \(plural(run.migrationSteps, "step")) applied") }
        if let reinserted = run.reinserted, let reverted = run.reverted {
            lines.append("restored: \(plural(reinserted, "row")) re-inserted, \(plural(reverted, "row")) reverted")
        } else {
            lines.append("total: \(countsLine(run.counts, wouldBe: false)) in \(plural(run.counts.batches, "batch", "batches"))")
        }
        if !report.rules.isEmpty {
            lines.append("")
            let rows = report.rules.map { rule in
                [
                    "dedupe[\(rule.index)]", rule.table, rule.key, String(rule.counts.groups), String(rule.counts.deleted),
                    String(rule.counts.updated), String(rule.counts.repointed), String(rule.counts.childrenDeleted),
                ]
            }
            lines += table(
                ["rule", "table", "key", "groups", "deleted", "updated", "repointed", "children deleted"], rows, numeric: [3, 4, 5, 6, 7])
        }
        switch report.rows {
        case .listed:
            for rule in report.rules where !rule.groups.isEmpty || !rule.repointed.isEmpty || !rule.childrenDeleted.isEmpty {
                lines.append("")
                lines += ruleLines(rule, limit: report.groupLimit)
            }
        case .unchanged:
            break
        case .notJournaled:
            lines.append("")
            lines.append(
                "rows: not listed: the run did not journal them (archive: false), so only its counts are known; it cannot be restored")
        case let .pruned(at):
            lines.append("")
            lines.append("rows: not listed: the run's journal was pruned at \(shortTimestamp(at)) UTC; it can no longer be restored")
        case .groupsNotRecorded:
            lines.append("")
            lines.append("rows: the groups were not recorded (a run recorded by an earlier winnow); the journal's tables below")
        }
        if !report.journal.isEmpty, report.rows != .notJournaled, !isPruned(report.rows) {
            lines.append("")
            lines.append("journal (what `winnow restore --run \(run.runID)` puts back):")
            lines += table(
                ["table", "rows deleted", "rows changed"], report.journal.map { [$0.table, String($0.deleted), String($0.updated)] },
                numeric: [1, 2])
        }
        return lines.joined(separator: "\n")
    }

    static func isPruned(_ rows: RunReport.Rows) -> Bool {
        if case .pruned = rows { return true }
        return false
    }

    /// One rule's groups and child rows; with a limit, the first groups and children only.
    static func ruleLines(_ rule: RunReport.Rule, limit: Int?) -> [String] {
        var lines = [
            "dedupe[\(rule.index)] \(rule.table) by \(rule.key): \(plural(rule.counts.groups, "group")) (changed values: before the run -> now)"
        ]
        for group in rule.groups {
            let key = group.key.isEmpty ? "" : " " + group.key.map { "\($0.column) \($0.literal)" }.joined(separator: ", ")
            lines.append("  group\(key): kept \(group.kept); deleted \(group.deleted.map(\.key.description).joined(separator: ", "))")
            if let updated = group.updated { lines.append("    updated \(changed(updated))") }
        }
        if rule.counts.groups > rule.groups.count {
            lines.append("  ... \(plural(rule.counts.groups - rule.groups.count, "more group")) (--verbose lists all)")
        }
        let repointed = limit.map { Array(rule.repointed.prefix($0)) } ?? rule.repointed
        if !repointed.isEmpty {
            lines.append("  re-pointed child rows:")
            for row in repointed { lines.append("    \(row.table) \(changed(row))") }
        }
        if rule.counts.repointed > repointed.count, limit != nil {
            lines.append("    ... \(rule.counts.repointed - repointed.count) more (--verbose lists all)")
        }
        let deleted = limit.map { Array(rule.childrenDeleted.prefix($0)) } ?? rule.childrenDeleted
        if !deleted.isEmpty {
            lines.append("  duplicate child rows deleted: " + deleted.map { "\($0.table) \($0.key)" }.joined(separator: ", "))
        }
        if rule.counts.childrenDeleted > deleted.count, limit != nil {
            lines.append("    ... \(rule.counts.childrenDeleted - deleted.count) more (--verbose lists all)")
        }
        return lines
    }

    /// `id 3: phone NULL -> '555'`, or that the row is gone.
    static func changed(_ row: RunReport.ChangedRow) -> String {
        guard row.exists else { return "\(row.key): no longer in the table" }
        guard !row.changes.isEmpty else { return "\(row.key): as before the run now" }
        return "\(row.key): " + row.changes.map { "\($0.column) \($0.before) -> \($0.now ?? "?")" }.joined(separator: ", ")
    }

    /// `show --format json`: one object, every group and row.
    public static func json(_ report: RunReport) -> String {
        var text = ""
        json(report) { text += $0 }
        return text
    }

    /// `show --format json` in pieces, for a listing too large to hold twice: `write` takes the
    /// object's text piece by piece (the pieces joined are ``json(_:)``'s line, without its
    /// newline). Each group and child row is built and encoded on its own, as it is written.
    public static func json(_ report: RunReport, write: (String) -> Void) {
        streamedLine({ list in showLine(report, list: list) }, write: write)
    }

    /// The `show` object's line, each rule's lists as `list(key, count, element)` makes them.
    private static func showLine(_ report: RunReport, list: ListMaker) -> String {
        var object = historyObject(report.run)
        object["event"] = "show"
        object["rules"] = report.rules.map { rule -> [String: Any] in
            var o = countsObject(rule.counts)
            o["rule"] = rule.index
            o["table"] = rule.table
            o["key"] = rule.key
            o["key_columns"] = rule.keyColumns
            if report.rows == .listed {
                o["groups"] = list("groups", rule.groups.count) { groupObject(rule.groups[$0]) }
                o["repointed"] = list("repointed", rule.repointed.count) { changedObject(rule.repointed[$0]) }
                o["children_deleted"] = list("children_deleted", rule.childrenDeleted.count) { deletedObject(rule.childrenDeleted[$0]) }
            }
            return o
        }
        switch report.rows {
        case .listed: object["rows"] = "listed"
        case .unchanged: object["rows"] = "unchanged"
        case .notJournaled: object["rows"] = "not_journaled"
        case .pruned: object["rows"] = "pruned"
        case .groupsNotRecorded: object["rows"] = "groups_not_recorded"
        }
        object["journal"] = report.journal.map { ["table": $0.table, "deleted": $0.deleted, "updated": $0.updated] as [String: Any] }
        return jsonLine(object)
    }

    static func groupObject(_ group: RunReport.Group) -> JSONValue {
        var g: [String: JSONValue] = [
            "key": values(group.key), "kept": identity(group.kept), "deleted": .array(group.deleted.map(deletedObject)),
        ]
        if let updated = group.updated { g["updated"] = changedObject(updated) }
        return .object(g)
    }

    static func values(_ values: [RunReport.Value]) -> JSONValue {
        .object(Dictionary(values.map { ($0.column, JSONValue(sqlLiteral: $0.literal)) }, uniquingKeysWith: { a, _ in a }))
    }

    static func identity(_ key: RowKey) -> JSONValue {
        .object(Dictionary(key.parts.map { ($0.column, JSONValue(sqlLiteral: $0.literal)) }, uniquingKeysWith: { a, _ in a }))
    }

    static func deletedObject(_ row: RunReport.DeletedRow) -> JSONValue {
        .object(["table": .string(row.table), "row": identity(row.key), "values": values(row.values)])
    }

    static func changedObject(_ row: RunReport.ChangedRow) -> JSONValue {
        .object([
            "table": .string(row.table), "row": identity(row.key), "exists": .bool(row.exists),
            "changes": .array(
                row.changes.map {
                    .object([
                        "column": .string($0.column), "before": JSONValue(sqlLiteral: $0.before),
                        "now": $0.now.map(JSONValue.init(sqlLiteral:)) ?? .null,
                    ])
                }),
        ])
    }
}
