import Foundation
import PostgresNIO
import WinnowCore

/// The decided batch (``FoundGroups/decided``) and the progress part the one-trip statements share.
extension PostgresBatch {
    /// A decided batch whose groups changed only here and there applies its decision to the
    /// others and leaves the changed ones (and those whose first two rows tie on the winner
    /// terms) to the fused statement (``leftSQL``): when at most one group in this many
    /// changed. Beside a writer updating rows all over the table a batch then ranks the few
    /// changed groups again instead of all of them (ranking a whole batch again costs about as
    /// much as applying it).
    static let partialShare = 4

    /// The groups a decided batch's row (``decidedStatements(table:)``) left to be ranked
    /// again: their numbers (the server's, from 1).
    static func leftGroups(_ row: [SQLValue]) -> [Int64] {
        guard row.count > 4, let text = row[4].string else { return [] }
        return text.split(separator: ",").compactMap { Int64($0) }
    }

    /// A decided batch's counts, and the groups it left (``leftGroups(_:)``): `range`, the
    /// batch's groups. The fused statement's row for the groups left adds to them
    /// (``PostgresBatchWork/add(left:row:)``).
    static func decidedCounts(_ row: [SQLValue], groups range: Range<Int>) -> (Counts, left: [Int64]) {
        let left = leftGroups(row)
        return (fusedCounts(row, groups: range.count - left.count), left)
    }

    /// The decided batch's statement, and the same with the run's progress row (updated only
    /// when the batch applied), for discovery's table `table`. `$1`, `$2`: the group range;
    /// `$3`: the batch number; `$4` ... `$11`: the run's counts before the batch.
    ///
    /// Its one row: the losers deleted, the groups and the members it applied, whether it
    /// applied (1) or not (0), and the numbers of the groups it left to be ranked again (comma
    /// separated; see ``partialShare``).
    func decidedStatements(table: String) -> (String, String?) {
        // Locked in tuple id order, as the fused batch locks them; a member is unchanged
        // when its tuple id still holds its key at the `xmin` discovery read. A group whose
        // members all are (and locked, none can change) ranks now as discovery ranked it,
        // unless its first two rows tie on the winner terms (discovery ranked by those alone).
        let key = dedupe.primaryKey
        let same = (["l.winnow_tid = m.winnow_tid", "l.winnow_x = m.winnow_x"] + key.indices.map { "l.k\($0) = m.k\($0)" })
            .joined(separator: " AND ")
        let journal: String?
        if let typed {
            // Each loser's winner comes back from the delete, beside the row (below).
            journal = ",\nj AS (\(typedSQL(typed, batch: "$3::int8", winners: key.indices.map { "c.winnow_wk\($0)" }, from: "FROM c")))"
        } else {
            let groups = groupsSQL(batch: "$3::int8").map { insert in
                """
                ,
                g AS (\(insert) SELECT \(Self.keyArray(key.indices.map { "m.winnow_w\($0)" })) AS winner, \(Self.keyArray(key.indices.map { "m.k\($0)" })) AS loser
                    FROM a AS m WHERE m.winnow_rn > 1) AS p)
                """
            }
            journal = journalSQL("delete", table: rule.table, keys: key, from: "FROM c", batch: "$3::int8").map {
                ",\nj AS (\($0))" + (groups ?? "")
            }
        }
        // The losers by tuple id; a table with partitions or inheriting tables repeats
        // tuple ids across them, so there each is deleted only with its key.
        let keyed =
            found.branches
            ? """

                AND (\((["t.ctid"] + key.map { "t.\($0.sqlIdentifier)" }).joined(separator: ", "))) IN (
                  SELECT a.winnow_tid, \(key.indices.map { "a.k\($0)" }.joined(separator: ", ")) FROM a WHERE a.winnow_rn > 1)
            """ : ""
        // The typed journal takes each loser's winner from the decision: the losers are
        // joined to the delete by tuple id and key (a join on a loser's key afterwards, against
        // `a`, evaluated `a` once per deleted row).
        let delete: String
        if typed != nil {
            let losers = (["a.winnow_tid"] + key.indices.flatMap { ["a.k\($0)", "a.winnow_w\($0)"] }).joined(separator: ", ")
            delete = """
                DELETE FROM \(dedupe.table) AS t USING (SELECT \(losers) FROM a WHERE a.winnow_rn > 1) AS x
                WHERE t.ctid = x.winnow_tid AND \(key.enumerated().map { "t.\($1.sqlIdentifier) = x.k\($0)" }.joined(separator: " AND "))
                RETURNING t.*, \(key.indices.map { "x.winnow_w\($0) AS winnow_wk\($0)" }.joined(separator: ", "))
                """
        } else {
            delete = """
                DELETE FROM \(dedupe.table) AS t
                WHERE t.ctid = ANY(ARRAY(SELECT a.winnow_tid FROM a WHERE a.winnow_rn > 1))\(keyed)
                RETURNING \(journal == nil ? "1" : "t.*")
                """
        }
        // `bad`: the groups with a changed member (`changed`) or whose first two rows tie; `a`:
        // the members of the others, when the batch applies (`ok`: no group changed, or a few
        // beside many that did not; tied groups, however many, are known since discovery and
        // cost the fused statement only their own rows). The delete reads `a`, so the members
        // are locked and compared before any row is deleted.
        func decided(progress: String?) -> String {
            """
            WITH m AS MATERIALIZED (SELECT * FROM \(table) WHERE winnow_g >= $1 AND winnow_g < $2),
            l AS MATERIALIZED (
                SELECT t.ctid AS winnow_tid, t.xmin AS winnow_x, \(key.enumerated().map { "t.\($1.sqlIdentifier) AS k\($0)" }.joined(separator: ", "))
                FROM \(dedupe.table) AS t WHERE t.ctid = ANY(ARRAY(SELECT m.winnow_tid FROM m)) FOR UPDATE OF t),
            changed AS MATERIALIZED (SELECT DISTINCT m.winnow_g FROM m WHERE NOT EXISTS (SELECT 1 FROM l WHERE \(same))),
            bad AS MATERIALIZED (
                SELECT changed.winnow_g FROM changed UNION SELECT m.winnow_g FROM m WHERE m.winnow_rn = 2 AND m.winnow_t),
            ok AS MATERIALIZED (
                SELECT (SELECT count(*) FROM bad) AS n, (SELECT count(*) FROM changed) * \(Self.partialShare) <= $2 - $1 AS v),
            a AS NOT MATERIALIZED (
                SELECT m.* FROM m WHERE (SELECT ok.v FROM ok)
                  AND ((SELECT ok.n FROM ok) = 0 OR NOT EXISTS (SELECT 1 FROM bad WHERE bad.winnow_g = m.winnow_g))),
            n AS MATERIALIZED (SELECT count(*) AS members, count(*) FILTER (WHERE a.winnow_rn = 2) AS groups FROM a),
            c AS (\(delete))\(journal ?? "")\(progress.map { ",\n\($0)" } ?? "")
            SELECT (SELECT count(*) FROM c), n.groups, n.members, ok.v::int,
                   array_to_string(ARRAY(SELECT bad.winnow_g FROM bad ORDER BY 1), ',')
            FROM n, ok
            """
        }
        let progress = progressSQL(
            groups: "SELECT n.groups FROM n", members: "SELECT n.members FROM n", ranges: "$2 - $1 - (SELECT ok.n FROM ok)",
            when: " AND (SELECT ok.v FROM ok)")
        return (decided(progress: nil), progress.map { decided(progress: $0) })
    }

    /// The text a trusted batch (``trustedStatement(table:)``) fails with where a row it
    /// locked or deleted is not the row version discovery ranked: the value of a cast that
    /// fails, so the server rolls the statement back (SQLSTATE 22P02, the text quoted in the
    /// message in every language the server speaks).
    static let changedSinceDiscovery = "winnow: changed since discovery"

    /// Whether `error` is a trusted batch's failure for a row changed since discovery.
    static func isChangedSinceDiscovery(_ error: PSQLError) -> Bool {
        error.serverInfo?[.sqlState] == "22P02" && (error.serverInfo?[.message] ?? "").contains(changedSinceDiscovery)
    }

    /// The trusted batch, with the run's progress row, for discovery's table `table`: the
    /// decided batch (``decidedStatements(table:)``) that checks the decision after applying it
    /// instead of before. It locks only each group's winner, deletes the losers by the tuple
    /// ids discovery read, and compares what it locked and what the delete returned with the
    /// row versions discovery ranked (tuple id, `xmin`, key). If anything differs (a member
    /// changed, moved or deleted by another session, or a tuple id another row took after a
    /// vacuum) the statement fails with ``changedSinceDiscovery`` and the server rolls all of
    /// it back: the batch then takes the decided statement, which ranks the changed groups
    /// again. Locking the losers before deleting them wrote each loser twice; dup67's batches
    /// of 5,000 groups took 42 ms that way, 32 ms this way (psql, docs/performance.md).
    ///
    /// Groups whose first two rows tie on the winner terms are left, as the decided batch
    /// leaves them; its row has the decided batch's columns. The typed journal's rows are
    /// written in the same statement, and rolled back with it. Nil with the `jsonb` journal
    /// (its images are whole returned rows, which here carry the comparison's columns too),
    /// for a table with partitions or inheriting tables (tuple ids repeat across them), and
    /// without a run.
    func trustedStatement(table: String) -> String? {
        guard !archive || typed != nil, !found.branches else { return nil }
        let key = dedupe.primaryKey
        let same = (["l.winnow_tid = m.winnow_tid", "l.winnow_x = m.winnow_x"] + key.indices.map { "l.k\($0) = m.k\($0)" })
            .joined(separator: " AND ")
        let columns = (["t.ctid AS winnow_tid", "t.xmin AS winnow_x"] + key.enumerated().map { "t.\($1.sqlIdentifier) AS k\($0)" })
            .joined(separator: ", ")
        // With the typed journal the delete returns whole rows, and each loser's winner comes
        // from discovery's row of it (by tuple id). Rolled back with the rest where the
        // comparison fails.
        var returned = columns
        var deleted = "SELECT * FROM c"
        var journal = ""
        if let typed {
            returned = "t.*, t.ctid AS winnow_tid, t.xmin AS winnow_x"
            deleted = "SELECT c.winnow_tid, c.winnow_x, \(key.map { "c.\($0.sqlIdentifier)" }.joined(separator: ", ")) FROM c"
            let winners = key.indices.map { "wa.winnow_w\($0)" }
            journal = """
                ,
                j AS (\(typedSQL(typed, batch: "$3::int8", winners: winners, from: "FROM c JOIN a AS wa ON wa.winnow_tid = c.winnow_tid")))
                """
        }
        // Every loser deleted is one member compared, so where nothing differs the losers
        // deleted are the members less the groups (`c` is not counted again).
        let progress = progressSQL(
            groups: "SELECT n.groups FROM n", members: "SELECT n.members FROM n", ranges: "$2 - $1 - (SELECT nb.n FROM nb)",
            deleted: "SELECT n.members - n.groups FROM n")
        return progress.map { progress in
            """
            WITH m AS MATERIALIZED (SELECT * FROM \(table) WHERE winnow_g >= $1 AND winnow_g < $2),
            bad AS MATERIALIZED (SELECT m.winnow_g FROM m WHERE m.winnow_rn = 2 AND m.winnow_t),
            nb AS MATERIALIZED (SELECT count(*) AS n FROM bad),
            a AS NOT MATERIALIZED (
                SELECT m.* FROM m WHERE (SELECT nb.n FROM nb) = 0 OR NOT EXISTS (SELECT 1 FROM bad WHERE bad.winnow_g = m.winnow_g)),
            w AS MATERIALIZED (
                SELECT \(columns) FROM \(dedupe.table) AS t
                WHERE t.ctid = ANY(ARRAY(SELECT a.winnow_tid FROM a WHERE a.winnow_rn = 1)) FOR UPDATE OF t),
            c AS (DELETE FROM \(dedupe.table) AS t
                WHERE t.ctid = ANY(ARRAY(SELECT a.winnow_tid FROM a WHERE a.winnow_rn > 1)) AND (SELECT count(*) FROM w) >= 0
                RETURNING \(returned))\(journal),
            x AS MATERIALIZED (
                SELECT count(*) AS n FROM a AS m WHERE NOT EXISTS (SELECT 1 FROM (SELECT * FROM w UNION ALL \(deleted)) AS l WHERE \(same))),
            n AS MATERIALIZED (SELECT count(*) AS members, count(*) FILTER (WHERE a.winnow_rn = 2) AS groups FROM a),
            \(progress)
            SELECT CASE WHEN x.n = 0 THEN n.members - n.groups ELSE ('\(Self.changedSinceDiscovery): ' || x.n)::int8 END,
                   n.groups, n.members, 1, array_to_string(ARRAY(SELECT bad.winnow_g FROM bad ORDER BY 1), ',')
            FROM x, n
            """
        }
    }

    /// The one-trip statement's part that updates the run's progress row as the batch's counts
    /// leave it (`groups`: the query of the groups that still had a loser; `when`: a condition on
    /// applying); nil without a run. `$4` ... `$11`: the run's counts before the batch.
    /// `members`: the query of how many members the batch has, `ranges`: how many groups they
    /// make, `deleted`: how many losers it deleted.
    func progressSQL(
        groups: String, members: String = "SELECT count(*) FROM m", ranges: String = "$2 - $1", when: String = "",
        deleted: String = "SELECT count(*) FROM c"
    ) -> String? {
        dedupe.runID.map { runID in
            """
            p AS (UPDATE \(dialect.bookkeeping("winnow_runs")) SET
                groups = $4 + (\(groups)), deleted = $5 + (\(deleted)),
                updated = $6, repointed = $7, children_deleted = $8, hashed = $9,
                skipped = $10 + greatest(0, (\(members)) - (\(ranges)) - (\(deleted))),
                batches = $11 + 1
                WHERE id = \(runID)\(when))
            """
        }
    }
}

extension PostgresBatchWork {
    /// Counts the fused statement's row for the `left` groups a decided batch left, as part of
    /// the same batch.
    mutating func add(left: Int, row: [SQLValue]) {
        var more = PostgresBatch.fusedCounts(row, groups: left)
        more.batches = 0
        counts = counts + more
        self.left = left
    }
}
