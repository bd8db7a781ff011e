import Foundation
import WinnowCore
import GRDB
import GRDBSQLite
import Crypto

/// Runs one compiled rule against one connection: discovery into a temporary table, guards,
/// then batches. The same code serves `run` and `plan`; only the ``BatchWriter`` differs.
struct DedupeExecutor {
    let db: Database
    let rule: CompiledRule
    let writer: BatchWriter
    let settings: BatchSettings
    /// How many groups to keep as samples (plan output); 0 for none.
    var sampleLimit = 0
    /// For an incremental run: SQL that limits the rule to rows sharing a key with a changed row.
    var scope: String?
    /// For an incremental run: the last change id it covers (hashes are stored for those rows only).
    var changesUpTo: Int64?
    /// `--max-duration`: no batch starts once it has passed.
    var deadline = RunDeadline(at: nil)
    var onEvent: (RunEvent) -> Void = { _ in }
    /// What the batches found worth telling (``RuleExecution/runWarnings``).
    let notes = RuleNotes()

    static func prepareTemporaryTables(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TEMP TABLE IF NOT EXISTS winnow_batch (
                    rid INTEGER PRIMARY KEY, winner INTEGER NOT NULL, rn INTEGER NOT NULL, tied INTEGER NOT NULL
                );
                CREATE TEMP TABLE IF NOT EXISTS winnow_ranks (rid INTEGER PRIMARY KEY, cand INTEGER NOT NULL, pos INTEGER NOT NULL);
                CREATE TEMP TABLE IF NOT EXISTS winnow_swaps (cand INTEGER PRIMARY KEY, actual INTEGER NOT NULL UNIQUE);
                CREATE TEMP TABLE IF NOT EXISTS winnow_moves (
                    path INTEGER NOT NULL, child INTEGER NOT NULL, winner INTEGER NOT NULL, loser INTEGER, PRIMARY KEY (path, child)
                ) WITHOUT ROWID;
                CREATE TEMP TABLE IF NOT EXISTS winnow_refs (
                    path INTEGER NOT NULL, rid INTEGER NOT NULL, child INTEGER NOT NULL, PRIMARY KEY (path, rid, child)
                ) WITHOUT ROWID;
                CREATE TEMP TABLE IF NOT EXISTS winnow_mapped (rid INTEGER PRIMARY KEY, winner INTEGER);
                CREATE TEMP TABLE IF NOT EXISTS winnow_ahead (
                    path INTEGER NOT NULL, child INTEGER NOT NULL, winner INTEGER NOT NULL, loser INTEGER NOT NULL, PRIMARY KEY (path, child)
                ) WITHOUT ROWID;
                CREATE TEMP TABLE IF NOT EXISTS winnow_queue (
                    first INTEGER NOT NULL, winner INTEGER NOT NULL, rn INTEGER NOT NULL, rid INTEGER NOT NULL, tied INTEGER NOT NULL,
                    PRIMARY KEY (first, winner, rn)
                ) WITHOUT ROWID;
                CREATE TEMP TABLE IF NOT EXISTS winnow_found (version INTEGER, tied_rows INTEGER, tied_groups INTEGER, schema INTEGER);
                CREATE TEMP TABLE IF NOT EXISTS winnow_sampled (id INTEGER PRIMARY KEY);
                """)
        // The temporary database lives in a file that only this connection opens and that is
        // deleted when it closes: zeroing its freed pages (`secure_delete`, on by default in
        // some builds of SQLite) protects nothing and writes every page the queue frees again.
        try db.execute(sql: "PRAGMA temp.secure_delete = OFF")
    }

    /// Whether the rule's batches are stretches of the table rather than whole groups: a rule
    /// that only deletes (no merge, no re-pointing) can delete any loser of a group apart from
    /// the others, once its group's winner is settled (``DedupeExecutor/settleTiesAhead(_:)``).
    /// A rule that merges files by position too when its merges go ahead of the deletions
    /// (``mergesAhead``), and one that re-points when no child can collide on a unique key (a
    /// collision is decided among the children of a whole group).
    var filesByPosition: Bool {
        (rule.mergeColumns.isEmpty || mergesAhead) && referencesByPosition
    }

    /// Whether the rule's batches stay stretches of the table after another connection's
    /// commit: a rule filed by position that only deletes. Each batch then looks its losers up
    /// as they are (``BatchStatements/fillBatchRevalidated``: still sharing the key of their
    /// winner) and ranks each of its groups, its losers there with their winner, by the full
    /// winner order; where a loser now comes first it becomes the winner, the former winner
    /// goes with the batch, and the group's losers in later stretches are filed under the new
    /// winner (``BatchStatements/refileSwapped``). A loser is deleted only where a row of its
    /// group that stays comes before it as the rows are then, so the survivor is the first of
    /// the group as a batch by group would find it. Filed by group again instead, every batch
    /// would delete losers all over the table, and rewrite most of its pages at each commit
    /// (lower-500 at 1,600,000 customers beside a writer committing every 2 s: 68.6 s and
    /// 31.6 GB written against 5.5 s and 0.57 GB without it). A rule that merges settles whole
    /// groups: its merge reads all of a group's rows at once.
    var staysByPosition: Bool {
        filesByPosition && rule.mergeColumns.isEmpty
    }

    /// Whether no reference needs the children of a whole group at once (a re-pointed child
    /// that may collide on a unique key is decided among them).
    var referencesByPosition: Bool {
        rule.references.isEmpty || rule.rule.references == .restrict || rule.references.allSatisfy { $0.uniqueKeys.isEmpty }
    }

    /// Whether the rule's merges are applied ahead of its deletions, in the order of the
    /// winners' rowids (``MergeAheadBatches``): when it writes, its table keeps its rowids
    /// through a `VACUUM` (``rowidsSurviveVacuum``: the record of the losers a merge took names
    /// them until the next run), the run has no deadline (a run that stopped early would leave
    /// winners merged before their losers are gone until the next run), and its losers are filed
    /// by position (so every group's winner is settled before the merges are decided:
    /// ``DedupeExecutor/settleTiesAhead(_:state:)``).
    var mergesAhead: Bool {
        !rule.mergeColumns.isEmpty && writer.writes && rowidsSurviveVacuum && deadline.at == nil && deadline.stop == nil
            && referencesByPosition
    }

    /// Whether `VACUUM` keeps the rowids of the rule's table: an `INTEGER PRIMARY KEY` holds
    /// them, or the table has an index (a primary key of another type has one): SQLite then
    /// copies every row with its rowid, and numbers afresh only the rows of a table with
    /// neither. A `WITHOUT ROWID` table has none to keep.
    var rowidsSurviveVacuum: Bool {
        switch rule.identity {
        case .primaryKey: return false
        case .rowid(_, _?): return true
        case .rowid(_, nil): return rule.tableHasIndex
        }
    }

    /// Whether the discovery can leave the keys that occur once out of its window by a grouped
    /// count first: the key is plain columns (normalised or hashed keys would be computed twice
    /// for every row, which costs more than the window saves), and a NULL key part, which cannot
    /// pass IN, is never a duplicate (`nulls: distinct`). Only discovery by the window counts
    /// first: the sorted read costs about what the count itself does.
    var countsKeysFirst: Bool {
        scope == nil && rule.rule.nulls == .distinct && !rule.rule.hash && rule.components == nil
            && rule.keyColumns.allSatisfy { rule.normalizers[$0, default: []].isEmpty }
    }

    /// The grouped count of ``countsKeysFirst``: every key that occurs more than once, with its
    /// rows (`n`), into `temp.winnow_dupkeys`.
    /// `source`: where the rows are read (the rule's table, or discovery's copy of it).
    func duplicateKeysSQL(from source: String? = nil) -> String {
        let groups = rule.groupExpressions()
        return """
            DROP TABLE IF EXISTS temp.winnow_dupkeys;
            CREATE TEMP TABLE winnow_dupkeys AS
            SELECT \(groups.enumerated().map { "\($1) AS k\($0)" }.joined(separator: ", ")), count(*) AS n
            FROM \(source ?? rule.qualifiedTable) WHERE \(rule.candidateFilter()) GROUP BY \(groups.joined(separator: ", ")) HAVING count(*) > 1;
            """
    }

    /// Tables of at least this many rows estimate their share of rows in groups before the
    /// grouped count (below it the count costs little).
    static var estimateFromRows = 50_000
    /// One key in this many is sampled by the estimate.
    static let sampledKeys = 16

    /// The estimate of ``countsKeysFirst``'s share: the rows of the keys whose
    /// `winnow_bucket` falls in one bucket of ``sampledKeys`` (every row of a sampled key is in
    /// the sample, so the share of its rows that are in groups estimates the table's without
    /// the bias of a sample of rows), and how many of them are in groups. One scan, and a sort
    /// of a sixteenth of the rows.
    func duplicateShareSQL(from source: String? = nil) -> String {
        let groups = rule.groupExpressions()
        return """
            SELECT coalesce(sum(n), 0), coalesce(sum(n) FILTER (WHERE n > 1), 0) FROM (
                SELECT count(*) AS n FROM \(source ?? rule.qualifiedTable)
                WHERE \(rule.candidateFilter()) AND winnow_bucket(\(groups.joined(separator: ", "))) % \(Self.sampledKeys) = 0
                GROUP BY \(groups.joined(separator: ", ")))
            """
    }

    /// Whether a sample (``duplicateShareSQL(from:)``) shows clearly more rows in groups than the
    /// grouped count's filter pays for (a third): then the count is skipped. Near the line the
    /// count decides, exactly, as it does without an estimate.
    static func skipsGroupedCount(sampledRows: Int, sampledInGroups: Int) -> Bool {
        sampledRows > 0 && sampledInGroups * 5 > sampledRows * 2
    }

    /// The window query that groups the candidate rows by key and ranks them by the rule's own
    /// winner terms, where only SQLite's comparison tells the groups apart (``sortedComparisons()``;
    /// elsewhere ``discoverSorted(_:duplicateKeys:pinsTaken:from:)`` fills the same queue). Sorting
    /// by the full order (every content column) would make the sort carry whole rows; instead a
    /// loser that ties the row before it on the winner terms is flagged `tied`, and such groups
    /// get their winner and their losers' order from the full order when their batch is read.
    /// (Any row that ties the group's first row is flagged so, also when a row between them has
    /// changed since: the rows are sorted, so every row from the first to it ties its
    /// predecessor. Testing the first row as well took a second window function per row: 10% of
    /// this query at 200,000 rows.)
    /// `duplicateKeys`: the window takes only the rows whose key
    /// `temp.winnow_dupkeys` holds (filled by ``duplicateKeysSQL(from:)``).
    /// `pinsTaken`: the winner of losers a merge already took stays first in its group
    /// (``BatchStatements/takenPin(_:alias:)``). `source`: where the rows are read (the rule's
    /// table, or discovery's copy of it: ``copyForDiscovery(rows:)``).
    func discoverySQL(duplicateKeys: Bool, pinsTaken: Bool = false, from source: String? = nil) -> String {
        let read = discoveryRead(duplicateKeys: duplicateKeys, pinsTaken: pinsTaken, from: source)
        let order = read.order.isEmpty ? "" : " ORDER BY \(read.order.joined(separator: ", "))"
        // Each loser is filed under a rowid (`first`), and batches take the queue in that order,
        // so that the rows a batch writes lie together. A rule that writes at the winner (merged
        // values into its row, re-pointed children into the child index at its key) files every
        // loser of a group under the winner: a group is settled in one batch. A rule that only
        // deletes files each loser under its own rowid (``filesByPosition``): a batch is a
        // stretch of the table, and over the run every page is rewritten about once, whatever
        // the size of the groups and wherever their rows lie.
        let first = filesByPosition ? "winnow_r" : "winnow_w"
        let numbers = RowNumbers(rule)
        return """
            INSERT INTO temp.winnow_queue (first, winner, rn, rid, tied)
            SELECT \(first), winnow_w, winnow_n, winnow_r, winnow_p FROM (
                SELECT \(numbers.number(of: nil)) AS winnow_r,
                       row_number() OVER winnow_window AS winnow_n,
                       first_value(\(numbers.number(of: nil))) OVER winnow_window AS winnow_w,
                       (\(rule.tiedWithPrevious(window: "winnow_window"))) AS winnow_p
                FROM \(read.from)
                WHERE \(read.filter)
                WINDOW winnow_window AS (PARTITION BY \(read.partition.joined(separator: ", "))\(order)
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
            ) WHERE winnow_n > 1
            ORDER BY 1, 2, 3
            """
    }

    /// What discovery reads, however it numbers the groups (``discoverySQL`` with a window,
    /// ``discoverSorted(_:)`` over one sorted read): the rows (`from`, with an `any:` rule's join
    /// to its groups), which of them (`filter`: the candidates, and with `duplicateKeys` only
    /// the keys `temp.winnow_dupkeys` holds), what a group is (`partition`, in the order the
    /// rows are sorted) and the winner terms within a group (`order`: with `pinsTaken`, the
    /// winner of losers a merge already took first, ``BatchStatements/takenPin(_:alias:)``).
    func discoveryRead(
        duplicateKeys: Bool, pinsTaken: Bool, from source: String?
    ) -> (
        from: String, filter: String, partition: [String], order: [String]
    ) {
        var order: [String] = pinsTaken ? [BatchStatements.takenPin(rule, alias: nil)] : []
        if let winner = rule.winnerOrderBy() { order.append(winner) }
        var duplicatesOnly = ""
        if let scope {
            duplicatesOnly = " AND \(scope)"
        } else if duplicateKeys {
            // The comparison takes each key column's own collation (the left operand's), as
            // the grouped count did.
            let groups = rule.groupExpressions()
            let tuple = groups.count == 1 ? groups[0] : "(\(groups.joined(separator: ", ")))"
            duplicatesOnly = " AND \(tuple) IN (SELECT \(groups.indices.map { "k\($0)" }.joined(separator: ", ")) FROM temp.winnow_dupkeys)"
        }
        var partition = rule.groupExpressions()
        var from = source ?? rule.qualifiedTable
        var candidates = rule.candidateFilter()
        // An `any:` rule's groups are read by a join to their scratch table, once per row.
        if let components = rule.componentJoin() {
            from += " " + components.join
            partition = [components.group]
            candidates = "1"
        }
        return (from, candidates + duplicatesOnly, partition, order)
    }
}

/// Kept by reference, so that the executor's non-mutating batches can add to it.
final class RuleNotes {
    var warnings: [String] = []
}

extension DedupeExecutor: RuleExecution {
    var runWarnings: [String] { notes.warnings }

    func prepare() throws { try writer.prepare(rule, db: db) }

    func deletionDigest() throws -> String? {
        guard !writer.writes else { return nil }
        // Streamed: the rowids of the rows the dry run would have deleted, 8 bytes each, in order;
        // for a table without rowids, their primary keys, packed, in key order.
        try DryRunWriter.collectDeleted(db)
        var hasher = SHA256()
        let numbers = RowNumbers(rule)
        if numbers.mapped {
            let keys = try Data.fetchCursor(
                db, sql: "SELECT \(numbers.journalKey(numbered: "rid")) FROM temp.winnow_dry_deleted ORDER BY rid")
            while let key = try keys.next() { hasher.update(data: key) }
        } else {
            let rows = try Int64.fetchCursor(db, sql: "SELECT rid FROM temp.winnow_dry_deleted ORDER BY rid")
            while let rid = try rows.next() {
                withUnsafeBytes(of: rid.bigEndian) { hasher.update(bufferPointer: $0) }
            }
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
