import Foundation

/// The one holder of a connection. The run lifecycle (lock, run record, history, versions,
/// the rule loop) talks only to this; each backend implements it, and the stages whose best
/// form depends on the engine (discovery and batches, migration steps, rehearsal, seeding,
/// change tracking, restore) are reached through it.
public protocol DatabaseSession: AnyObject {
    /// The database as the user named it (for messages).
    var location: String { get }
    var dialect: any SQLDialect { get }

    // MARK: statements

    func execute(_ sql: String, _ arguments: [SQLValue]) throws
    func rows(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow]
    /// Runs `body` in one write transaction (retried whole if it could not start because
    /// another connection held the write lock) and commits it.
    func writeTransaction(_ body: () throws -> Void) throws
    /// Runs `body`, which writes only this connection's scratch tables
    /// (``SQLDialect/scratchTable(_:)``), where the engine lets it do so without taking a write
    /// lock on the database, also on a read-only connection.
    func scratch(_ body: () throws -> Void) throws
    /// Rolls back a transaction a failure left open.
    func rollbackIfNeeded()
    func tableExists(_ name: String) throws -> Bool
    /// Claims the engine's own run lock for this session, next to the `winnow_lock` row: nil
    /// when the engine has none (SQLite: the row under the write lock serves), true when this
    /// session holds it (a lock row left by a run on any host is then stale), false when
    /// another session holds it.
    func claimRunLock() throws -> Bool?
    /// Ends the other sessions that hold the engine's run lock, whose client (the run named in
    /// `winnow_lock`) is known to be gone, and claims the lock: true once claimed. A server keeps
    /// such an orphaned session (a connection cut between client and server) until it notices,
    /// which may take hours.
    func takeOverRunLock() throws -> Bool
    /// The engine's failure as a ``WinnowError`` naming the database.
    func mapError(_ error: Error) -> WinnowError

    // MARK: inspect

    /// The user tables (winnow's own left out).
    func inspect() throws -> LiveSchema
    /// Views and triggers (a column they use cannot simply be dropped).
    func dependents() throws -> [(name: String, sql: String)]

    // MARK: stages

    /// Settings of a connection about to write in batches next to other writers; `sqlite` is
    /// the job's `sqlite:` section (another engine ignores it). Returns a remark worth reporting
    /// (a setting the job asked for that could not be made).
    func prepareForBatchWrites(_ sqlite: SQLiteSettings) -> String?
    /// The steps of `plan` as they would run, and the schema they leave, found without
    /// touching the database.
    func rehearse(_ plan: MigrationPlan) throws -> (steps: [PlannedStep], result: LiveSchema)
    /// The SQL of one migration step as it will run now (shown by `plan` and `run --verbose`).
    func statements(for step: MigrationStep) throws -> [String]
    /// A step as this engine runs it, for reports: what SQLite rebuilds a table for, another
    /// engine may alter in place (and say so).
    func describe(_ step: MigrationStep) -> (summary: String, rebuildsTable: Bool)
    /// Applies one migration step; returns a remark worth reporting. `progress` hears of rows
    /// copied so far and the rows to copy, for steps that copy rows (a rebuild).
    func apply(_ step: MigrationStep, settings: BatchSettings, progress: @escaping (Int, Int) -> Void) throws -> String?
    /// Finishes what a killed run left half done: retired tables of a finished cut-over
    /// (``InterruptedWork/retired``) or an unfinished rebuild this run did not resume.
    func finishInterrupted(_ work: InterruptedWork, settings: BatchSettings) throws
    /// Refuses a job whose guards or new unique indexes would fail once migrated, evaluated on
    /// the rows as `preview` shows them (nothing is written). `rules` are the ones the core
    /// chose to check (``JobRunner/guardedBeforeMigrating(_:plan:preview:)``): each is found,
    /// its guards checked, and its losers left out of its table's new unique indexes.
    func checkGuardsBeforeMigrating(
        _ job: Job, rules: [CompiledRule], plan: MigrationPlan, preview: MigrationPreview,
        resulting: LiveSchema, settings: BatchSettings) throws
    /// Copies a seed once (`runID`), or with `runID` nil checks it against `schema` only.
    func seed(_ spec: SeedSpec, runID: Int64?, checkingAgainst schema: LiveSchema?) throws -> SeedOutcome
    /// The executor of one rule; `runID` nil makes it write nothing (`plan`).
    func ruleExecution(_ rule: CompiledRule, runID: Int64?, options: RuleExecutionOptions) -> any RuleExecution
    /// The change log of incremental rules.
    var changeTracker: any ChangeTracker { get }
    /// Puts back what run `runID` deleted and changed, from its journal, in one transaction.
    func undo(runID: Int64, restoreID: Int64) throws -> (reinserted: Int, reverted: Int)

    // MARK: what winnow keeps

    /// What run `runID` journaled, oldest entry first (only `batches`, when given), each
    /// update's row also as it is now. `keep`, when given, judges each entry by its batch,
    /// rule, operation, table and row (its `columns` and `before` still empty) before its
    /// values are decoded or its row is read again; the entries it refuses are left out.
    func journalRecords(runID: Int64, batches: Set<Int>?, keep: ((JournalRecord) -> Bool)?) throws -> [JournalRecord]
    /// The losers run `runID` deleted and their winners, as `winnow_run_groups` holds them, in
    /// the order they were recorded.
    func groupRecords(runID: Int64) throws -> [GroupRecord]
    /// ``groupRecords(runID:)`` one at a time, in the same order, without holding them all
    /// where the engine can read them so.
    func forEachGroupRecord(runID: Int64, _ body: (GroupRecord) throws -> Void) throws
    /// The journal kept beside `winnow_journal` for the losers a rule deletes, as rows of a
    /// table per journal shape (`winnow_journal_rows_<shape>`: docs/reference.md, "Journal and
    /// restore"): the rows run `runID` deleted and kept there, by table.
    func typedJournalDeletes(runID: Int64) throws -> [String: Int]
    /// The runs with entries there.
    func typedJournalRuns() throws -> Set<Int64>
    /// Deletes some of run `runID`'s entries there (at most about a batch), in the caller's
    /// transaction; returns how many (0: none left).
    func deleteTypedJournal(runID: Int64) throws -> Int
    /// Those entries' row identities as a query of `(run_id, tbl, rid)`, `rid` as
    /// `winnow_journal.rid` holds a row's key; nil where there are none.
    func typedJournalIdentities() throws -> String?
    /// Everything winnow created in the database: its tables (and schema), and its triggers
    /// and functions on user tables.
    func winnowObjects() throws -> [WinnowObject]
    /// Drops `objects` (from ``winnowObjects()``), inside the caller's write transaction; user
    /// tables and their rows stay as they are.
    func remove(_ objects: [WinnowObject]) throws
}

/// Leftovers of a killed run that the next run finishes.
public enum InterruptedWork: Sendable {
    /// The old rows of a finished cut-over, set aside to be dropped.
    case retired
    /// A rebuild that never reached its cut-over.
    case unfinishedRebuild
}

/// What seeding did.
public struct SeedOutcome: Sendable, Equatable {
    public var seeded: Bool
    public var rows: Int

    public init(seeded: Bool, rows: Int) {
        self.seeded = seeded
        self.rows = rows
    }
}

extension DatabaseSession {
    public func forEachGroupRecord(runID: Int64, _ body: (GroupRecord) throws -> Void) throws {
        for record in try groupRecords(runID: runID) { try body(record) }
    }

    /// Every entry of ``journalRecords(runID:batches:keep:)``.
    public func journalRecords(runID: Int64, batches: Set<Int>?) throws -> [JournalRecord] {
        try journalRecords(runID: runID, batches: batches, keep: nil)
    }

    public func typedJournalDeletes(runID: Int64) throws -> [String: Int] { [:] }

    /// Run `runID`'s entries in the typed journal (``typedJournalDeletes(runID:)``).
    public func typedJournalEntries(runID: Int64) throws -> Int { try typedJournalDeletes(runID: runID).values.reduce(0, +) }
    public func typedJournalRuns() throws -> Set<Int64> { [] }
    public func deleteTypedJournal(runID: Int64) throws -> Int { 0 }
    public func typedJournalIdentities() throws -> String? { nil }

    /// The settings of a writer that asks nothing of the file (`restore`): the journal mode
    /// stays as found.
    public func prepareForBatchWrites() { _ = prepareForBatchWrites(SQLiteSettings()) }

    public func describe(_ step: MigrationStep) -> (summary: String, rebuildsTable: Bool) { (step.summary, step.rebuildsTable) }

    public func execute(_ sql: String) throws { try execute(sql, []) }

    public func rows(_ sql: String) throws -> [SQLRow] { try rows(sql, []) }

    /// The first row, if any.
    public func row(_ sql: String, _ arguments: [SQLValue] = []) throws -> SQLRow? { try rows(sql, arguments).first }

    /// The first column of the first row.
    public func value(_ sql: String, _ arguments: [SQLValue] = []) throws -> SQLValue {
        try rows(sql, arguments).first?.values.first ?? .null
    }
}
