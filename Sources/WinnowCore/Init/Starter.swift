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
        /// Per weaker key that finds duplicates beside a strong chosen key: how its groups agree
        /// with the strong key (``Agreement``), by the weaker key's columns.
        public var agreements: [[String]: Agreement] = [:]
        /// For a proposed `any:` key: the duplicates each of ``linked`` adds beyond the keys
        /// before it, and the largest group, as ``ComponentFinder`` found them.
        public var added: [Int] = []
        public var largestGroup = 0
        /// The groups the `any:` proposal forms.
        public var linkedGroups = 0

        /// The keys of an `any:` proposal: the chosen strong key, then every weaker key that finds
        /// duplicates and mostly agrees with it (``Agreement/agrees``). Empty: one key.
        public var linked: [Count] {
            guard let chosen, chosen.candidate.strong else { return [] }
            let joined = counts.filter { !$0.candidate.strong && $0.bestGroups > 0 && agreements[$0.candidate.columns]?.agrees == true }
            return joined.isEmpty ? [] : [chosen] + joined
        }

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
            let linked = self.linked.map(\.candidate.columns)
            return counts.filter { !$0.candidate.strong && $0.bestGroups > 0 && !linked.contains($0.candidate.columns) }
        }

        public static func == (a: TableFinding, b: TableFinding) -> Bool {
            a.table == b.table && a.rows == b.rows && a.counts == b.counts && a.winner == b.winner && a.references == b.references
                && a.implied == b.implied && a.notDeduplicable == b.notDeduplicable && a.agreements == b.agreements
                && a.added == b.added && a.largestGroup == b.largestGroup && a.linkedGroups == b.linkedGroups
        }
    }

    /// How a weaker key's groups agree with the strong key chosen beside it.
    public struct Agreement: Sendable, Equatable {
        /// The weaker key's duplicate groups.
        public var groups: Int
        /// Groups whose rows all hold one value of the strong key.
        public var confirmed: Int
        /// Groups whose rows hold two or more values of the strong key.
        public var conflicting: Int

        /// At least two of three groups that the strong key can judge confirmed: the weaker key
        /// names the same records, and what it adds beyond the strong key is most likely the
        /// strong key's own typos. (Two employees sharing an office phone have two e-mails.)
        public var agrees: Bool { confirmed > 0 && confirmed * 3 >= (confirmed + conflicting) * 2 }
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
                    normalized = try duplicates(
                        session, qualified, expressions(candidate, normalized: true, table: table, dialect: session.dialect),
                        candidate.columns)
                }
                counts.append(
                    Count(
                        candidate: candidate, groups: raw.0, surplus: raw.1, normalizedGroups: normalized.0, normalizedSurplus: normalized.1
                    ))
            }
            var finding = TableFinding(
                table: table.name, rows: rows, counts: counts, winner: StarterGuess.winner(table),
                references: schema.foreignKeys(referencing: table.name).map {
                    "\($0.childTable).\($0.childColumns.joined(separator: ", "))"
                },
                implied: StarterGuess.impliedReferences(to: table, in: schema))
            try measureLinks(&finding, table: table, schema: schema, session: session)
            findings.append(finding)
        }
        return findings
    }

    /// The columns of `candidate` that `trim` + `lowercase` apply to when it is counted
    /// normalised: its first column, and every other text column.
    static func normalizedColumns(_ candidate: StarterGuess.Candidate, table: LiveTable) -> [String] {
        candidate.columns.enumerated().filter { index, column in
            index == 0 || table.column(named: column).map(StarterGuess.isText) == true
        }.map(\.element)
    }

    /// The expressions `candidate` is counted by: its columns, `normalized` or as stored.
    static func expressions(
        _ candidate: StarterGuess.Candidate, normalized: Bool, table: LiveTable, dialect: any SQLDialect
    ) -> [String] {
        let changed = normalized ? normalizedColumns(candidate, table: table) : []
        return candidate.columns.map { column in
            changed.contains(column) ? dialect.normalized(column.sqlIdentifier, by: [.trim, .lowercase]) : column.sqlIdentifier
        }
    }

    /// The expressions of a counted key, as its best count was made.
    static func expressions(_ count: Count, table: LiveTable, dialect: any SQLDialect) -> [String] {
        expressions(count.candidate, normalized: count.normalizes, table: table, dialect: dialect)
    }

    /// Beside a strong chosen key, how each weaker key that finds duplicates agrees with it;
    /// where some do, the duplicates each key of the `any:` proposal adds beyond the others
    /// linked as a run would link them.
    static func measureLinks(_ finding: inout TableFinding, table: LiveTable, schema: LiveSchema, session: any DatabaseSession) throws {
        guard let chosen = finding.chosen, chosen.candidate.strong else { return }
        let dialect = session.dialect
        let strong = expressions(chosen, table: table, dialect: dialect)
        let strongValue = strong.count == 1 ? strong[0] : dialect.keyHash(nullsEqual: false, strong.map { ($0, nil) })
        for count in finding.counts where !count.candidate.strong && count.bestGroups > 0 {
            let weak = expressions(count, table: table, dialect: dialect)
            let notNull = count.candidate.columns.map { "\($0.sqlIdentifier) IS NOT NULL" }.joined(separator: " AND ")
            let row = try session.row(
                """
                SELECT count(*), coalesce(sum(CASE WHEN s = 1 AND k = n THEN 1 ELSE 0 END), 0), coalesce(sum(CASE WHEN s > 1 THEN 1 ELSE 0 END), 0)
                FROM (SELECT count(*) AS n, count(DISTINCT \(strongValue)) AS s, count(\(strongValue)) AS k
                      FROM \(dialect.table(table.name)) WHERE \(notNull) GROUP BY \(weak.joined(separator: ", ")) HAVING count(*) > 1) AS winnow_groups
                """)
            finding.agreements[count.candidate.columns] = Agreement(
                groups: try row?.int(0) ?? 0, confirmed: try row?.int(1) ?? 0, conflicting: try row?.int(2) ?? 0)
        }
        let linked = finding.linked
        guard !linked.isEmpty else { return }
        // The proposal as a rule, linked by the engine and the core as `run` would.
        var rule = DedupeRule(
            entity: Located(table.name, at: nil),
            key: linked.flatMap(\.candidate.columns).reduce(into: [Located<String>]()) { columns, name in
                if !columns.contains(where: { $0.value == name }) { columns.append(Located(name, at: nil)) }
            })
        rule.anyOf = linked.map { count in
            let normalized = count.normalizes ? normalizedColumns(count.candidate, table: table) : []
            return KeyAlternative(
                columns: count.candidate.columns.map { Located($0, at: nil) },
                normalize: Dictionary(normalized.map { ($0, [Normalizer.trim, .lowercase]) }, uniquingKeysWith: { a, _ in a }),
                ownNormalize: true)
        }
        let compiled = try RuleCompiler.compile(rule, schema: schema, dialect: dialect)
        let outcome = try ComponentFinder.build(compiled, session: session, enforcingLimit: false)
        finding.added = outcome.added
        finding.largestGroup = outcome.largest
        finding.linkedGroups = outcome.groups
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
        let linked = finding.linked
        for count in finding.vetoed {
            let weak = count.candidate.columns.joined(separator: " + ")
            if let strong = finding.chosen, strong.candidate.strong {
                let strongName = strong.candidate.columns.joined(separator: " + ")
                if let agreement = finding.agreements[count.candidate.columns] {
                    lines.append(
                        "  # \(weak) is not proposed: of its \(agreement.groups) duplicate groups, \(agreement.confirmed) hold one \(strongName) and \(agreement.conflicting) hold two or more, so rows sharing only \(weak) may be different records."
                    )
                } else {
                    lines.append(
                        "  # \(weak) is not proposed: \(strongName) is a stronger key, and rows sharing only \(weak) may be different records."
                    )
                }
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
        if !linked.isEmpty {
            let strongName = chosen.candidate.columns.joined(separator: " + ")
            for count in linked.dropFirst() {
                guard let agreement = finding.agreements[count.candidate.columns] else { continue }
                lines.append(
                    "  # \(count.candidate.columns.joined(separator: " + ")) agrees with \(strongName): \(agreement.confirmed) of its \(agreement.groups) groups hold one \(strongName), \(agreement.conflicting) hold several (most likely a typo in \(strongName))."
                )
            }
            let added = zip(linked, finding.added).enumerated().map { index, pair in
                "\(pair.0.candidate.columns.joined(separator: " + ")) \(index == 0 ? "finds" : "adds") \(pair.1)\(index == 0 ? "" : " more")"
            }
            lines.append(
                "  # key any of these: rows sharing one are one record. Linked as a run links them: \(added.joined(separator: ", ")) duplicate rows (\(finding.added.reduce(0, +)) in all); the largest group has \(finding.largestGroup) rows."
            )
        }
        lines.append("  - entity: \(name)")
        let columns = chosen.candidate.columns.map(StarterGuess.yamlName)
        if !linked.isEmpty {
            lines.append("    key:")
            lines.append("      any:")
            for count in linked {
                let names = count.candidate.columns.map(StarterGuess.yamlName)
                let list = names.count == 1 ? names[0] : "[\(names.joined(separator: ", "))]"
                lines.append(count.normalizes ? "        - {columns: \(list), normalize: [trim, lowercase]}" : "        - \(list)")
            }
            lines.append("    max_group_size: 50  # refuse a run whose keys would chain more rows than this into one group")
        } else {
            lines.append("    key: \(columns.count == 1 ? columns[0] : "[\(columns.joined(separator: ", "))]")")
        }
        if chosen.normalizes && linked.isEmpty {
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
