import Foundation
import PostgresNIO
import WinnowCore

/// A ``DatabaseSession`` over one PostgreSQL connection, held for the whole command (temporary
/// state, the advisory lock and transactions belong to the server session).
///
/// The core writes its statements with `?` placeholders; they become `$1`, `$2`, ... here. The
/// stages are PostgreSQL's own: the catalog for inspection, native transactional DDL for
/// migrations (rehearsed in a transaction that is rolled back), set-based batches by primary key.
public final class PostgresSession: DatabaseSession {
    let link: PostgresLink
    let postgresDialect: PostgresDialect
    public let location: String
    let readOnly: Bool
    /// Another backend that reads seed files (SQLite), when the command line gave one.
    let seedBackend: (any DatabaseBackend)?
    private(set) var inTransaction = false
    /// The groups each rule's last discovery found (by rule index).
    var found: [Int: FoundGroups] = [:]
    /// `plan`: the rows earlier rules would have deleted, by table (later rules count without them).
    var wouldDelete: [String: [[String]]] = [:]

    init(link: PostgresLink, location: String, readOnly: Bool, seedBackend: (any DatabaseBackend)?) throws {
        self.link = link
        self.location = location
        self.readOnly = readOnly
        self.seedBackend = seedBackend
        let row = try link.query("SELECT current_schema(), current_setting('server_version_num')::int8, current_setting('server_encoding')")
        let values = row.first ?? []
        guard let schema = values.first?.string else {
            throw WinnowError.refused(
                "\(location): no current schema (the search_path names no schema that exists); set search_path or create the schema")
        }
        let serverVersion = values.count > 1 ? values[1].int ?? 0 : 0
        if values.count > 2, values[2].string != "UTF8" {
            throw WinnowError.refused(
                "\(location): the database's encoding is \(values[2].string ?? "?"); winnow's key normalisers need UTF8")
        }
        guard serverVersion >= 130_000 else {
            throw WinnowError.refused("\(location): PostgreSQL \(serverVersion / 10000) is too old; winnow needs 13 or later")
        }
        postgresDialect = PostgresDialect(userSchema: schema, bookkeepingSchema: link.location.bookkeepingSchema)
        if readOnly { try link.command("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY") }
        // A statement waiting for another session's lock gives up instead of queueing every
        // writer behind it; winnow retries what it can.
        // Floating point prints exactly (the shortest text that reads back as the same
        // value, whatever the server's configuration says): merges carry values as text.
        // No JIT compilation: winnow's statements are sorts, joins and writes run once each,
        // which compiling only delays (discovery over 1,000,000 rows compiled for about 22 ms
        // and ran no faster for it: 435-445 ms without, 465-472 ms with).
        // Temporary tables (discovery's groups) in up to 64 MB of the session's own buffers
        // instead of the default 8 MB, allocated only as they fill: indexing dup67's 132,000
        // members took 27-28 ms instead of 31-33.
        try link.command(
            "SELECT set_config('lock_timeout', '5s', false), set_config('idle_in_transaction_session_timeout', '10min', false), set_config('extra_float_digits', '1', false), set_config('jit', 'off', false), set_config('temp_buffers', '64MB', false)"
        )
    }

    public var dialect: any SQLDialect { postgresDialect }

    // MARK: statements

    /// `?` placeholders as `$1`, `$2`, ... (quoted text, identifiers and comments left alone).
    static func numbered(_ sql: String) -> String {
        guard sql.contains("?") else { return sql }
        var out = ""
        out.reserveCapacity(sql.utf8.count + 8)
        var number = 0
        var quote: Character?
        var previous: Character = " "
        var lineComment = false
        for char in sql {
            if lineComment {
                out.append(char)
                if char == "\n" { lineComment = false }
            } else if let open = quote {
                out.append(char)
                if char == open { quote = nil }
            } else if char == "'" || char == "\"" {
                quote = char
                out.append(char)
            } else if char == "-", previous == "-" {
                lineComment = true
                out.append(char)
            } else if char == "?" {
                number += 1
                out.append("$\(number)")
            } else {
                out.append(char)
            }
            previous = char
        }
        return out
    }

    public func execute(_ sql: String, _ arguments: [SQLValue]) throws {
        try link.command(Self.numbered(sql), PostgresBindings(values: arguments))
    }

    public func rows(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
        try link.query(Self.numbered(sql), PostgresBindings(values: arguments)).map(SQLRow.init)
    }

    /// A transaction of its own (READ WRITE on a read-only session: temporary tables may be
    /// written there).
    public func scratch(_ body: () throws -> Void) throws { try writeTransaction(body) }

    public func writeTransaction(_ body: () throws -> Void) throws {
        if inTransaction { return try body() }
        try link.command(readOnly ? "BEGIN READ WRITE" : "BEGIN")
        inTransaction = true
        do {
            try body()
            try link.command("COMMIT")
            inTransaction = false
        } catch {
            rollbackIfNeeded()
            throw error
        }
    }

    public func rollbackIfNeeded() {
        guard inTransaction else { return }
        _ = try? link.command("ROLLBACK")
        inTransaction = false
    }

    /// The schema a table lives in: winnow's own tables in the bookkeeping schema.
    func schema(of table: String) -> String {
        Bookkeeping.isWinnowTable(table) ? postgresDialect.bookkeepingSchemaName : postgresDialect.userSchema
    }

    public func tableExists(_ name: String) throws -> Bool {
        try !rows(
            """
            SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = ? AND c.relname = ? AND c.relkind IN ('r', 'p')
            """, [SQLValue(schema(of: name)), SQLValue(name)]
        ).isEmpty
    }

    public func claimRunLock() throws -> Bool? {
        try value("SELECT pg_try_advisory_lock(1466527311, hashtext(?))", [SQLValue(runLockKey)]).bool
    }

    private var runLockKey: String { "winnow:\(postgresDialect.bookkeepingSchemaName)" }

    /// Terminates the sessions holding the advisory lock (their client is gone; terminating
    /// one's own role's sessions needs no superuser) and waits, up to 5 s, to claim it.
    public func takeOverRunLock() throws -> Bool {
        try execute(
            """
            SELECT pg_catalog.pg_terminate_backend(l.pid) FROM pg_catalog.pg_locks AS l
            WHERE l.locktype = 'advisory' AND l.classid = 1466527311 AND l.objid = hashtext(?)::oid AND l.objsubid = 2
              AND l.granted AND l.pid <> pg_catalog.pg_backend_pid()
            """, [SQLValue(runLockKey)])
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if try claimRunLock() == true { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    public func mapError(_ error: Error) -> WinnowError {
        if let error = error as? WinnowError { return error }
        guard let error = error as? PSQLError else { return .internal("\(location): \(error)") }
        guard let state = error.serverInfo?[.sqlState] else {
            switch error.code {
            case .serverClosedConnection, .connectionError, .clientClosedConnection, .uncleanShutdown:
                return link.lost(error.underlying.map { PostgresLink.reason($0, timeout: nil) } ?? "the server closed it")
            default:
                return .internal("\(location): \(error.code)")
            }
        }
        var message = error.serverInfo?[.message] ?? "server error"
        if ProcessInfo.processInfo.environment["WINNOW_DEBUG_SQL"] != nil, let sql = error.query?.sql { message += " [in: \(sql)]" }
        if let detail = error.serverInfo?[.detail] { message += " (\(detail))" }
        switch state {
        case "55P03", "40001", "40P01":
            return .locked("\(location): \(message); another session holds a lock winnow needs; retry later")
        case "57014":
            return .locked("\(location): \(message); a statement took longer than its statement_timeout; retry later")
        case "42501":
            return .refused("\(location): \(message); the user lacks a privilege winnow needs")
        case "25006":
            return .internal("\(location): \(message)")
        default:
            if state.hasPrefix("23") { return .refused("\(location): a constraint failed: \(message)") }
            if state.hasPrefix("53") { return .io("\(location): the server is out of a resource: \(message)") }
            if state.hasPrefix("08") || state.hasPrefix("57P") { return link.lost(message) }
            return .io("\(location): PostgreSQL error \(state): \(message)")
        }
    }

    // MARK: inspect

    public func inspect() throws -> LiveSchema { try PostgresInspector(session: self).inspect() }

    public func dependents() throws -> [(name: String, sql: String)] { try PostgresInspector(session: self).dependents() }

    // MARK: stages

    /// Nothing to prepare: a server has no journal mode (a job's `sqlite:` section is for files).
    public func prepareForBatchWrites(_ sqlite: SQLiteSettings) -> String? { nil }

    public func rehearse(_ plan: MigrationPlan) throws -> (steps: [PlannedStep], result: LiveSchema) {
        guard !plan.steps.isEmpty else { return ([], try inspect()) }
        // DDL is transactional: each step's SQL is spelled against the schema the steps before it
        // leave, and the schema the plan leaves is read, in a transaction that is rolled back.
        // Only the catalog changes in it (no row is filled or scanned, no index built), so its
        // locks last a moment, under lock_timeout; the rules read the rows as the migration
        // leaves them through the preview's SELECTs (``CompiledRule/sources``).
        return try rehearsing {
            var steps: [PlannedStep] = []
            for step in plan.steps {
                let described = describe(step)
                steps.append(
                    PlannedStep(summary: described.summary, sql: try statements(for: step), rebuildsTable: described.rebuildsTable))
                try PostgresMigrator(session: self).rehearse(step)
            }
            return (steps, try inspect())
        }
    }

    /// A step as PostgreSQL runs it: what SQLite rebuilds a table for is altered in place here.
    public func describe(_ step: MigrationStep) -> (summary: String, rebuildsTable: Bool) {
        if case let .rebuild(r) = step { return ("alter table \(r.table): \(r.reasons.joined(separator: "; "))", false) }
        return (step.summary, false)
    }

    /// Runs `body` in a transaction that is always rolled back.
    func rehearsing<T>(_ body: () throws -> T) throws -> T {
        precondition(!inTransaction, "rehearsal inside a transaction")
        try link.command(readOnly ? "BEGIN READ WRITE" : "BEGIN")
        inTransaction = true
        defer { rollbackIfNeeded() }
        try link.command("SET LOCAL lock_timeout = '1s'")
        return try body()
    }

    public func statements(for step: MigrationStep) throws -> [String] { try PostgresMigrator(session: self).statements(step) }

    public func apply(_ step: MigrationStep, settings: BatchSettings, progress: @escaping (Int, Int) -> Void) throws -> String? {
        var migrator = PostgresMigrator(session: self)
        migrator.settings = settings
        migrator.progress = progress
        return try migrator.apply(step)
    }

    public func finishInterrupted(_ work: InterruptedWork, settings: BatchSettings) throws {
        // No rebuilds on PostgreSQL; an index left INVALID by a killed CREATE INDEX
        // CONCURRENTLY is rebuilt when its step runs again.
    }

    public func checkGuardsBeforeMigrating(
        _ job: Job, rules: [CompiledRule], plan: MigrationPlan, preview: MigrationPreview,
        resulting: LiveSchema, settings: BatchSettings
    ) throws {
        // The rules read the rows as the migration will leave them (their sources are the
        // preview's SELECTs over today's tables): nothing is migrated to check them.
        let uniqueIndexes = plan.uniqueIndexes
        let indexed = Set(uniqueIndexes.map { $0.table.lowercased() })
        // The rows the rules would delete, by table (their primary keys as text): rules of one
        // table are found independently and their losers united, as on SQLite.
        var losers: [String: [[String]]] = [:]
        for rule in rules {
            let execution = PostgresDedupe(session: self, rule: rule, runID: nil, options: RuleExecutionOptions(settings: settings))
            try execution.checkGuards(try execution.discover())
            if indexed.contains(rule.table.lowercased()), let found = found[rule.rule.index] {
                losers[rule.table.lowercased(), default: []] += execution.losers(of: found, groups: 0..<found.groupCount)
            }
        }
        // A unique index over a key that rows would still share once the rules ran is refused
        // now, before anything changed (built CONCURRENTLY at the end of the run, it would fail
        // there and leave an INVALID index behind).
        for (table, index) in uniqueIndexes {
            guard preview.hasRows(table), let target = resulting.table(named: table), !target.primaryKey.isEmpty, !index.columns.isEmpty,
                let source = preview.select(target.name, rowID: nil)
            else { continue }
            let key = target.primaryKey
            let columns = index.columns.map { "s.\($0.sqlIdentifier)" }
            let gone = losers[table.lowercased()] ?? []
            let arrays = key.indices.map { "$\($0 + 1)::text[]" }.joined(separator: ", ")
            let exclusion =
                gone.isEmpty
                ? ""
                : """
                 AND NOT EXISTS (SELECT 1 FROM unnest(\(arrays)) AS x(\(key.indices.map { "k\($0)" }.joined(separator: ", "))) \
                WHERE \(key.enumerated().map { "(s.\($1.sqlIdentifier))::text = x.k\($0)" }.joined(separator: " AND ")))
                """
            let row =
                try link.query(
                    """
                    SELECT count(*), coalesce(sum(g.n), 0) FROM (
                        SELECT count(*) AS n FROM (\(source)) AS s
                        WHERE \(columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND "))\(exclusion)
                        GROUP BY \(columns.joined(separator: ", ")) HAVING count(*) > 1) AS g
                    """, PostgresDedupe.bindings(PostgresDedupe.columns(gone, width: key.count))
                ).first ?? []
            let groups = row.first?.int ?? 0
            guard groups == 0 else {
                throw JobRunner.uniqueIndexRefusal(job, table: table, index: index, rows: row.dropFirst().first?.int ?? 0, groups: groups)
            }
        }
    }

    public func seed(_ spec: SeedSpec, runID: Int64?, checkingAgainst schema: LiveSchema?) throws -> SeedOutcome {
        try PostgresSeeder(session: self, spec: spec, runID: runID).seed(checkingAgainst: schema)
    }

    public func ruleExecution(_ rule: CompiledRule, runID: Int64?, options: RuleExecutionOptions) -> any RuleExecution {
        PostgresDedupe(session: self, rule: rule, runID: runID, options: options)
    }

    public var changeTracker: any ChangeTracker { PostgresChangeTracker(session: self) }

    public func undo(runID: Int64, restoreID: Int64) throws -> (reinserted: Int, reverted: Int) {
        try PostgresRestorer(session: self).undo(runID: runID, restoreID: restoreID)
    }

    public func journalRecords(runID: Int64, batches: Set<Int>?, keep: ((JournalRecord) -> Bool)?) throws -> [JournalRecord] {
        try PostgresJournalReader(session: self).records(runID: runID, batches: batches, keep: keep)
    }

    public func groupRecords(runID: Int64) throws -> [GroupRecord] { try PostgresJournalReader(session: self).groups(runID: runID) }

    public func forEachGroupRecord(runID: Int64, _ body: (GroupRecord) throws -> Void) throws {
        try PostgresJournalReader(session: self).forEachGroup(runID: runID, body)
    }

    public func typedJournalDeletes(runID: Int64) throws -> [String: Int] {
        var tables: [String: Int] = [:]
        for typed in try PostgresTypedJournal.all(self) {
            let rows = try value("SELECT count(*) FROM \(typed.relation) WHERE winnow_run = ?", [SQLValue(runID)]).int ?? 0
            if rows > 0 { tables[typed.table, default: 0] += rows }
        }
        return tables
    }

    public func typedJournalRuns() throws -> Set<Int64> {
        var runs: Set<Int64> = []
        for typed in try PostgresTypedJournal.all(self) {
            // One index probe per run (a `DISTINCT` would read every entry).
            for row in try rows(
                """
                WITH RECURSIVE r AS (
                    SELECT min(winnow_run) AS run FROM \(typed.relation)
                    UNION ALL SELECT (SELECT min(winnow_run) FROM \(typed.relation) WHERE winnow_run > r.run) FROM r WHERE r.run IS NOT NULL)
                SELECT run FROM r WHERE run IS NOT NULL
                """)
            {
                runs.insert(try row.int64(0))
            }
        }
        return runs
    }

    public func deleteTypedJournal(runID: Int64) throws -> Int {
        for typed in try PostgresTypedJournal.all(self) {
            let count = try link.command(
                """
                DELETE FROM \(typed.relation) WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM \(typed.relation) WHERE winnow_run = $1 LIMIT \(JournalPruner.batchSize)))
                """, .init(values: [SQLValue(runID)]))
            if count > 0 { return count }
        }
        return 0
    }

    public func typedJournalIdentities() throws -> String? {
        let all = try PostgresTypedJournal.all(self)
        guard !all.isEmpty else { return nil }
        return all.map { typed in
            """
            SELECT r.winnow_run, \(postgresDialect.literal(typed.table)), \(typed.rid(alias: "r")) FROM \(typed.relation) AS r
            """
        }.joined(separator: " UNION ALL ")
    }

    public func winnowObjects() throws -> [WinnowObject] { try PostgresInstalledObjects(session: self).list() }

    public func remove(_ objects: [WinnowObject]) throws { try PostgresInstalledObjects(session: self).remove(objects) }
}
