import Foundation
import GRDB
import WinnowCore

extension DedupeExecutor {
    /// Moves back to its loser every child that a stretch of an unfinished run re-pointed ahead
    /// (`winnow_moved_ahead`) and whose loser is no longer in its winner's group: another
    /// connection changed the loser's key after the stretch and before the run was killed. The
    /// batches of an uninterrupted run do the same for such a loser
    /// (``BatchStatements/moveBack``); a child whose loser is a loser of another winner now is
    /// then re-pointed to that winner with the loser's other children.
    ///
    /// Loser and winner still in one group stay as they are, whichever row wins it now: its
    /// batch takes the children of each of its losers to its winner, the moved ones with the
    /// rest. A group is told by the winner the queue files its rows under, which for a queue
    /// filed by group is the row its batch will rank first only once the batch has settled
    /// the group's ties (``settleTiesAhead(_:state:)`` settles them ahead only for a queue
    /// filed by position); so a group's rows are looked up, not the pair as the stretch
    /// found it, and `plan`, whose queue is filed by group, counts the same moves as the run.
    ///
    /// A child moves back only while it still points where the stretch re-pointed it and its
    /// loser still exists. Called after the discovery and the settling of the winners, before
    /// any stretch or batch; one transaction, journaled and counted as a batch of its own
    /// (re-pointed rows), where any may go back. Returns its counts (none where nothing was
    /// recorded for this rule or nothing went back).
    func moveStrayChildrenBack(_ sql: BatchStatements, batchNumber: inout Int, totals: inout Counts) throws -> Counts {
        guard try recordedMovesAhead(sql) != nil else { return Counts() }
        let refs = sql.aheadRefs.enumerated().compactMap { index, ref in ref.map { (path: index, ref: $0) } }
        let number = batchNumber
        try db.execute(
            sql: """
                DROP TABLE IF EXISTS temp.winnow_moved_back;
                CREATE TEMP TABLE winnow_moved_back (
                    path INTEGER NOT NULL, child INTEGER NOT NULL, loser INTEGER NOT NULL, winner INTEGER NOT NULL,
                    PRIMARY KEY (path, child)
                ) WITHOUT ROWID;
                DROP TABLE IF EXISTS temp.winnow_moved_groups;
                """)
        defer { try? db.execute(sql: "DROP TABLE IF EXISTS temp.winnow_moved_back; DROP TABLE IF EXISTS temp.winnow_moved_groups") }
        // Which moves may go back is found before the write transaction, in the temporary
        // database: only a stray's still need the rows as they are, inside it (merge-500 at
        // 1,600,000 customers, 194,000 moves recorded: unpacking them, their groups and their
        // children took 2.4-3.4 s, with the lock held; a 1 s limit).
        // The moves recorded for each reference, the last recorded for a child last: each
        // record's row read alone (in a rollback journal a read holds other connections'
        // commits back), then unpacked in one transaction of the temporary database only.
        var records: [(path: Int, moves: Data)] = []
        for (index, ref) in refs {
            var after = Int64.min
            while let row = try Row.fetchOne(
                db, sql: "SELECT rowid, moves FROM main.winnow_moved_ahead WHERE ref = ? AND rowid > ? ORDER BY rowid LIMIT 1",
                arguments: [ref, after])
            {
                after = row[0]
                records.append((index, row[1]))
            }
        }
        try db.inTransaction(.deferred) {
            let unpack = try db.cachedStatement(sql: "INSERT OR REPLACE INTO temp.winnow_moved_back VALUES (?, ?, ?, ?)")
            for record in records {
                guard let moves = MovedAheadRecord.moves([UInt8](record.moves)) else {
                    throw WinnowError.internal("winnow_moved_ahead holds a record that is not one of moves; the run was stopped")
                }
                for move in moves { try unpack.execute(arguments: [record.path, move.child, move.loser, move.winner]) }
            }
            return .commit
        }
        records = []
        // The group of a row: the winner the queue files it under where it is a loser there,
        // else the row itself (a winner, or no longer a duplicate); the moves whose loser is
        // still in its winner's group stay. A queue filed by position is keyed by each loser's
        // rowid; one filed by group by its winner, so the groups of the recorded losers and
        // winners are read from it first, in one pass.
        func group(_ row: String) -> String {
            filesByPosition
                ? "coalesce((SELECT q.winner FROM temp.winnow_queue AS q WHERE q.first = \(row)), \(row))"
                : "coalesce((SELECT g.grp FROM temp.winnow_moved_groups AS g WHERE g.rid = \(row)), \(row))"
        }
        if !filesByPosition {
            try db.execute(
                sql: """
                    CREATE TEMP TABLE winnow_moved_groups (rid INTEGER PRIMARY KEY, grp INTEGER NOT NULL);
                    INSERT OR IGNORE INTO temp.winnow_moved_groups (rid, grp)
                    SELECT q.rid, q.winner FROM temp.winnow_queue AS q
                    WHERE q.rid IN (SELECT loser FROM temp.winnow_moved_back UNION SELECT winner FROM temp.winnow_moved_back)
                    """)
        }
        try db.execute(sql: "DELETE FROM temp.winnow_moved_back WHERE \(group("loser")) IS \(group("winner"))")
        guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM temp.winnow_moved_back)") == true else { return Counts() }
        let work = try writer.transaction(db) { () -> BatchWork in
            try db.cachedStatement(sql: sql.clearMoves).execute()
            // (A dry run's writer takes the batch's rows for deleted ones.)
            try db.execute(sql: "DELETE FROM temp.winnow_batch")
            var work = BatchWork(number: number)
            for (index, _) in refs {
                let path = rule.references[index]
                try db.execute(
                    sql: """
                        INSERT INTO temp.winnow_moves (path, child, winner, loser)
                        SELECT \(index), m.child, m.loser, m.winner FROM temp.winnow_moved_back AS m
                        CROSS JOIN \(rule.qualified(path.childTable)) AS c
                          ON c.\(path.childRowID) = m.child AND c.\(path.childColumns[0].sqlIdentifier) = m.winner
                        WHERE m.path = \(index)
                          AND EXISTS (SELECT 1 FROM \(rule.qualifiedTable) AS p WHERE \(sql.numbers.numbered("m.loser", alias: "p")))
                        """)
                work.moved.append((path: index, count: db.changesCount))
            }
            guard work.counts.repointed > 0 else { return work }
            try writer.apply(work, rule: rule, sql: sql, db: db)
            try writer.recordProgress(totals + work.counts, db: db)
            return work
        }
        guard work.counts.repointed > 0 else { return Counts() }
        var counts = work.counts
        counts.batches = 1
        totals = totals + counts
        batchNumber += 1
        return counts
    }

    /// Empties the record of the children this rule's stretches re-pointed ahead, once its
    /// losers are gone (where it holds any: every run of such a rule reads whether it does).
    func forgetMovedAhead(_ sql: BatchStatements) throws {
        guard let own = try recordedMovesAhead(sql) else { return }
        try forgetRecord("winnow_moved_ahead", own: own)
    }

    /// This rule's rows of `winnow_moved_ahead` (SQL over it) where the record holds any; nil
    /// where it holds none (every run of a rule whose children may go ahead reads this twice).
    private func recordedMovesAhead(_ sql: BatchStatements) throws -> String? {
        guard let own = sql.movedAheadOwn, try db.tableExists("winnow_moved_ahead") else { return nil }
        return try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM main.winnow_moved_ahead WHERE \(own))") == true ? own : nil
    }
}
