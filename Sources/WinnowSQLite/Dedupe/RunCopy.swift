import Foundation
import GRDB
import WinnowCore

/// One connection's share of discovery's sorted runs (``DedupeExecutor/copySortedRuns(_:)``):
/// the table's rowids after ``after`` up to ``upper``, copied in ranges, each range its own read,
/// sorted as it is read and appended to that connection's ``SortedRuns/table`` as one run.
struct RunCopy {
    /// The statement that finds a range: its last rowid and its rows, at most the given number
    /// after the first bound and up to the second.
    let rangeSQL: String
    /// The statement that copies the rows between two rowids, sorted, into ``SortedRuns/table``.
    let copySQL: String
    /// The last rowid copied (the share starts after it).
    var after: Int64
    /// The last rowid of the share.
    let upper: Int64
    /// Sizes the ranges to `max_transaction_ms`.
    var sizer: BatchSizer
    /// The most rows a range holds and still sorts in memory.
    var fits: Int
    /// Each run's first and last rowid in the connection's ``SortedRuns/table``.
    var spans: [(first: Int64, last: Int64)] = []
    /// The table's rows the ranges held (rows without a key too).
    var rows = 0
    /// Whether the share is copied to its end.
    var finished = false

    /// The same share from `after` on (a share another connection left unfinished).
    func resumed(after: Int64) -> RunCopy {
        RunCopy(rangeSQL: rangeSQL, copySQL: copySQL, after: after, upper: upper, sizer: sizer, fits: fits)
    }

    /// The share split at the middle of its rowids: this connection's lower half and the upper
    /// half another connection copies, each with the same sizes.
    func split() -> (lower: RunCopy, upper: RunCopy) {
        // (Halves first: the rowids may span more than an Int64 holds.)
        let middle = after / 2 + upper / 2 + (after % 2 + upper % 2) / 2
        let lower = RunCopy(rangeSQL: rangeSQL, copySQL: copySQL, after: after, upper: middle, sizer: sizer, fits: fits)
        return (lower, resumed(after: middle))
    }

    /// Copies the next range on `db` (its statements made from ``rangeSQL`` and ``copySQL``),
    /// in a read transaction of its own; returns the range's time in seconds.
    @discardableResult
    mutating func copyNext(_ db: Database, range: Statement, copy: Statement) throws -> TimeInterval {
        let size = min(sizer.current, fits)
        let started = Date()
        // The range and its rows in one read, so that the rows counted are those copied.
        let (upTo, count, copied) = try db.readTransaction { () -> (Int64?, Int, Int) in
            let found = try Row.fetchOne(range, arguments: [after, upper, size])
            guard let upTo = found?[0] as Int64? else { return (nil, 0, 0) }
            try copy.execute(arguments: [after, upTo])
            return (upTo, found?[1] ?? 0, db.changesCount)
        }
        let seconds = Date().timeIntervalSince(started)
        guard let upTo else {
            finished = true
            return seconds
        }
        if copied > 0 {
            let lastRow = db.lastInsertedRowID
            spans.append((lastRow - Int64(copied) + 1, lastRow))
        }
        rows += count
        after = upTo
        if count < size || upTo >= upper {
            finished = true
        } else {
            sizer.record(size: size, seconds: seconds)
        }
        return seconds
    }
}
