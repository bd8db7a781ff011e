import Foundation
import PostgresNIO
import WinnowCore

/// What one batch did (or, for `plan`, would do).
struct PostgresBatchWork {
    var counts = Counts()
    var samples: [GroupSample] = []
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
        archive = dedupe.writes && dedupe.rule.rule.archive
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
        if let table = found.table {
            // Discovery's temporary table (only a writing run keeps one), by group range: rows
            // fetched and locked by the tuple id they had then; a row updated since is found again
            // by primary key (a tuple id another row took after a vacuum never matches: the key
            // is compared).
            let fetch = """
                m AS MATERIALIZED (
                    SELECT winnow_g AS g, \(keys.joined(separator: ", ")), winnow_tid FROM \(table) WHERE winnow_g >= $1 AND winnow_g < $2),
                by_tid AS MATERIALIZED (
                    SELECT t.*, t.ctid AS winnow_tid FROM \(dedupe.table) AS t
                    WHERE t.ctid = ANY(ARRAY(SELECT m.winnow_tid FROM m)) FOR UPDATE OF t),
                moved AS MATERIALIZED (SELECT m.* FROM m WHERE NOT EXISTS (SELECT 1 FROM by_tid AS t WHERE \(keyJoin))),
                by_key AS MATERIALIZED (
                    SELECT t.*, t.ctid AS winnow_tid FROM moved AS m JOIN \(dedupe.table) AS t ON \(keyJoin)
                    WHERE \(probe("moved"))\(lock))
                """
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
            fetchedCTEs =
                fetch + """
                    ,
                    batch AS (
                        SELECT * FROM by_tid AS t
                        WHERE (SELECT count(*) FROM by_tid) + (SELECT count(*) FROM moved) = (SELECT count(*) FROM m)
                           OR (\(pairs)) IN (SELECT \(memberPairs) FROM m)
                        UNION ALL SELECT * FROM by_key)
                    """
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
            shapes[rule.table] = try Self.shape(session: dedupe.session, table: rule.table, columns: rule.storedColumns)
            for path in rule.references where shapes[path.childTable] == nil {
                shapes[path.childTable] = try Self.shape(session: dedupe.session, table: path.childTable, columns: path.childStoredColumns)
            }
        }
        if let fetchedCTEs, rule.mergeColumns.isEmpty, rule.references.isEmpty {
            // The losers never leave the server: each is deleted by the tuple id it was locked
            // at (it cannot move while locked; the primary key is compared too, so a
            // partitioned table's repeated tuple ids never match another row).
            // Ranked by the key as it is now, without discovery's group number (joining the rows
            // back to it cost about a seventh of a batch): every row deleted still ranks after a
            // locked row with its key, whichever group discovery put either in.
            // With the journal, each loser's winner too (`winnow_run_groups`).
            let winner =
                archive ? ", first_value(\(Self.keyArray(dedupe.primaryKey.map { "t.\($0.sqlIdentifier)" }))) OVER w AS winnow_winner" : ""
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
            let groups = groupsSQL(batch: "$3::int8").map { insert in
                """
                ,
                g AS (\(insert) SELECT s.winnow_winner AS winner, \(Self.keyArray(dedupe.primaryKey.indices.map { "s.k\($0)" })) AS loser
                    FROM s WHERE s.winnow_rn > 1) AS p)
                """
            }
            let journal = journalSQL("delete", table: rule.table, keys: dedupe.primaryKey, from: "FROM c", batch: "$3::int8").map {
                ",\nj AS (\($0))" + (groups ?? "")
            }
            // Whole rows come back only for the journal.
            let delete = """
                DELETE FROM \(dedupe.table) AS t USING s
                WHERE t.ctid = s.winnow_tid AND \(dedupe.keyJoin("t", "s", columns: dedupe.primaryKey)) AND s.winnow_rn > 1
                RETURNING \(journal == nil ? "1" : "t.*")
                """
            // The progress part (one-trip only) takes the counts as ``fusedCounts(_:groups:)``
            // reads them: the groups that still have a loser, the losers deleted, the members
            // planned as losers that were not (`$2 - $1` groups in the range).
            func fused(progress: String?) -> String {
                """
                WITH \(fetchedCTEs),
                s AS MATERIALIZED (\(ranked)),
                c AS (\(delete))\(journal ?? "")\(progress.map { ",\n\($0)" } ?? "")
                SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM s WHERE s.winnow_rn = 2), (SELECT count(*) FROM m)
                """
            }
            fusedSQL = fused(progress: nil)
            oneTripSQL = dedupe.runID.map { runID in
                fused(
                    progress: """
                        p AS (UPDATE \(dialect.bookkeeping("winnow_runs")) SET
                            groups = $4 + (SELECT count(*) FROM s WHERE s.winnow_rn = 2), deleted = $5 + (SELECT count(*) FROM c),
                            updated = $6, repointed = $7, children_deleted = $8, hashed = $9,
                            skipped = $10 + greatest(0, (SELECT count(*) FROM m) - ($2 - $1) - (SELECT count(*) FROM c)),
                            batches = $11 + 1
                            WHERE id = \(runID))
                        """)
            }
        }
    }

    /// The journal shape of a table: its stored columns as a JSON array (images are `jsonb`
    /// objects; restore reads them through the table's row type).
    static func shape(session: PostgresSession, table: String, columns: [String]) throws -> Int64 {
        let data = (try? JSONSerialization.data(withJSONObject: columns, options: [.withoutEscapingSlashes])) ?? Data("[]".utf8)
        let json = String(decoding: data, as: UTF8.self)
        let shapes = session.postgresDialect.bookkeeping("winnow_journal_shapes")
        return try session.value(
            """
            INSERT INTO \(shapes) (tbl, columns) VALUES (?, ?)
            ON CONFLICT (tbl, columns) DO UPDATE SET tbl = excluded.tbl RETURNING id
            """, [SQLValue(table), SQLValue(json)]
        ).int64 ?? 0
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

    /// `statement_timeout` and `lock_timeout` (ms) of a batch: generous beside
    /// `max_transaction_ms`, so that a batch stuck behind another transaction's locks fails
    /// (and is retried or reported) instead of waiting without end.
    var timeouts: (statement: Int, lock: Int) {
        let milliseconds = dedupe.options.settings.maxTransactionMilliseconds
        return (max(1000, milliseconds * 20), max(500, milliseconds * 4))
    }

    /// Prepares the one-trip statement and sets the batches' timeouts for the session (each
    /// batch is its own transaction, so `SET LOCAL` has no transaction to live in); returns
    /// what ``finishOneTrip(_:)`` restores afterwards. Nil, and nothing done, where batches
    /// take the transaction path.
    func prepareOneTrip() throws -> [SQLValue]? {
        guard let oneTripSQL, !session.inTransaction else { return nil }
        let counts = Array(repeating: "int8", count: 3 + Counts.columns.count).joined(separator: ", ")
        try link.command("PREPARE \(oneTripName) (\(counts)) AS \(oneTripSQL)")
        let before = try link.query("SELECT current_setting('statement_timeout'), current_setting('lock_timeout')").first ?? []
        let (statement, lock) = timeouts
        try link.command("SELECT set_config('statement_timeout', '\(statement)', false), set_config('lock_timeout', '\(lock)', false)")
        return before
    }

    /// Drops the one-trip statement and puts the session's timeouts back (best effort: a
    /// connection that is gone takes both with it).
    func finishOneTrip(_ before: [SQLValue]) {
        _ = try? link.command("DEALLOCATE \(oneTripName)")
        guard before.count == 2, let statement = before[0].string, let lock = before[1].string else { return }
        _ = try? link.command(
            "SELECT set_config('statement_timeout', $1, false), set_config('lock_timeout', $2, false)",
            PostgresBindings(values: [SQLValue(statement), SQLValue(lock)]))
    }

    /// One fused batch in one round trip: the batch, its journal and the run's progress in one
    /// statement that the server commits on its own.
    func runOneTrip(groups range: Range<Int>, batch: Int, totals: Counts) throws -> PostgresBatchWork {
        let arguments =
            [Int64(range.lowerBound + 1), Int64(range.upperBound + 1), Int64(batch)] + totals.columnValues.map { $0.int64 ?? 0 }
        var row: [SQLValue] = []
        try retrying { row = try link.query("EXECUTE \(oneTripName)(\(arguments.map(String.init).joined(separator: ", ")))").first ?? [] }
        var work = PostgresBatchWork()
        work.counts = Self.fusedCounts(row, groups: range.count)
        return work
    }

    /// What a fused batch did, from its one row: losers deleted, groups that still had a loser,
    /// members of the batch's `groups` (the planned losers not deleted are skipped).
    static func fusedCounts(_ row: [SQLValue], groups: Int) -> Counts {
        var counts = Counts()
        counts.deleted = row.first?.int ?? 0
        counts.groups = row.count > 1 ? row[1].int ?? 0 : 0
        counts.skipped = max(0, (row.count > 2 ? row[2].int ?? 0 : 0) - groups - counts.deleted)
        counts.batches = 1
        return counts
    }

    func run(groups range: Range<Int>, batch: Int, totals: Counts, wantSamples: Bool) throws -> PostgresBatchWork {
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
                work.counts = Self.fusedCounts(try link.query(fused, fusedBinds).first ?? [], groups: range.count)
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
            try self.delete(losers, batch: batch)
            try self.recordGroups(groups, batch: batch)
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

    /// Retries a batch that lost a deadlock or a serialization conflict (it was rolled back whole).
    func retrying(_ body: () throws -> Void) throws {
        var attempt = 0
        while true {
            do {
                return try body()
            } catch let error as PSQLError {
                let state = error.serverInfo?[.sqlState]
                guard state == "40001" || state == "40P01", attempt < 5 else { throw error }
                attempt += 1
                Thread.sleep(forTimeInterval: 0.05 * Double(attempt))
            }
        }
    }

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

    /// Journals rows of `table` (before-images) selected by `from` (a FROM clause aliasing the
    /// table `c`, with its bindings).
    /// `rid` is the row's key after the change (a re-pointed child's key may include the
    /// reference); `path` names the re-pointing whose columns take the winner's (`w`) values.
    /// `with` is a `WITH` clause the FROM clause may read (a data-modifying one whose
    /// `RETURNING` rows are the images). Returns false when nothing is journaled (no archive).
    @discardableResult
    func journal(
        _ op: String, table: String, keys: [String], from: String, binds: PostgresBindings, batch: Int, path: ReferencePath? = nil,
        with: String = ""
    ) throws -> Bool {
        guard let insert = journalSQL(op, table: table, keys: keys, from: from, batch: "\(batch)", path: path) else { return false }
        try link.command(with + insert, binds)
        return true
    }

    /// Runs `statement` (an UPDATE or DELETE of `table`'s rows selected as `from` selects them)
    /// and journals their before-images in the same statement: the journal's INSERT is a
    /// data-modifying `WITH` that reads the same snapshot, so it sees the rows as they were
    /// before `statement` changed them (one round trip instead of two: batches of 50 groups
    /// made two more a batch). Returns the rows `statement` changed.
    @discardableResult
    func journaled(
        _ statement: String, op: String, table: String, keys: [String], from: String, binds: PostgresBindings, batch: Int,
        path: ReferencePath? = nil, winnerValues: [String]? = nil
    ) throws -> Int {
        let insert = journalSQL(op, table: table, keys: keys, from: from, batch: "\(batch)", path: path, winnerValues: winnerValues)
        return try link.command((insert.map { "WITH winnow_journaled AS (\($0)) " } ?? "") + statement, binds)
    }

    /// The journal's `INSERT ... SELECT` (see ``journal(_:table:keys:from:binds:batch:path:with:)``);
    /// `batch` is the batch number's SQL (a literal or a parameter); `winnerValues`, the winner's
    /// values of `path`'s parent columns as expressions (else read from the winner row `w`).
    /// Nil without the journal.
    func journalSQL(
        _ op: String, table: String, keys: [String], from: String, batch: String, path: ReferencePath? = nil,
        winnerValues: [String]? = nil
    ) -> String? {
        guard archive, let shape = shapes[table], let runID = dedupe.runID else { return nil }
        let after = keys.map { key -> String in
            if let path, let index = path.childColumns.firstIndex(where: { $0.caseInsensitiveCompare(key) == .orderedSame }) {
                return winnerValues?[index] ?? "w.\(path.parentColumns[index].sqlIdentifier)"
            }
            return "c.\(key.sqlIdentifier)"
        }
        let rid = "jsonb_build_array(\(after.joined(separator: ", ")))"
        return """
            INSERT INTO \(dialect.bookkeeping("winnow_journal")) (run_id, rule, batch, op, shape_id, rid, image)
            SELECT \(runID), \(rule.rule.index), \(batch), '\(op)', \(shape), \(rid), to_jsonb(c) \(from)
            """
    }

    /// `jsonb_build_array(...)` of key values: a row's identity as the journal's `rid` holds it.
    static func keyArray(_ values: [String]) -> String { "jsonb_build_array(\(values.joined(separator: ", ")))" }

    /// The head of the `INSERT ... SELECT winner, loser` that records which winner each loser
    /// of a batch went to (`winnow show` lists the groups from it); nil without the journal.
    func groupsSQL(batch: String) -> String? {
        guard archive, let runID = dedupe.runID else { return nil }
        return """
            INSERT INTO \(dialect.bookkeeping("winnow_run_groups")) (run_id, rule, batch, tbl, winner, loser)
            SELECT \(runID), \(rule.rule.index), \(batch), \(dialect.literal(rule.table)), winner, loser FROM (
            """
    }

    /// Records the batch's groups (the winner of each loser), in the batch's transaction.
    func recordGroups(_ groups: [Group], batch: Int) throws {
        guard let insert = groupsSQL(batch: "\(batch)"), !groups.isEmpty else { return }
        let losers = groups.flatMap(\.losers)
        let winners = groups.flatMap { group in group.losers.map { _ in group.winner } }
        let names = (0..<width).map { "k\($0)" } + (0..<width).map { "w\($0)" }
        let typed = { (prefix: String) in
            Self.keyArray(dedupe.primaryKey.enumerated().map { "m.\(prefix)\($0)::\(dedupe.type($1))" })
        }
        try link.command(
            """
            \(insert) SELECT \(typed("w")) AS winner, \(typed("k")) AS loser, m.o
                FROM unnest(\((1...(2 * width)).map { "$\($0)::text[]" }.joined(separator: ", "))) WITH ORDINALITY AS m(\(names.joined(separator: ", ")), o)
            ) AS p ORDER BY p.o
            """,
            PostgresDedupe.bindings(PostgresDedupe.columns(losers, width: width) + PostgresDedupe.columns(winners, width: width)))
    }

    /// Resolves and applies the merges (``PostgresMerge``); returns the number of winners changed.
    func merge(_ groups: [Group], batch: Int) throws -> Int {
        guard !merges.isEmpty else { return 0 }
        var rows: [String] = []
        var winners: [[String]] = []
        // Values that may not fit their column (a sum, a joined text): a failed cast is traced
        // back to them.
        var unsure: [(winner: [String], index: Int, value: SQLValue)] = []
        for group in groups {
            let changes = merges.changes(group.values)
            guard !changes.isEmpty else { continue }
            var values: [String] = Array(repeating: "false, NULL::text", count: merges.columns.count)
            for change in changes {
                values[change.index] = "true, \(Self.textLiteral(change.value))"
                if merges.columns[change.index].makesValues {
                    unsure.append((group.winner, change.index, change.value))
                }
            }
            winners.append(group.winner)
            rows.append("(" + (group.winner.map(dialect.literal) + values).joined(separator: ", ") + ")")
        }
        guard !winners.isEmpty else { return 0 }
        let names =
            (0..<width).map { "k\($0)" } + merges.columns.indices.flatMap { ["f\($0)", "v\($0)"] }
        let valuesSQL = "(VALUES \(rows.joined(separator: ", "))) AS v(\(names.joined(separator: ", ")))"
        guard dedupe.writes else {
            // `plan` tries the values as `run` would store them, so that a value the column
            // cannot hold is refused here too.
            let checks = merges.columns.indices.filter { merges.columns[$0].makesValues }.map { index in
                "(v.f\(index) AND \(merges.loses("v.v\(index)", column: index)))"
            }
            if !unsure.isEmpty, !checks.isEmpty {
                let misfits: Int
                do {
                    misfits =
                        try link.query("SELECT count(*) FROM \(valuesSQL) WHERE \(checks.joined(separator: " OR "))").first?.first?.int ?? 0
                } catch {
                    throw try misfitRefusal(unsure, error)
                }
                if misfits > 0 { throw try misfitRefusal(unsure, WinnowError.internal("a merged value does not fit its column")) }
            }
            return winners.count
        }
        let keys = dedupe.unnestKeys(first: 1, count: width, alias: "m", names: (0..<width).map { "k\($0)" })
        let sets = merges.columns.enumerated().map { index, column in
            let name = column.name.sqlIdentifier
            return "\(name) = CASE WHEN v.f\(index) THEN v.v\(index)::\(column.castType) ELSE t.\(name) END"
        }
        // The winners reached by key (`probe`): joined to the values alone, they were found by a
        // hash of the whole table for each batch.
        do {
            try journaled(
                """
                UPDATE \(dedupe.table) AS t SET \(sets.joined(separator: ", "))
                FROM \(valuesSQL)
                WHERE \(dedupe.keyJoin("t", "v", columns: dedupe.primaryKey, probe: 1))
                """, op: "update", table: rule.table, keys: dedupe.primaryKey,
                from: "FROM \(keys) JOIN \(dedupe.table) AS c ON \(dedupe.keyJoin("c", "m", columns: dedupe.primaryKey, probe: 1))",
                binds: PostgresDedupe.bindings(PostgresDedupe.columns(winners, width: width)), batch: batch)
        } catch let error as PSQLError where error.serverInfo?[.sqlState]?.hasPrefix("22") == true && !unsure.isEmpty {
            // The transaction is aborted: the values are tried once it is rolled back.
            throw PostgresMerge.Misfit(changes: unsure, error: error)
        }
        return winners.count
    }

    /// The refusal naming the first of `unsure` that its column cannot hold, or `error` when
    /// each fits alone (tried outside any transaction).
    func misfitRefusal(_ unsure: [(winner: [String], index: Int, value: SQLValue)], _ error: Error) throws -> Error {
        guard let misfit = try merges.misfit(unsure, link: link) else { return error }
        return merges.refusal(misfit, rule: rule, primaryKey: dedupe.primaryKey)
    }

    /// A value as a text literal (cast to the column's type where it is used).
    static func textLiteral(_ value: SQLValue) -> String {
        switch value {
        case .null: return "NULL::text"
        case let .integer(v): return "'\(v)'"
        case let .real(v): return "'\(v)'"
        case let .text(v): return "'" + v.replacingOccurrences(of: "'", with: "''") + "'"
        case let .blob(v): return "'\\x" + v.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }

    /// Moves the children of the losers to their winners; returns (re-pointed, deleted).
    func repoint(_ path: ReferencePath, groups: [Group], batch: Int) throws -> (Int, Int) {
        let losers = groups.flatMap(\.losers)
        let winners = groups.flatMap { group in group.losers.map { _ in group.winner } }
        let child = rule.qualified(path.childTable)
        let childKey = childKeys[path.childTable] ?? []
        if rule.rule.references == .restrict {
            let count = try dedupe.childCount(path, of: losers)
            if count > 0 { throw rule.restrictRefusal("\(count) row(s) of \(path.label) point at rows that would be deleted") }
            return (0, 0)
        }
        let sets = zip(path.childColumns, path.parentColumns).map { "\($0.sqlIdentifier) = w.\($1.sqlIdentifier)" }.joined(separator: ", ")
        if path.uniqueKeys.isEmpty {
            let names = (0..<width).map { "k\($0)" } + (0..<width).map { "w\($0)" }
            let pairs =
                "unnest(\((1...(2 * width)).map { "$\($0)::text[]" }.joined(separator: ", "))) AS m(\(names.joined(separator: ", ")))"
            // Where the reference holds the parent's key, the pairs give the loser's and the
            // winner's values (both rows are locked by the ranking), and the children are reached
            // through the reference's index, if any, by the losers' keys. Told how many pairs
            // there are, the planner hashes the whole child and parent tables for each batch to
            // join them. Another referenced
            // column is read from the loser (`p`) and winner (`w`) rows.
            let direct = holdsKey(path)
            let from =
                direct
                ? "FROM \(pairs)"
                : """
                FROM \(pairs) JOIN \(dedupe.table) AS p ON \(dedupe.keyJoin("p", "m", columns: dedupe.primaryKey))
                JOIN \(dedupe.table) AS w ON \(winnerJoin)
                """
            let keyTypes = Dictionary(zip(path.childColumns, dedupe.primaryKey.map { dedupe.type($0) }), uniquingKeysWith: { a, _ in a })
            let children =
                direct ? dedupe.keyJoin("c", "m", columns: path.childColumns, types: keyTypes, probe: 1) : PostgresDedupe.join(path)
            let values =
                direct
                ? dedupe.primaryKey.indices.map { "m.w\($0)::\(dedupe.type(dedupe.primaryKey[$0]))" }
                : path.parentColumns.map { "w.\($0.sqlIdentifier)" }
            let assignments = zip(path.childColumns, values).map { "\($0.sqlIdentifier) = \($1)" }.joined(separator: ", ")
            let binds = PostgresDedupe.bindings(
                PostgresDedupe.columns(losers, width: width) + PostgresDedupe.columns(winners, width: width))
            guard dedupe.writes else {
                return (
                    try link.query("SELECT count(*) \(from) JOIN \(child) AS c ON \(children)", binds)
                        .first?.first?.int ?? 0, 0
                )
            }
            let moved = try journaled(
                "UPDATE \(child) AS c SET \(assignments) \(from) WHERE \(children)", op: "update", table: path.childTable,
                keys: childKey, from: "\(from) JOIN \(child) AS c ON \(children)", binds: binds, batch: batch, path: path,
                winnerValues: values)
            return (moved, 0)
        }
        // A unique key of the child includes the reference: decided row by row, as SQLite does.
        // Children of the winner first, then of each loser in winner order; a row whose key
        // after re-pointing is taken is a duplicate itself and deleted.
        let keyColumns = Array(Set(path.uniqueKeys.flatMap { $0 })).sorted()
        var members: [[String]] = []
        var order: [Int64] = []
        var owner: [Int] = []
        for (index, group) in groups.enumerated() {
            for member in [group.winner] + group.losers {
                members.append(member)
                order.append(Int64(order.count))
                owner.append(index)
            }
        }
        let names = ["o"] + (0..<width).map { "k\($0)" }
        let keysFrom = "unnest($1::int8[]\((0..<width).map { ", $\($0 + 2)::text[]" }.joined())) AS m(\(names.joined(separator: ", ")))"
        var binds = PostgresBindings()
        binds.append(order)
        for column in PostgresDedupe.columns(members, width: width) { binds.append(column) }
        let parentValues = path.parentColumns.map { "(p.\($0.sqlIdentifier))::text" }
        let rows = try link.query(
            """
            SELECT m.o, \(childKey.map { "(c.\($0.sqlIdentifier))::text" }.joined(separator: ", ")), \
            \(parentValues.joined(separator: ", ")), \(keyColumns.map { "(c.\($0.sqlIdentifier))::text" }.joined(separator: ", "))
            FROM \(keysFrom) JOIN \(dedupe.table) AS p ON \(dedupe.keyJoin("p", "m", columns: dedupe.primaryKey))
            JOIN \(child) AS c ON \(PostgresDedupe.join(path))
            ORDER BY m.o, \(childKey.map { "c.\($0.sqlIdentifier)" }.joined(separator: ", "))
            """, binds)
        var winnerValues: [Int: [SQLValue]] = [:]
        var occupied = Set<[SQLValue]>()
        var currentGroup = -1
        var moves: [([String], [String])] = []
        var deletes: [[String]] = []
        let k = childKey.count
        let pc = path.parentColumns.count
        for row in rows {
            let values = row
            let position = values[0].int ?? 0
            let group = owner[position]
            let childID = values[1...k].map { $0.string ?? "" }
            let parent = Array(values[(k + 1)...(k + pc)])
            var current: [String: SQLValue] = [:]
            for (offset, name) in keyColumns.enumerated() { current[name] = values[k + pc + 1 + offset] }
            let isWinner = members[position] == groups[group].winner
            if group != currentGroup {
                occupied.removeAll()
                currentGroup = group
            }
            if isWinner { winnerValues[group] = parent }
            if !isWinner {
                // The winner's referenced values (read from any of its rows, else from the parent).
                let target = try winnerValues[group] ?? referenced(path, winner: groups[group].winner)
                winnerValues[group] = target
                for (column, value) in zip(path.childColumns, target) { current[column] = value }
            }
            let tuples: [[SQLValue]] = path.uniqueKeys.enumerated().compactMap { keyIndex, key in
                let tuple = key.map { current[$0] ?? .null }
                return tuple.contains(where: \.isNull) ? nil : [SQLValue(keyIndex)] + tuple
            }
            if isWinner || !tuples.contains(where: occupied.contains) {
                occupied.formUnion(tuples)
                if !isWinner { moves.append((childID, groups[group].winner)) }
            } else {
                deletes.append(childID)
            }
        }
        guard dedupe.writes else { return (moves.count, deletes.count) }
        let types = childTypes[path.childTable]
        let childNames = (0..<k).map { "k\($0)" }
        if !deletes.isEmpty {
            let from =
                "FROM \(dedupe.unnestKeys(first: 1, count: k, alias: "m", names: childNames)) JOIN \(child) AS c ON \(dedupe.keyJoin("c", "m", columns: childKey, types: types, probe: 1))"
            let binds = PostgresDedupe.bindings(PostgresDedupe.columns(deletes, width: k))
            try journaled(
                "DELETE FROM \(child) AS c USING \(dedupe.unnestKeys(first: 1, count: k, alias: "m", names: childNames)) WHERE \(dedupe.keyJoin("c", "m", columns: childKey, types: types, probe: 1))",
                op: "delete", table: path.childTable, keys: childKey, from: from, binds: binds, batch: batch)
        }
        if !moves.isEmpty {
            let names = childNames + (0..<width).map { "w\($0)" }
            let pairs =
                "unnest(\((1...(k + width)).map { "$\($0)::text[]" }.joined(separator: ", "))) AS m(\(names.joined(separator: ", ")))"
            let binds = PostgresDedupe.bindings(
                PostgresDedupe.columns(moves.map(\.0), width: k) + PostgresDedupe.columns(moves.map(\.1), width: width))
            try journaled(
                """
                UPDATE \(child) AS c SET \(sets) FROM \(pairs) JOIN \(dedupe.table) AS w ON \(winnerJoin)
                WHERE \(dedupe.keyJoin("c", "m", columns: childKey, types: types, probe: 1))
                """, op: "update", table: path.childTable, keys: childKey,
                from:
                    "FROM \(pairs) JOIN \(child) AS c ON \(dedupe.keyJoin("c", "m", columns: childKey, types: types, probe: 1)) JOIN \(dedupe.table) AS w ON \(winnerJoin)",
                binds: binds, batch: batch, path: path)
        }
        return (moves.count, deletes.count)
    }

    /// The winners `w` of unnested pairs `m(..., w0, w1, ...)`.
    var winnerJoin: String {
        dedupe.primaryKey.enumerated().map { "w.\($1.sqlIdentifier) = m.w\($0)::\(dedupe.type($1))" }.joined(separator: " AND ")
    }

    /// Whether `path`'s reference holds the parent's primary key, column for column.
    func holdsKey(_ path: ReferencePath) -> Bool {
        path.parentColumns.count == width
            && zip(path.parentColumns, dedupe.primaryKey).allSatisfy { $0.caseInsensitiveCompare($1) == .orderedSame }
    }

    /// The values a winner's children hold (its referenced columns).
    func referenced(_ path: ReferencePath, winner: [String]) throws -> [SQLValue] {
        let keys = dedupe.unnestKeys(first: 1, count: width, alias: "m", names: (0..<width).map { "k\($0)" })
        let row = try link.query(
            """
            SELECT \(path.parentColumns.map { "(p.\($0.sqlIdentifier))::text" }.joined(separator: ", "))
            FROM \(keys) JOIN \(dedupe.table) AS p ON \(dedupe.keyJoin("p", "m", columns: dedupe.primaryKey))
            """, PostgresDedupe.bindings(PostgresDedupe.columns([winner], width: width)))
        return row.first ?? []
    }

    /// Journals and deletes the losers: with the journal on, one statement whose `RETURNING`
    /// rows are the before-images (each loser is looked up once, not once more to journal it).
    func delete(_ losers: [[String]], batch: Int) throws {
        guard dedupe.writes, !losers.isEmpty else { return }
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

    /// Sample groups for `plan`.
    func samples(_ groups: [Group]) throws -> [GroupSample] {
        let limit = max(0, dedupe.options.sampleLimit)
        let chosen = groups.prefix(limit)
        guard !chosen.isEmpty else { return [] }
        let columns = rule.sampleColumns()
        let shown = columns.map { name -> String in
            let value = "(t.\(name.sqlIdentifier))::text"
            return PostgresDialect.isText(rule.columnTypes[name])
                ? "CASE WHEN t.\(name.sqlIdentifier) IS NULL THEN 'NULL' ELSE quote_literal(t.\(name.sqlIdentifier)) END"
                : "coalesce(\(value), 'NULL')"
        }
        let keys = dedupe.unnestKeys(first: 1, count: width, alias: "m", names: (0..<width).map { "k\($0)" })
        var samples: [GroupSample] = []
        // A row is named by its primary key, each value as SQL spells it.
        let rowKey = dedupe.rowKey
        for group in chosen {
            let all = [group.winner] + group.losers
            let rows = try link.query(
                """
                SELECT \(dedupe.idTexts("t").joined(separator: ", ")), \(shown.joined(separator: ", "))
                FROM \(keys) JOIN \(dedupe.table) AS t ON \(dedupe.keyJoin("t", "m", columns: dedupe.primaryKey))
                """, PostgresDedupe.bindings(PostgresDedupe.columns(all, width: width)))
            var byID: [[String]: [String]] = [:]
            for row in rows {
                let values = row
                byID[values[0..<width].map { $0.string ?? "" }] = values[width...].map { $0.string ?? "NULL" }
            }
            let ids = all.map(rowKey)
            var sample = GroupSample(
                key: rule.keyColumns.map { key in
                    columns.firstIndex { $0.caseInsensitiveCompare(key) == .orderedSame }.flatMap { byID[group.winner]?[$0] } ?? ""
                }, winner: ids[0], losers: Array(ids.dropFirst()))
            sample.columns = columns
            sample.rows = zip(all, ids).compactMap { id, number in byID[id].map { GroupSample.SampleRow(row: number, values: $0) } }
            for change in merges.changes(group.values) {
                let before = merges.winnerValue(group.values, change.index)
                sample.merged.append(
                    GroupSample.MergedValue(
                        column: merges.columns[change.index].name, before: merges.display(before, column: change.index),
                        after: merges.display(change.value, column: change.index)))
            }
            for path in rule.references {
                for (loser, number) in zip(group.losers, ids.dropFirst()) {
                    let count = try dedupe.childCount(path, of: [loser])
                    if count > 0 {
                        sample.children.append(
                            .init(reference: path.label, loser: number, rows: count, mayCollide: !path.uniqueKeys.isEmpty))
                    }
                }
            }
            samples.append(sample)
        }
        return samples
    }
}
