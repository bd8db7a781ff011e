import Foundation

/// What `plan` warns about before a run is slow. Pure: from the compiled rule, what discovery
/// found and the batch settings.
public enum PlanAdvice {
    /// Below this many groups per batch, a batch's fixed cost (one commit, some twenty prepared
    /// statements, the journal's bookkeeping) outweighs the work on its rows.
    public static let smallBatch = 100

    public static func warnings(_ rule: CompiledRule, discovery: Discovery, settings: BatchSettings) -> [String] {
        var warnings = rule.references.filter { !$0.indexed }.map { unindexed($0, rule: rule) }
        if discovery.groups > settings.size, settings.size < smallBatch {
            let batches = (discovery.groups + settings.size - 1) / settings.size
            warnings.append(
                """
                batch.size \(settings.size): \(batches) batches of \(settings.size) groups; each batch pays a commit and its \
                statements whatever its size, so small batches cost several times more per row. \
                batch.max_transaction_ms (\(settings.maxTransactionMilliseconds)) already keeps every transaction short: \
                a batch.size of \(max(smallBatch * 5, settings.size)) or more is faster
                """)
        }
        return warnings
    }

    /// What `run` says of its own rule: a declared reference without an index where the engine
    /// checks every deleted row itself (it read the whole child table for each loser deleted,
    /// so the run's time grew with the square of the rows), when the rule deleted any.
    public static func runWarnings(_ rule: CompiledRule, discovery: Discovery) -> [String] {
        guard !rule.dialect.capabilities.suspendableForeignKeyChecks, discovery.losers > 0 else { return [] }
        return rule.references.filter { !$0.indexed && $0.declared }.map { unindexed($0, rule: rule) }
    }

    /// From this many stretches of one child table re-pointed ahead of a rule's deletions,
    /// `run` says so (``stretchesWarning(_:stretches:settings:)``).
    public static var manyStretches = 16

    /// What `run` says of a child table whose rows it re-pointed ahead of the deletions in
    /// ``manyStretches`` stretches or more. The children of scattered duplicates sit all over
    /// the child's index, so each stretch rewrote most of that index whatever its rows, and
    /// `max_transaction_ms` bounded each stretch: under a fixed limit that work grows with the
    /// square of the table (docs/performance.md, "Limits that are the engine's"), and a longer
    /// limit takes fewer stretches. Nil below the threshold.
    public static func stretchesWarning(_ path: ReferencePath, stretches: Int, settings: BatchSettings) -> String? {
        guard stretches >= manyStretches else { return nil }
        return """
            \(path.label) was re-pointed in \(stretches) stretches, each rewriting most of its index, since \
            batch.max_transaction_ms (\(settings.maxTransactionMilliseconds)) bounds each one; where no other writer needs \
            short transactions (a maintenance window), a longer batch.max_transaction_ms takes fewer stretches and writes \
            the index fewer times
            """
    }

    private static func unindexed(_ path: ReferencePath, rule: CompiledRule) -> String {
        // Where enforcement cannot be suspended, the engine's own check of every deleted row
        // reads the child table again: time grows with the square of the rows.
        let cost =
            rule.dialect.capabilities.suspendableForeignKeyChecks
            ? "(winnow does it once per rule; SQLite does it for every \(rule.table) row deleted while foreign keys are on)"
            : path.declared
                ? "for every batch, and \(rule.dialect.name)'s foreign-key check reads it again for every \(rule.table) row deleted"
                : "for every batch"
        return """
            \(path.label) has no index: finding the rows that point at a \(rule.table) row reads all of \(path.childTable) \
            \(cost); fix: \(path.suggestedIndex(rule.dialect))
            """
    }
}
