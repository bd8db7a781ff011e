import Foundation

/// `winnow init`: inspects a live database (read-only) and writes a starter schema file (the
/// schema as it is) and a starter job whose rules are the keys that find duplicates, each with
/// comments saying what was counted and why it was chosen. Never overwrites a file.
public enum Starter {
    /// What was counted for one candidate key.
    public struct Count: Sendable, Equatable {
        public var candidate: StarterGuess.Candidate
        /// Groups and surplus rows with the raw values, and with `trim` + `lowercase`.
        public var groups: Int
        public var surplus: Int
        public var normalizedGroups: Int
        public var normalizedSurplus: Int

        /// Whether the normalisers find more than the raw values.
        public var normalizes: Bool { candidate.text && normalizedGroups > groups }
        public var bestGroups: Int { normalizes ? normalizedGroups : groups }
        public var bestSurplus: Int { normalizes ? normalizedSurplus : surplus }
    }

    /// One table's findings.
    public struct TableFinding: Sendable, Equatable {
        public var table: String
        public var rows: Int
        public var counts: [Count]
        public var winner: (yaml: String, reason: String)
        public var references: [String]
        public var implied: [StarterGuess.ImpliedReference]
        /// Why no rule is proposed whatever the data (``RuleCompiler/notDeduplicable(_:dialect:)``);
        /// nil for a table a rule can deduplicate.
        public var notDeduplicable: String? = nil

        /// The key to propose: a strong key (an e-mail, a UUID, ...) finding duplicates, the one
        /// finding most; without a strong key, the weaker key finding most. A strong key that
        /// finds none vetoes the weaker ones: rows sharing a phone but not an e-mail are likely
        /// different people.
        public var chosen: Count? {
            let strong = counts.filter(\.candidate.strong)
            let pool = strong.isEmpty ? counts : strong
            return pool.filter { $0.bestGroups > 0 }.max { $0.bestGroups < $1.bestGroups }
        }

        /// Weaker keys that find duplicates a strong key does not confirm.
        public var vetoed: [Count] {
            guard counts.contains(where: \.candidate.strong) else { return [] }
            return counts.filter { !$0.candidate.strong && $0.bestGroups > 0 }
        }

        public static func == (a: TableFinding, b: TableFinding) -> Bool {
            a.table == b.table && a.rows == b.rows && a.counts == b.counts && a.winner == b.winner && a.references == b.references
                && a.implied == b.implied && a.notDeduplicable == b.notDeduplicable
        }
    }

    /// What `init` wrote.
    public struct Result: Sendable {
        public var jobPath: String
        public var schemaPath: String
        public var findings: [TableFinding]
    }

    /// Counts every candidate key of every table on a read-only session.
    public static func survey(_ session: any DatabaseSession) throws -> [TableFinding] {
        let schema = try session.inspect()
        var findings: [TableFinding] = []
        // In name order, whatever order the engine lists its tables in: the same database gives
        // the same starter job on every engine.
        let tables = schema.tables.sorted {
            ($0.name.lowercased(), $0.name) < ($1.name.lowercased(), $1.name)
        }
        for table in tables where StarterGuess.isCandidateTable(table) {
            let qualified = session.dialect.table(table.name)
            let rows = try session.value("SELECT count(*) FROM \(qualified)").int ?? 0
            // A table no rule can deduplicate (the engine gives its rows no name winnow can
            // use) is listed with the reason, and its keys are not counted.
            if let reason = RuleCompiler.notDeduplicable(table, dialect: session.dialect) {
                var finding = TableFinding(
                    table: table.name, rows: rows, counts: [], winner: StarterGuess.winner(table), references: [], implied: [])
                finding.notDeduplicable = reason
                findings.append(finding)
                continue
            }
            var counts: [Count] = []
            for candidate in StarterGuess.candidates(table) {
                let raw = try duplicates(session, qualified, candidate.columns.map(\.sqlIdentifier), candidate.columns)
                var normalized = raw
                if candidate.text {
                    let expressions = candidate.columns.enumerated().map { index, column -> String in
                        index == 0 || StarterGuess.isText(table.column(named: column)!)
                            ? session.dialect.normalized(column.sqlIdentifier, by: [.trim, .lowercase])
                            : column.sqlIdentifier
                    }
                    normalized = try duplicates(session, qualified, expressions, candidate.columns)
                }
                counts.append(
                    Count(
                        candidate: candidate, groups: raw.0, surplus: raw.1, normalizedGroups: normalized.0, normalizedSurplus: normalized.1
                    ))
            }
            findings.append(
                TableFinding(
                    table: table.name, rows: rows, counts: counts, winner: StarterGuess.winner(table),
                    references: schema.foreignKeys(referencing: table.name).map {
                        "\($0.childTable).\($0.childColumns.joined(separator: ", "))"
                    },
                    implied: StarterGuess.impliedReferences(to: table, in: schema)))
        }
        return findings
    }

    static func duplicates(
        _ session: any DatabaseSession, _ table: String, _ expressions: [String], _ columns: [String]
    ) throws -> (
        Int, Int
    ) {
        let notNull = columns.map { "\($0.sqlIdentifier) IS NOT NULL" }.joined(separator: " AND ")
        let row = try session.row(
            """
            SELECT count(*), coalesce(sum(n - 1), 0) FROM (
                SELECT count(*) AS n FROM \(table) WHERE \(notNull) GROUP BY \(expressions.joined(separator: ", ")) HAVING count(*) > 1
            ) AS winnow_groups
            """)
        return (try row?.int(0) ?? 0, try row?.int(1) ?? 0)
    }

    /// The path of `target` as seen from the folder `base` (both made absolute first).
    static func relative(_ target: String, from base: String) -> String {
        let targetParts = URL(fileURLWithPath: target).standardizedFileURL.pathComponents
        let baseParts = URL(fileURLWithPath: base).standardizedFileURL.pathComponents
        var common = 0
        while common < min(targetParts.count, baseParts.count), targetParts[common] == baseParts[common] { common += 1 }
        let up = Array(repeating: "..", count: baseParts.count - common)
        let parts = up + targetParts[common...]
        return parts.isEmpty ? "." : parts.joined(separator: "/")
    }

    /// The starter job: one rule per table whose candidate keys find duplicates; the others
    /// commented out with what was counted.
    public static func job(_ findings: [TableFinding], database: String, schema: String, jobPath: String) -> String {
        let folder = URL(fileURLWithPath: jobPath).deletingLastPathComponent().path
        // A server's URL is written as given, without a password (the job is a file people
        // commit); a file's path relative to the job, as job paths are read.
        let location =
            DatabaseURL.isPostgres(database)
            ? StarterGuess.yamlName(DatabaseURL.withoutPassword(database))
                + (DatabaseURL.hasPassword(database) ? "  # the password: PGPASSWORD or ~/.pgpass" : "")
            : StarterGuess.yamlName(relative(database, from: folder))
        var lines = [
            "# Starter job written by `winnow init` from \(DatabaseURL.redacted(database)).",
            "# Every rule below is a guess from the data: read the comments, then review what it would do",
            "# with `winnow plan \(jobPath)` (read-only) before `winnow run \(jobPath)`.",
            "version: 1",
            "database: \(location)",
            "schema: \(StarterGuess.yamlName(relative(schema, from: folder)))  # the schema as inspected; `winnow check` reports drift from it",
        ]
        let active = findings.filter { $0.chosen != nil }
        lines.append(active.isEmpty ? "dedupe: []  # no table has duplicates under the keys counted; see the comments" : "dedupe:")
        for finding in findings {
            lines.append("")
            let text = rule(finding)
            // A rule without duplicates stays in the file, commented out, with what was counted.
            lines += finding.chosen != nil ? text : text.map { $0.hasPrefix("  #") ? $0 : "  # " + $0.dropFirst(2) }
        }
        lines += [
            "",
            "batch:",
            "  size: 500                # duplicate groups per transaction",
            "  max_transaction_ms: 250  # batches shrink to keep each write transaction under this",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// One rule with its comments (not yet commented out).
    static func rule(_ finding: TableFinding) -> [String] {
        var lines: [String] = []
        let name = StarterGuess.yamlName(finding.table)
        lines.append("  # \(finding.table): \(finding.rows) row\(finding.rows == 1 ? "" : "s").")
        if let reason = finding.notDeduplicable {
            lines.append("  # No rule can deduplicate it: \(reason).")
            return lines
        }
        if finding.counts.isEmpty {
            lines.append("  # No candidate key: no column named like an identifier (email, uuid, external_id, ...),")
            lines.append("  # no person's name, not a lookup table. Name the key yourself if rows can repeat.")
            lines.append("  - entity: \(name)")
            lines.append("    key: COLUMN")
            return lines
        }
        for count in finding.counts {
            let key = count.candidate.columns.joined(separator: " + ")
            var found =
                "\(count.groups) duplicate group\(count.groups == 1 ? "" : "s") (\(count.surplus) extra row\(count.surplus == 1 ? "" : "s")) as stored"
            if count.candidate.text {
                found += ", \(count.normalizedGroups) (\(count.normalizedSurplus)) after trim + lowercase"
            }
            lines.append("  # key \(key) (\(count.candidate.reason)): \(found).")
        }
        let chosen = finding.chosen ?? finding.counts[0]
        for count in finding.vetoed {
            let weak = count.candidate.columns.joined(separator: " + ")
            if let strong = finding.chosen, strong.candidate.strong {
                lines.append(
                    "  # \(weak) is not proposed: \(strong.candidate.columns.joined(separator: " + ")) is a stronger key, and rows sharing only \(weak) may be different records."
                )
            } else {
                lines.append(
                    "  # \(weak) is not proposed: a stronger key finds no duplicates, so rows sharing it are likely different records.")
            }
        }
        if finding.chosen == nil { lines.append("  # No key is proposed today; the rule is left commented out.") }
        lines.append("  # winner: \(finding.winner.reason).")
        if !finding.references.isEmpty {
            lines.append(
                "  # references: \(finding.references.joined(separator: ", ")) (declared foreign keys) are re-pointed to the winner.")
        }
        if !finding.implied.isEmpty {
            lines.append(
                "  # referenced_by: \(finding.implied.map(\.label).joined(separator: ", ")) hold this entity's Z_PK (Core Data declares no foreign keys)."
            )
        }
        lines.append("  - entity: \(name)")
        let columns = chosen.candidate.columns.map(StarterGuess.yamlName)
        lines.append("    key: \(columns.count == 1 ? columns[0] : "[\(columns.joined(separator: ", "))]")")
        if chosen.normalizes {
            let text = chosen.candidate.columns.first.map(StarterGuess.yamlName) ?? ""
            lines.append(
                columns.count == 1
                    ? "    normalize: [trim, lowercase]  # finds \(chosen.normalizedGroups - chosen.groups) more group(s) than the raw values"
                    : "    normalize: {\(text): [trim, lowercase]}")
        }
        lines.append("    winner:\(finding.winner.yaml)")
        if !finding.implied.isEmpty {
            lines.append(
                "    referenced_by: [\(finding.implied.map { StarterGuess.yamlName($0.table) + "." + StarterGuess.yamlName($0.column) }.joined(separator: ", "))]"
            )
        }
        if !finding.references.isEmpty || !finding.implied.isEmpty { lines.append("    references: repoint") }
        lines.append("    archive: true  # journal every change, so `winnow restore --run ID` can undo the run")
        return lines.flatMap { $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
    }

    /// Surveys `database` and writes the schema file and the job; refuses (65, nothing written)
    /// when either file exists.
    public static func write(database: String, jobPath: String, schemaPath: String, backend: any DatabaseBackend) throws -> Result {
        for path in [jobPath, schemaPath] where FileManager.default.fileExists(atPath: path) {
            throw WinnowError.refused("\(path) exists; winnow init never overwrites a file (name another with --job/--schema)")
        }
        let (model, findings) = try backend.withSession(database, mode: .readOnly) { session in
            (
                SchemaModel(live: try session.inspect(), version: try SchemaVersions.recorded(session)?.version ?? 1),
                try survey(session)
            )
        }
        let schemaText =
            "# Schema written by `winnow init` from \(DatabaseURL.redacted(database)): the tables as they are now.\n"
            + "# Edit it to change the model (raise `version`), then `winnow plan` shows the migration.\n"
            + (try SchemaPrinter.render(model)) + "\n"
        let jobText = job(findings, database: database, schema: schemaPath, jobPath: jobPath)
        do {
            for path in [jobPath, schemaPath] {
                try FileManager.default.createDirectory(
                    at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
            }
            // Created exclusively: a file that appeared since the check is not overwritten.
            try create(schemaPath, schemaText)
            do {
                try create(jobPath, jobText)
            } catch {
                try? FileManager.default.removeItem(atPath: schemaPath)
                throw error
            }
        } catch let error as WinnowError {
            throw error
        } catch {
            throw WinnowError.io("cannot write the starter files: \(error.localizedDescription)")
        }
        return Result(jobPath: jobPath, schemaPath: schemaPath, findings: findings)
    }

    static func create(_ path: String, _ text: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard descriptor >= 0 else {
            if errno == EEXIST { throw WinnowError.refused("\(path) exists; winnow init never overwrites a file") }
            throw WinnowError.io("\(path): cannot create (\(String(cString: strerror(errno))))")
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        handle.write(Data(text.utf8))
        try handle.synchronize()
    }
}
