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

    /// The most losers held in memory before they are sorted and filed; a discovery that finds
    /// more stages them in a temporary table and lets SQLite's sorter file them (each loser
    /// takes 24 bytes here, and the sort half as much again: about 18 MB at this size).
    /// Tests lower it to see the staging.
    static var sortedLosersInMemory = 1 << 19

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

    /// Fills the queue from one sorted read (``sortedComparisons()`` said how ties are told;
    /// the arguments are ``discoverySQL(duplicateKeys:pinsTaken:from:)``'s).
    func discoverSorted(_ exact: [Bool], duplicateKeys: Bool, pinsTaken: Bool, from source: String?) throws {
        let read = discoveryRead(duplicateKeys: duplicateKeys, pinsTaken: pinsTaken, from: source)
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
        let select = """
            SELECT \(columns.joined(separator: ", "))
            FROM \(read.from)
            WHERE \(read.filter)
            ORDER BY \(order.joined(separator: ", "))
            """
        var filing = SortedFiling(db: db, byPosition: filesByPosition, limit: Self.sortedLosersInMemory)
        func numberGroups() throws {
            let statement = try db.makeStatement(sql: select)
            let row = statement.sqliteStatement
            defer { sqlite3_reset(row) }
            var groupValues = [SortedValue](repeating: SortedValue(), count: keys)
            var termValues = [SortedValue](repeating: SortedValue(), count: compared.count)
            var winner: Int64 = 0
            var number: Int32 = 0
            while true {
                let code = sqlite3_step(row)
                if code == SQLITE_DONE { break }
                guard code == SQLITE_ROW else {
                    throw DatabaseError(
                        resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: select)
                }
                guard sqlite3_column_type(row, 0) == SQLITE_INTEGER else {
                    throw WinnowError.internal("\(rule.table): discovery read a row without a number")
                }
                let rid = sqlite3_column_int64(row, 0)
                var sameGroup = number > 0
                for index in 0..<keys where !groupValues[index].replace(row, CInt(1 + index)) { sameGroup = false }
                var tied = true
                for index in 0..<compared.count where !termValues[index].replace(row, CInt(1 + keys + index)) { tied = false }
                if sameGroup {
                    number += 1
                    try filing.add(SortedFiling.Loser(rid: rid, winner: winner, rn: number, tied: tied))
                } else {
                    winner = rid
                    number = 1
                }
            }
        }
        func numberAndFile() throws {
            try numberGroups()
            try filing.finish()
        }
        if db.isInsideTransaction {
            try numberAndFile()
        } else {
            // One read of the table, and the losers filed beside it, in one transaction (each
            // insert on its own would be a transaction of the temporary database).
            try db.inTransaction(.deferred) {
                try numberAndFile()
                return .commit
            }
        }
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
/// (`first, winner, rn`): held and sorted in memory up to a limit, else staged in a temporary
/// table and filed from it by SQLite's sorter.
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
    private var held: [Loser] = []
    private var staged = false

    init(db: Database, byPosition: Bool, limit: Int) {
        self.db = db
        self.byPosition = byPosition
        self.limit = max(1, limit)
    }

    static let staging = "temp.winnow_sorted_losers"

    mutating func add(_ loser: Loser) throws {
        held.append(loser)
        if held.count >= limit { try stage() }
    }

    /// Writes the held losers to the staging table, as they come.
    private mutating func stage() throws {
        if !staged {
            try db.execute(
                sql: """
                    DROP TABLE IF EXISTS \(Self.staging);
                    CREATE TEMP TABLE winnow_sorted_losers (first INTEGER, winner INTEGER, rn INTEGER, rid INTEGER, tied INTEGER)
                    """)
            staged = true
        }
        try insert(held, into: Self.staging)
        held.removeAll(keepingCapacity: true)
    }

    /// Files every loser into the queue.
    mutating func finish() throws {
        if staged {
            try stage()
            held = []
            try db.execute(
                sql: """
                    INSERT INTO temp.winnow_queue (first, winner, rn, rid, tied)
                    SELECT first, winner, rn, rid, tied FROM \(Self.staging) ORDER BY first, winner, rn;
                    DROP TABLE \(Self.staging)
                    """)
            return
        }
        if byPosition {
            held.sort { $0.rid < $1.rid }
        } else {
            held.sort { $0.winner != $1.winner ? $0.winner < $1.winner : $0.rn < $1.rn }
        }
        try insert(held, into: "temp.winnow_queue")
        held = []
    }

    /// Rows a statement of ``insert(_:into:)`` inserts at once: each statement started costs
    /// about as much as a few rows inserted.
    static let rowsPerInsert = 64

    private func insert(_ losers: [Loser], into table: String) throws {
        var start = 0
        while start < losers.count {
            let rows = min(Self.rowsPerInsert, losers.count - start)
            let values = Array(repeating: "(?, ?, ?, ?, ?)", count: rows).joined(separator: ", ")
            // (The full statement is prepared once and kept; only the last, shorter one is not.)
            let sql = "INSERT INTO \(table) (first, winner, rn, rid, tied) VALUES \(values)"
            let statement = rows == Self.rowsPerInsert ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
            let handle = statement.sqliteStatement
            while start + rows <= losers.count {
                for offset in 0..<rows {
                    let loser = losers[start + offset]
                    let base = CInt(offset * 5)
                    sqlite3_bind_int64(handle, base + 1, byPosition ? loser.rid : loser.winner)
                    sqlite3_bind_int64(handle, base + 2, loser.winner)
                    sqlite3_bind_int64(handle, base + 3, Int64(loser.rn))
                    sqlite3_bind_int64(handle, base + 4, loser.rid)
                    sqlite3_bind_int64(handle, base + 5, loser.tied ? 1 : 0)
                }
                let code = sqlite3_step(handle)
                sqlite3_reset(handle)
                guard code == SQLITE_DONE else {
                    throw DatabaseError(
                        resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                        sql: statement.sql)
                }
                start += rows
                if rows < Self.rowsPerInsert { break }
            }
        }
    }
}
