import Foundation

extension JobRunner {
    /// Whether the rule loop writes (`run`, recording into a run) or only counts (`plan`).
    package enum LoopMode {
        case plan
        case run(RunRecord)

        package var record: RunRecord? {
            if case let .run(record) = self { return record }
            return nil
        }
    }

    /// The rule loop of `plan` and `run`. Every guard of every rule is checked before the first
    /// write (a refused job changes nothing); each rule is then found again right before it
    /// runs when earlier rules may have changed its table, and resolved batch by batch; the
    /// stored hashes of the rows that remain follow. `plan` runs the same loop with executions
    /// that write nothing (each remembers what it would have deleted, so later rules count
    /// as a run would).
    package static func dedupe(
        _ rules: [CompiledRule], mode: LoopMode, options: RunOptions, job: Job, session: any DatabaseSession,
        deadline: RunDeadline = RunDeadline(at: nil), totals: inout Counts, onEvent: @escaping (RunEvent) -> Void
    ) throws -> [RuleSummary] {
        let settings = settings(job, options)
        let record = mode.record
        // A run starts tracking before any discovery, so no change can fall between a full
        // pass and the log; a plan only reads the state.
        let incremental = try incrementalStates(rules, session: session, install: record != nil)
        /// Runs `body` as a named phase: events before and after, for progress and --verbose.
        func phase<T>(_ name: String, _ body: () throws -> T) rethrows -> T {
            let started = Date()
            onEvent(.phaseStarted(name))
            let result = try body()
            onEvent(.phaseFinished(name, seconds: Date().timeIntervalSince(started)))
            return result
        }
        func execution(_ rule: CompiledRule) -> any RuleExecution {
            let state = incremental[rule.rule.index]
            let options = RuleExecutionOptions(
                settings: settings, sampleLimit: record == nil ? options.sampleLimit ?? Int.max : 0,
                changesUpTo: state?.tracking == true ? state?.upTo : nil, deadline: deadline, onEvent: onEvent)
            return session.ruleExecution(rule, runID: record?.id, options: options)
        }
        /// A rule's discovery; an `any:` rule finds its groups first (``ComponentFinder``), from
        /// the rows as they are now.
        var links: [Int: ComponentFinder.Outcome] = [:]
        func discover(_ rule: CompiledRule, _ execution: any RuleExecution) throws -> Discovery {
            try phase(RunEvent.discoveryPhase(of: rule)) {
                if rule.components != nil { links[rule.rule.index] = try ComponentFinder.build(rule, session: session) }
                return try execution.discover()
            }
        }
        var discoveries: [Discovery?] = Array(repeating: nil, count: rules.count)
        if record != nil {
            for (index, rule) in rules.enumerated() {
                let execution = execution(rule)
                let discovery = try discover(rule, execution)
                try execution.checkGuards(discovery)
                discoveries[index] = discovery
            }
        }
        var summaries: [RuleSummary] = []
        var batchNumber = 1
        for (index, rule) in rules.enumerated() {
            // --max-duration: a rule not started is left for the next run (the first batch of a
            // run always goes, so runs that keep stopping still progress).
            if record != nil, index > 0, deadline.passed() { break }
            let execution = execution(rule)
            // The working storage holds the last discovery only.
            var discovery: Discovery
            if let found = discoveries[index], rules.count == 1 {
                discovery = found
            } else {
                discovery = try discover(rule, execution)
                try execution.checkGuards(discovery)
            }
            onEvent(.ruleStarted(rule: rule.rule.index, table: rule.table, discovery: discovery))
            try execution.prepare()
            var samples = SampleList()
            // Duplicates first, then the stored hashes of the rows that remain.
            var counts = try phase("batches of dedupe[\(rule.rule.index)] \(rule.table)") {
                try execution.execute(discovery, batchNumber: &batchNumber, totals: &totals, samples: &samples)
            }
            // A rule stopped between batches is not done: its hashes and its change log wait.
            let stopped = record != nil && deadline.reached
            if !stopped, rule.hashColumn != nil {
                counts =
                    counts
                    + (try phase("hashes of dedupe[\(rule.rule.index)] \(rule.table)") {
                        try execution.fillHashes(batchNumber: &batchNumber, totals: &totals)
                    })
            }
            if !stopped, let record, let state = incremental[rule.rule.index] {
                // The changes this rule covered are done; later ones wait for the next run.
                try session.changeTracker.finish(table: rule.table, upTo: state.upTo, runID: record.id)
            }
            onEvent(.ruleFinished(rule: rule.rule.index, table: rule.table, counts: counts))
            var summary = try ruleSummary(rule, discovery, counts, samples)
            if let outcome = links[rule.rule.index] { summary.record(outcome, rule) }
            summary.incremental = incremental[rule.rule.index]?.tracking
            if record == nil {
                summary.warnings = PlanAdvice.warnings(rule, discovery: discovery, settings: settings)
                if options.fingerprints { summary.deletionDigest = try execution.deletionDigest() }
            } else {
                summary.warnings = PlanAdvice.runWarnings(rule, discovery: discovery) + execution.runWarnings
            }
            try record?.record(rule: summary)
            summaries.append(summary)
        }
        return summaries
    }

    package static func ruleSummary(
        _ rule: CompiledRule, _ discovery: Discovery, _ counts: Counts, _ samples: SampleList
    ) throws -> RuleSummary {
        // An `any:` rule is shown by its alternatives, one key part; its samples say which
        // alternative linked each loser.
        let key =
            rule.components.map { ["any of (" + $0.alternatives.map(\.described).joined(separator: "; ") + ")"] }
            ?? rule.keyColumns.map { name in
                let chain = rule.normalizers[name, default: []]
                return chain.isEmpty ? name : "\(name) (\(chain.map(\.rawValue).joined(separator: ", ")))"
            }
        var summary = RuleSummary(
            index: rule.rule.index, table: rule.table, key: key,
            winner: rule.winnerDescription, references: rule.references.map(\.label),
            discovery: discovery, counts: counts, samples: rule.components == nil ? samples : try samples.map { $0.linked(rule) })
        summary.keyColumns = rule.keyColumns
        summary.location = rule.rule.entity.location ?? rule.rule.location
        return summary
    }

    /// How an incremental rule runs now: limited to the changes up to `upTo`, or in full.
    package struct IncrementalState {
        package var tracking: Bool
        package var upTo: Int64
    }

    /// Tables whose tracking a job's rules want, and the state of each incremental rule. A run
    /// installs the tracking for a rule that is not tracked yet (its run is then a full one) and
    /// removes it from a table whose rules no longer say incremental.
    package static func incrementalStates(
        _ rules: [CompiledRule], session: any DatabaseSession,
        install: Bool
    ) throws -> [Int: IncrementalState] {
        var states: [Int: IncrementalState] = [:]
        let tracker = session.changeTracker
        let wanted = Set(rules.filter(\.rule.incremental).map { $0.table.lowercased() })
        for rule in rules {
            if rule.rule.incremental {
                guard session.dialect.capabilities.triggers else {
                    throw WinnowError.refused(
                        "\(rule.rule.keyPath) (\(rule.table)): incremental: true needs row triggers, which \(session.dialect.name) does not offer; run the rule without it"
                    )
                }
                let tracking = try tracker.isTracking(rule)
                if !tracking && install { try tracker.start(rule) }
                states[rule.rule.index] = IncrementalState(tracking: tracking, upTo: try tracker.lastChange(table: rule.table))
            } else if install, !wanted.contains(rule.table.lowercased()), try tracker.isInstalled(table: rule.table) {
                try tracker.stop(table: rule.table)
            }
        }
        return states
    }
}
