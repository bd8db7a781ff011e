import Foundation
import GRDB
import WinnowCore

extension DedupeExecutor {
    /// Applies one stretch ahead of the batches in one write transaction, while no other
    /// connection has committed since `foundAt` (nil once one has), or also after such a
    /// commit where the stretch checks its rows as they are now (`revalidates`): `apply` takes
    /// the stretch's bounds into its `work` (told whether the rows are as found), then as many
    /// more pieces as `fill` allows (``StretchFill/extend(_:started:now:nextBound:apply:)``, the
    /// next pieces' ends from `nextBound`), and the run's progress goes with them where the
    /// stretch changed any row (``Counts/changedAnything``). Records the commit's time in
    /// `fill`; `fills` false: the stretch takes its bounds alone. Returns the stretch's work,
    /// where it ended and its units.
    func filledStretch(
        _ bounds: BatchBounds, number: Int, totals: Counts, foundAt: Int64, revalidates: Bool = false, fills: Bool = true,
        fill: inout StretchFill,
        nextBound: (_ after: Int64, _ size: Int) throws -> Int64?,
        apply: (_ after: Int64, _ upTo: Int64, _ asFound: Bool, _ work: inout BatchWork) throws -> Void
    ) throws -> (work: BatchWork, upTo: Int64, units: Int)? {
        let started = Date()
        var bodyEnded = started
        let extending = fill
        let ended = try writer.transaction(db) { () -> (work: BatchWork, upTo: Int64, units: Int)? in
            let asFound = try unchanged(since: foundAt)
            guard asFound || revalidates else { return nil }
            var work = BatchWork(number: number)
            try apply(bounds.after, bounds.upTo, asFound, &work)
            let (upTo, units) =
                fills
                ? try extending.extend(bounds, started: started, nextBound: nextBound, apply: { try apply($0, $1, asFound, &work) })
                : (bounds.upTo, bounds.size)
            let counts = work.counts
            if counts.changedAnything { try writer.recordProgress(totals + counts, db: db) }
            bodyEnded = Date()
            return (work, upTo, units)
        }
        guard let ended else { return nil }
        fill.recordCommit(seconds: Date().timeIntervalSince(bodyEnded))
        return ended
    }
}
