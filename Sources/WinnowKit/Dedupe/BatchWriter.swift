import Foundation
import GRDB

/// Applies batches. ``SQLiteBatchWriter`` writes (in one IMMEDIATE transaction per batch, with
/// the journal and the run's counters); ``DryRunWriter`` writes nothing: it is what makes `plan`
/// and `run --dry-run` the same executor as `run`.
protocol BatchWriter {
    /// Whether to sleep `pause_ms` between batches (to let other writers in): only when writing.
    var pausesBetweenBatches: Bool { get }
    /// Prepares what the rule's batches need (journal shapes), in its own committed transaction.
    func prepare(_ rule: CompiledRule, db: Database) throws
    /// Runs `body` as one unit of work: a write transaction, or a plain read for a dry run.
    func transaction<T>(_ db: Database, _ body: () throws -> T) throws -> T
    /// Applies one batch of a rule. Called inside ``transaction(_:_:)``.
    func apply(_ work: BatchWork, rule: CompiledRule, db: Database) throws
    /// Stores key hashes of the rows `selection` (SQL over the rule's table, with `arguments`)
    /// picks whose hash column is stale; returns the count.
    func fillHashes(rule: CompiledRule, selection: String, arguments: StatementArguments, batch: Int, db: Database) throws -> Int
    /// Records the run's running totals in the same transaction as the batch.
    func recordProgress(_ totals: Counts, db: Database) throws
}

/// Writes nothing.
/// Writes nothing to the database. It remembers, in a temporary table, the rows a run would
/// have deleted, so that later counts (stored hashes) leave them out as a run would.
struct DryRunWriter: BatchWriter {
    var pausesBetweenBatches: Bool { false }
    func prepare(_ rule: CompiledRule, db: Database) throws {
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS winnow_dry_deleted (rid INTEGER PRIMARY KEY)")
        try db.execute(sql: "DELETE FROM temp.winnow_dry_deleted")
    }
    func transaction<T>(_ db: Database, _ body: () throws -> T) throws -> T { try body() }
    func apply(_ work: BatchWork, rule: CompiledRule, db: Database) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO temp.winnow_dry_deleted (rid) SELECT rid FROM temp.winnow_batch")
    }
    func fillHashes(rule: CompiledRule, selection: String, arguments: StatementArguments, batch: Int, db: Database) throws -> Int {
        guard let column = rule.hashColumn else { return 0 }
        return try Int.fetchOne(db, sql: """
            SELECT count(*) FROM \(rule.qualifiedTable) WHERE \(selection)
            AND \(column.sqlIdentifier) IS NOT \(rule.hashExpression())
            AND \(rule.rowID) NOT IN (SELECT rid FROM temp.winnow_dry_deleted)
            """, arguments: arguments) ?? 0
    }
    func recordProgress(_ totals: Counts, db: Database) throws {}
}

/// Writes batches, journaling every deleted row and before-image when the rule archives.
final class SQLiteBatchWriter: BatchWriter {
    let runID: Int64
    var pausesBetweenBatches: Bool { true }
    /// Journal shape ids by table and column list, created and committed by ``prepare(_:db:)``
    /// before any batch, so a rolled-back batch can never leave a cached id without its row.
    private var shapes: [String: Int64] = [:]

    init(runID: Int64) {
        self.runID = runID
    }

    private static func shapeKey(_ table: String, _ columns: [String]) -> String {
        ([table] + columns).joined(separator: "\u{1F}")
    }

    func prepare(_ rule: CompiledRule, db: Database) throws {
        guard rule.rule.archive else { return }
        var needed = [(rule.table, rule.storedColumns)]
        if let column = rule.hashColumn { needed.append((rule.table, [column])) }
        needed += rule.references.map { ($0.childTable, $0.childStoredColumns) }
        try db.writeTransaction {
            for (table, columns) in needed {
                shapes[Self.shapeKey(table, columns)] = try Bookkeeping.shapeID(db, table: table, columns: columns)
            }
            return
        }
    }

    func transaction<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        var result: T?
        try db.writeTransaction {
            result = try body()
            return
        }
        return result!
    }

    func recordProgress(_ totals: Counts, db: Database) throws {
        try db.execute(sql: """
            UPDATE winnow_runs SET groups = ?, deleted = ?, updated = ?, repointed = ?, children_deleted = ?,
                hashed = ?, skipped = ?, batches = ? WHERE id = ?
            """, arguments: [totals.groups, totals.deleted, totals.updated, totals.repointed, totals.childrenDeleted,
                             totals.hashed, totals.skipped, totals.batches, runID])
    }

    private func journal(_ db: Database, op: String, batch: Int, table: String, rowID: String,
                         columns: [String], whereSQL: String, arguments: StatementArguments) throws {
        guard let shape = shapes[Self.shapeKey(table, columns)] else {
            throw WinnowError.internal("journal shape of \(table) was not prepared")
        }
        let packed = columns.map(\.sqlIdentifier).joined(separator: ", ")
        let statement = try db.cachedStatement(sql: """
            INSERT INTO winnow_journal (run_id, batch, op, shape_id, rid, image)
            SELECT ?, ?, ?, ?, \(rowID), winnow_pack(\(packed)) FROM main.\(table.sqlIdentifier) WHERE \(whereSQL)
            """)
        try statement.execute(arguments: [runID, batch, op, shape] + arguments)
    }

    func apply(_ work: BatchWork, rule: CompiledRule, db: Database) throws {
        let archive = rule.rule.archive
        // 1. Child rows that re-pointing would turn into duplicates: deleted first, so that the
        //    re-pointed rows never meet them on a unique key.
        for delete in work.childDeletes {
            let path = rule.references[delete.path]
            if archive {
                try journal(db, op: "delete", batch: work.number, table: path.childTable, rowID: path.childRowID,
                            columns: path.childStoredColumns, whereSQL: "\(path.childRowID) = ?", arguments: [delete.childRowID])
            }
            try db.cachedStatement(sql: "DELETE FROM main.\(path.childTable.sqlIdentifier) WHERE \(path.childRowID) = ?")
                .execute(arguments: [delete.childRowID])
        }
        // 2. Re-point references from losers to winners, before any loser is deleted, so that
        //    ON DELETE CASCADE finds nothing to take with it.
        for repoint in work.repoints {
            let path = rule.references[repoint.path]
            if archive {
                try journal(db, op: "update", batch: work.number, table: path.childTable, rowID: path.childRowID,
                            columns: path.childStoredColumns, whereSQL: "\(path.childRowID) = ?", arguments: [repoint.childRowID])
            }
            let sets = path.childColumns.map { "\($0.sqlIdentifier) = ?" }.joined(separator: ", ")
            try db.cachedStatement(sql: "UPDATE main.\(path.childTable.sqlIdentifier) SET \(sets) WHERE \(path.childRowID) = ?")
                .execute(arguments: StatementArguments(repoint.values + [repoint.childRowID.databaseValue]))
        }
        // 3. Survivorship.
        for merge in work.merges {
            if archive {
                try journal(db, op: "update", batch: work.number, table: rule.table, rowID: rule.rowID,
                            columns: rule.storedColumns, whereSQL: "\(rule.rowID) = ?", arguments: [merge.winner])
            }
            let sets = merge.columns.map { "\($0.sqlIdentifier) = ?" }.joined(separator: ", ")
            try db.cachedStatement(sql: "UPDATE \(rule.qualifiedTable) SET \(sets) WHERE \(rule.rowID) = ?")
                .execute(arguments: StatementArguments(merge.values + [merge.winner.databaseValue]))
        }
        // 4. The losers.
        if !work.losers.isEmpty {
            let selection = "\(rule.rowID) IN (SELECT rid FROM temp.winnow_batch)"
            if archive {
                try journal(db, op: "delete", batch: work.number, table: rule.table, rowID: rule.rowID,
                            columns: rule.storedColumns, whereSQL: selection, arguments: [])
            }
            try db.execute(sql: "DELETE FROM \(rule.qualifiedTable) WHERE \(selection)")
        }
    }

    func fillHashes(rule: CompiledRule, selection: String, arguments: StatementArguments, batch: Int, db: Database) throws -> Int {
        guard let column = rule.hashColumn else { return 0 }
        let stale = "\(selection) AND \(column.sqlIdentifier) IS NOT \(rule.hashExpression())"
        if rule.rule.archive {
            try journal(db, op: "update", batch: batch, table: rule.table, rowID: rule.rowID, columns: [column],
                        whereSQL: stale, arguments: arguments)
        }
        try db.execute(sql: "UPDATE \(rule.qualifiedTable) SET \(column.sqlIdentifier) = \(rule.hashExpression()) WHERE \(stale)",
                       arguments: arguments)
        return db.changesCount
    }
}
