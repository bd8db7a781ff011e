import Foundation
import GRDBSQLite
import WinnowCore

/// SQLite's spelling: `main.`-qualified user tables, `IS` as null-safe equality, rowid identity.
public struct SQLiteDialect: SQLDialect {
    public init() {}

    public var name: String { "sqlite" }

    public var capabilities: DialectCapabilities {
        // DDL is transactional; nullability changes need a table rebuild; no advisory locks
        // (the lock row under SQLite's write lock serves); `PRAGMA data_version` is the token.
        // DROP COLUMN came with SQLite 3.35.0; the library that runs the steps decides.
        DialectCapabilities(
            triggers: true, suspendableForeignKeyChecks: true, dropsColumnInPlace: sqlite3_libversion_number() >= 3_035_000)
    }

    public func table(_ name: String) -> String { "main.\(name.sqlIdentifier)" }

    public func bookkeeping(_ name: String) -> String { name }

    public func nullSafeEqual(_ a: String, _ b: String) -> String { "\(a) IS \(b)" }

    public func scratchTable(_ name: String) -> String { "temp.\(name.sqlIdentifier)" }

    /// A rowid table whose `winnow_n` is the rowid, assigned 1, 2, ... as the rows go in (four
    /// times faster than numbering them with a window and keying a WITHOUT ROWID table on it).
    public func createNumberedScratchTable(_ name: String, columns: [(name: String, type: String?)], from select: String) -> [String] {
        let declared = columns.map { column in column.name.sqlIdentifier + (column.type.map { " \($0)" } ?? "") }
        return [
            "DROP TABLE IF EXISTS \(scratchTable(name))",
            "CREATE TEMP TABLE \(name.sqlIdentifier) (winnow_n INTEGER PRIMARY KEY, \(declared.joined(separator: ", ")))",
            "INSERT INTO \(scratchTable(name)) (\(columns.map(\.name.sqlIdentifier).joined(separator: ", "))) \(select)",
        ]
    }

    /// A WITHOUT ROWID table keyed by `key`: each column has the declared type of the column it
    /// copies (the same affinity keeps every value as it was, and lets a comparison with the
    /// user's column use the key), and it has no `rowid` of its own, so an unqualified `rowid`
    /// in a subquery over it still names the outer row.
    public func createScratchTable(_ name: String, columns: [(name: String, type: String?)], key: [String], from select: String) -> [String]
    {
        let declared = columns.map { column in column.name.sqlIdentifier + (column.type.map { " \($0)" } ?? "") }
        return [
            "DROP TABLE IF EXISTS \(scratchTable(name))",
            "CREATE TEMP TABLE \(name.sqlIdentifier) (\(declared.joined(separator: ", ")), PRIMARY KEY (\(key.map(\.sqlIdentifier).joined(separator: ", ")))) WITHOUT ROWID",
            "INSERT INTO \(scratchTable(name)) \(select)",
        ]
    }

    /// A rowid table's rows by rowid; a `WITHOUT ROWID` table's by its primary key (the batch
    /// engine numbers them for the run, as the rule's table or as a child: `RowNumbers`).
    public func rowIdentity(of table: LiveTable) -> RowIdentity? {
        if let rowid = table.rowIDExpression { return .rowid(expression: rowid, alias: table.rowIDAlias) }
        if !table.hasRowID, !table.isVirtual, !table.primaryKey.isEmpty { return .primaryKey(table.primaryKey) }
        return nil
    }

    /// The change log names rows by rowid.
    public func unsupported(_ option: RuleOption, on table: LiveTable) -> String? {
        guard !table.hasRowID, option == .incremental else { return nil }
        return "'\(table.name)' is a WITHOUT ROWID table; incremental runs log changed rows by rowid"
    }

    public func normalized(_ expression: String, by normalizer: Normalizer) -> String { "\(normalizer.sqlFunction)(\(expression))" }

    public func keyHash(nullsEqual: Bool, _ parts: [(sql: String, type: String?)]) -> String {
        "winnow_hash(\(nullsEqual ? 1 : 0), \(parts.map(\.sql).joined(separator: ", ")))"
    }

    public func orderTerm(_ expression: String, type: String?, descending: Bool, nullsLast: Bool, tieBreak: Bool) -> String {
        "\(expression)\(tieBreak ? " COLLATE BINARY" : "") \(descending ? "DESC" : "ASC")\(nullsLast ? " NULLS LAST" : "")"
    }

    public func countTrue(_ conditions: [String]) -> String {
        "(\(conditions.isEmpty ? "0" : conditions.map { "(\($0))" }.joined(separator: " + ")))"
    }

    public var alwaysTrue: String { "1" }

    public var alwaysFalse: String { "0" }

    public func value(_ expression: String, as type: String) -> String { expression }

    /// Children re-pointed ahead of their losers' deletion (``AheadBatches``), each with the
    /// loser it pointed at and the winner it points at now, recorded in the transaction that
    /// moves it: a run killed before those losers' batches leaves them here, and the next run
    /// moves back to its loser every child whose loser is no longer its winner's loser (another
    /// connection changed its key meanwhile), as the batches of an uninterrupted run do
    /// (``DedupeExecutor/moveStrayChildrenBack(_:batchNumber:totals:)``). Emptied for a table once
    /// its rule is done; a restore forgets its run's.
    ///
    /// `ref` names the reference (``BatchStatements/aheadRef(_:path:)``: the rule's table, the
    /// child table and column); `moves` holds a stretch's moves packed (``MovedAheadRecord``),
    /// so that each stretch appends one row of a few bytes a move.
    static let movedAheadTable = """
        CREATE TABLE IF NOT EXISTS winnow_moved_ahead (
            ref INTEGER NOT NULL,
            run_id INTEGER NOT NULL,
            moves BLOB NOT NULL
        )
        """

    /// Losers whose values a merge has taken into their winner while they still exist (merges
    /// applied ahead of the deletions, in the table's order): a merge never takes them again.
    /// Emptied for a table once its rule is done; a restore forgets its run's.
    ///
    /// One row per piece of a stretch of merges, appended in the order the stretches take the
    /// winners, with its losers and their winners packed (``TakenLosersRecord``): a row of its own
    /// per loser took about six times the bytes. A loser recorded twice (taken again once its
    /// first winner was gone) only adds a pair whose winner is gone, which every reader ignores.
    /// Every reader goes through a copy keyed by loser, made when it is needed
    /// (``DedupeExecutor/fillTakenCopy()``).
    static let takenLosersTable = """
        CREATE TABLE IF NOT EXISTS winnow_taken_losers (
            tbl TEXT NOT NULL,
            run_id INTEGER NOT NULL,
            pairs BLOB NOT NULL
        )
        """

    /// The name of ``takenLosersTable``.
    static let takenLosersName = "winnow_taken_losers"

    /// The values of the losers a stretch of merges deleted before their winner's merge, merged
    /// winner by winner (``GivenMergesRecord``): a row per piece of a stretch, `columns` naming
    /// the strategy and column of each value. Superseded once the winner's own stretch applies
    /// its merge (it records those losers as taken); a run that stops before it merges them
    /// into their winners first (``DedupeExecutor/settleGivenMerges(_:state:batchNumber:totals:)``),
    /// which notes how far it got in a row of its own (`settled_to`: every winner up to it is
    /// done). Emptied for a table once that is done or its rule is; a restore forgets its run's.
    static let givenMergesTable = """
        CREATE TABLE IF NOT EXISTS winnow_given_merges (
            tbl TEXT NOT NULL,
            run_id INTEGER NOT NULL,
            columns TEXT NOT NULL,
            entries BLOB NOT NULL,
            settled_to INTEGER
        )
        """

    /// The name of ``givenMergesTable``.
    static let givenMergesName = "winnow_given_merges"

    /// The record of taken losers of earlier releases: a row per loser, `(tbl, loser, winner,
    /// run_id)`. A run killed by such a release may have left losers in it: it is read beside
    /// today's record until it is empty, and then dropped (``DedupeExecutor/retireOldTakenRecord()``).
    static let oldTakenLosersName = "winnow_merged_losers"

    public var bookkeepingSchema: [SchemaStatement] {
        [
            """
            CREATE TABLE IF NOT EXISTS winnow_runs (
                id INTEGER PRIMARY KEY,
                command TEXT NOT NULL,
                job TEXT,
                started_at TEXT NOT NULL,
                finished_at TEXT,
                status TEXT NOT NULL,
                archive INTEGER NOT NULL DEFAULT 0,
                groups INTEGER NOT NULL DEFAULT 0,
                deleted INTEGER NOT NULL DEFAULT 0,
                updated INTEGER NOT NULL DEFAULT 0,
                repointed INTEGER NOT NULL DEFAULT 0,
                children_deleted INTEGER NOT NULL DEFAULT 0,
                hashed INTEGER NOT NULL DEFAULT 0,
                skipped INTEGER NOT NULL DEFAULT 0,
                batches INTEGER NOT NULL DEFAULT 0,
                migration_steps INTEGER NOT NULL DEFAULT 0,
                seconds REAL NOT NULL DEFAULT 0,
                restores_run INTEGER,
                restored_by INTEGER,
                message TEXT
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS winnow_journal_shapes (
                id INTEGER PRIMARY KEY,
                tbl TEXT NOT NULL,
                columns TEXT NOT NULL,
                UNIQUE (tbl, columns)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS winnow_journal (
                id INTEGER PRIMARY KEY,
                run_id INTEGER NOT NULL,
                batch INTEGER NOT NULL,
                op TEXT NOT NULL CHECK (op IN ('delete', 'update')),
                shape_id INTEGER NOT NULL,
                rid INTEGER NOT NULL,
                image BLOB NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS winnow_journal_by_run ON winnow_journal (run_id, id)",
            """
            CREATE TABLE IF NOT EXISTS winnow_run_rules (
                run_id INTEGER NOT NULL,
                rule INTEGER NOT NULL,
                tbl TEXT NOT NULL,
                key TEXT NOT NULL,
                groups INTEGER NOT NULL DEFAULT 0,
                deleted INTEGER NOT NULL DEFAULT 0,
                updated INTEGER NOT NULL DEFAULT 0,
                repointed INTEGER NOT NULL DEFAULT 0,
                children_deleted INTEGER NOT NULL DEFAULT 0,
                hashed INTEGER NOT NULL DEFAULT 0,
                skipped INTEGER NOT NULL DEFAULT 0,
                batches INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (run_id, rule)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS winnow_run_groups (
                id INTEGER PRIMARY KEY,
                run_id INTEGER NOT NULL,
                rule INTEGER NOT NULL,
                batch INTEGER NOT NULL,
                tbl TEXT NOT NULL,
                winner INTEGER NOT NULL,
                loser INTEGER NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS winnow_run_groups_by_run ON winnow_run_groups (run_id, id)",
            SchemaStatement(Self.takenLosersTable),
            SchemaStatement(Self.givenMergesTable),
            SchemaStatement(Self.movedAheadTable),
            """
            CREATE TABLE IF NOT EXISTS winnow_lock (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                run_id INTEGER,
                pid INTEGER NOT NULL,
                process_start TEXT,
                host TEXT NOT NULL,
                acquired_at TEXT NOT NULL
            )
            """,
        ]
    }

    public func columnNames(ofBookkeeping name: String) -> (sql: String, arguments: [SQLValue]) {
        ("SELECT name FROM pragma_table_info(?)", [SQLValue(name)])
    }

    public var versionSchema: [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS winnow_schema (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                version INTEGER NOT NULL,
                checksum TEXT NOT NULL,
                applied_at TEXT NOT NULL,
                run_id INTEGER
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS winnow_seeds (
                name TEXT PRIMARY KEY,
                seeded_at TEXT NOT NULL,
                run_id INTEGER,
                rows INTEGER NOT NULL DEFAULT 0
            )
            """,
        ]
    }
}

extension Normalizer {
    /// The SQL function that applies the normaliser (each backend provides it, with the same
    /// results as ``Normalize``).
    var sqlFunction: String {
        switch self {
        case .trim: return "winnow_trim"
        case .lowercase: return "winnow_lower"
        case .collapseWhitespace: return "winnow_collapse_ws"
        case .nfkc: return "winnow_nfkc"
        case .digitsOnly: return "winnow_digits"
        }
    }
}
