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
}
