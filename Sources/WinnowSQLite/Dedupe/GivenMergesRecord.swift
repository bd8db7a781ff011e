import Foundation
import GRDB
import WinnowCore

/// The values of the losers a stretch of merges deleted before their winner's merge, as
/// `winnow_given_merges` keeps them (``SQLiteDialect/givenMergesTable``): one row per piece of
/// a stretch, each of its winners with the merge of its given losers' values, column by column
/// (`sum`, `min` or `max`: ``DedupeExecutor/givesAhead(_:)``), packed in one blob. The winner's
/// own stretch applies a merge decided over all its rows as found, given ones included, and
/// records every loser of the group as taken (``TakenLosersRecord``): from then on the row says
/// nothing. Until then it is the only place those values are kept: a run that stops before it
/// (killed, or another connection's commit) merges them into their winner first
/// (``DedupeExecutor/settleGivenMerges(_:state:batchNumber:totals:)``).
///
/// Each winner is stored as the step from the one before (``PackedIntegers``), then how many losers
/// it was given and each of them as the step from the winner, then each column's value as a tag
/// (0: NULL, 1: an integer, 2: a REAL's bits) and, but for NULL, the value. The losers are there
/// for the run that merges the values into their winner: it records them as taken by it
/// (``TakenLosersRecord``), so that the winner, whose values now hold theirs, stays its group's
/// winner as a winner that took losers does.
package struct GivenMergesRecord {
    /// One winner, its given losers, and the merge of their values, one per column of the record.
    package struct Entry: Equatable {
        package var winner: Int64
        package var losers: [Int64]
        package var values: [SQLValue]
    }

    private var integers = PackedIntegers()
    private var last: Int64 = 0
    private(set) var count = 0

    /// The blob of the entries appended so far.
    var packed: [UInt8] { integers.bytes }

    /// Appends an entry; winners come in ascending rowid order (any order decodes).
    mutating func append(winner: Int64, losers: [Int64], values: [SQLValue]) {
        integers.put(winner &- last)
        last = winner
        integers.put(Int64(losers.count))
        for loser in losers { integers.put(loser &- winner) }
        for value in values {
            switch value {
            case let .integer(i):
                integers.put(1)
                integers.put(i)
            case let .real(d):
                integers.put(2)
                integers.put(Int64(bitPattern: d.bitPattern))
            default:
                // (Only NULL: ``DedupeExecutor/givesAhead(_:)`` gives only integers, and their
                // sum turns REAL when it overflows.)
                integers.put(0)
            }
        }
        count += 1
    }

    /// The entries of a packed blob of `columns` values each, in the order appended; nil for
    /// bytes that are not such a blob.
    package static func entries(_ bytes: [UInt8], columns: Int) -> [Entry]? {
        var entries: [Entry] = []
        var reader = PackedIntegers.Reader(bytes)
        var last: Int64 = 0
        while !reader.atEnd {
            guard let step = reader.next(), let count = reader.next(), count >= 0, count <= bytes.count else { return nil }
            last = last &+ step
            var losers: [Int64] = []
            for _ in 0..<count {
                guard let offset = reader.next() else { return nil }
                losers.append(last &+ offset)
            }
            var values: [SQLValue] = []
            for _ in 0..<columns {
                switch reader.next() {
                case 0?: values.append(.null)
                case 1?:
                    guard let value = reader.next() else { return nil }
                    values.append(.integer(value))
                case 2?:
                    guard let bits = reader.next() else { return nil }
                    values.append(.real(Double(bitPattern: UInt64(bitPattern: bits))))
                default: return nil
                }
            }
            entries.append(Entry(winner: last, losers: losers, values: values))
        }
        return entries
    }

    /// The columns a record's values are of, as the row names them: each strategy and column,
    /// e.g. `[["sum", "visits"]]`.
    static func columnsText(_ columns: [(strategy: MergeStrategy, name: String)]) -> String {
        let array = columns.map { [$0.strategy.rawValue, $0.name] }
        let data = (try? JSONSerialization.data(withJSONObject: array)) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// ``columnsText(_:)`` read back; nil for text that is not such a list.
    static func columns(_ text: String) -> [(strategy: MergeStrategy, name: String)]? {
        guard let array = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String]] else { return nil }
        var columns: [(strategy: MergeStrategy, name: String)] = []
        for pair in array {
            guard pair.count == 2, let strategy = MergeStrategy(rawValue: pair[0]) else { return nil }
            columns.append((strategy, pair[1]))
        }
        return columns
    }

    /// One row of the record, read.
    package struct Row {
        package var rowID: Int64
        package var runID: Int64
        package var columns: [(strategy: MergeStrategy, name: String)]
        package var entries: [Entry]
        /// A row that says how far a run that merged them into their winners got: every winner
        /// up to here is done (its columns and entries are empty).
        package var settledTo: Int64?
    }

    /// Every row of the record for `table`, in the order recorded; none where the record does
    /// not exist. Throws on a row that cannot be read.
    package static func rows(_ db: Database, table: String) throws -> [Row] {
        var rows: [Row] = []
        try forEach(db, table: table) { rows.append($0) }
        return rows
    }

    /// Calls `body` with every row of the record for `table`, read one at a time, in the order
    /// recorded; never where the record does not exist. Throws on a row that cannot be read.
    static func forEach(_ db: Database, table: String, _ body: (Row) throws -> Void) throws {
        guard try db.tableExists(SQLiteDialect.givenMergesName) else { return }
        let cursor = try GRDB.Row.fetchCursor(
            db, sql: "SELECT rowid, run_id, columns, entries, settled_to FROM main.winnow_given_merges WHERE tbl = ? ORDER BY rowid",
            arguments: [table])
        while let row = try cursor.next() {
            let (rowID, runID, text, blob): (Int64, Int64, String, Data) = (row[0], row[1], row[2], row[3])
            guard let columns = columns(text), let entries = entries([UInt8](blob), columns: columns.count) else {
                throw corrupt()
            }
            try body(Row(rowID: rowID, runID: runID, columns: columns, entries: entries, settledTo: row[4]))
        }
    }

    /// The error of a row of `winnow_given_merges` that cannot be read.
    static func corrupt() -> WinnowError {
        .internal("winnow_given_merges holds a record that is not one of winners and values; the run was stopped")
    }
}
