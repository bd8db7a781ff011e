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

    var start: Int64 { 0 }

    func nextBound(after: Int64, size: Int) throws -> Int64? {
        after < Int64(groups) ? min(Int64(groups), after + Int64(size)) : nil
    }

    func apply(_ bounds: BatchBounds, number: Int, totals: Counts, wantSamples: Bool) throws -> BatchOutcome? {
        let range = Int(bounds.after)..<Int(bounds.upTo)
        let work =
            oneTrip && !wantSamples
            ? try writer.runOneTrip(groups: range, batch: number, totals: totals)
            : try writer.run(groups: range, batch: number, totals: totals, wantSamples: wantSamples)
        return BatchOutcome(
            counts: work.counts, units: range.count, done: work.counts.deleted + work.counts.skipped, samples: work.samples)
    }
}
