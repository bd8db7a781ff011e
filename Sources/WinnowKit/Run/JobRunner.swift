import Foundation
import GRDB

/// Options of `run`, `plan` and `check` that come from the command line.
public struct RunOptions: Sendable {
    /// `--database`, overriding the job's `database:`.
    public var database: String?
    /// `--batch-size`, overriding `batch.size`.
    public var batchSize: Int?
    /// `--dry-run`.
    public var dryRun = false
    /// `--wait SECONDS` for another run's lock.
    public var wait: TimeInterval?
    /// Groups listed per rule by `plan` (nil: all).
    public var sampleLimit: Int? = 20

    public init(database: String? = nil, batchSize: Int? = nil, dryRun: Bool = false, wait: TimeInterval? = nil,
                sampleLimit: Int? = 20) {
        self.database = database
        self.batchSize = batchSize
        self.dryRun = dryRun
        self.wait = wait
        self.sampleLimit = sampleLimit
    }
}

/// Carries out jobs: `run`, `plan` (a run whose writer writes nothing) and `check`.
public enum JobRunner {
    static func databasePath(_ job: Job, _ options: RunOptions) throws -> String {
        if let path = options.database { return path }
        if let path = job.database?.value { return path }
        throw WinnowError.usage("\(job.file): the job names no database; add 'database:' to it or pass --database PATH")
    }

    static func settings(_ job: Job, _ options: RunOptions) -> BatchSettings {
        var settings = job.batch
        if let size = options.batchSize { settings.size = size }
        return settings
    }

    static func refuseSchemaSection(_ job: Job) throws {
        if let schema = job.schema {
            throw WinnowError.invalidFile(schema.location, "schema: target schemas and migrations are not supported by this version of winnow")
        }
        if let seed = job.seed {
            throw WinnowError.invalidFile(seed.name.location, "seed: seeding is not supported by this version of winnow")
        }
    }

    static func compile(_ job: Job, _ db: Database) throws -> [CompiledRule] {
        let schema = try SchemaInspector.inspect(db)
        return try job.dedupe.map { try RuleCompiler.compile($0, schema: schema) }
    }

    static func ruleSummary(_ rule: CompiledRule, _ discovery: Discovery, _ counts: Counts, _ samples: [GroupSample]) -> RuleSummary {
        RuleSummary(index: rule.rule.index, table: rule.table,
                    key: rule.keyColumns.map { name in
                        let chain = rule.normalizers[name, default: []]
                        return chain.isEmpty ? name : "\(name) (\(chain.map(\.rawValue).joined(separator: ", ")))"
                    },
                    winner: rule.winnerDescription, references: rule.references.map(\.label),
                    discovery: discovery, counts: counts, samples: samples)
    }

    // MARK: plan

    /// What `run` would do, on a read-only connection: the same executor with a writer that
    /// writes nothing. Rules are evaluated against the database as it is now.
    public static func plan(_ job: Job, options: RunOptions = .init(), onEvent: @escaping (RunEvent) -> Void = { _ in }) throws -> RunSummary {
        try refuseSchemaSection(job)
        let path = try databasePath(job, options)
        let started = Date()
        let queue = try DatabaseOpener.open(path: path, mode: .readOnly)
        do {
            return try queue.inDatabase { db in
                let rules = try compile(job, db)
                var totals = Counts()
                var summaries: [RuleSummary] = []
                var batchNumber = 1
                for rule in rules {
                    let writer = DryRunWriter()
                    let executor = DedupeExecutor(db: db, rule: rule, writer: writer, settings: settings(job, options),
                                                  sampleLimit: options.sampleLimit ?? Int.max, onEvent: onEvent)
                    let discovery = try executor.discover()
                    try writer.prepare(rule, db: db)
                    try executor.checkGuards(discovery)
                    onEvent(.ruleStarted(rule: rule.rule.index, table: rule.table, discovery: discovery))
                    var samples: [GroupSample] = []
                    var counts = try executor.execute(discovery, batchNumber: &batchNumber, totals: &totals, samples: &samples)
                    counts = counts + (try executor.fillHashes(batchNumber: &batchNumber, totals: &totals))
                    onEvent(.ruleFinished(rule: rule.rule.index, table: rule.table, counts: counts))
                    summaries.append(ruleSummary(rule, discovery, counts, samples))
                }
                return RunSummary(command: "plan", status: "planned", job: job.file, database: path, dryRun: true, counts: totals,
                                  seconds: Date().timeIntervalSince(started), rules: summaries)
            }
        } catch {
            throw DatabaseOpener.map(error, path: path)
        }
    }

    // MARK: check

    /// Duplicates left under the job's rules. Uses grouped counts (an index on the key avoids a
    /// sort); when duplicates exist, the would-be counts of a dry run are filled in too.
    public static func check(_ job: Job, options: RunOptions = .init()) throws -> RunSummary {
        try refuseSchemaSection(job)
        let path = try databasePath(job, options)
        let started = Date()
        let queue = try DatabaseOpener.open(path: path, mode: .readOnly)
        do {
            let found = try queue.inDatabase { db -> [RuleSummary] in
                try compile(job, db).map { rule in
                    let row = try Row.fetchOne(db, sql: """
                        SELECT count(*), coalesce(sum(n - 1), 0) FROM (
                            SELECT count(*) AS n FROM \(rule.qualifiedTable) WHERE \(rule.candidateFilter())
                            GROUP BY \(rule.groupExpressions().joined(separator: ", ")) HAVING count(*) > 1)
                        """)!
                    var counts = Counts()
                    counts.groups = row[0]
                    counts.deleted = row[1]
                    let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(rule.qualifiedTable)") ?? 0
                    return ruleSummary(rule, Discovery(groups: counts.groups, losers: counts.deleted, tableRows: rows), counts, [])
                }
            }
            var summaries = found
            if found.contains(where: { $0.counts.groups > 0 }) {
                var dry = options
                dry.sampleLimit = 0
                let planned = try plan(job, options: dry)
                summaries = planned.rules
            }
            let totals = summaries.reduce(Counts()) { $0 + $1.counts }
            return RunSummary(command: "check", status: totals.groups > 0 ? "duplicates" : "clean", job: job.file, database: path,
                              dryRun: true, counts: totals, seconds: Date().timeIntervalSince(started), rules: summaries)
        } catch {
            throw DatabaseOpener.map(error, path: path)
        }
    }

    // MARK: run

    /// Deduplicates as the job says, one transaction per batch, recording the run in
    /// `winnow_runs` and (with `archive: true`) every change in `winnow_journal`.
    public static func run(_ job: Job, options: RunOptions = .init(), onEvent: @escaping (RunEvent) -> Void = { _ in }) throws -> RunSummary {
        if options.dryRun { return try plan(job, options: options, onEvent: onEvent) }
        try refuseSchemaSection(job)
        let path = try databasePath(job, options)
        let started = Date()
        let queue = try DatabaseOpener.open(path: path, mode: .readWrite(create: false))
        let me = ProcessIdentity.current
        do {
            return try queue.inDatabase { db in
                let runID = try RunLock.withRetry(wait: options.wait) {
                    try begin(db, job: job, archive: job.dedupe.contains(where: \.archive), me: me)
                }
                var totals = Counts()
                do {
                    let summaries = try execute(job, options: options, db: db, runID: runID, totals: &totals, onEvent: onEvent)
                    let seconds = Date().timeIntervalSince(started)
                    try finish(db, runID: runID, status: "completed", totals: totals, seconds: seconds, message: nil, me: me)
                    return RunSummary(command: "run", runID: runID, status: "completed", job: job.file, database: path,
                                      counts: totals, seconds: seconds, rules: summaries)
                } catch {
                    let mapped = DatabaseOpener.map(error, path: path)
                    let status = mapped.exitCode == 65 ? "refused" : "failed"
                    try? finish(db, runID: runID, status: status, totals: totals, seconds: Date().timeIntervalSince(started),
                                message: mapped.description, me: me)
                    throw mapped
                }
            }
        } catch {
            throw DatabaseOpener.map(error, path: path)
        }
    }

    /// Installs the bookkeeping tables, takes the lock and records the run, in one transaction.
    static func begin(_ db: Database, job: Job, archive: Bool, me: ProcessIdentity) throws -> Int64 {
        var runID: Int64 = 0
        try db.inTransaction(.immediate) {
            try Bookkeeping.install(db)
            try RunLock.take(db, runID: nil, me: me)
            // Whatever was still marked running lost its lock: it was interrupted.
            try db.execute(sql: "UPDATE winnow_runs SET status = 'interrupted' WHERE status = 'running'")
            try db.execute(sql: "INSERT INTO winnow_runs (command, job, started_at, status, archive) VALUES ('run', ?, ?, 'running', ?)",
                           arguments: [job.file, Bookkeeping.timestamp(), archive])
            runID = db.lastInsertedRowID
            try db.execute(sql: "UPDATE winnow_lock SET run_id = ? WHERE id = 1", arguments: [runID])
            return .commit
        }
        return runID
    }

    static func finish(_ db: Database, runID: Int64, status: String, totals: Counts, seconds: Double, message: String?,
                       me: ProcessIdentity) throws {
        if db.isInsideTransaction { try db.rollback() }
        try db.inTransaction(.immediate) {
            try SQLiteBatchWriter(runID: runID).recordProgress(totals, db: db)
            try db.execute(sql: "UPDATE winnow_runs SET status = ?, finished_at = ?, seconds = ?, message = ? WHERE id = ?",
                           arguments: [status, Bookkeeping.timestamp(), seconds, message, runID])
            try RunLock.release(db, me: me)
            return .commit
        }
    }

    static func execute(_ job: Job, options: RunOptions, db: Database, runID: Int64, totals: inout Counts,
                        onEvent: @escaping (RunEvent) -> Void) throws -> [RuleSummary] {
        let rules = try compile(job, db)
        let writer = SQLiteBatchWriter(runID: runID)
        let settings = settings(job, options)
        func executor(_ rule: CompiledRule) -> DedupeExecutor {
            DedupeExecutor(db: db, rule: rule, writer: writer, settings: settings, onEvent: onEvent)
        }
        // Every guard of every rule is checked before the first write, so a refused job changes nothing.
        var discoveries: [Discovery] = []
        for rule in rules {
            let discovery = try executor(rule).discover()
            try executor(rule).checkGuards(discovery)
            discoveries.append(discovery)
        }
        var summaries: [RuleSummary] = []
        var batchNumber = 1
        for (index, rule) in rules.enumerated() {
            let executor = executor(rule)
            var discovery = discoveries[index]
            // The temporary table holds the last discovery; with several rules, each is found
            // again right before it runs, since earlier rules may have changed its table.
            if rules.count > 1 {
                discovery = try executor.discover()
                try executor.checkGuards(discovery)
            }
            onEvent(.ruleStarted(rule: rule.rule.index, table: rule.table, discovery: discovery))
            try writer.prepare(rule, db: db)
            var samples: [GroupSample] = []
            // Duplicates first, then the stored hashes of the rows that remain.
            var counts = try executor.execute(discovery, batchNumber: &batchNumber, totals: &totals, samples: &samples)
            counts = counts + (try executor.fillHashes(batchNumber: &batchNumber, totals: &totals))
            onEvent(.ruleFinished(rule: rule.rule.index, table: rule.table, counts: counts))
            summaries.append(ruleSummary(rule, discovery, counts, samples))
        }
        return summaries
    }
}
