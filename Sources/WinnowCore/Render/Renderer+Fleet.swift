import Foundation

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
    /// then the stores that could not be planned. `plans`: each group's first plan with its
    /// sample groups, by live schema (``FleetPlans``), where the outcomes keep none.
    public static func fleetPlan(_ outcomes: [StoreOutcome], plans: [String: RunSummary] = [:]) -> String {
        var lines: [String] = []
        fleetPlan(outcomes, plans: plans) { lines.append($0) }
        return lines.joined(separator: "\n")
    }

    /// ``fleetPlan(_:plans:)`` line by line.
    public static func fleetPlan(_ outcomes: [StoreOutcome], plans: [String: RunSummary] = [:], line: (String) -> Void) {
        var groups: [(schema: String, outcomes: [StoreOutcome])] = []
        for outcome in outcomes {
            guard let schema = outcome.summary?.fingerprints?.liveSchema else { continue }
            if let index = groups.firstIndex(where: { $0.schema == schema }) {
                groups[index].outcomes.append(outcome)
            } else {
                groups.append((schema, [outcome]))
            }
        }
        for (number, group) in groups.enumerated() {
            let changing = group.outcomes.filter {
                ($0.summary?.counts.changedAnything ?? false) || ($0.summary?.migration.isEmpty == false)
            }
            let stores = "\(group.outcomes.count) store\(group.outcomes.count == 1 ? "" : "s")"
            line("== schema group \(number + 1) of \(groups.count): \(stores), \(changing.count) would change")
            if let first = plans[group.schema] ?? group.outcomes.first?.summary { text(first, line: line) }
            line("per store:")
            for outcome in group.outcomes {
                guard let summary = outcome.summary else { continue }
                line("  \(outcome.store): \(countsLine(summary.counts, wouldBe: true)), \(summary.migration.count) migration steps")
            }
        }
        for outcome in outcomes where outcome.summary == nil { line(text(outcome)) }
    }
}
