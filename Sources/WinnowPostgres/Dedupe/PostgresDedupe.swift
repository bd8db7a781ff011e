import Crypto
import Foundation
import PostgresNIO
import WinnowCore

/// The duplicate groups one discovery found, kept by the session between the executions of one
/// rule (the guard pass and the batches). `plan` (and a rule that restricts references, whose
/// guard reads the losers) keeps every member's primary key here, as text, in group order,
/// winner first; `run` leaves them on the server in the temporary table `table`.
struct FoundGroups {
    var ids: [[String]] = []
    /// Where each group starts in `ids`, plus the end.
    var starts: [Int] = []
    /// `run` (writing, so the batches lock what they read): a temporary table of every member
    /// (`winnow_g`, groups numbered from 1 in key order, the primary key as `k0`, `k1`, ..., and the tuple
    /// id as `winnow_tid`).
    var table: String?
    var serverGroups = 0
    /// Rows in all the groups, winners included.
    var members = 0
    var groupCount: Int { table == nil ? max(0, starts.count - 1) : serverGroups }
    /// Whether `table` also holds the decision (``PostgresDedupe/decides(_:)``, ``PostgresDedupe/catalogFacts()``): each member's
    /// rank as `winnow_rn`, the `xmin` of the row version ranked as `winnow_x`, and with the
    /// journal its winner's key as `winnow_w0`, `winnow_w1`, ...
    var decided = false
    /// For a decided table: whether the rule's table has partitions or inheriting tables, which
    /// repeat tuple ids across them (a decided batch then deletes each loser with its key too).
    var branches = true
}

/// One rule on PostgreSQL: discovery in one window query; batches of groups by primary key
/// (`unnest` of key arrays), each one transaction under `SET LOCAL lock_timeout` and
/// `statement_timeout`: the groups ranked again as they are now (rows locked first; a rule that
/// only deletes applies discovery's ranking where none of a batch's rows changed since), merges
/// resolved by ``MergeResolver`` (the same code as SQLite's), children re-pointed by one
/// `UPDATE ... FROM` per child table (row by row only where a unique key of the child can
/// collide), everything journaled as `jsonb` images for `restore`, then one `DELETE ... USING`.
/// With `runID` nil nothing is written (`plan`): the same reads, the writes counted instead.
struct PostgresDedupe: RuleExecution {
    let session: PostgresSession
    let rule: CompiledRule
    let runID: Int64?
    let options: RuleExecutionOptions

    var writes: Bool { runID != nil }
    /// Whether the run journals what the rule deletes (`archive: true`, and writing).
    var journals: Bool { writes && rule.rule.archive }
    private var link: PostgresLink { session.link }
    private var dialect: PostgresDialect { session.postgresDialect }
    var primaryKey: [String] { rule.primaryKey }
    var table: String { rule.qualifiedTable }

    /// `t.pk::text` per key column.
    func idTexts(_ alias: String) -> [String] { primaryKey.map { "(\(alias).\($0.sqlIdentifier))::text" } }

    /// The declared type of a column (for casts from text).
    func type(_ column: String, in types: [String: String]? = nil) -> String {
        let known = (types ?? rule.columnTypes)[column] ?? "text"
        return known.isEmpty ? "text" : known
    }

    /// `unnest($first::text[], ...) AS alias(c0, c1, ...)` over key arrays, joined to `t`.
    func unnestKeys(first: Int, count: Int, alias: String, names: [String]) -> String {
        let arrays = (0..<count).map { "$\(first + $0)::text[]" }.joined(separator: ", ")
        return "unnest(\(arrays)) AS \(alias)(\(names.joined(separator: ", ")))"
    }

    /// `t.c0 = m.k0::type AND ...`: rows of `tableAlias` joined to unnested key arrays. With
    /// `probe` (the parameter number of the first column's array), also `t.c0 = ANY($probe)`.
    func keyJoin(
        _ tableAlias: String, _ keyAlias: String, columns: [String], types: [String: String]? = nil, probe: Int? = nil
    ) -> String {
        let join = columns.enumerated().map { index, column in
            "\(tableAlias).\(column.sqlIdentifier) = \(keyAlias).k\(index)::\(type(column, in: types))"
        }
        guard let probe, let first = columns.first else { return join.joined(separator: " AND ") }
        return (join + [keyProbe(tableAlias, column: first, parameter: probe, type: type(first, in: types))]).joined(separator: " AND ")
    }

    /// `alias.column = ANY($parameter::text[]::type[])`. Beside a join to an unnested array it
    /// makes the rows reachable through the column's index: told how many rows the array
    /// holds, the planner hashes the whole table for each batch instead.
    /// (A key of an array type is compared by the join alone: its text does not cast to the
    /// array of its elements.)
    func keyProbe(_ alias: String, column: String, parameter: Int, type: String) -> String {
        type.hasSuffix("]") ? "true" : "\(alias).\(column.sqlIdentifier) = ANY($\(parameter)::text[]::\(type)[])"
    }

    static func bindings(_ arrays: [[String]], prefix: [Int64] = []) -> PostgresBindings {
        var binds = PostgresBindings(capacity: prefix.count + arrays.count)
        for value in prefix { binds.append(value) }
        for array in arrays { binds.append(array) }
        return binds
    }

    /// Columns of an id list, as arrays per key column.
    static func columns(_ ids: [[String]], width: Int) -> [[String]] {
        (0..<width).map { column in ids.map { $0[column] } }
    }

    // MARK: discovery

    /// Whether discovery may decide the rule's batches (``FoundGroups/decided``): a rule whose
    /// batches only delete (no merges, no references) and whose groups are its key's values
    /// (not an `any:` rule's components).
    static func decides(_ rule: CompiledRule) -> Bool {
        rule.mergeColumns.isEmpty && rule.references.isEmpty && rule.componentJoin(alias: "t") == nil && rule.knowsWinnerTies
    }

    /// The share of a table's rows its key makes losers above which discovery decides the
    /// batches: deciding ranks every row in discovery (a window over every row, and its rank,
    /// row version and winner kept for each member), and saves about half of each batch.
    static let decidingLoserShare = 0.1

    /// What the server's catalog says about deciding the rule's batches, in one read:
    /// `manyDuplicates`, whether its statistics say the rule's key makes at least
    /// ``decidingLoserShare`` of the table's rows losers (the key's distinct values estimated as
    /// the planner estimates a grouping's: the product of its columns' distinct counts, at most
    /// the rows; false where the table or a key column has no statistics yet); `branches`,
    /// whether the table has partitions or inheriting tables (``FoundGroups/branches``).
    func catalogFacts() throws -> (manyDuplicates: Bool, branches: Bool) {
        let columns = rule.keyColumns
        var binds = PostgresBindings()
        binds.append(table)
        binds.append(columns)
        let rows = try link.query(
            """
            SELECT c.reltuples::float8, s.attname::text, s.n_distinct::float8, c.relhassubclass OR c.relkind = 'p'
            FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
            LEFT JOIN pg_catalog.pg_stats AS s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = ANY($2::text[])
            WHERE c.oid = $1::regclass ORDER BY s.inherited DESC
            """, binds)
        let branches = rows.first?[3].bool ?? true
        guard let total = rows.first?.first?.double, total > 0 else { return (false, branches) }
        var distinct: [String: Double] = [:]
        for row in rows {
            guard let name = row[1].string, let estimate = row[2].double, distinct[name] == nil else { continue }
            // A negative estimate is a share of the rows (the count grows with the table).
            distinct[name] = estimate < 0 ? -estimate * total : estimate
        }
        guard !columns.isEmpty, columns.allSatisfy({ distinct[$0] != nil }) else { return (false, branches) }
        let keys = min(total, columns.reduce(1.0) { $0 * max(1, distinct[$1] ?? 1) })
        return (1 - keys / total >= Self.decidingLoserShare, branches)
    }

    func discover() throws -> Discovery {
        var exclusion = ""
        var binds = PostgresBindings()
        if !writes, let excluded = session.wouldDelete[rule.table.lowercased()], !excluded.isEmpty {
            // plan: rows an earlier rule would have deleted are gone for this one. (Not for a
            // run: `run --plan` runs the plan's dry pass in the same session first, and its
            // rows are all still there.)
            let keys = unnestKeys(first: 1, count: primaryKey.count, alias: "x", names: primaryKey.indices.map { "k\($0)" })
            exclusion = " AND NOT EXISTS (SELECT 1 FROM \(keys) WHERE \(keyJoin("t", "x", columns: primaryKey)))"
            binds = Self.bindings(Self.columns(excluded, width: primaryKey.count))
        }
        if let upTo = options.changesUpTo {
            exclusion += " AND " + PostgresChangeTracker.scope(rule, upTo: upTo, dialect: dialect)
        }
        // One window pass over the table. An `any:` rule's groups are read by a join to their
        // scratch table (one index probe per row, no correlated subquery per expression).
        var groups = rule.groupExpressions(alias: "t")
        var from = "\(table) AS t"
        var candidates = rule.candidateFilter(alias: "t")
        if let components = rule.componentJoin(alias: "t") {
            groups = [components.group]
            from += " " + components.join
            candidates = "true"
        }
        let groupNames = groups.indices.map { "winnow_g\($0)" }
        let terms = rule.groupTerms(groupNames.map { "t.\($0)" })
        let partition = terms.joined(separator: ", ")
        let width = primaryKey.count
        let serverSide = writes && rule.rule.references != .restrict
        let facts = serverSide && Self.decides(rule) ? try catalogFacts() : nil
        let decided = facts?.manyDuplicates ?? false
        // The groups kept on the server keep each member's tuple id too: a batch fetches its
        // rows by it (no index descent), and by primary key only those that moved since.
        let rows = """
            SELECT t.*, \(serverSide ? "t.ctid AS winnow_tid, " : "")\(decided ? "t.xmin AS winnow_x, " : "")\(zip(groups, groupNames).map { "\($0) AS \($1)" }.joined(separator: ", "))
            FROM \(from) WHERE \(candidates)\(exclusion)
            """
        var found = FoundGroups()
        if serverSide {
            // run: the members stay on the server, in a temporary table numbered by group (1...n),
            // which the batches read by range; nothing but two counts comes back.
            let name = "pg_temp.winnow_found_\(rule.rule.index)"
            try link.command("DROP TABLE IF EXISTS \(name)")
            // A group's size is an aggregate over its whole partition (no order inside it: a
            // narrower sort than the ranking window's). Groups are numbered in the order of
            // their key: the rows leave that window sorted by it, so the numbering sorts nothing
            // again (numbering by each group's lowest key would sort every member a second time).
            // Other rules' batches rank every group again in the rule's full order (winner terms,
            // then the content tie-break over every column), so their groups are members only.
            let ids = primaryKey.map { "t.\($0.sqlIdentifier)" }
            let termNames = terms.indices.map { "s.winnow_p\($0)" }
            let head = """
                SELECT dense_rank() OVER (ORDER BY \(termNames.joined(separator: ", "))) AS winnow_g, \
                \((0..<width).map { "s.winnow_id\($0) AS k\($0)" }.joined(separator: ", ")), s.winnow_tid
                """
            let inner = """
                SELECT \(ids.enumerated().map { "\($1) AS winnow_id\($0)" }.joined(separator: ", ")), t.winnow_tid, \
                \(terms.enumerated().map { "\($1) AS winnow_p\($0)" }.joined(separator: ", "))
                """
            let members: String
            if decided {
                // A rule whose batches only delete is decided here, once: each member's rank by
                // the rule's winner terms, whether its group's first two rows tie on them
                // (`winnow_t` of the second row: such a group is ranked by a batch, in the rule's
                // full order), and the transaction id (`xmin`) of the row version it was ranked
                // in; a batch whose members all still hold those versions deletes the decided
                // losers without ranking again (``PostgresBatch``). Sorting by the winner terms
                // alone sorts narrow rows (the full order's content tie-break sorts whole rows).
                // The same sort serves the ranking and the group numbers (both ordered by the
                // key first), and the groups of one row drop out without a second window over
                // each partition. With the journal, each member's winner too (as key columns:
                // one value per row, built into the journal's form only for the losers a batch
                // deletes).
                let winners = journals ? primaryKey.indices.map { "winnow_w\($0)" } : []
                let winner = zip(primaryKey, winners).map { ", first_value(t.\($0.sqlIdentifier)) OVER w AS \($1)" }.joined()
                let narrow = rule.winnerOrderBy(alias: "t")
                members = """
                    \(head), s.winnow_x, s.winnow_rn, s.winnow_t\(winners.map { ", s.\($0)" }.joined())
                    FROM (\(inner), t.winnow_x, row_number() OVER w AS winnow_rn, lead(true) OVER w AS winnow_next,
                                 \(narrow == nil ? "false" : rule.tiedWithPrevious(window: "w")) AS winnow_t\(winner)
                          FROM (\(rows)) AS t
                          WINDOW w AS (PARTITION BY \(partition) ORDER BY \(narrow ?? rule.orderBy(alias: "t")))) AS s
                    WHERE s.winnow_rn > 1 OR s.winnow_next
                    """
                found.decided = true
                found.branches = facts?.branches ?? true
            } else {
                members = """
                    \(head)
                    FROM (\(inner), count(*) OVER w AS winnow_n
                          FROM (\(rows)) AS t
                          WINDOW w AS (PARTITION BY \(partition))) AS s
                    WHERE s.winnow_n > 1
                    """
            }
            // The members are the rows the statement wrote (its command tag); the groups, the
            // highest number, read from the index (not a count over the table).
            found.members = try link.command("CREATE TEMPORARY TABLE \(name) AS \(members)", binds)
            try link.command("CREATE INDEX ON \(name) (winnow_g)")
            found.table = name
            found.serverGroups = try link.query("SELECT coalesce(max(winnow_g), 0) FROM \(name)").first?.first?.int ?? 0
        } else {
            // plan, or a rule that restricts references (its guard reads the losers): every
            // member comes back in the rule's full order.
            let ids = idTexts("t")
            let window = """
                SELECT \(ids.enumerated().map { "\($1) AS winnow_id\($0)" }.joined(separator: ", ")),
                       row_number() OVER w AS winnow_rn, lead(true) OVER w AS winnow_next,
                       \(ids.enumerated().map { "first_value(\($1)) OVER w AS winnow_w\($0)" }.joined(separator: ", "))
                FROM (\(rows)) AS t
                WINDOW w AS (PARTITION BY \(partition) ORDER BY \(rule.orderBy(alias: "t")))
                """
            let winners = (0..<width).map { "s.winnow_w\($0)" }.joined(separator: ", ")
            var members: [[String]: [(rank: Int64, id: [String])]] = [:]
            var order: [[String]] = []
            for row in try link.query(
                "SELECT \((0..<width).map { "s.winnow_id\($0)" }.joined(separator: ", ")), s.winnow_rn, \(winners) FROM (\(window)) AS s WHERE s.winnow_rn > 1 OR s.winnow_next",
                binds)
            {
                let values = row
                let winner = values[(width + 1)...].map { $0.string ?? "" }
                if members[winner] == nil { order.append(winner) }
                members[winner, default: []].append((values[width].int64 ?? 0, values[0..<width].map { $0.string ?? "" }))
            }
            for winner in order {
                found.starts.append(found.ids.count)
                found.ids += members[winner, default: []].sorted { $0.rank < $1.rank }.map(\.id)
            }
            found.starts.append(found.ids.count)
            found.members = found.ids.count
        }
        session.found[rule.rule.index] = found
        var total = try session.value("SELECT count(*) FROM \(table) AS t").int ?? 0
        if !writes { total -= session.wouldDelete[rule.table.lowercased()]?.count ?? 0 }
        return Discovery(groups: found.groupCount, losers: found.members - found.groupCount, tableRows: total)
    }

    func checkGuards(_ discovery: Discovery) throws {
        try rule.checkDeleteShare(discovery)
        guard rule.rule.references == .restrict, let found = session.found[rule.rule.index] else { return }
        let losers = losers(of: found, groups: 0..<found.groupCount)
        guard !losers.isEmpty else { return }
        for path in rule.references {
            let count = try childCount(path, of: losers)
            if count > 0 {
                // The first such row by primary key, named as SQLite names its first by rowid.
                let first = try link.query(
                    """
                    SELECT \(idTexts("p").joined(separator: ", ")) FROM \(childJoin(path))
                    ORDER BY \(primaryKey.map { "p.\($0.sqlIdentifier)" }.joined(separator: ", ")) LIMIT 1
                    """, Self.bindings(Self.columns(losers, width: primaryKey.count))
                ).first.map { row in rowKey(row.map { $0.string ?? "" }) }
                throw rule.restrictRefusal(
                    "\(count) row(s) of \(path.label) point at rows that would be deleted" + (first.map { " (first: \($0))" } ?? ""))
            }
        }
    }

    /// A row's primary key (its values as text, in key order) as people read it: numbers and
    /// booleans bare, other values quoted, as `show` names journaled rows.
    func rowKey(_ id: [String]) -> RowKey {
        rule.identity.key(
            literals: zip(id, primaryKey).map { value, column in
                PostgresDialect.isBare(rule.columnTypes[column]) ? value : SQLValue.text(value).quotedLiteral
            })
    }

    func losers(of found: FoundGroups, groups: Range<Int>) -> [[String]] {
        groups.flatMap { group in found.ids[(found.starts[group] + 1)..<found.starts[group + 1]] }
    }

    /// Child rows of `path` that point at the rows `ids`.
    func childCount(_ path: ReferencePath, of ids: [[String]]) throws -> Int {
        let rows = try link.query(
            "SELECT count(*) FROM \(childJoin(path))", Self.bindings(Self.columns(ids, width: primaryKey.count)))
        return rows.first?.first?.int ?? 0
    }

    /// The rule's rows named by the key arrays `$1`... (`p`) joined to their children of
    /// `path` (`c`): what a `FROM` reads to count or name them.
    func childJoin(_ path: ReferencePath) -> String {
        let keys = unnestKeys(first: 1, count: primaryKey.count, alias: "m", names: primaryKey.indices.map { "k\($0)" })
        return """
            \(keys) JOIN \(table) AS p ON \(keyJoin("p", "m", columns: primaryKey))
            JOIN \(rule.qualified(path.childTable)) AS c ON \(Self.join(path))
            """
    }

    static func join(_ path: ReferencePath) -> String {
        path.childJoin
    }

    func prepare() throws {}

    // MARK: batches

    func execute(_ discovery: Discovery, batchNumber: inout Int, totals: inout Counts, samples: inout SampleList) throws -> Counts {
        guard let found = session.found[rule.rule.index], found.groupCount > 0 else { return Counts() }
        let writer = try PostgresBatch(dedupe: self, found: found)
        let before = try writer.prepareOneTrip()
        defer { if let before { writer.finishOneTrip(before) } }
        var batches = GroupBatches(writer: writer, groups: found.groupCount, writes: writes, oneTrip: before != nil)
        let loop = BatchLoop(
            rule: rule.rule.index, table: rule.table, total: discovery.losers, pauseMilliseconds: options.settings.pauseMilliseconds,
            deadline: options.deadline, sampleLimit: options.sampleLimit, onEvent: options.onEvent)
        let sizer = BatchSizer(configured: options.settings.size, maxTransactionMilliseconds: options.settings.maxTransactionMilliseconds)
        let result = try loop.run(&batches, sizer: sizer, batchNumber: &batchNumber, totals: &totals, samples: &samples)
        if let table = found.table, result.finished { try link.command("DROP TABLE IF EXISTS \(table)") }
        return result.counts
    }

    func deletionDigest() throws -> String? {
        guard !writes else { return nil }
        let deleted = (session.wouldDelete[rule.table.lowercased()] ?? []).map { $0.joined(separator: "\u{1F}") }.sorted()
        let digest = SHA256.hash(data: Data(deleted.joined(separator: "\u{1E}").utf8))
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    func fillHashes(batchNumber: inout Int, totals: inout Counts) throws -> Counts {
        guard let column = rule.hashColumn else { return Counts() }
        let hash = rule.hashExpression(alias: "t")
        let stale = "t.\(column.sqlIdentifier) IS DISTINCT FROM \(hash)"
        var counts = Counts()
        if !writes {
            counts.hashed = try session.value("SELECT count(*) FROM \(table) AS t WHERE \(stale)").int ?? 0
            return counts
        }
        // In slices of the primary key's order, each its own transaction.
        var sizer = BatchSizer.hashFill(options.settings)
        let order = primaryKey.map { "t.\($0.sqlIdentifier)" }.joined(separator: ", ")
        // Journaled like every other change, so restore puts the old hashes back.
        let shape = rule.rule.archive ? try PostgresBatch.shape(session: session, table: rule.table, columns: rule.storedColumns) : nil
        var after: [String]?
        while true {
            // As on SQLite: once a slice has written, the next ones are `pause_ms` apart, and
            // each slice that changed something is a batch of its own (its number in the
            // journal and the run's progress).
            if counts.batches > 0, options.settings.pauseMilliseconds > 0 {
                Thread.sleep(forTimeInterval: Double(options.settings.pauseMilliseconds) / 1000)
            }
            let batch = batchNumber
            let started = Date()
            var changed = 0
            var last: [String]?
            try session.writeTransaction {
                let keys = after.map { values -> String in
                    "(\(order)) > (\(zip(primaryKey, values).map { "\(dialect.literal($1))::\(type($0))" }.joined(separator: ", ")))"
                }
                let slice = try link.query(
                    """
                    SELECT \(idTexts("t").joined(separator: ", ")) FROM \(table) AS t \(keys.map { "WHERE \($0)" } ?? "")
                    ORDER BY \(order) OFFSET \(sizer.current - 1) LIMIT 1
                    """)
                last = slice.first.map { $0.map { $0.string ?? "" } }
                var range = keys.map { [$0] } ?? []
                if let last {
                    range.append(
                        "(\(order)) <= (\(zip(primaryKey, last).map { "\(dialect.literal($1))::\(type($0))" }.joined(separator: ", ")))")
                }
                if let shape {
                    try link.command(
                        """
                        INSERT INTO \(dialect.bookkeeping("winnow_journal")) (run_id, rule, batch, op, shape_id, rid, image)
                        SELECT \(runID!), \(rule.rule.index), \(batch), 'update', \(shape), jsonb_build_array(\(order)), to_jsonb(t) FROM \(table) AS t
                        WHERE \((range + [stale]).joined(separator: " AND "))
                        """)
                }
                changed = try link.command(
                    """
                    UPDATE \(table) AS t SET \(column.sqlIdentifier) = \(hash)
                    WHERE \((range + [stale]).joined(separator: " AND "))
                    """)
                if changed > 0 {
                    var progress = totals
                    progress.hashed += changed
                    progress.batches += 1
                    try session.execute(RunRecord.progressSQL(dialect), RunRecord.progressArguments(progress, runID: runID!))
                }
            }
            sizer.record(size: sizer.current, seconds: Date().timeIntervalSince(started))
            if changed > 0 {
                counts.hashed += changed
                counts.batches += 1
                totals.hashed += changed
                totals.batches += 1
                batchNumber += 1
            }
            guard let last else { break }
            after = last
        }
        return counts
    }
}
