import Foundation

/// JSON lines: one object per event, summary, error, history entry or `init` survey.
extension Renderer {
    // MARK: JSON lines

    /// One JSON object on one line, keys sorted. Every event carries `"time"` (UTC, ISO 8601
    /// with milliseconds), so cron logs can be read back in order; `stamped: false` leaves it
    /// out (golden files).
    package static func jsonLine(_ object: [String: Any], stamped: Bool = true) -> String {
        var object = object
        if stamped, object["time"] == nil { object["time"] = Bookkeeping.timestamp() }
        return JSONValue(object)?.line() ?? "{}"
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

    /// The summary's line in pieces (``streamedLine(_:write:)``): each rule's sample groups are
    /// built and encoded one at a time as they are written (`plan --verbose` lists every group).
    public static func json(_ summary: RunSummary, includeTimes: Bool = true, write: (String) -> Void) {
        streamedLine(
            { list in jsonLine(summaryObject(summary, includeTimes: includeTimes, list: list), stamped: includeTimes) }, write: write)
    }

    /// A list in an object: its key, its length and its elements by index.
    package typealias ListMaker = (_ key: String, _ count: Int, _ element: @escaping (Int) -> JSONValue) -> Any

    /// One JSON line too large to hold twice, written piece by piece: `line` encodes the object
    /// with each list that `list` stands in for as a marker; each marker is found after its key
    /// and the list written in its place, one element at a time (the pieces joined are the line
    /// `line` writes with whole lists).
    package static func streamedLine(_ line: (_ list: ListMaker) -> String, write: (String) -> Void) {
        let (text, lists) = marking(line)
        guard let places = places(of: lists, in: text, separator: ":") else {
            // Not expected (the encoder writes every marker as above); the whole object at once.
            write(line { _, count, element in JSONValue.array((0..<count).map(element)) })
            return
        }
        let encoder = JSONValue.lineEncoder()
        var written = text.startIndex
        for (range, list) in places {
            write(String(text[written..<range.lowerBound]) + "[")
            for index in 0..<list.count {
                let piece = list.element(index).line(encoder) ?? "{}"
                write(index == 0 ? piece : "," + piece)
            }
            write("]")
            written = range.upperBound
        }
        write(String(text[written...]))
    }

    /// A list an encoded object holds a marker for, written in its place one element at a time.
    package struct MarkedList {
        var key: String
        var marker: String
        var count: Int
        var element: (Int) -> JSONValue
    }

    /// `encode`'s result with each list a ``ListMaker`` stood in for by a marker, and those lists.
    static func marking(_ encode: (_ list: ListMaker) -> String) -> (String, [MarkedList]) {
        var lists: [MarkedList] = []
        let text = encode { key, count, element in
            let marker = "\u{1}winnow-list-\(lists.count)"
            lists.append(MarkedList(key: key, marker: marker, count: count, element: element))
            return marker
        }
        return (text, lists)
    }

    /// Where each list's marker stands in `text`, after its key and `separator` (`:` on one
    /// line, ` : ` pretty-printed), in the text's order; nil where one is not found. The marker
    /// as the encoder wrote it: a string value holds its quotes escaped, so no value of the
    /// object can read the same.
    static func places(of lists: [MarkedList], in text: String, separator: String) -> [(Range<String.Index>, MarkedList)]? {
        let places = lists.compactMap { list -> (Range<String.Index>, MarkedList)? in
            guard let key = JSONValue.string(list.key).line(), let marker = JSONValue.string(list.marker).line(),
                let range = text.range(of: key + separator + marker)
            else { return nil }
            return (text.index(range.upperBound, offsetBy: -marker.count)..<range.upperBound, list)
        }.sorted { $0.0.lowerBound < $1.0.lowerBound }
        return places.count == lists.count ? places : nil
    }

    /// The summary's object as `plan --save` writes it: pretty-printed (keys sorted, two
    /// spaces a level), each line after the first indented by `indent` more, without times,
    /// each rule's sample groups encoded one at a time as they are written.
    package static func prettyJSON(_ summary: RunSummary, indent: String, write: (String) -> Void) {
        let encoder = JSONValue.prettyEncoder()
        func pretty(_ value: JSONValue?) -> String { value?.line(encoder) ?? "{}" }
        // Each line after the first indented by `prefix`, but an empty one (an empty list is
        // written with an empty line inside, `[\n\n]`). By bytes: Foundation's
        // `replacingOccurrences` took half of `plan --verbose --save`.
        func indented(_ text: some StringProtocol, by prefix: String) -> String {
            guard !prefix.isEmpty else { return String(text) }
            let newline = UInt8(ascii: "\n")
            let bytes = Array(text.utf8)
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count + bytes.count / 8)
            for (index, byte) in bytes.enumerated() {
                out.append(byte)
                if byte == newline, index + 1 < bytes.count, bytes[index + 1] != newline { out.append(contentsOf: prefix.utf8) }
            }
            return String(decoding: out, as: UTF8.self)
        }
        let (text, lists) = marking { list in pretty(JSONValue(summaryObject(summary, includeTimes: false, list: list))) }
        guard let places = places(of: lists, in: text, separator: " : ") else {
            // Not expected (the encoder writes every marker as above); the whole object at once.
            write(indented(pretty(JSONValue(summaryObject(summary, includeTimes: false))), by: indent))
            return
        }
        var written = text.startIndex
        for (range, list) in places {
            write(indented(text[written..<range.lowerBound], by: indent))
            let lineStart = text[..<range.lowerBound].lastIndex(of: "\n").map { text.index(after: $0) } ?? text.startIndex
            let outer = indent + String(text[lineStart...].prefix { $0 == " " })
            let inner = outer + "  "
            if list.count == 0 {
                write("[]")
            } else {
                write("[\n")
                for index in 0..<list.count {
                    write((index == 0 ? "" : ",\n") + inner + indented(pretty(list.element(index)), by: inner))
                }
                write("\n" + outer + "]")
            }
            written = range.upperBound
        }
        write(indented(text[written...], by: indent))
    }

    /// The summary's object; `list` makes each rule's list of sample groups (by default the
    /// whole list).
    package static func summaryObject(
        _ summary: RunSummary, includeTimes: Bool = true,
        list: ListMaker = { _, count, element in JSONValue.array((0..<count).map(element)) }
    ) -> [String: Any] {
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
            if !rule.links.isEmpty {
                r["links"] = rule.links.map { ["key": $0.key, "rows": $0.rows] as [String: Any] }
                r["largest_groups"] = rule.largestGroups
                if let limit = rule.maxGroupSize { r["max_group_size"] = limit }
            }
            if !rule.warnings.isEmpty { r["warnings"] = rule.warnings }
            if !rule.samples.isEmpty {
                // Read in order, one at a time (the list may be in a file: ``SampleList``).
                let sample = rule.samples.sequentialAccess()
                r["sample_groups"] = list("sample_groups", rule.samples.count) { index in
                    guard let found = sample(index) else {
                        return .object(["unreadable": .string(rule.samples.readFailure ?? "not found")])
                    }
                    return JSONValue(sampleObject(found)) ?? .object([:])
                }
            }
            return r
        }
        return object
    }

    /// One group of a summary's `sample_groups`.
    package static func sampleObject(_ sample: GroupSample) -> [String: Any] {
        var object: [String: Any] = [
            "key": sample.key.map(jsonValue(sqlLiteral:)), "identity": sample.winner.parts.map(\.column),
            "winner": jsonValue(sample.winner), "losers": sample.losers.map(jsonValue(_:)),
        ]
        if !sample.linkedBy.isEmpty {
            object["linked_by"] = sample.linkedBy.map {
                ["row": jsonValue($0.row), "key": $0.key, "to": jsonValue($0.to)] as [String: Any]
            }
        }
        if !sample.rows.isEmpty {
            object["columns"] = sample.columns
            object["rows"] = sample.rows.map {
                ["row": jsonValue($0.row), "keep": $0.row == sample.winner, "values": $0.values.map(jsonValue(sqlLiteral:))]
                    as [String: Any]
            }
            object["merge"] = sample.merged.map { merge -> [String: Any] in
                var object: [String: Any] = [
                    "column": merge.column, "before": jsonValue(sqlLiteral: merge.before),
                    "after": jsonValue(sqlLiteral: merge.after),
                ]
                if let from = merge.from { object["from"] = jsonValue(from) }
                return object
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
            case .groupSize: object["guard"] = "max_group_size"
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

    /// A row's identity in JSON: its one value (a rowid, a one-column primary key), or the array
    /// of a composite key's values in key order.
    package static func jsonValue(_ key: RowKey) -> Any {
        key.parts.count == 1 ? jsonValue(sqlLiteral: key.parts[0].literal) : key.parts.map { jsonValue(sqlLiteral: $0.literal) }
    }

    /// A key value as SQL spells it (`'text'`, `42`, `1.5`, `NULL`, `X'00FF'`) as a JSON value:
    /// a string, a number, null, or `{"blob": "00ff"}` (``JSONValue/init(sqlLiteral:)``).
    package static func jsonValue(sqlLiteral literal: String) -> Any {
        switch JSONValue(sqlLiteral: literal) {
        case .null: return NSNull()
        case .string(let text): return text
        case .integer(let integer): return integer
        case .real(let real): return real
        case .object(let blob): if case .string(let hex)? = blob["blob"] { return ["blob": hex] } else { return JSONValue.object(blob) }
        case let other: return other
        }
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
}
