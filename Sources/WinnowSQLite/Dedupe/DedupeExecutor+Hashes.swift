import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

extension DedupeExecutor {
    /// Keeps `hash_column` equal to the key hash for every row, in batches of rowid ranges (of
    /// numbered primary keys, in a table without rowids).
    func fillHashes(batchNumber: inout Int, totals: inout Counts) throws -> Counts {
        var counts = Counts()
        guard rule.hashColumn != nil else { return counts }
        if let upTo = changesUpTo {
            // Incremental: only the rows changed since the last run can have a stale hash.
            let changed =
                "\(rule.rowID) IN (SELECT rid FROM main.winnow_changes WHERE tbl = \(ChangeTracking.literal(rule.table)) AND id <= ?)"
            let filled = try writer.transaction(db) { () -> Int in
                let filled = try writer.fillHashes(rule: rule, selection: changed, arguments: [upTo], batch: batchNumber, db: db)
                var next = totals
                next.hashed += filled
                next.batches += 1
                try writer.recordProgress(next, db: db)
                return filled
            }
            counts.hashed = filled
            counts.batches = 1
            totals.hashed += filled
            totals.batches += 1
            batchNumber += 1
            return counts
        }
        var sizer = BatchSizer.hashFill(settings)
        var gap = WriteGap(settings: settings, db: db)
        var after = Int64.min
        // A table without rowids goes in ranges of its numbers; rows written since its
        // discovery are numbered first (the numbers it has keep theirs: a plan's would-be
        // deletions are remembered by number).
        let numbers = RowNumbers(rule)
        if let topUp = numbers.topUp { try db.execute(sql: topUp) }
        var held: TimeInterval?
        let bound = numbers.nextBound
        while true {
            guard let upTo = try bound.next(db, after: after, size: sizer.current) else { break }
            // Between two transactions only (none after the last): back to back, they would
            // leave a waiting writer no gap. A dry run holds no lock that lasts: nothing to let
            // through.
            if let held, writer.writes { gap.wait(after: held, db: db) }
            let started = Date()
            let filled = try writer.transaction(db) { () -> Int in
                let filled = try writer.fillHashes(
                    rule: rule, selection: numbers.inRange,
                    arguments: [after, upTo], batch: batchNumber, db: db)
                if filled > 0 {
                    var next = totals
                    next.hashed += filled
                    next.batches += 1
                    try writer.recordProgress(next, db: db)
                }
                return filled
            }
            let seconds = Date().timeIntervalSince(started)
            sizer.record(size: sizer.current, seconds: seconds)
            held = seconds
            if filled > 0 {
                counts.hashed += filled
                counts.batches += 1
                totals.hashed += filled
                totals.batches += 1
                batchNumber += 1
            }
            after = upTo
        }
        return counts
    }
}
