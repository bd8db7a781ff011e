import Foundation
import GRDB
import WinnowCore

// The core's entry points on a SQLite file, named on the backend so that no call picks an
// engine silently, and the core's bookkeeping on a GRDB connection (the SQLite stages and
// tests use these).

extension SQLiteBackend {
    /// `winnow run` on a SQLite file (``JobRunner/run(_:options:backend:onEvent:)`` with this backend).
    public static func run(_ job: Job, options: RunOptions = .init(), onEvent: @escaping (RunEvent) -> Void = { _ in }) throws -> RunSummary
    {
        try JobRunner.run(job, options: options, backend: SQLiteBackend(busy: BusyWait(wait: options.wait)), onEvent: onEvent)
    }

    /// `winnow plan` on a SQLite file.
    public static func plan(
        _ job: Job, options: RunOptions = .init(), onEvent: @escaping (RunEvent) -> Void = { _ in }
    ) throws -> RunSummary {
        try JobRunner.plan(job, options: options, backend: SQLiteBackend(), onEvent: onEvent)
    }

    /// `winnow validate --database` on a SQLite file.
    public static func validate(_ job: Job, database: String) throws {
        try JobRunner.validate(job, database: database, backend: SQLiteBackend())
    }

    /// `winnow check` on a SQLite file.
    public static func check(_ job: Job, options: RunOptions = .init()) throws -> RunSummary {
        try JobRunner.check(job, options: options, backend: SQLiteBackend())
    }

    /// A rule compiled in SQLite's dialect.
    public static func compile(_ rule: DedupeRule, schema: LiveSchema) throws -> CompiledRule {
        try RuleCompiler.compile(rule, schema: schema, dialect: SQLiteDialect())
    }

    /// `winnow history` of a SQLite file.
    public static func history(database path: String, limit: Int? = nil) throws -> [HistoryEntry] {
        try History.entries(database: path, limit: limit, backend: SQLiteBackend())
    }

    /// `winnow show` of a SQLite file.
    public static func show(database path: String, runID: Int64) throws -> RunReport {
        try History.show(database: path, runID: runID, backend: SQLiteBackend())
    }

    /// `winnow schema inspect` on a SQLite file.
    public static func inspectSchema(database path: String) throws -> String {
        try SchemaPrinter.inspect(database: path, backend: SQLiteBackend())
    }
}

extension JobRunner {
    /// The job's rules compiled against the connection's live schema.
    static func compile(_ job: Job, _ db: Database) throws -> [CompiledRule] {
        try compile(job, SQLiteSession(db))
    }
}

extension Bookkeeping {
    public static func install(_ db: Database) throws { try install(SQLiteSession(db)) }
    public static func isInstalled(_ db: Database) throws -> Bool { try isInstalled(SQLiteSession(db)) }
}

extension SchemaVersions {
    public static func install(_ db: Database) throws { try install(SQLiteSession(db)) }
    public static func recorded(_ db: Database) throws -> Record? { try recorded(SQLiteSession(db)) }
    public static func isSeeded(_ db: Database, name: String) throws -> Bool { try isSeeded(SQLiteSession(db), name: name) }
    static func record(_ db: Database, version: Int, checksum: String, runID: Int64?) throws {
        try record(SQLiteSession(db), version: version, checksum: checksum, runID: runID)
    }
}
