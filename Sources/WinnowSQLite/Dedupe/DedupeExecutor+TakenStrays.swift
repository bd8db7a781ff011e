import Foundation
import GRDB
import WinnowCore

extension DedupeExecutor {
    /// Files into the queue, with the winner that took it, every loser that a merge of an
    /// unfinished run took (`winnow_taken_losers`, read through its copy, ``fillTakenCopy()``;
    /// that winner still there) and that the discovery did not find in that winner's group:
    /// another connection has changed its key since. Its values are in that winner already, so
    /// it goes as the winner's loser (its merge is left out, ``BatchStatements/mergeRowsUntaken``),
    /// as if the other connection had changed it after a batch by group had deleted it; left alone, it would be counted
    /// twice (in its winner, and as itself). Where the discovery found it in another group, it
    /// leaves that group first: as one of its losers, the losers after it move up one place;
    /// as its winner, the group's best loser takes its place, and the group is settled again by
    /// the full winner order when its batch is read (every row of it marked tied).
    ///
    /// Called after a discovery of a rule whose losers may have been taken (``mayHaveTakenLosers()``);
    /// returns how many it filed. A loser whose taking winner is itself such a loser, or was
    /// found as a loser of another winner, is left out (only runs killed one after another, with
    /// keys changed between them, could make one).
    func fileTakenStrays() throws -> Int {
        let table = rule.qualifiedTable
        let rowID = RowNumbers(rule).rowid ?? "rowid"
        try fillTakenCopy()
        try db.execute(
            sql: """
                DROP TABLE IF EXISTS temp.winnow_strays;
                CREATE TEMP TABLE winnow_strays (loser INTEGER PRIMARY KEY, winner INTEGER NOT NULL);
                INSERT OR IGNORE INTO temp.winnow_strays (loser, winner)
                SELECT t.loser, t.winner FROM (
                    SELECT loser, winner FROM temp.winnow_taken
                    EXCEPT SELECT rid, winner FROM temp.winnow_queue
                ) AS t
                WHERE EXISTS (SELECT 1 FROM \(table) AS w WHERE w.\(rowID) = t.winner)
                AND EXISTS (SELECT 1 FROM \(table) AS l WHERE l.\(rowID) = t.loser);
                DELETE FROM temp.winnow_strays
                WHERE winner IN (SELECT loser FROM temp.winnow_strays) OR winner IN (SELECT rid FROM temp.winnow_queue);
                """)
        let strays = try Int.fetchOne(db, sql: "SELECT count(*) FROM temp.winnow_strays") ?? 0
        guard strays > 0 else {
            try db.execute(sql: "DROP TABLE temp.winnow_strays")
            return 0
        }
        // By group, a loser is filed under its winner; by position, under its own rowid.
        try db.execute(
            sql: """
                -- Out of the group where the discovery found it, as a loser: those after it move
                -- up one place.
                CREATE TEMP TABLE winnow_stray_places AS
                SELECT winner, rn FROM temp.winnow_queue WHERE rid IN (SELECT loser FROM temp.winnow_strays);
                DELETE FROM temp.winnow_queue WHERE rid IN (SELECT loser FROM temp.winnow_strays);
                UPDATE temp.winnow_queue
                SET rn = rn - (SELECT count(*) FROM temp.winnow_stray_places AS p WHERE p.winner = winnow_queue.winner AND p.rn < winnow_queue.rn),
                    tied = 1
                WHERE winner IN (SELECT winner FROM temp.winnow_stray_places);
                DROP TABLE temp.winnow_stray_places;
                -- As a winner: its best loser takes its place.
                CREATE TEMP TABLE winnow_stray_heirs AS
                SELECT winner AS stray, rid AS heir FROM temp.winnow_queue WHERE rn = 2 AND winner IN (SELECT loser FROM temp.winnow_strays);
                DELETE FROM temp.winnow_queue WHERE rid IN (SELECT heir FROM temp.winnow_stray_heirs);
                UPDATE temp.winnow_queue SET winner = h.heir, rn = winnow_queue.rn - 1, tied = 1\(filesByPosition ? "" : ", first = h.heir")
                FROM temp.winnow_stray_heirs AS h WHERE winnow_queue.winner = h.stray;
                DROP TABLE temp.winnow_stray_heirs;
                -- Into the group of the winner that took it, after its losers.
                INSERT INTO temp.winnow_queue (first, winner, rn, rid, tied)
                SELECT s.\(filesByPosition ? "loser" : "winner"), s.winner,
                       coalesce((SELECT max(q.rn) FROM temp.winnow_queue AS q WHERE q.winner = s.winner), 1)
                       + row_number() OVER (PARTITION BY s.winner ORDER BY s.loser),
                       s.loser, 1
                FROM temp.winnow_strays AS s;
                DROP TABLE temp.winnow_strays;
                """)
        return strays
    }
}
