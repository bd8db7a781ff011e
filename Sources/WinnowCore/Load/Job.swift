import Foundation

/// A value read from a job or schema file, with where it was written.
public struct Located<Value: Sendable>: Sendable {
    public var value: Value
    public var location: SourceLocation?

    public init(_ value: Value, at location: SourceLocation? = nil) {
        self.value = value
        self.location = location
    }
}

extension Located: Equatable where Value: Equatable {
    public static func == (lhs: Located, rhs: Located) -> Bool { lhs.value == rhs.value }
}

/// A declarative job (docs/reference.md section 2): what `run`, `plan` and `check` do to one database.
public struct Job: Sendable {
    /// The file the job was read from, as given on the command line.
    public var file: String
    /// The SHA-256 (hex) of the bytes the job was decoded from (set by ``JobLoader``): a saved
    /// plan's job fingerprint. Empty for a job built in code.
    public var digest = ""
    /// Format version (1).
    public var version: Int
    /// The database path, resolved against the job file's folder.
    public var database: Located<String>?
    /// The target schema file path, resolved against the job file's folder.
    public var schema: Located<String>?
    public var allowDataLoss: Bool
    public var seed: SeedSpec?
    public var dedupe: [DedupeRule]
    public var batch: BatchSettings
    /// The `journal:` section: how long `run` keeps journal entries.
    public var journal: JournalSettings?
    /// The `sqlite:` section (SQLite files only).
    public var sqlite = SQLiteSettings()
    /// The target schema, read once for a command over many stores
    /// (``JobRunner/readingTarget(_:)``), so that every store is brought to the same version
    /// whatever happens to the file during the rollout; nil: the file is read when needed.
    public var readTarget: SchemaModel?

    public init(
        file: String, version: Int = 1, database: Located<String>? = nil,
        schema: Located<String>? = nil, allowDataLoss: Bool = false,
        seed: SeedSpec? = nil, dedupe: [DedupeRule] = [], batch: BatchSettings = .init()
    ) {
        self.file = file
        self.version = version
        self.database = database
        self.schema = schema
        self.allowDataLoss = allowDataLoss
        self.seed = seed
        self.dedupe = dedupe
        self.batch = batch
    }
}

/// The `seed:` section: copy tables from a prebuilt database once per target database.
public struct SeedSpec: Sendable {
    public var name: Located<String>
    public var from: Located<String>
    public var tables: [Located<String>]
}

/// The `journal:` section.
public struct JournalSettings: Sendable, Equatable {
    /// `keep_days`: `run` prunes the journal of runs that finished more than this many days ago.
    public var keepDays: Located<Int>

    public init(keepDays: Located<Int>) {
        self.keepDays = keepDays
    }
}

/// The `batch:` section.
public struct BatchSettings: Sendable, Equatable {
    /// Duplicate groups per transaction.
    public var size: Int
    /// Target upper bound for one write transaction; batches shrink to fit.
    public var maxTransactionMilliseconds: Int
    /// Sleep between batches so other writers get the database.
    public var pauseMilliseconds: Int

    public init(size: Int = 500, maxTransactionMilliseconds: Int = 250, pauseMilliseconds: Int = 0) {
        self.size = size
        self.maxTransactionMilliseconds = maxTransactionMilliseconds
        self.pauseMilliseconds = pauseMilliseconds
    }
}
