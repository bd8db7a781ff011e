import Foundation
import PostgresNIO
import WinnowCore

/// What one batch did (or, for `plan`, would do).
struct PostgresBatchWork {
    var counts = Counts()
    var samples: [GroupSample] = []
    /// The decided batch's outcome: true, it applied; false, a member had changed since
    /// discovery and the batch ranked its groups again; nil, it was not tried.
    var decided: Bool?
    /// The groups a decided batch that applied left to the fused statement (``PostgresBatch/leftSQL``).
    var left = 0
    /// Whether a trusted batch (``PostgresBatch/trustedOneTripSQL``) was tried and found a row
    /// changed since discovery (the decided batch then took its groups).
    var trustMissed = false
}

/// The batches of one rule (see ``PostgresDedupe``): its SQL spelled once, journal shapes
/// registered once.
struct PostgresBatch {
    let dedupe: PostgresDedupe
    var rule: CompiledRule { dedupe.rule }
    var session: PostgresSession { dedupe.session }
    var link: PostgresLink { session.link }
    var dialect: PostgresDialect { session.postgresDialect }
    let width: Int
    /// Journal shape ids by table (archive only).
    var shapes: [String: Int64] = [:]
    /// The journal of the losers the batches delete, in their table's own column
    /// types (archive only, where it can be kept); nil: the `jsonb` journal keeps them.
    private(set) var typed: PostgresTypedJournal?
    /// Primary keys and column types of the child tables.
    var childKeys: [String: [String]] = [:]
    var childTypes: [String: [String: String]] = [:]
    let rankSQL: String
    /// The whole batch in one statement (lock, rank, journal and delete the losers, count),
    /// for a rule with nothing to do between ranking and deleting: no merges, no references,
    /// groups kept on the server. Nil otherwise.
    private(set) var fusedSQL: String?
    /// The fused batch and the run's progress row as one prepared statement (``prepareOneTrip()``):
    /// a batch is one `EXECUTE` outside any transaction block, so the server runs it as its own
    /// transaction, and the client waits for one answer instead of five (begin, timeouts, batch,
    /// progress, commit), the batch's statement parsed and planned once per rule.
    /// `$1`, `$2`: the group range; `$3`: the batch number; `$4` ... `$11`: the run's counts
    /// before the batch (``Counts/columns``). Nil where there is no fused batch or no run.
    private(set) var oneTripSQL: String?
    /// The name the one-trip statement is prepared under (unique in the session).
    let oneTripName: String
    /// The decided batch (``FoundGroups/decided``): the batch's members locked by tuple id, and
    /// the losers discovery chose deleted (with their journal) in every group whose members all
    /// still hold the row versions discovery ranked and whose first two rows do not tie on the
    /// winner terms; the other groups are left to ``leftSQL``. Where more than a quarter of the
    /// groups changed it does nothing (``partialShare``) and the fused batch ranks them all as
    /// they are now. Returns the fused batch's three counts (of the groups it applied), whether
    /// it applied (`1` or `0`) and the groups it left. Nil where discovery did not decide.
    private(set) var decidedSQL: String?
    /// The decided batch with the run's progress row (updated only when it applied), prepared
    /// beside the one-trip statement as `<oneTripName>_d`; the same parameters.
    private(set) var decidedOneTripSQL: String?
    /// The trusted batch (``trustedStatement(table:)``), prepared beside the one-trip statement
    /// as `<oneTripName>_t`; the decided batch's parameters and row. Nil where it is not built.
    private(set) var trustedOneTripSQL: String?
    /// The fused batch of the groups a decided batch left (``decidedStatements(table:)``),
    /// without and with the run's progress row: the fused batch's parameters, and `$12` the
    /// groups' numbers (`int8[]`). The second is prepared as `<oneTripName>_l`.
    private(set) var leftSQL: String?
    private(set) var leftOneTripSQL: String?
    let archive: Bool
    /// The rule's merges as the server resolves them.
    let merges: PostgresMerge

    /// The rule's groups (``PostgresDedupe/discover()``).
    let found: FoundGroups

    init(dedupe: PostgresDedupe, found: FoundGroups) throws {
        self.dedupe = dedupe
        Self.prepared += 1
        oneTripName = "winnow_batch_\(Self.prepared)"
        self.found = found
        width = dedupe.primaryKey.count
        archive = dedupe.journals
        let rule = dedupe.rule
        // The catalog is read once per rule, and only for the child tables' keys and types.
        let schema = rule.references.isEmpty ? LiveSchema(tables: []) : try dedupe.session.inspect()
        for path in rule.references {
            guard let child = schema.table(named: path.childTable) else { continue }
            childKeys[path.childTable] = child.primaryKey
            childTypes[path.childTable] = Dictionary(child.columns.map { ($0.name, $0.type) }, uniquingKeysWith: { a, _ in a })
        }
        // The batch's members: from discovery's temporary table by group range (`run`), or
        // from arrays of keys (`plan`).
        let keys = (0..<width).map { "k\($0)" }
        let first = dedupe.primaryKey[0]
        let probe = { (source: String) in "t.\(first.sqlIdentifier) = ANY(ARRAY(SELECT m.k0::\(dedupe.type(first)) FROM \(source) AS m))" }
        let keyJoin = dedupe.keyJoin("t", "m", columns: dedupe.primaryKey)
        let merges = PostgresMerge(rule: rule, type: { dedupe.type($0) })
        self.merges = merges
        let partition = (["t.winnow_group"] + rule.groupTerms(rule.groupExpressions(alias: "t")))
            .joined(separator: ", ")
        let winnerIDs = dedupe.idTexts("t").enumerated().map { "first_value(\($1)) OVER w AS winnow_w\($0)" }.joined(separator: ", ")
        // The batch's rows, locked in one order when writing (tuple id, then key for the rows
        // that moved: concurrent batches never deadlock on them), then ranked again as they are
        // now: one statement. Without merges only the losers come back (their winner's key with
        // them); with merges the winners too.
        let lock =
            dedupe.writes ? " ORDER BY \(dedupe.primaryKey.map { "t.\($0.sqlIdentifier)" }.joined(separator: ", ")) FOR UPDATE OF t" : ""
        // `batch`: the members' rows as they are now (locked when writing), with their group
        // number and tuple id.
        let batchCTEs: String
        // The same rows for the fused batch (below): no group number.
        var fetchedCTEs: String?
        var fetchedLeftCTEs: String?
        if let table = found.table {
            // Discovery's temporary table (only a writing run keeps one), by group range: rows
            // fetched and locked by the tuple id they had then; a row updated since is found again
            // by primary key (a tuple id another row took after a vacuum never matches: the key
            // is compared). `groups`: which groups (a condition on `winnow_g`).
            func fetchCTEs(_ table: String, _ groups: String) -> String {
                """
                m AS MATERIALIZED (
                    SELECT winnow_g AS g, \(keys.joined(separator: ", ")), winnow_tid FROM \(table) WHERE \(groups)),
                by_tid AS MATERIALIZED (
                    SELECT t.*, t.ctid AS winnow_tid FROM \(dedupe.table) AS t
                    WHERE t.ctid = ANY(ARRAY(SELECT m.winnow_tid FROM m)) FOR UPDATE OF t),
                moved AS MATERIALIZED (SELECT m.* FROM m WHERE NOT EXISTS (SELECT 1 FROM by_tid AS t WHERE \(keyJoin))),
                by_key AS MATERIALIZED (
                    SELECT t.*, t.ctid AS winnow_tid FROM moved AS m JOIN \(dedupe.table) AS t ON \(keyJoin)
                    WHERE \(probe("moved"))\(lock))
                """
            }
            let fetch = fetchCTEs(table, "winnow_g >= $1 AND winnow_g < $2")
            batchCTEs =
                fetch + """
                    ,
                    batch AS MATERIALIZED (
                        SELECT t.*, m.g AS winnow_group FROM (SELECT * FROM by_tid UNION ALL SELECT * FROM by_key) AS t JOIN m ON \(keyJoin))
                    """
            // A row found by tuple id is a member when it holds a member's key: every member is
            // found by tuple id or moved, the primary key is unique, so unless the counts say
            // that a tuple id now holds another row (reused after a vacuum, or the same tuple id
            // in another partition) no row is compared.
            let pairs = (["t.winnow_tid"] + dedupe.primaryKey.map { "t.\($0.sqlIdentifier)" }).joined(separator: ", ")
            let memberPairs = (["m.winnow_tid"] + dedupe.primaryKey.enumerated().map { "m.k\($0)::\(dedupe.type($1))" })
                .joined(separator: ", ")
            func fetched(_ groups: String) -> String {
                fetchCTEs(table, groups) + """
                    ,
                    batch AS (
                        SELECT * FROM by_tid AS t
                        WHERE (SELECT count(*) FROM by_tid) + (SELECT count(*) FROM moved) = (SELECT count(*) FROM m)
                           OR (\(pairs)) IN (SELECT \(memberPairs) FROM m)
                        UNION ALL SELECT * FROM by_key)
                    """
            }
            fetchedCTEs = fetched("winnow_g >= $1 AND winnow_g < $2")
            // The groups a decided batch left (``decidedStatements(table:)``): `$12`, their numbers.
            fetchedLeftCTEs = fetched("winnow_g = ANY($12::int8[])")
        } else {
            // `plan`: arrays of keys; the `= ANY` on the first key column lets the planner see a
            // handful of index probes, not a join that a scan of the whole table could serve.
            batchCTEs = """
                m AS MATERIALIZED (
                    SELECT * FROM unnest($1::int8[]\(keys.indices.map { ", $\($0 + 2)::text[]" }.joined())) AS m(g, \(keys.joined(separator: ", ")))),
                batch AS MATERIALIZED (
                    SELECT t.*, m.g AS winnow_group FROM m JOIN \(dedupe.table) AS t ON \(keyJoin)
                    WHERE \(probe("m"))\(lock))
                """
        }
        let wanted = rule.mergeColumns.isEmpty ? "s.winnow_rn > 1" : "(s.winnow_rn > 1 OR s.winnow_next)"
        let ids = dedupe.idTexts("t").enumerated().map { "\($1) AS winnow_i\($0)" }.joined(separator: ", ")
        let order = rule.orderBy(alias: "t")
        // The merges the server resolves are window functions over the same groups (see
        // ``PostgresMerge``); the outer SELECT turns them into exact text and change flags.
        rankSQL = """
            WITH \(batchCTEs)
            SELECT \((0..<width).map { "s.winnow_i\($0)" }.joined(separator: ", ")), s.winnow_group, s.winnow_rn, \
            \((0..<width).map { "s.winnow_w\($0)" }.joined(separator: ", ")), s.winnow_next, s.winnow_members\(merges.outerColumns(alias: "s"))
            FROM (
                SELECT \(ids), t.winnow_group, row_number() OVER w AS winnow_rn, \(winnerIDs), \
            lead(true) OVER w AS winnow_next, (SELECT count(*) FROM m) AS winnow_members\(merges.innerColumns(alias: "t", dialect: dedupe.session.postgresDialect))
                FROM batch AS t
                WHERE \(rule.candidateFilter(alias: "t"))
                WINDOW w AS (PARTITION BY \(partition) ORDER BY \(order))\(merges.windows(alias: "t", partition: partition, order: order, dialect: dedupe.session.postgresDialect))
            ) AS s WHERE \(wanted) ORDER BY s.winnow_group, \((0..<width).map { "s.winnow_w\($0)" }.joined(separator: ", ")), s.winnow_rn
            """
        if archive {
            let shape = try Self.shape(session: dedupe.session, table: rule.table, columns: rule.storedColumns)
            shapes[rule.table] = shape
            for path in rule.references where shapes[path.childTable] == nil {
                shapes[path.childTable] = try Self.shape(session: dedupe.session, table: path.childTable, columns: path.childStoredColumns)
            }
            // The losers in their table's own column types, where it can keep them.
            typed = try PostgresTypedJournal.prepare(
                session: dedupe.session, shape: shape, table: rule.table, source: dedupe.table, columns: rule.storedColumns,
                key: dedupe.primaryKey)
        }
        if let fetchedCTEs, rule.mergeColumns.isEmpty, rule.references.isEmpty {
            // The losers never leave the server: each is deleted by the tuple id it was locked
            // at (it cannot move while locked; the primary key is compared too, so a
            // partitioned table's repeated tuple ids never match another row).
            // Ranked by the key as it is now, without discovery's group number (joining the rows
            // back to it cost about a seventh of a batch): every row deleted still ranks after a
            // locked row with its key, whichever group discovery put either in.
            // With the journal, each loser's winner too (beside it in the typed journal, else in
            // `winnow_run_groups`).
            let typedWinners = (0..<width).map { "winnow_wk\($0)" }
            let winner: String
            if typed != nil {
                winner = zip(dedupe.primaryKey, typedWinners).map { ", first_value(t.\($0.sqlIdentifier)) OVER w AS \($1)" }.joined()
            } else {
                winner =
                    archive
                    ? ", first_value(\(Self.keyArray(dedupe.primaryKey.map { "t.\($0.sqlIdentifier)" }))) OVER w AS winnow_winner" : ""
            }
            let ranked = """
                SELECT t.winnow_tid, \(dedupe.primaryKey.enumerated().map { "t.\($1.sqlIdentifier) AS k\($0)" }.joined(separator: ", ")),
                       row_number() OVER w AS winnow_rn\(winner)
                FROM batch AS t
                WHERE \(rule.candidateFilter(alias: "t"))
                WINDOW w AS (PARTITION BY \(rule.groupTerms(rule.groupExpressions(alias: "t")).joined(separator: ", ")) \
                ORDER BY \(rule.orderBy(alias: "t")))
                """
            // Every ranked row after the first is deleted (`c`: each is locked, at the tuple id
            // it was ranked at), so the losers' winners come from the ranking alone.
            let journal: String?
            if let typed {
                journal = ",\nj AS (\(typedSQL(typed, batch: "$3::int8", winners: typedWinners.map { "c.\($0)" }, from: "FROM c")))"
            } else {
                let groups = groupsSQL(batch: "$3::int8").map { insert in
                    """
                    ,
                    g AS (\(insert) SELECT s.winnow_winner AS winner, \(Self.keyArray(dedupe.primaryKey.indices.map { "s.k\($0)" })) AS loser
                        FROM s WHERE s.winnow_rn > 1) AS p)
                    """
                }
                journal = journalSQL("delete", table: rule.table, keys: dedupe.primaryKey, from: "FROM c", batch: "$3::int8").map {
                    ",\nj AS (\($0))" + (groups ?? "")
                }
            }
            // Whole rows come back only for the journal (the typed one takes each loser's
            // winner from the ranking, beside it).
            let returned = journal == nil ? "1" : typed == nil ? "t.*" : (["t.*"] + typedWinners.map { "s.\($0)" }).joined(separator: ", ")
            let delete = """
                DELETE FROM \(dedupe.table) AS t USING s
                WHERE t.ctid = s.winnow_tid AND \(dedupe.keyJoin("t", "s", columns: dedupe.primaryKey)) AND s.winnow_rn > 1
                RETURNING \(returned)
                """
            // The progress part (one-trip only) takes the counts as ``fusedCounts(_:groups:)``
            // reads them: the groups that still have a loser, the losers deleted, the members
            // planned as losers that were not (`$2 - $1` groups in the range).
            func fused(_ fetchedCTEs: String, progress: String?) -> String {
                """
                WITH \(fetchedCTEs),
                s AS MATERIALIZED (\(ranked)),
                c AS (\(delete))\(journal ?? "")\(progress.map { ",\n\($0)" } ?? "")
                SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM s WHERE s.winnow_rn = 2), (SELECT count(*) FROM m)
                """
            }
            fusedSQL = fused(fetchedCTEs, progress: nil)
            let withLoser = "SELECT count(*) FROM s WHERE s.winnow_rn = 2"
            oneTripSQL = progressSQL(groups: withLoser).map { fused(fetchedCTEs, progress: $0) }
            if found.decided, let table = found.table, let fetchedLeftCTEs {
                (decidedSQL, decidedOneTripSQL) = decidedStatements(table: table)
                trustedOneTripSQL = trustedStatement(table: table)
                leftSQL = fused(fetchedLeftCTEs, progress: nil)
                leftOneTripSQL = progressSQL(groups: withLoser, ranges: "cardinality($12::int8[])").map {
                    fused(fetchedLeftCTEs, progress: $0)
                }
            }
        }
    }

    struct Group {
        var winner: [String]
        var losers: [[String]] = []
        /// The merge columns of the rows (``PostgresMerge``), winner first, then the losers in
        /// winner order.
        var values: [[SQLValue]] = []
    }

    /// Statements prepared by batch writers in this process (their names stay unique).
    nonisolated(unsafe) private static var prepared = 0

    /// Decided batches that applied in this process (``decidedSQL``), and those tried whose
    /// decision no longer held: the one thing that tells a decided batch from a fused one, whose
    /// results are the same by design.
    nonisolated(unsafe) static var decisionsApplied = 0
    nonisolated(unsafe) static var decisionsMissed = 0
    /// Decided batches that applied to some of their groups and left the others to be ranked
    /// again (``partialShare``).
    nonisolated(unsafe) static var decisionsPartial = 0
    /// Trusted batches that applied in this process (``trustedOneTripSQL``), and those that
    /// found a row changed since discovery.
    nonisolated(unsafe) static var trustsApplied = 0
    nonisolated(unsafe) static var trustsMissed = 0

    /// `statement_timeout` and `lock_timeout` (ms) of a batch: generous beside
    /// `max_transaction_ms`, so that a batch stuck behind another transaction's locks fails
    /// (and is retried or reported) instead of waiting without end.
    var timeouts: (statement: Int, lock: Int) {
        let milliseconds = dedupe.options.settings.maxTransactionMilliseconds
        return (max(1000, milliseconds * 20), max(500, milliseconds * 4))
    }

    /// One batch; `decide`: whether to try the decided batch first (``decidedSQL``).
    func run(groups range: Range<Int>, batch: Int, totals: Counts, wantSamples: Bool, decide: Bool = true) throws -> PostgresBatchWork {
        var binds = PostgresBindings()
        if found.table != nil {
            // Groups are numbered from 1 on the server.
            binds.append(Int64(range.lowerBound + 1))
            binds.append(Int64(range.upperBound + 1))
        } else {
            var members: [[String]] = []
            var groupNumbers: [Int64] = []
            for group in range {
                for index in found.starts[group]..<found.starts[group + 1] {
                    members.append(found.ids[index])
                    groupNumbers.append(Int64(group))
                }
            }
            binds.append(groupNumbers)
            for column in PostgresDedupe.columns(members, width: width) { binds.append(column) }
        }
        var work = PostgresBatchWork()
        var batchLosers: [[String]] = []
        let body = {
            if dedupe.writes {
                let (limit, wait) = self.timeouts
                try link.command("SELECT set_config('statement_timeout', '\(limit)', true), set_config('lock_timeout', '\(wait)', true)")
            }
            if let fused = self.fusedSQL, !wantSamples {
                var fusedBinds = binds
                fusedBinds.append(Int64(batch))
                if decide, let decided = self.decidedSQL {
                    let row = try link.query(decided, fusedBinds).first ?? []
                    work.decided = Self.applied(row)
                    if work.decided == true {
                        let (counts, left) = Self.decidedCounts(row, groups: range)
                        work.counts = counts
                        // The groups it left, ranked again in the same transaction.
                        if !left.isEmpty, let leftSQL = self.leftSQL {
                            var leftBinds = fusedBinds
                            for _ in Counts.columns { leftBinds.append(Int64(0)) }
                            leftBinds.append(left)
                            work.add(left: left.count, row: try link.query(leftSQL, leftBinds).first ?? [])
                        }
                    }
                }
                if work.decided != true {
                    work.counts = Self.fusedCounts(try link.query(fused, fusedBinds).first ?? [], groups: range.count)
                }
                if let runID = dedupe.runID {
                    try session.execute(RunRecord.progressSQL(dialect), RunRecord.progressArguments(totals + work.counts, runID: runID))
                }
                return
            }
            let (groups, members) = try self.rank(binds)
            work.counts.groups = groups.count
            let losers = groups.flatMap(\.losers)
            batchLosers = losers
            work.counts.deleted = losers.count
            let planned = try (members ?? self.memberCount(range)) - range.count
            work.counts.skipped = planned - losers.count
            work.counts.batches = 1
            if wantSamples { work.samples = try self.samples(groups) }
            guard !groups.isEmpty else { return }
            work.counts.updated = try self.merge(groups, batch: batch)
            for path in rule.references {
                let (moved, deleted) = try self.repoint(path, groups: groups, batch: batch)
                work.counts.repointed += moved
                work.counts.childrenDeleted += deleted
            }
            try self.delete(groups, batch: batch)
            if self.typed == nil { try self.recordGroups(groups, batch: batch) }
            if let runID = dedupe.runID {
                try session.execute(RunRecord.progressSQL(dialect), RunRecord.progressArguments(totals + work.counts, runID: runID))
            }
        }
        if dedupe.writes {
            do {
                try retrying { try session.writeTransaction(body) }
            } catch let misfit as PostgresMerge.Misfit {
                throw try misfitRefusal(misfit.changes, misfit.error)
            }
        } else {
            try body()
            session.wouldDelete[rule.table.lowercased(), default: []] += batchLosers
        }
        return work
    }

    /// Retries a batch that lost a deadlock or a serialization conflict (it was rolled back
    /// whole), and one that waited longer than its `lock_timeout` for a lock another session
    /// holds: after a back-off (0.25 s, doubling), a few times, then the run ends (exit 75) naming
    /// the table. A batch never waits without end, so no other writer queues behind it for long.
    func retrying(_ body: () throws -> Void) throws {
        var conflicts = 0
        var lockWaits = 0
        while true {
            do {
                return try body()
            } catch let error as PSQLError {
                switch error.serverInfo?[.sqlState] {
                case "40001" where conflicts < 5, "40P01" where conflicts < 5:
                    conflicts += 1
                    Thread.sleep(forTimeInterval: 0.05 * Double(conflicts))
                case "55P03" where lockWaits < Self.lockRetries:
                    Thread.sleep(forTimeInterval: 0.25 * Double(1 << lockWaits))
                    lockWaits += 1
                case "55P03":
                    throw WinnowError.locked(
                        """
                        \(rule.rule.keyPath) (\(rule.table)): another session held a lock on \(rule.table) (or a table that \
                        references it) for longer than lock_timeout (\(timeouts.lock) ms), \(lockWaits + 1) times; the batch was \
                        rolled back and earlier batches stay committed; retry later
                        """)
                default:
                    throw error
                }
            }
        }
    }

    /// How many times a batch that timed out waiting for a lock is tried again.
    static let lockRetries = 4

    /// The batch's groups as they are now: rows that still share a key, in winner order; and
    /// how many members discovery put in the batch (nil when no row came back).
    func rank(_ binds: PostgresBindings) throws -> ([Group], Int?) {
        var groups: [Group] = []
        var members: Int?
        var current: (group: Int64, winner: [String])?
        let withWinners = !rule.mergeColumns.isEmpty
        for row in try link.query(rankSQL, binds) {
            let values = row
            let id = values[0..<width].map { $0.string ?? "" }
            let group = values[width].int64 ?? 0
            let rank = values[width + 1].int ?? 0
            let winner = values[(width + 2)..<(2 * width + 2)].map { $0.string ?? "" }
            members = values[2 * width + 3].int
            let merged = Array(values[(2 * width + 4)...])
            if rank == 1 {
                groups.append(Group(winner: winner, values: [merged]))
                current = (group, winner)
            } else if let current, current.group == group, current.winner == winner {
                groups[groups.count - 1].losers.append(id)
                groups[groups.count - 1].values.append(merged)
            } else if !withWinners {
                // Only losers come back: the first of a group opens it.
                groups.append(Group(winner: winner, losers: [id]))
                current = (group, winner)
            }
        }
        return (groups.filter { !$0.losers.isEmpty }, members)
    }

    /// Members discovery put in groups `range` (a batch whose rows all changed returns none).
    func memberCount(_ range: Range<Int>) throws -> Int {
        guard let table = found.table else {
            return found.starts[range.upperBound] - found.starts[range.lowerBound]
        }
        return try link.query(
            "SELECT count(*) FROM \(table) WHERE winnow_g >= $1 AND winnow_g < $2",
            PostgresDedupe.bindings([], prefix: [Int64(range.lowerBound + 1), Int64(range.upperBound + 1)])
        ).first?.first?.int ?? 0
    }

    /// The winners `w` of unnested pairs `m(..., w0, w1, ...)`.
    var winnerJoin: String {
        dedupe.primaryKey.enumerated().map { "w.\($1.sqlIdentifier) = m.w\($0)::\(dedupe.type($1))" }.joined(separator: " AND ")
    }

    /// Journals and deletes the losers: with the journal on, one statement whose `RETURNING`
    /// rows are the before-images (each loser is looked up once, not once more to journal it).
    func delete(_ groups: [Group], batch: Int) throws {
        let losers = groups.flatMap(\.losers)
        guard dedupe.writes, !losers.isEmpty else { return }
        if let typed {
            // The typed journal takes each loser's winner (as text, cast to the key's types)
            // from the delete, beside the row.
            let names = (0..<width).map { "k\($0)" } + (0..<width).map { "w\($0)" }
            let keys = dedupe.unnestKeys(first: 1, count: 2 * width, alias: "m", names: names)
            let winners = groups.flatMap { group in group.losers.map { _ in group.winner } }
            let binds = PostgresDedupe.bindings(
                PostgresDedupe.columns(losers, width: width) + PostgresDedupe.columns(winners, width: width))
            let returned = dedupe.primaryKey.enumerated().map { "m.w\($0)::\(dedupe.type($1)) AS winnow_wk\($0)" }
            let insert = typedSQL(typed, batch: "\(batch)", winners: (0..<width).map { "c.winnow_wk\($0)" }, from: "FROM c")
            try link.command(
                """
                WITH c AS (DELETE FROM \(dedupe.table) AS t USING \(keys) WHERE \(dedupe.keyJoin("t", "m", columns: dedupe.primaryKey, probe: 1))
                    RETURNING t.*, \(returned.joined(separator: ", ")))
                \(insert)
                """, binds)
            return
        }
        let names = (0..<width).map { "k\($0)" }
        let keys = dedupe.unnestKeys(first: 1, count: width, alias: "m", names: names)
        let binds = PostgresDedupe.bindings(PostgresDedupe.columns(losers, width: width))
        let delete =
            "DELETE FROM \(dedupe.table) AS t USING \(keys) WHERE \(dedupe.keyJoin("t", "m", columns: dedupe.primaryKey, probe: 1))"
        let journaled = try journal(
            "delete", table: rule.table, keys: dedupe.primaryKey, from: "FROM c", binds: binds, batch: batch,
            with: "WITH c AS (\(delete) RETURNING t.*) ")
        if !journaled { try link.command(delete, binds) }
    }
}
