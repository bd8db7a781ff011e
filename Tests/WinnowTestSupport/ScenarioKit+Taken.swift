import Foundation
import GRDB
import WinnowSQLite

extension ScenarioKit {
    /// Rows of a query that may read `temp.taken (tbl, loser, winner, run_id)`: every loser
    /// recorded as taken by a merge, unpacked from `winnow_taken_losers` (one row per pair, in
    /// the order recorded).
    package static func takenRows(_ db: String, _ sql: String) throws -> [[DatabaseValue]] {
        let queue = try DatabaseQueue(path: db)
        defer { try? queue.close() }
        return try queue.inDatabase { db in
            try db.execute(
                sql: "CREATE TEMP TABLE taken (tbl TEXT NOT NULL, loser INTEGER NOT NULL, winner INTEGER NOT NULL, run_id INTEGER NOT NULL)"
            )
            for (table, runID, pair) in try TakenLosersRecord.all(db) {
                try db.execute(sql: "INSERT INTO temp.taken VALUES (?, ?, ?, ?)", arguments: [table, pair.loser, pair.winner, runID])
            }
            return try Row.fetchAll(db, sql: sql).map { Array($0.databaseValues) }
        }
    }

    /// The first value of ``takenRows(_:_:)`` as an integer (-1 for none).
    package static func takenInt(_ db: String, _ sql: String) throws -> Int {
        try takenRows(db, sql).first.flatMap { Int.fromDatabaseValue($0[0]) } ?? -1
    }

    /// The first column of ``takenRows(_:_:)``.
    package static func takenColumn<T: DatabaseValueConvertible>(_ db: String, _ sql: String, as: T.Type = T.self) throws -> [T?] {
        try takenRows(db, sql).map { T.fromDatabaseValue($0[0]) }
    }

    /// The sum of `column`'s integer values that `winnow_given_merges` keeps for `table`'s
    /// winners whose merge has not come (docs/reference.md, "Batches"): not covered by a note of
    /// how far a run merged them, whose losers their run did not record as taken by their
    /// winner, and still there. 0 where the record does not exist.
    package static func givenIntegers(_ db: String, table: String, column: String) throws -> Int {
        let queue = try DatabaseQueue(path: db)
        defer { try? queue.close() }
        return try queue.inDatabase { db in
            let rows = try GivenMergesRecord.rows(db, table: table)
            guard !rows.isEmpty else { return 0 }
            // Each loser's winners as recorded, by run.
            var takenBy: [Int64: [Int64: Set<Int64>]] = [:]
            for (_, run, pair) in try TakenLosersRecord.all(db, table: table) {
                takenBy[run, default: [:]][pair.loser, default: []].insert(pair.winner)
            }
            let settled = rows.compactMap(\.settledTo).max() ?? .min
            var sum = 0
            for row in rows where row.settledTo == nil {
                guard let index = row.columns.firstIndex(where: { $0.name == column }) else { continue }
                for entry in row.entries where entry.winner > settled {
                    // (Merged: its run recorded its winner as taking the entry's own losers.)
                    if entry.losers.contains(where: { takenBy[row.runID]?[$0]?.contains(entry.winner) == true }) { continue }
                    let exists = try Bool.fetchOne(
                        db, sql: "SELECT EXISTS (SELECT 1 FROM \"\(table)\" WHERE rowid = ?)", arguments: [entry.winner])
                    if exists == true, case .integer(let value) = entry.values[index] { sum += Int(value) }
                }
            }
            return sum
        }
    }
}
