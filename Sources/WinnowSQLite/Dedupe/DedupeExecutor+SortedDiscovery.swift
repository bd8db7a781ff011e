import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

/// Discovery as one sorted read: the candidate rows sorted by group, then by the winner terms,
/// numbered as they come (a new group where the group expressions change; the winner is its
/// first row; a row tied with the one before it on the winner terms is flagged `tied`), and
/// the losers filed into `temp.winnow_queue` in batch order.
///
/// It fills the queue with what ``DedupeExecutor/discoverySQL(duplicateKeys:pinsTaken:from:)``
/// does, without SQLite's window functions: their machinery cost more than the sort they
/// follow (docs/performance.md, "Discovery"). Where the groups are told apart only by SQLite's
/// own comparison under a collation other than BINARY, the window does it.
extension DedupeExecutor {
    /// Whether discovery numbers the groups over a sorted read where it can (tests turn it off
    /// to compare both ways on the same rows).
    static var discoversSorted = true

    /// The most losers held in memory before they are sorted and written out as a run
    /// (``SortedFiling``): each takes 24 bytes, and the sort half as much again, about 18 MB at
    /// this size. Tests lower it to see the runs merged.
    static var sortedLosersInMemory = 1 << 19

    /// Runs as the losers' filing begins, inside its transaction (tests: another connection
    /// commits there, which the read's transaction would hold back).
    static var atFiling: (() throws -> Void)?

    /// Whether the groups and ties of this rule can be told from the sorted rows' values: every
    /// group expression compares under BINARY (a normalised key, a hash and an `any:` rule's
    /// group number always do; a plain key column does when declared so); nil where discovery
    /// needs SQLite's own comparison (the window). Otherwise, per winner term, whether a tie on
    /// it is told by its value (false: a column under another collation, taken as tied
    /// whatever its values, which is allowed: `tied` may be said too often, never too rarely).
    func sortedComparisons() throws -> [Bool]? {
        guard rule.sources.isEmpty else { return nil }
        if rule.components == nil, !rule.rule.hash {
            for column in rule.keyColumns where rule.normalizers[column, default: []].isEmpty {
                guard let declared = try declaration(of: column), declared.collation.uppercased() == "BINARY" else { return nil }
            }
        }
        guard let collations = rule.winnerCollations else {
            // Collations unknown: every row after a group's first is tied, as the window says.
            return rule.winnerTerms.map { _ in false }
        }
        return rule.winnerTerms.map { term in
            guard case let .column(name, _, _) = term, let declared = collations[name] else { return true }
            return declared.uppercased() == "BINARY"
        }
    }

    /// Discovery's sorted read of every candidate row of `source` (the rule's table when nil):
    /// the row's number, the group values (`winnow_k0`...), the winner terms told by value
    /// (`winnow_c0`...; ``sortedComparisons()`` says which), sorted by group, then by every
    /// winner term.
    func sortedRead(_ exact: [Bool], pinsTaken: Bool, from source: String?) -> SortedRead {
        let read = discoveryRead(duplicateKeys: false, pinsTaken: pinsTaken, from: source)
        let keys = read.partition.count
        // The winner terms told by value (a row ties the one before it when these are equal:
        // the others are taken as equal, and without a term every row after its group's first
        // is tied).
        let compared = rule.winnerTerms.enumerated().filter { exact[$0.offset] }.map(\.element)
        var columns = [RowNumbers(rule).number(of: nil)]
        columns += read.partition.enumerated().map { "\($1) AS winnow_k\($0)" }
        columns += compared.enumerated().map { "\($1.compared(alias: nil, dialect: rule.dialect)) AS winnow_c\($0)" }
        // The group expressions by their place among the results: each is computed once a row.
        let order = (0..<keys).map { "\($0 + 2)" } + read.order
        let terms = compared.map { term -> (descending: Bool, nullsLast: Bool) in
            switch term {
            case let .column(_, descending, nullsLast): return (descending, nullsLast)
            case .completeness: return (true, false)
            }
        }
        // Runs merged outside SQLite must be in the very order SQLite sorts them: every winner
        // term told by value, and no pin before them.
        let mergeable = !pinsTaken && compared.count == rule.winnerTerms.count
        return SortedRead(
            columns: columns, from: read.from, filter: read.filter, order: order, keys: keys, compared: compared.count,
            runOrder: mergeable ? SortedRunOrder(keys: keys, terms: terms) : nil)
    }

    /// Fills the queue from one sorted read of every candidate row (``sortedComparisons()`` said
    /// how ties are told; `pinsTaken` and `source` as for ``discoverySQL(duplicateKeys:pinsTaken:from:)``,
    /// which alone reads after a grouped count), or from the sorted runs copied from the table
    /// (``copySortedRuns(_:)``), merged.
    /// Returns what the queue holds, counted as the losers were filed.
    func discoverSorted(
        _ exact: [Bool], pinsTaken: Bool, from source: String?, runs: SortedRuns? = nil
    ) throws
        -> SortedFiling.Counts
    {
        let read = sortedRead(exact, pinsTaken: pinsTaken, from: source)
        let keys = read.keys
        let compared = read.compared
        let select = read.select
        var filing = SortedFiling(db: db, byPosition: filesByPosition, limit: Self.sortedLosersInMemory)
        func numberGroups() throws {
            var groupValues = [SortedValue](repeating: SortedValue(), count: keys)
            var termValues = [SortedValue](repeating: SortedValue(), count: compared)
            var winner: Int64 = 0
            var number: Int32 = 0
            func rows(_ body: (SQLiteStatement) throws -> Void) throws {
                if let runs {
                    Self.mergingSortedRuns?(runs.spans.count)
                    try runs.forEachRow(db: db, body)
                } else {
                    try RawStatement(db.makeStatement(sql: select)).forEachRow(body)
                }
            }
            try rows { row in
                guard sqlite3_column_type(row, 0) == SQLITE_INTEGER else {
                    throw WinnowError.internal("\(rule.table): discovery read a row without a number")
                }
                let rid = sqlite3_column_int64(row, 0)
                var sameGroup = number > 0
                for index in 0..<keys where !groupValues[index].replace(row, CInt(1 + index)) { sameGroup = false }
                var tied = true
                for index in 0..<compared where !termValues[index].replace(row, CInt(1 + keys + index)) { tied = false }
                if sameGroup {
                    number += 1
                    try filing.add(SortedFiling.Loser(rid: rid, winner: winner, rn: number, tied: tied))
                } else {
                    winner = rid
                    number = 1
                }
            }
        }
        // One read of the table; then the losers filed, in a transaction of their own (each
        // insert on its own would be a transaction of the temporary database). Filing writes
        // only the temporary database, so in a rollback journal another connection's commit
        // waits for the read alone, not for the filing too (dup67's 200,000 rows: 0.17 s of
        // the 0.37 s the two took in one transaction). Inside a transaction already open (a
        // table numbered through a map first) both stay in it.
        try db.readTransaction { try numberGroups() }
        try db.readTransaction {
            try Self.atFiling?()
            try filing.finish()
        }
        return filing.counts
    }
}

/// One value of a sorted row, kept to compare the next row's with: equal as SQLite compares
/// under BINARY (the same storage class, or an integer and a real of the same value; text and
/// blobs byte for byte; NULL with NULL, as a window's partition and `IS` group them).
struct SortedValue {
    private var type: CInt = SQLITE_NULL
    private var integer: Int64 = 0
    private var real: Double = 0
    private var bytes: [UInt8] = []

    /// Takes column `column` of the current row in place of the value kept, and says whether
    /// the two are equal.
    mutating func replace(_ row: SQLiteStatement, _ column: CInt) -> Bool {
        let newType = sqlite3_column_type(row, column)
        let equal: Bool
        switch newType {
        case SQLITE_INTEGER:
            let value = sqlite3_column_int64(row, column)
            equal = type == SQLITE_INTEGER ? integer == value : type == SQLITE_FLOAT && Int64(exactly: real) == value
            integer = value
        case SQLITE_FLOAT:
            let value = sqlite3_column_double(row, column)
            equal = type == SQLITE_FLOAT ? real == value : type == SQLITE_INTEGER && Int64(exactly: value) == integer
            real = value
        case SQLITE_TEXT, SQLITE_BLOB:
            // (The pointer first, then its length, as SQLite asks.)
            let start = newType == SQLITE_TEXT ? UnsafeRawPointer(sqlite3_column_text(row, column)) : sqlite3_column_blob(row, column)
            let count = Int(sqlite3_column_bytes(row, column))
            let value = UnsafeRawBufferPointer(start: count > 0 ? start : nil, count: count > 0 ? count : 0)
            equal = type == newType && bytes.count == count && bytes.withUnsafeBytes { $0.elementsEqual(value) }
            bytes.removeAll(keepingCapacity: true)
            bytes.append(contentsOf: value)
        default:
            equal = type == SQLITE_NULL
        }
        type = newType
        return equal
    }
}

/// The losers of a sorted discovery, filed into `temp.winnow_queue` in its key order
/// (`first, winner, rn`): held in memory up to a limit; beyond it each full hold is sorted and
/// written out as a run to a file of its own (``SpillFile``), and the runs are merged as they
/// are filed. Staging them in a temporary table while discovery's read was still going slowed
/// the read itself by half (`dup67` at 2,000,000 rows: 2.6 s against 1.4 s held in memory).
struct SortedFiling {
    struct Loser {
        var rid: Int64
        var winner: Int64
        var rn: Int32
        var tied: Bool
    }

    let db: Database
    /// Each loser under its own rowid (``DedupeExecutor/filesByPosition``), else under its winner.
    let byPosition: Bool
    let limit: Int
    /// What a queue of losers holds: losers, groups (each has one loser numbered 2), losers
    /// tied with the row before them, and groups whose second row ties their winner.
    struct Counts {
        var losers = 0
        var groups = 0
        var tied = 0
        var tiedGroups = 0
    }

    /// The losers added so far, counted (the queue's counts once they are filed: counting the
    /// queue again read every row of it, 0.19 s of dup67's 5.9 s at 2,000,000 rows).
    private(set) var counts = Counts()
    private var held: [Loser] = []
    private var spill: SpillFile?
    /// The runs written to the spill file: run `i` holds losers `i * limit` to `(i + 1) * limit`.
    private var runs = 0

    init(db: Database, byPosition: Bool, limit: Int) {
        self.db = db
        self.byPosition = byPosition
        self.limit = max(1, limit)
    }

    /// Whether `a` is filed before `b` (the queue's key: `first`, then `winner`, then `rn`).
    func precedes(_ a: Loser, _ b: Loser) -> Bool {
        byPosition ? a.rid < b.rid : a.winner != b.winner ? a.winner < b.winner : a.rn < b.rn
    }

    mutating func add(_ loser: Loser) throws {
        counts.losers += 1
        if loser.rn == 2 { counts.groups += 1 }
        if loser.tied {
            counts.tied += 1
            if loser.rn == 2 { counts.tiedGroups += 1 }
        }
        held.append(loser)
        if held.count >= limit { try writeRun() }
    }

    /// Sorts the held losers and writes them out as one run.
    private mutating func writeRun() throws {
        held.sort(by: precedes)
        if spill == nil { spill = try SpillFile() }
        try spill!.write(held, at: runs * limit)
        runs += 1
        held.removeAll(keepingCapacity: true)
    }

    /// Files every loser into the queue.
    mutating func finish() throws {
        held.sort(by: precedes)
        guard let spill else {
            try insert(held[...])
            held = []
            return
        }
        defer { self.spill = nil }
        // Each run is read in pieces; the held losers are one more run, in memory.
        struct Source {
            var buffer: [Loser] = []
            var next = 0
            var start: Int
            var left: Int
        }
        let piece = 4096
        var sources = (0..<runs).map { Source(start: $0 * limit, left: limit) }
        func head(_ index: Int) throws -> Loser? {
            if sources[index].next == sources[index].buffer.count {
                guard sources[index].left > 0 else { return nil }
                let count = min(piece, sources[index].left)
                sources[index].buffer = try spill.read(count, at: sources[index].start)
                sources[index].next = 0
                sources[index].start += count
                sources[index].left -= count
            }
            return sources[index].buffer[sources[index].next]
        }
        var heldNext = 0
        var out: [Loser] = []
        out.reserveCapacity(piece)
        while true {
            var best: (index: Int, loser: Loser)?
            for index in sources.indices {
                if let loser = try head(index), best == nil || precedes(loser, best!.loser) { best = (index, loser) }
            }
            if heldNext < held.count, best == nil || precedes(held[heldNext], best!.loser) {
                out.append(held[heldNext])
                heldNext += 1
            } else if let best {
                out.append(best.loser)
                sources[best.index].next += 1
            } else {
                break
            }
            if out.count == piece {
                try insert(out[...])
                out.removeAll(keepingCapacity: true)
            }
        }
        try insert(out[...])
        held = []
        runs = 0
    }

    /// Rows a statement of ``insert(_:)`` inserts at once: each statement started costs about
    /// as much as a few rows inserted.
    static let rowsPerInsert = 64

    /// The queue's insert of `rows` losers.
    static func insertSQL(rows: Int) -> String {
        "INSERT INTO temp.winnow_queue (first, winner, rn, rid, tied) VALUES "
            + Array(repeating: "(?, ?, ?, ?, ?)", count: rows).joined(separator: ", ")
    }

    static let fullInsert = insertSQL(rows: rowsPerInsert)

    /// Inserts `losers` into the queue, ``rowsPerInsert`` rows a statement (the full statement
    /// is prepared once and kept; only a last, shorter one is not).
    private func insert(_ losers: ArraySlice<Loser>) throws {
        let full = RawStatement(try db.cachedStatement(sql: Self.fullInsert))
        for start in stride(from: losers.startIndex, to: losers.endIndex, by: Self.rowsPerInsert) {
            let rows = losers[start..<min(start + Self.rowsPerInsert, losers.endIndex)]
            let statement =
                rows.count == Self.rowsPerInsert ? full : RawStatement(try db.makeStatement(sql: Self.insertSQL(rows: rows.count)))
            try statement.execute { handle in
                for (offset, loser) in rows.enumerated() {
                    let base = CInt(offset * 5)
                    sqlite3_bind_int64(handle, base + 1, byPosition ? loser.rid : loser.winner)
                    sqlite3_bind_int64(handle, base + 2, loser.winner)
                    sqlite3_bind_int64(handle, base + 3, Int64(loser.rn))
                    sqlite3_bind_int64(handle, base + 4, loser.rid)
                    sqlite3_bind_int64(handle, base + 5, loser.tied ? 1 : 0)
                }
            }
        }
    }
}

/// A file of losers written out in runs by ``SortedFiling``, deleted as soon as it is made: it
/// holds only this process's open descriptor, so a run killed at any point leaves nothing
/// behind, and the space is given back when it is closed. It lives where SQLite keeps its own
/// temporary files: the first of `SQLITE_TMPDIR`, `TMPDIR`, `/var/tmp`, `/usr/tmp` and `/tmp`
/// that is a directory this process may create files in, else the working directory (a
/// variable naming a file, or a folder that is gone, is passed over, as SQLite passes it over).
final class SpillFile {
    private let descriptor: CInt

    /// The folder the file goes in.
    static func directory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        [environment["SQLITE_TMPDIR"], environment["TMPDIR"], "/var/tmp", "/usr/tmp", "/tmp"].compactMap { $0 }.first { path in
            var isDirectory: ObjCBool = false
            return !path.isEmpty && FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
                && access(path, W_OK | X_OK) == 0
        } ?? "."
    }

    init() throws {
        let directory = Self.directory()
        var template = Array((directory + "/winnow-losers-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw Self.failure("creating a temporary file in \(directory)") }
        unlink(String(cString: template))
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    private static func failure(_ doing: String) -> WinnowError {
        .io("discovery: \(doing): \(String(cString: strerror(errno)))")
    }

    /// Writes `losers` from loser number `index` on.
    func write(_ losers: [SortedFiling.Loser], at index: Int) throws {
        try losers.withUnsafeBytes { bytes in
            try whole(bytes.count, doing: "writing losers to a temporary file") { done in
                pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, Self.offset(index, done))
            }
        }
    }

    /// Reads `count` losers from loser number `index` on.
    func read(_ count: Int, at index: Int) throws -> [SortedFiling.Loser] {
        var losers = [SortedFiling.Loser](repeating: SortedFiling.Loser(rid: 0, winner: 0, rn: 0, tied: false), count: count)
        try losers.withUnsafeMutableBytes { bytes in
            try whole(bytes.count, doing: "reading losers back from a temporary file") { done in
                pread(descriptor, bytes.baseAddress! + done, bytes.count - done, Self.offset(index, done))
            }
        }
        return losers
    }

    /// The file offset of byte `byte` from loser number `index` on.
    private static func offset(_ index: Int, _ byte: Int) -> off_t {
        off_t(index * MemoryLayout<SortedFiling.Loser>.stride + byte)
    }

    /// Repeats `step` (a `pwrite` or `pread` of what is left from byte `done` on, returning the
    /// bytes it moved) until `count` bytes are moved; a step that moves none fails.
    private func whole(_ count: Int, doing: String, _ step: (_ done: Int) -> Int) throws {
        var done = 0
        while done < count {
            let moved = step(done)
            guard moved > 0 else { throw Self.failure(doing) }
            done += moved
        }
    }
}
