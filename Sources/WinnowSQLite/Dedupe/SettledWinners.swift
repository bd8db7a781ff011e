import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

/// The map of losers to their settled winners (`temp.winnow_mapped`, the rows whose winner is
/// not NULL) held in memory while children are re-pointed ahead of the batches, and looked up
/// by the SQL function `winnow_settled_winner(x)`: the winner of the loser whose rowid is `x`,
/// or NULL.
///
/// Finding the moves of a stretch of children looks every child row's reference up in the map,
/// at a random place of it. In the map's B-tree that look-up costs more per row as the map
/// outgrows the processor's caches (the sqlite3 shell on merge-500's orders: 0.27 µs a row at
/// 160,000 customers, 0.74 µs at 1,600,000), and finding took about a quarter of the stretches'
/// time. Here it is one read of an array, a slot per rowid between the lowest and the highest
/// loser, 4 bytes each, so it is held only where those fit
/// ``DedupeExecutor/settledWinnersLimitKiB`` (about four million rowids).
///
/// The function stands in for `CROSS JOIN temp.winnow_mapped AS m ON m.rid = x ... AND m.winner
/// IS NOT NULL` only where that comparison converts nothing: a reference column of INTEGER,
/// REAL or NUMERIC affinity, whose integers and reals compare with a rowid by value, and whose
/// text and blobs never equal one (``DedupeExecutor/comparesByValue(_:)``). A column of TEXT or
/// no affinity would have its numeric text converted by the comparison, so it keeps the join.
final class SettledWinners {
    /// The SQL function's name.
    static let function = "winnow_settled_winner"

    /// The lowest loser's rowid: slot 0's.
    private let low: Int64
    /// Per loser from ``low`` on, its settled winner's rowid minus ``low`` (``none``: no loser
    /// there, or its winner is not settled).
    private var slots: [Int32]
    private static let none = Int32.min

    private init(low: Int64, count: Int) {
        self.low = low
        slots = [Int32](repeating: Self.none, count: count)
    }

    /// The map of `temp.winnow_mapped`'s settled losers, or nil where it is empty or does not fit
    /// `limitKiB`, or a winner lies more than 2^31 rowids from the lowest loser.
    static func load(_ db: Database, limitKiB: Int) throws -> SettledWinners? {
        // (Each bound its own subquery, read from an end of the rowid tree.)
        let bounds = try Row.fetchOne(
            db, sql: "SELECT (SELECT min(rid) FROM temp.winnow_mapped), (SELECT max(rid) FROM temp.winnow_mapped)")
        guard let low = bounds?[0] as Int64?, let high = bounds?[1] as Int64? else { return nil }
        let (span, overflow) = high.subtractingReportingOverflow(low)
        guard !overflow, span < Int64(limitKiB) * 1024 / 4 else { return nil }
        let map = SettledWinners(low: low, count: Int(span) + 1)
        var fits = true
        try RawStatement(db.makeStatement(sql: "SELECT rid, winner FROM temp.winnow_mapped WHERE winner IS NOT NULL")).forEachRow {
            row in
            let (offset, overflow) = sqlite3_column_int64(row, 1).subtractingReportingOverflow(low)
            guard !overflow, let winner = Int32(exactly: offset), winner != Self.none else {
                fits = false
                return
            }
            map.slots[Int(sqlite3_column_int64(row, 0) - low)] = winner
        }
        return fits ? map : nil
    }

    /// The settled winner of the loser whose rowid is `rid`, or nil.
    func winner(of rid: Int64) -> Int64? {
        guard rid >= low else { return nil }
        let (offset, overflow) = rid.subtractingReportingOverflow(low)
        guard !overflow, offset < Int64(slots.count), case let slot = slots[Int(offset)], slot != Self.none else { return nil }
        return low + Int64(slot)
    }

    /// Registers `winnow_settled_winner(x)` on `db`, looking this map up (SQLite holds it until
    /// ``unregister(from:)`` or the next registration).
    func register(on db: Database) throws {
        let code = sqlite3_create_function_v2(
            db.sqliteConnection, Self.function, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, Unmanaged.passRetained(self).toOpaque(),
            { ctx, _, argv in
                guard let ctx, let argv, let value = argv[0], let data = sqlite3_user_data(ctx) else { return }
                let map = Unmanaged<SettledWinners>.fromOpaque(data).takeUnretainedValue()
                let rid: Int64?
                switch sqlite3_value_type(value) {
                case SQLITE_INTEGER: rid = sqlite3_value_int64(value)
                // (A real equals a rowid when it holds that integer exactly, as SQLite compares.)
                case SQLITE_FLOAT: rid = Int64(exactly: sqlite3_value_double(value))
                default: rid = nil
                }
                if let rid, let winner = map.winner(of: rid) {
                    sqlite3_result_int64(ctx, winner)
                } else {
                    sqlite3_result_null(ctx)
                }
            }, nil, nil,
            { data in if let data { Unmanaged<SettledWinners>.fromOpaque(data).release() } })
        guard code == SQLITE_OK else { throw WinnowError.internal("cannot register SQL function \(Self.function) (\(code))") }
    }

    /// Removes `winnow_settled_winner(x)` from `db` (SQLite then lets its map go).
    static func unregister(from db: Database) {
        sqlite3_create_function_v2(db.sqliteConnection, function, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil, nil, nil, nil, nil)
    }
}
