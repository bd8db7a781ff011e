import Foundation
import WinnowCore

/// The batches of one rule on PostgreSQL, for the core's ``BatchLoop``: the groups the
/// discovery numbered (0 up to `groups`), a range of them per batch, each applied by
/// ``PostgresBatch`` in one transaction (or read only, for `plan`).
struct GroupBatches: BatchSource {
    let writer: PostgresBatch
    let groups: Int
    let writes: Bool
    /// Whether the batches are the writer's one-trip statement (``PostgresBatch/prepareOneTrip()``).
    let oneTrip: Bool
    /// When the decided batches are tried (``DecisionBackoff``).
    var backoff = DecisionBackoff()
    /// Whether the trusted batches are tried (``PostgresBatch/trustedOneTripSQL``): until one
    /// finds a row changed since discovery. A miss costs its batch a statement rolled back, so
    /// after one (another session writes to the table) the rule's batches compare first.
    var trusting = true

    var start: Int64 { 0 }

    func nextBound(after: Int64, size: Int) throws -> Int64? {
        after < Int64(groups) ? min(Int64(groups), after + Int64(size)) : nil
    }

    mutating func apply(_ bounds: BatchBounds, number: Int, totals: Counts, wantSamples: Bool) throws -> BatchOutcome? {
        let range = Int(bounds.after)..<Int(bounds.upTo)
        let decide = backoff.tries()
        let work =
            oneTrip && !wantSamples
            ? try writer.runOneTrip(groups: range, batch: number, totals: totals, decide: decide, trust: trusting)
            : try writer.run(groups: range, batch: number, totals: totals, wantSamples: wantSamples, decide: decide)
        if work.trustMissed { trusting = false }
        backoff.record(work.decided, left: work.left)
        return BatchOutcome(
            counts: work.counts, units: range.count, done: work.counts.deleted + work.counts.skipped, samples: work.samples)
    }
}

/// When a rule's decided batches are tried (``PostgresBatch/decidedSQL``). A decision that no
/// longer holds (a member changed since discovery) costs its batch the locks and comparison
/// before the fused batch ranks the groups again: beside a writer that updates rows all over
/// the table most decisions miss (dup67 beside one, `max_transaction_ms: 50`: 1.15-1.26 s with
/// every decision tried, 1.07-1.18 s with this, 0.88-0.99 s before batches were decided).
/// So after two misses in a row the next batch goes straight to ranking, after each further
/// miss twice as many (at most 64); a decision that holds starts over. One changed row costs
/// one miss and no more.
struct DecisionBackoff {
    private var misses = 0
    private var skipping = 0

    /// Whether this batch tries its decision.
    mutating func tries() -> Bool {
        guard skipping == 0 else {
            skipping -= 1
            return false
        }
        return true
    }

    /// A batch's outcome (nil: not tried), and the groups it left if it applied.
    mutating func record(_ decided: Bool?, left: Int = 0) {
        switch decided {
        case true?:
            misses = 0
            PostgresBatch.decisionsApplied += 1
            if left > 0 { PostgresBatch.decisionsPartial += 1 }
        case false?:
            misses += 1
            PostgresBatch.decisionsMissed += 1
            if misses >= 2 { skipping = min(64, 1 << (misses - 2)) }
        case nil:
            break
        }
    }
}
