import Foundation
import PostgresNIO
import WinnowCore

/// The decided batch (``FoundGroups/decided``) and the progress part the one-trip statements share.
extension PostgresBatch {
    /// The decided batch's statement, and the same with the run's progress row (updated only
    /// when the batch applied), for discovery's table `table`. `$1`, `$2`: the group range;
    /// `$3`: the batch number; `$4` ... `$11`: the run's counts before the batch.
    func decidedStatements(table: String) -> (String, String?) {
        // Locked in tuple id order, as the fused batch locks them; a member is unchanged
        // when its tuple id still holds its key at the `xmin` discovery read. Once all
        // are (and locked, none can change), discovery's ranking is the ranking now.
        let key = dedupe.primaryKey
        let same = (["l.winnow_tid = m.winnow_tid", "l.winnow_x = m.winnow_x"] + key.indices.map { "l.k\($0) = m.k\($0)" })
            .joined(separator: " AND ")
        let groups = groupsSQL(batch: "$3::int8").map { insert in
            """
            ,
            g AS (\(insert) SELECT \(Self.keyArray(key.indices.map { "m.winnow_w\($0)" })) AS winner, \(Self.keyArray(key.indices.map { "m.k\($0)" })) AS loser
                FROM m WHERE m.winnow_rn > 1 AND (SELECT ok.v FROM ok)) AS p)
            """
        }
        let journal = journalSQL("delete", table: rule.table, keys: key, from: "FROM c", batch: "$3::int8").map {
            ",\nj AS (\($0))" + (groups ?? "")
        }
        // The losers by tuple id; a table with partitions or inheriting tables repeats
        // tuple ids across them, so there each is deleted only with its key.
        let keyed =
            found.branches
            ? """

                AND (\((["t.ctid"] + key.map { "t.\($0.sqlIdentifier)" }).joined(separator: ", "))) IN (
                  SELECT m.winnow_tid, \(key.indices.map { "m.k\($0)" }.joined(separator: ", ")) FROM m WHERE m.winnow_rn > 1)
            """ : ""
        // `ok` in the delete's condition also orders the statement: the members are locked
        // and compared before any row is deleted.
        func decided(progress: String?) -> String {
            """
            WITH m AS MATERIALIZED (SELECT * FROM \(table) WHERE winnow_g >= $1 AND winnow_g < $2),
            l AS MATERIALIZED (
                SELECT t.ctid AS winnow_tid, t.xmin AS winnow_x, \(key.enumerated().map { "t.\($1.sqlIdentifier) AS k\($0)" }.joined(separator: ", "))
                FROM \(dedupe.table) AS t WHERE t.ctid = ANY(ARRAY(SELECT m.winnow_tid FROM m)) FOR UPDATE OF t),
            ok AS MATERIALIZED (SELECT count(*) = (SELECT count(*) FROM m) AS v FROM l JOIN m ON \(same)),
            c AS (DELETE FROM \(dedupe.table) AS t
                WHERE (SELECT ok.v FROM ok) AND t.ctid = ANY(ARRAY(SELECT m.winnow_tid FROM m WHERE m.winnow_rn > 1))\(keyed)
                RETURNING \(journal == nil ? "1" : "t.*"))\(journal ?? "")\(progress.map { ",\n\($0)" } ?? "")
            SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM m WHERE m.winnow_rn = 2), (SELECT count(*) FROM m),
                   (SELECT ok.v FROM ok)::int
            """
        }
        let progress = progressSQL(groups: "SELECT count(*) FROM m WHERE m.winnow_rn = 2", when: " AND (SELECT ok.v FROM ok)")
        return (decided(progress: nil), progress.map { decided(progress: $0) })
    }

    /// The one-trip statement's part that updates the run's progress row as the batch's counts
    /// leave it (`groups`: the query of the groups that still had a loser; `when`: a condition on
    /// applying); nil without a run. `$4` ... `$11`: the run's counts before the batch.
    func progressSQL(groups: String, when: String = "") -> String? {
        dedupe.runID.map { runID in
            """
            p AS (UPDATE \(dialect.bookkeeping("winnow_runs")) SET
                groups = $4 + (\(groups)), deleted = $5 + (SELECT count(*) FROM c),
                updated = $6, repointed = $7, children_deleted = $8, hashed = $9,
                skipped = $10 + greatest(0, (SELECT count(*) FROM m) - ($2 - $1) - (SELECT count(*) FROM c)),
                batches = $11 + 1
                WHERE id = \(runID)\(when))
            """
        }
    }
}
