import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

/// The rows of a sorted discovery copied in short reads as sorted runs, and read back merged
/// into one sorted sequence (``DedupeExecutor/copySortedRuns(_:)``).
///
/// Where discovery's one read would hold a rollback journal's writers back too long, the
/// columns it reads are copied into a temporary table in rowid ranges
/// (``DedupeExecutor/copyForDiscovery(readPerCopy:)``), and the sort over the copy writes the
/// same rows out again in SQLite's own runs (merge-500 at 1,600,000 customers, the sqlite3
/// shell: 57.6 MB copied, then 63.3 MB written by the sort). Where the sorted read's order can be
/// told from its values, each range is instead sorted as it is read, in memory, and written once
/// as a run (62.4 MB in all there); the runs are then merged here, comparing the rows' values as
/// SQLite's `ORDER BY` compares them under BINARY (docs/performance.md, "Discovery").
struct SortedRuns {
    /// The table the runs are written to, one after another (a run is a span of its rowids).
    static let table = "temp.winnow_runs"

    /// Each run's first and last rowid in ``table``.
    var spans: [(first: Int64, last: Int64)] = []
    /// The table's rows the ranges held (rows without a key too).
    var rows = 0

    /// The order of the rows: group values ascending, then each winner term by its direction.
    let order: SortedRunOrder

    /// Calls `body` with each row of every run, in the order of ``order`` (rows equal on every
    /// value in any order): the columns are those the runs were copied with.
    func forEachRow(db: Database, _ body: (SQLiteStatement) throws -> Void) throws {
        let statements = try spans.map { span -> Statement in
            let statement = try db.makeStatement(sql: "SELECT * FROM \(Self.table) WHERE rowid BETWEEN ? AND ?")
            try statement.setArguments([span.first, span.last])
            return statement
        }
        // (The statements own the handles: kept alive to the end, not just to their last use.)
        try withExtendedLifetime(statements) { try merge(statements.map(\.sqliteStatement), body) }
    }

    /// ``forEachRow(db:_:)`` over the runs' statements, `heads`.
    private func merge(_ heads: [SQLiteStatement], _ body: (SQLiteStatement) throws -> Void) throws {
        defer { for head in heads { sqlite3_reset(head) } }
        func step(_ handle: SQLiteStatement) throws -> Bool {
            switch sqlite3_step(handle) {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            case let code:
                throw WinnowError.internal("discovery's sorted runs could not be read (\(code): \(String(cString: sqlite3_errstr(code))))")
            }
        }
        // A tree of losers over the runs' current rows (a tournament: each node keeps the run
        // that lost the match there, and the root's winner is the least row), so that taking a
        // row costs one comparison per level, about half a binary heap's.
        let count = heads.count
        let order = order
        // Each run's current row's values, read once a row (`width` values a run).
        let width = order.keys + order.terms.count
        var cells = [SortedRunOrder.Cell](repeating: SortedRunOrder.Cell(), count: count * width)
        var done = [Bool](repeating: false, count: count)
        func advance(_ run: Int) throws {
            done[run] = try !step(heads[run])
            if !done[run] { order.load(heads[run], into: &cells, at: run * width) }
        }
        for run in 0..<count { try advance(run) }
        // Whether run `a`'s row comes before run `b`'s: a run that is done never does, and
        // `count`, the place-holder the tree is built from, always does.
        func precedes(_ a: Int, _ b: Int) -> Bool {
            if a == count || b == count { return a == count }
            if done[a] || done[b] { return !done[a] && done[b] }
            return order.compare(cells, a * width, b * width) < 0
        }
        var tree = [Int](repeating: count, count: max(1, count))
        func replay(_ run: Int) {
            var winner = run
            var node = (run + count) / 2
            while node > 0 {
                if precedes(tree[node], winner) { swap(&tree[node], &winner) }
                node /= 2
            }
            tree[0] = winner
        }
        for run in stride(from: count - 1, through: 0, by: -1) { replay(run) }
        while count > 0, case let run = tree[0], !done[run] {
            try body(heads[run])
            try advance(run)
            replay(run)
        }
    }
}

/// How discovery's sorted read orders its rows, for comparing two rows of it outside SQLite:
/// the group values (columns 1 to `keys`) ascending, then the winner terms' values (the columns
/// after them), each by its direction and with NULLs first or last as its `ORDER BY` term puts
/// them. Every value compares as SQLite compares under BINARY: NULL, then numbers (integers and
/// reals by their values), then text, then blobs (byte for byte, then by length).
struct SortedRunOrder {
    /// The number of group values.
    let keys: Int
    /// Per winner term: whether it sorts descending, and whether its NULLs come last.
    let terms: [(descending: Bool, nullsLast: Bool)]

    /// One value of a row, as SQLite returned it (text and blobs point into the row, valid until
    /// its statement steps on).
    struct Cell {
        var type: CInt = SQLITE_NULL
        var integer: Int64 = 0
        var real: Double = 0
        var bytes: UnsafeRawPointer?
        var count = 0
    }

    /// Reads the current row of `row` into `cells` from `base` on: the group values (columns 1 to
    /// ``keys``), then the winner terms'.
    func load(_ row: SQLiteStatement, into cells: inout [Cell], at base: Int) {
        for index in 0..<(keys + terms.count) {
            let column = CInt(1 + index)
            var cell = Cell(type: sqlite3_column_type(row, column))
            switch cell.type {
            case SQLITE_INTEGER: cell.integer = sqlite3_column_int64(row, column)
            case SQLITE_FLOAT: cell.real = sqlite3_column_double(row, column)
            case SQLITE_TEXT, SQLITE_BLOB:
                // (The pointer first, then its length, as SQLite asks.)
                cell.bytes =
                    cell.type == SQLITE_TEXT ? UnsafeRawPointer(sqlite3_column_text(row, column)) : sqlite3_column_blob(row, column)
                cell.count = Int(sqlite3_column_bytes(row, column))
            default: break
            }
            cells[base + index] = cell
        }
    }

    /// The order of the row loaded at `a` against the one at `b` (``load(_:into:at:)``):
    /// negative, zero or positive.
    func compare(_ cells: [Cell], _ a: Int, _ b: Int) -> Int {
        for index in 0..<keys {
            let order = Self.compare(cells[a + index], cells[b + index])
            if order != 0 { return order }
        }
        for (index, term) in terms.enumerated() {
            let (x, y) = (cells[a + keys + index], cells[b + keys + index])
            let (xNull, yNull) = (x.type == SQLITE_NULL, y.type == SQLITE_NULL)
            if xNull || yNull {
                if xNull && yNull { continue }
                // NULL is the least value: first ascending, last descending or under NULLS LAST.
                return xNull == (term.descending || term.nullsLast) ? 1 : -1
            }
            let order = Self.compare(x, y)
            if order != 0 { return term.descending ? -order : order }
        }
        return 0
    }

    /// The rank of a storage class in SQLite's order of values.
    private static func rank(_ type: CInt) -> Int {
        switch type {
        case SQLITE_NULL: return 0
        case SQLITE_INTEGER, SQLITE_FLOAT: return 1
        case SQLITE_TEXT: return 2
        default: return 3
        }
    }

    /// `a` against `b`, ascending, as SQLite compares two values under BINARY.
    static func compare(_ a: Cell, _ b: Cell) -> Int {
        let (aRank, bRank) = (rank(a.type), rank(b.type))
        if aRank != bRank { return aRank < bRank ? -1 : 1 }
        switch aRank {
        case 0:
            return 0
        case 1:
            switch (a.type == SQLITE_INTEGER, b.type == SQLITE_INTEGER) {
            case (true, true): return a.integer < b.integer ? -1 : a.integer > b.integer ? 1 : 0
            case (false, false): return a.real < b.real ? -1 : a.real > b.real ? 1 : 0
            case (true, false): return compare(integer: a.integer, real: b.real)
            case (false, true): return -compare(integer: b.integer, real: a.real)
            }
        default:
            let common = min(a.count, b.count)
            if common > 0, let x = a.bytes, let y = b.bytes {
                let order = memcmp(x, y, common)
                if order != 0 { return order < 0 ? -1 : 1 }
            }
            return a.count < b.count ? -1 : a.count > b.count ? 1 : 0
        }
    }

    /// An integer against a real, as SQLite compares them (exactly, whatever their magnitudes).
    static func compare(integer: Int64, real: Double) -> Int {
        if real.isNaN { return 1 }
        if real < -9_223_372_036_854_775_808.0 { return 1 }
        if real >= 9_223_372_036_854_775_808.0 { return -1 }
        let truncated = Int64(real)
        if integer < truncated { return -1 }
        if integer > truncated { return 1 }
        let converted = Double(integer)
        if converted < real { return -1 }
        if converted > real { return 1 }
        return 0
    }
}

/// Discovery's sorted read (``DedupeExecutor/sortedRead(_:pinsTaken:from:)``): what it
/// selects, from where, and in which order.
struct SortedRead {
    /// The row's number, then the group values, then the winner terms told by value.
    let columns: [String]
    let from: String
    let filter: String
    /// The `ORDER BY` terms (the group values by their place among the columns).
    let order: [String]
    /// The number of group values.
    let keys: Int
    /// The number of winner terms told by value.
    let compared: Int
    /// The same order for runs merged outside SQLite; nil where it cannot be told from the
    /// columns' values (a winner term under another collation than BINARY, a pin first).
    let runOrder: SortedRunOrder?

    /// The read, in one statement.
    var select: String {
        """
        SELECT \(columns.joined(separator: ", "))
        FROM \(from)
        WHERE \(filter)
        ORDER BY \(order.joined(separator: ", "))
        """
    }
}

extension DedupeExecutor {
    /// What ``copySortedRuns(_:)`` did.
    enum SortedCopy {
        /// The runs to merge.
        case runs(SortedRuns)
        /// Nothing: one read of the table fits `max_transaction_ms`.
        case oneRead
        /// Nothing: runs cannot be copied here (no rollback journal, no copy possible, an order
        /// SQLite alone can tell, text stored as UTF-16); discovery copies the table as it is,
        /// or reads it.
        case unavailable
    }

    /// Whether discovery copies sorted runs where it can (tests turn it off to compare with the
    /// copy of the columns).
    static var copiesSortedRuns = true

    /// Runs with the number of sorted runs discovery is about to merge (tests).
    static var mergingSortedRuns: ((Int) -> Void)?

    /// The sorter's memory a run may take, in KiB (the main database's page cache while the runs
    /// are copied: SQLite's sorter keeps that much in memory before it writes a run of its
    /// own). Tests lower it to see runs sized by it.
    static var sortedRunKiB = 8192

    /// How many times the first range's time per row discovery's one sorted read of the table
    /// takes per row: 1.22 in winnow's own trace on merge-500's 1,600,000 customers (1,100 ms
    /// for the read, 9 ms for a first range of 16,000 rows), 0.55-0.85 in the sqlite3 shell at
    /// 160,000 and 1,600,000 customers (whose `lower` is cheaper than the Unicode-aware one);
    /// with a margin, so that a read estimated to fit the limit does.
    static let readPerSortedRuns = 1.5

    /// Copies discovery's sorted read (`read`, over the rule's table) in rowid ranges, each
    /// range its own short read sized like a row-range loop (``BatchSizer/rowRanges(_:)``) and
    /// sorted as it is read, into ``SortedRuns/table``, where one read of the table would hold
    /// a rollback journal's writers back longer than `max_transaction_ms` (the first range
    /// decides, as for ``copyForDiscovery(readPerCopy:)``). A range holds at most the rows whose
    /// sort fits ``sortedRunKiB`` (from the bytes per row of the first range), so that SQLite
    /// sorts each in memory.
    func copySortedRuns(_ read: SortedRead) throws -> SortedCopy {
        // (Text compares as UTF-8 bytes here; a UTF-16 database sorts its text by other bytes.)
        guard let runOrder = read.runOrder, !db.isInsideTransaction, try keepsRollbackJournal(),
            try String.fetchOne(db, sql: "PRAGMA encoding") == "UTF-8", let shape = try discoveryCopyShape()
        else { return .unavailable }
        let table = rule.qualifiedTable
        let rowid = shape.columns[0]
        guard let (low, last, span) = try copiedRowids(rowid) else { return .unavailable }
        try sizeWorkingMemory(rows: span, sorting: true)
        let cache = try Int.fetchOne(db, sql: "PRAGMA main.cache_size") ?? -Self.defaultCacheKiB
        try db.execute(sql: "PRAGMA main.cache_size = -\(Self.sortedRunKiB)")
        defer { try? db.execute(sql: "PRAGMA main.cache_size = \(cache)") }
        try db.execute(sql: "DROP TABLE IF EXISTS \(SortedRuns.table)")
        // Untyped columns: every value is kept as the read computed it.
        try db.execute(sql: "CREATE TABLE \(SortedRuns.table) (\(read.columns.indices.map { "v\($0)" }.joined(separator: ", ")))")
        // A full range ends at the rowid its last row has: stepping over the rows before it costs
        // about half of counting them (3 against 7-8 ms for 80,000 rows of dup67's 2,000,000).
        // Only the last range, shorter, is counted.
        let fullRange = try db.makeStatement(
            sql: "SELECT \(rowid) FROM \(table) WHERE \(rowid) > ? AND \(rowid) <= ? ORDER BY \(rowid) LIMIT 1 OFFSET ?")
        let range = try db.makeStatement(
            sql: """
                SELECT max(r), count(*) FROM (SELECT \(rowid) AS r FROM \(table) WHERE \(rowid) > ? AND \(rowid) <= ? ORDER BY \(rowid) LIMIT ?)
                """)
        let copy = try db.makeStatement(
            sql: """
                INSERT INTO \(SortedRuns.table)
                SELECT \(read.columns.joined(separator: ", ")) FROM \(table)
                WHERE \(rowid) > ? AND \(rowid) <= ? AND (\(read.filter))
                ORDER BY \(read.order.joined(separator: ", "))
                """)
        var sizer = copySizer(span: span)
        var runs = SortedRuns(order: runOrder)
        // The most rows a run holds and still sorts in memory (known after the first range).
        var fits = Int.max
        var after = low - 1
        var first = true
        let phase = RunEvent.discoveryPhase(of: rule)
        while after < last {
            let size = min(sizer.current, fits)
            let started = Date()
            // (The first range's pages tell the bytes per row; the others are not measured.)
            let pagesBefore = first ? try usedTemporaryPages() : 0
            // The range and its rows in one read, so that the rows counted are those copied.
            let (upTo, count, copied) = try db.readTransaction { () -> (Int64?, Int, Int) in
                var (upTo, count) = (try Int64.fetchOne(fullRange, arguments: [after, last, size - 1]), size)
                if upTo == nil {
                    let found = try Row.fetchOne(range, arguments: [after, last, size])
                    (upTo, count) = (found?[0], found?[1] ?? 0)
                }
                guard let upTo else { return (nil, 0, 0) }
                try copy.execute(arguments: [after, upTo])
                return (upTo, count, db.changesCount)
            }
            let seconds = Date().timeIntervalSince(started)
            guard let upTo else { break }
            if copied > 0 {
                let lastRow = db.lastInsertedRowID
                runs.spans.append((lastRow - Int64(copied) + 1, lastRow))
            }
            runs.rows += count
            if first {
                first = false
                let width = count == size ? Double(upTo) - Double(after) : nil
                if fitsOneRead(first: (count, seconds, width), span: span, perCopy: Self.readPerSortedRuns, limit: sizer.limit) {
                    try db.execute(sql: "DROP TABLE \(SortedRuns.table)")
                    return .oneRead
                }
                if copied > 0 {
                    let pageSize = try Int.fetchOne(db, sql: "PRAGMA temp.page_size") ?? 4096
                    // A row in the sorter takes its record and about as much again in bookkeeping
                    // as in the table's B-tree; a third kept in hand.
                    let perRow = max(1, (try usedTemporaryPages() - pagesBefore) * pageSize / copied) + 32
                    fits = max(BatchSizer.rowRangeStart, Self.sortedRunKiB * 1024 * 2 / 3 / perRow)
                }
            }
            guard count == size, upTo < last else { break }
            after = upTo
            sizer.record(size: size, seconds: seconds)
            onEvent(.phaseProgress(phase, done: runs.rows, total: max(span, runs.rows)))
        }
        return .runs(runs)
    }

    /// The temporary database's pages in use: a table filled where another was dropped (an
    /// earlier rule's) takes free pages before the file grows.
    private func usedTemporaryPages() throws -> Int {
        try (Int.fetchOne(db, sql: "PRAGMA temp.page_count") ?? 0) - (Int.fetchOne(db, sql: "PRAGMA temp.freelist_count") ?? 0)
    }
}
