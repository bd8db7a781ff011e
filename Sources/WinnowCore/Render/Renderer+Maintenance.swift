import Foundation

/// `winnow prune` and `winnow uninstall`.
extension Renderer {
    public static func text(_ report: JournalPruner.Report) -> String {
        if let message = report.message { return "Prune on \(report.database): \(message)" }
        var line = "Prune on \(report.database): \(plural(report.entries, "journal entry", "journal entries")) deleted"
        if !report.runs.isEmpty {
            line +=
                "; the journal of \(plural(report.runs.count, "run")) (\(report.runs.map(String.init).joined(separator: ", "))) is gone: "
                + "\(report.runs.count == 1 ? "it" : "they") can no longer be restored"
        }
        return line
    }

    public static func json(_ report: JournalPruner.Report) -> String {
        var object: [String: Any] = [
            "event": "summary", "command": "prune", "database": report.database, "runs": report.runs, "entries": report.entries,
            "seconds": rounded(report.seconds),
        ]
        if let message = report.message { object["message"] = message }
        return jsonLine(object)
    }

    /// `table winnow_runs (3 rows)`, `trigger winnow_track_insert_people on people`.
    static func describe(_ object: WinnowObject) -> String {
        switch object.kind {
        case .trigger:
            let table = object.schema.map { "\($0).\(object.on ?? "?")" } ?? (object.on ?? "?")
            return "trigger \(object.name) on \(table)"
        case .table: return "table \(object.qualifiedName)" + (object.rows.map { " (\(plural($0, "row")))" } ?? "")
        case .function: return "function \(object.qualifiedName)()"
        case .schema: return "schema \(object.name)"
        }
    }

    /// What an uninstall removed, or (`dryRun`) would remove; `asking`: the list shown before
    /// the question on a terminal.
    public static func text(_ report: Uninstaller.Report, asking: Bool = false) -> String {
        guard !report.objects.isEmpty else {
            return "Uninstall on \(report.database): nothing to remove (no winnow tables, triggers or functions)"
        }
        var lines = [
            asking
                ? "Uninstall on \(report.database) will remove:"
                : report.dryRun
                    ? "Uninstall on \(report.database) would remove (nothing removed: --dry-run):"
                    : "Uninstall on \(report.database) removed:"
        ]
        lines += report.objects.map { "  \(describe($0))" }
        lines.append(
            report.dryRun
                ? "history and journal go with them: no run can be restored afterwards; user tables and rows are not touched"
                : "user tables and rows were not touched")
        return lines.joined(separator: "\n")
    }

    public static func json(_ report: Uninstaller.Report) -> String {
        jsonLine([
            "event": "summary", "command": "uninstall", "database": report.database, "dry_run": report.dryRun,
            "seconds": rounded(report.seconds),
            "objects": report.objects.map { object -> [String: Any] in
                var o: [String: Any] = ["kind": object.kind.rawValue, "name": object.name]
                if let schema = object.schema { o["schema"] = schema }
                if let on = object.on { o["on"] = on }
                if let rows = object.rows { o["rows"] = rows }
                return o
            },
        ])
    }
}
