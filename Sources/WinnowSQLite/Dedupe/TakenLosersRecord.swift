import Foundation
import GRDB
import WinnowCore

/// The losers one piece of a stretch of merges took, as `winnow_taken_losers` keeps them
/// (``SQLiteDialect/takenLosersTable``): one row per piece, its pairs of loser and winner packed
/// in one blob, each pair two variable-length integers (the winner's rowid as the step from the
/// winner before, the loser's as the step from its winner; ``PackedIntegers``). The pairs come
/// by winner, so a winner's step is small and one with several losers steps by 0; a loser beside
/// its winner, as in a table whose duplicates arrive together, packs in a byte. About 4 bytes a
/// loser where a row of its own took 27 (merge-500's 1,066,499 losers at 1,600,000 customers:
/// 4.4 MB against 29 MB; docs/performance.md).
package struct TakenLosersRecord {
    /// One recorded loser: its values are in `winner`'s.
    package struct Pair: Equatable {
        package var loser: Int64
        package var winner: Int64
    }

    private var integers = PackedIntegers()
    private var last: Int64 = 0
    private(set) var count = 0

    /// The blob of the pairs appended so far.
    var packed: [UInt8] { integers.bytes }

    /// Appends a pair; winners come in ascending rowid order (any order decodes, only larger).
    mutating func append(loser: Int64, winner: Int64) {
        integers.put(winner &- last)
        integers.put(loser &- winner)
        last = winner
        count += 1
    }

    /// The pairs of a packed blob, in the order they were appended; nil for bytes that are not
    /// such a blob (cut short, or a value too long).
    package static func pairs(_ bytes: [UInt8]) -> [Pair]? {
        var pairs: [Pair] = []
        var reader = PackedIntegers.Reader(bytes)
        var last: Int64 = 0
        while !reader.atEnd {
            guard let step = reader.next(), let offset = reader.next() else { return nil }
            last = last &+ step
            pairs.append(Pair(loser: last &+ offset, winner: last))
        }
        return pairs
    }

    /// Calls `body` with every recorded pair of the database (of `table` only, where given), its
    /// table and the run that recorded it, in the order recorded; never where the record does
    /// not exist. Throws on a blob that is not one of pairs.
    static func forEach(
        _ db: Database, table: String? = nil, _ body: (_ table: String, _ runID: Int64, _ pair: Pair) throws -> Void
    ) throws {
        guard try db.tableExists(SQLiteDialect.takenLosersName) else { return }
        let rows = try Row.fetchCursor(
            db, sql: "SELECT tbl, run_id, pairs FROM main.winnow_taken_losers WHERE ?1 IS NULL OR tbl = ?1 ORDER BY rowid",
            arguments: [table])
        while let row = try rows.next() {
            let (table, runID, blob): (String, Int64, Data) = (row[0], row[1], row[2])
            guard let pairs = pairs([UInt8](blob)) else { throw corrupt() }
            for pair in pairs { try body(table, runID, pair) }
        }
    }

    /// Every recorded pair of the database (``forEach(_:table:_:)``), with its table and run.
    package static func all(_ db: Database, table: String? = nil) throws -> [(table: String, runID: Int64, pair: Pair)] {
        var all: [(table: String, runID: Int64, pair: Pair)] = []
        try forEach(db, table: table) { all.append(($0, $1, $2)) }
        return all
    }

    /// The error of a blob of `winnow_taken_losers` that is not one of pairs.
    static func corrupt() -> WinnowError {
        .internal("winnow_taken_losers holds a record that is not one of losers and winners; the run was stopped")
    }
}
