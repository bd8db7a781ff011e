import Foundation

extension JobRunner {
    /// Duplicates left under the job's rules, and drift from its target schema. Uses grouped
    /// counts (an index on the key avoids a sort); when duplicates exist, the would-be counts of
    /// a plan are filled in too, drift or not: the same rule gives the same counts in `check` and
    /// `plan` (a table, column or index the schema file does not mention changes neither).
    public static func check(_ job: Job, options: RunOptions = .init(), backend: any DatabaseBackend) throws -> RunSummary {
        let path = try databasePath(job, options)
        let target = try target(job)
        let settings = settings(job, options)
        let started = Date()
        var drift: [SchemaDrift] = []
        var notes: [String] = []
        let found = try backend.withSession(path, mode: .readOnly) { session -> [RuleSummary] in
            if let target {
                let recorded = try SchemaVersions.recorded(session)
                let live = SchemaModel(live: try session.inspect(), version: recorded?.version ?? 0)
                drift = live.drift(to: session.dialect.stored(target))
                if let recorded, recorded.version != target.version {
                    drift.append(
                        SchemaDrift(
                            table: "", message: "model version is \(recorded.version), the schema file is version \(target.version)",
                            location: job.schema?.location))
                }
            }
            let rules: [CompiledRule]
            do {
                rules = try compile(job, session)
                try refuseRowSecurity(rules, options: options)
            } catch let error as WinnowError where !drift.isEmpty {
                notes.append("dedupe rules not checked: \(error.description)")
                return []
            }
            return try rules.map { rule in
                var counts = Counts()
                if rule.components != nil {
                    // The groups of an `any:` rule are the components of its links; a group over
                    // max_group_size is reported by the plan below.
                    let outcome = try ComponentFinder.build(rule, session: session, enforcingLimit: false)
                    counts.groups = outcome.groups
                    counts.deleted = outcome.members - outcome.groups
                } else {
                    let execution = session.ruleExecution(
                        rule, runID: nil, options: RuleExecutionOptions(settings: settings))
                    if let found = try execution.countDuplicates() {
                        counts.groups = found.groups
                        counts.deleted = found.losers
                        return try ruleSummary(rule, found, counts, [])
                    }
                    let row = try session.row(duplicateCountSQL(rule))
                    counts.groups = try row?.int(0) ?? 0
                    counts.deleted = try row?.int(1) ?? 0
                }
                let rows = try session.value("SELECT count(*) FROM \(rule.qualifiedTable)").int ?? 0
                return try ruleSummary(rule, Discovery(groups: counts.groups, losers: counts.deleted, tableRows: rows), counts, [])
            }
        }
        var summaries = found
        if found.contains(where: { $0.counts.groups > 0 }) {
            var dry = options
            dry.sampleLimit = 0
            do {
                summaries = try plan(job, options: dry, backend: backend).rules
            } catch let error as WinnowError where error.isRefusal {
                // A guard that would refuse the run is a finding of the check, not a failure of it.
                notes.append("a run would be refused: \(error.description)")
            }
        }
        let totals = summaries.reduce(Counts()) { $0 + $1.counts }
        let status: RunStatus = !drift.isEmpty ? .drift : (totals.groups > 0 ? .duplicates : .clean)
        var summary = RunSummary(
            command: .check, status: status, job: job.file, database: DatabaseURL.redacted(path),
            dryRun: true, counts: totals, seconds: Date().timeIntervalSince(started), rules: summaries)
        summary.drift = drift.map { $0.table.isEmpty ? $0.message : $0.description }
        summary.driftFindings = drift
        summary.schemaFile = job.schema?.value
        summary.notes = notes
        return summary
    }

    /// Duplicate groups and surplus rows of a rule, by one grouped count. With an index on the
    /// key (plain columns), the engine walks the index in key order: no sort, no temporary
    /// B-tree. It groups under the column's own collation, not ``CompiledRule/groupTerms(_:)``
    /// (an index serves only its own collation: under "C" PostgreSQL sorts the whole table
    /// instead of walking the key's index). That finds the same groups for a
    /// deterministic collation, and for any other a coarser grouping, never a finer one: rows
    /// equal byte for byte are equal under every collation. So it may only find duplicates that
    /// a run would not delete, and when it finds any, `check` counts them again by a dry run.
    /// `source`: where the rows are read (the rule's table, or a backend's copy of its columns).
    package static func duplicateCountSQL(_ rule: CompiledRule, from source: String? = nil) -> String {
        """
        SELECT count(*), coalesce(sum(n - 1), 0) FROM (
            SELECT count(*) AS n FROM \(source ?? rule.qualifiedTable) WHERE \(rule.candidateFilter())
            GROUP BY \(rule.groupExpressions().joined(separator: ", ")) HAVING count(*) > 1) AS winnow_groups
        """
    }
}
