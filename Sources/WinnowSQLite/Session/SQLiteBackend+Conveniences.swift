import Foundation
import GRDB
import WinnowCore

// The core's entry points on a SQLite file, and its bookkeeping on a GRDB connection: what the
// command line and the SQLite stages call.

extension JobRunner {
    public static func run(_ job: Job, options: RunOptions = .init(), onEvent: @escaping (RunEvent) -> Void = { _ in }) throws -> RunSummary
    {
        try run(job, options: options, backend: SQLiteBackend(busy: BusyWait(wait: options.wait)), onEvent: onEvent)
    }

    public static func plan(
        _ job: Job, options: RunOptions = .init(), onEvent: @escaping (RunEvent) -> Void = { _ in }
    ) throws -> RunSummary {
        try plan(job, options: options, backend: SQLiteBackend(), onEvent: onEvent)
    }

    public static func validate(_ job: Job, database: String) throws {
        try validate(job, database: database, backend: SQLiteBackend())
    }

    public static func check(_ job: Job, options: RunOptions = .init()) throws -> RunSummary {
        try check(job, options: options, backend: SQLiteBackend())
    }

    /// The job's rules compiled against the connection's live schema.
    static func compile(_ job: Job, _ db: Database) throws -> [CompiledRule] {
        try compile(job, SQLiteSession(db))
    }
}

extension RuleCompiler {
    /// Compiles a rule for SQLite.
    public static func compile(_ rule: DedupeRule, schema: LiveSchema) throws -> CompiledRule {
        try compile(rule, schema: schema, dialect: SQLiteDialect())
    }
}

extension History {
    public static func entries(database path: String, limit: Int? = nil) throws -> [HistoryEntry] {
        try entries(database: path, limit: limit, backend: SQLiteBackend())
    }

    public static func show(database path: String, runID: Int64) throws -> RunReport {
        try show(database: path, runID: runID, backend: SQLiteBackend())
    }
}

extension SchemaPrinter {
    /// `winnow schema inspect` on a SQLite file.
    public static func inspect(database path: String) throws -> String {
        try inspect(database: path, backend: SQLiteBackend())
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
