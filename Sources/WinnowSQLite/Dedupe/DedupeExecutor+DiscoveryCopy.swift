import Foundation
import GRDB
import GRDBSQLite
import WinnowCore

/// Discovery's read in short pieces, in a rollback journal.
///
/// Discovery's window is one statement over the whole table. In a rollback journal a reader's
/// shared lock holds back every other connection's commit until the read ends, so on a large
/// table the application's writers waited out the whole sort (merge-500's 200,000 customers:
/// 0.5-0.9 s under `max_transaction_ms: 50`). Where that one read would take longer than
/// `max_transaction_ms`, the columns discovery reads (the rowid, the key columns, the winner
/// columns) are first copied into a temporary table in rowid ranges, each range its own short
/// read sized like a row-range loop (``BatchSizer/rowRanges(_:)``); the grouped counts and the
/// window then read the copy, which no other connection waits for. The copy costs about a
/// sixth of the window it spares the table (docs/performance.md, "Discovery"). Where the sorted
/// read's order can be told from its values, the ranges copy that read's rows sorted instead
/// (``SortedRuns``), and this copy is not made.
///
/// The copy is as of the start of discovery, a range at a time: a row another connection
/// changes between two ranges is read as it was or as it is, as a row changed after a
/// one-statement discovery is. The data version read before the first range makes every batch
/// look its groups up again once any other connection has committed since
/// (``DedupeExecutor/discover()``), as after any commit between discovery and the batches.
extension DedupeExecutor {
    /// The temporary table discovery reads instead of the rule's table.
    static let discoveryCopy = "temp.winnow_rows"

    /// How many times a copy's time discovery's window takes over the same rows (the sqlite3
    /// shell on 200,000 rows: the copy of the rowid, key and winner columns 0.09-0.14 s, the
    /// window 0.63-0.88 s, on a lowercased and on a plain key).
    static let windowPerCopy = 6.0

    /// The same for the sorted read, whose transaction ends before the losers are filed
    /// (``discoverSorted(_:pinsTaken:from:)``), where it computes at most a lowercase per key:
    /// 2.1-3.1 times the copy on plain keys (dup67 at 200,000 and 600,000 rows, dup10 at
    /// 600,000, `digits_only`) and 2.1-4.1 times lowercased (lower-500, merge-500-wide) (the
    /// sqlite3 shell's copy of the same columns against the read's statement in
    /// `WINNOW_SQL_PROFILE=trace`, three runs each). A hash key or a longer chain of normalizers
    /// took 4.6-5.0 times (dup67's rows), so such a read keeps ``windowPerCopy``.
    static let sortedPerCopy = 4.5

    /// The factor the copy's estimate takes for this rule's discovery (`sorted`: by the sorted
    /// read, else by the window).
    func discoveryPerCopy(sorted: Bool) -> Double {
        let light = !rule.rule.hash && rule.normalizers.values.allSatisfy { $0.allSatisfy { $0 == .lowercase } }
        return sorted && light ? Self.sortedPerCopy : Self.windowPerCopy
    }

    /// The same for `check`'s grouped count (``countDuplicates()``), which only counts: the
    /// sqlite3 shell on 533,501 customers, the copy 0.40 s, the count 0.60 s on the key and 0.88
    /// s on its lowercase (the window 1.53 s).
    static let countPerCopy = 2.2

    /// The largest first range (the sample the estimate goes by).
    static let largestSample = 16_000

    /// Tests: copy whatever the estimate says (where the copy is possible at all).
    static var copiesDiscoveryAlways = false

    /// Whether the main database keeps a rollback journal, where a read holds writers back (in
    /// WAL readers and writers never block each other; an in-memory database has no other
    /// connection).
    func keepsRollbackJournal() throws -> Bool {
        let mode = try String.fetchOne(db, sql: "PRAGMA main.journal_mode")?.lowercased()
        return ["delete", "persist", "truncate"].contains(mode ?? "")
    }

    /// The copy's table: the rowid (under the alias column's name, or `winnow_rowid`), and every
    /// other column discovery reads with its declared collation and an equivalent of its
    /// declared type (the same affinity, so every comparison discovery makes converts values as
    /// on the table), with `last`, the statement that reads the rowid copied last. Nil where
    /// discovery cannot read a copy: a table without rowids, an `any:` rule, an incremental
    /// scope, rows read through a pending migration, a column SQLite gives no metadata for (a
    /// virtual table's).
    ///
    /// Where the table's rowid has an alias, the copy keeps it in an `INTEGER` column under that
    /// name and numbers its own rows as they come: inserted under rowids of its own choosing,
    /// each row is appended, where under given ones (an `INTEGER PRIMARY KEY`) each is first
    /// looked for (the sqlite3 shell copying dup67's 2,000,000 rows: 0.72 s against 1.00 s). The
    /// ranges are copied in rowid order, so the copy's last row holds the highest rowid copied.
    /// Without an alias, the rowid expression discovery reads (`rowid`) names the copy's own
    /// rowid, which is then the table's: `winnow_rowid INTEGER PRIMARY KEY`.
    func discoveryCopyShape() throws -> (create: String, columns: [String], rowid: String, last: String)? {
        guard case let .rowid(expression, alias) = rule.identity, rule.components == nil, scope == nil, rule.sources.isEmpty
        else { return nil }
        var names: [String] = []
        func add(_ name: String) {
            if name.lowercased() != alias?.lowercased(), !names.contains(where: { $0.lowercased() == name.lowercased() }) {
                names.append(name)
            }
        }
        rule.keyColumns.forEach(add)
        for term in rule.winnerTerms {
            switch term {
            case let .column(name, _, _): add(name)
            case let .completeness(columns): columns.forEach(add)
            }
        }
        let rowidColumn = alias ?? "winnow_rowid"
        guard !names.contains(where: { $0.lowercased() == rowidColumn.lowercased() }) else { return nil }
        // The name of the copy's own rowid, where a name for it is left (the copy's columns
        // may take all three).
        let taken = Set(([rowidColumn] + names).map { $0.lowercased() })
        let ownRowid = alias == nil ? nil : ["rowid", "_rowid_", "oid"].first { !taken.contains($0) }
        var definitions = ["\(rowidColumn.sqlIdentifier) INTEGER\(ownRowid == nil ? " PRIMARY KEY" : "")"]
        for name in names {
            guard let (type, collation) = try declaration(of: name) else { return nil }
            definitions.append("\(name.sqlIdentifier)\(Self.affinityType(type)) COLLATE \(collation.sqlIdentifier)")
        }
        let last =
            ownRowid.map { "SELECT \(rowidColumn.sqlIdentifier) FROM \(Self.discoveryCopy) ORDER BY \($0) DESC LIMIT 1" }
            ?? "SELECT max(\(rowidColumn.sqlIdentifier)) FROM \(Self.discoveryCopy)"
        return (
            "CREATE TABLE \(Self.discoveryCopy) (\(definitions.joined(separator: ", ")))",
            [expression] + names.map(\.sqlIdentifier), rowidColumn.sqlIdentifier, last
        )
    }

    /// A column's declared type and collation, as SQLite parsed them (of the rule's table, or of
    /// `table` in the main database).
    func declaration(of column: String, in table: String? = nil) throws -> (type: String, collation: String)? {
        var type: UnsafePointer<CChar>?
        var collation: UnsafePointer<CChar>?
        var notNull: Int32 = 0
        var primaryKey: Int32 = 0
        var autoIncrement: Int32 = 0
        let code = sqlite3_table_column_metadata(
            db.sqliteConnection, "main", table ?? rule.table, column, &type, &collation, &notNull, &primaryKey, &autoIncrement)
        guard code == SQLITE_OK else { return nil }
        return (type.map { String(cString: $0) } ?? "", collation.map { String(cString: $0) } ?? "BINARY")
    }

    /// A declared type with the same affinity as `declared` (SQLite's rules, in their order:
    /// INT, then CHAR/CLOB/TEXT, then BLOB or none, then REAL/FLOA/DOUB, else NUMERIC), with
    /// its leading space; empty for no type.
    static func affinityType(_ declared: String) -> String {
        let type = declared.uppercased()
        if type.contains("INT") { return " INTEGER" }
        if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return " TEXT" }
        if type.isEmpty || type.contains("BLOB") { return "" }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return " REAL" }
        return " NUMERIC"
    }

    /// The lowest and highest rowid of the rule's table (`rowid`: its expression) and the span
    /// between them, the rows a copy takes; nil for an empty table. Rows added after discovery
    /// began are not this run's, as after a one-statement read.
    func copiedRowids(_ rowid: String) throws -> (low: Int64, last: Int64, span: Int)? {
        let table = rule.qualifiedTable
        // (Each bound its own subquery: SQLite reads a lone min() or max() from the end of the
        // rowid tree, but both in one SELECT by a scan of the table.)
        let bounds = try Row.fetchOne(db, sql: "SELECT (SELECT min(\(rowid)) FROM \(table)), (SELECT max(\(rowid)) FROM \(table))")
        guard let low = bounds?[0] as Int64?, let last = bounds?[1] as Int64?, low > Int64.min else { return nil }
        let (gap, overflow) = last.subtractingReportingOverflow(low)
        return (low, last, overflow || gap >= Int64(Int.max) ? Int.max : Int(gap) + 1)
    }

    /// The sizer of a copy's ranges. The first range is the sample the estimate goes by: a
    /// hundredth of the table (a sample of 1,000 rows, about a millisecond, judged dup67's
    /// 200,000 rows too long for a 1 s limit in one run of three), at most 16,000 rows (about
    /// 10 ms of copying).
    func copySizer(span: Int) -> BatchSizer {
        BatchSizer.rowRanges(settings, start: min(max(span / 100, BatchSizer.rowRangeStart), Self.largestSample))
    }

    /// Whether one read of the table is estimated to fit `limit`, from the `first` range copied
    /// (its rows, seconds, and rowids' width: nil where it reached the end of the table): its
    /// time per row, times the table's rows estimated from it (``estimatedRows(span:sampled:sampledWidth:)``),
    /// times `perCopy`, the read's time for the copy's. (Never where tests copy always.)
    func fitsOneRead(first: (rows: Int, seconds: Double, width: Double?), span: Int, perCopy: Double, limit: Double) -> Bool {
        let rows = Self.estimatedRows(span: span, sampled: first.rows, sampledWidth: first.width)
        return first.seconds / Double(max(1, first.rows)) * rows * perCopy <= limit && !Self.copiesDiscoveryAlways
    }

    /// The table's rows, estimated from the first range: `sampled` rows over `sampledWidth`
    /// rowids (nil: the range reached the end of the table, which holds just those rows), spread
    /// over the rowids' `span`. A table whose losers are gone may keep a third of its rowids: read
    /// as the whole span, a deduplicated table of 533,501 customers (rowids up to 1,600,000) was
    /// copied where one statement fitted a 1 s limit.
    static func estimatedRows(span: Int, sampled: Int, sampledWidth: Double?) -> Double {
        guard let width = sampledWidth else { return Double(sampled) }
        return Double(span) * Double(sampled) / max(1, width)
    }

    /// Copies what discovery reads into ``discoveryCopy`` in short reads, when reading the table
    /// in one statement would hold a rollback journal's writers back longer than
    /// `max_transaction_ms`; returns the copy's name and the table's rows it holds (every row up
    /// to the highest rowid when it began, NULL keys too), or nil for discovery to read the table.
    /// The first range decides: from its time, the read it spares over the table is estimated
    /// (`readPerCopy` times the copy's: ``sortedPerCopy`` or ``windowPerCopy`` for discovery, ``countPerCopy`` for
    /// `check`), the rows taken from the rowids' span as densely filled as the first range
    /// (``estimatedRows(span:sampled:sampledWidth:)``; no count of the table first: on a table
    /// of wide rows without an index, a count is itself a long read); where that fits the
    /// limit, the range is dropped and the table read in one statement.
    func copyForDiscovery(readPerCopy: Double = windowPerCopy) throws -> (table: String, rows: Int)? {
        guard !db.isInsideTransaction, try keepsRollbackJournal(), let shape = try discoveryCopyShape() else { return nil }
        let table = rule.qualifiedTable
        let rowid = shape.columns[0]
        guard let (low, last, span) = try copiedRowids(rowid) else { return nil }
        try sizeWorkingMemory(rows: span, sorting: true)
        try db.execute(sql: "DROP TABLE IF EXISTS \(Self.discoveryCopy)")
        try db.execute(sql: shape.create)
        let copy = try db.makeStatement(
            sql: """
                INSERT INTO \(Self.discoveryCopy) (\(([shape.rowid] + shape.columns.dropFirst()).joined(separator: ", ")))
                SELECT \(shape.columns.joined(separator: ", ")) FROM \(table)
                WHERE \(rowid) > ? AND \(rowid) <= ? ORDER BY \(rowid) LIMIT ?
                """)
        var sizer = copySizer(span: span)
        var after = low - 1
        var copied = 0
        var first = true
        let phase = RunEvent.discoveryPhase(of: rule)
        while after < last {
            let size = sizer.current
            let started = Date()
            try copy.execute(arguments: [after, last, size])
            let seconds = Date().timeIntervalSince(started)
            let count = db.changesCount
            copied += count
            let next = count == size ? try Int64.fetchOne(db, sql: shape.last) : nil
            if first {
                first = false
                let width = next.map { Double($0) - Double(after) }
                if fitsOneRead(first: (count, seconds, width), span: span, perCopy: readPerCopy, limit: sizer.limit) {
                    try db.execute(sql: "DROP TABLE \(Self.discoveryCopy)")
                    return nil
                }
            }
            guard let next else { break }
            after = next
            sizer.record(size: size, seconds: seconds)
            onEvent(.phaseProgress(phase, done: copied, total: max(span, copied)))
        }
        return (Self.discoveryCopy, copied)
    }
}

extension DedupeExecutor {
    /// `check`'s grouped count from a copy read in short pieces (``copyForDiscovery()``), where
    /// reading the table in one statement would hold a rollback journal's writers back longer
    /// than `max_transaction_ms`; nil where it would not (then `check` counts on the table).
    /// The copy keeps each column's collation and affinity, so the count groups as on the table.
    public func countDuplicates() throws -> Discovery? {
        guard let copy = try copyForDiscovery(readPerCopy: Self.countPerCopy) else { return nil }
        defer { try? db.execute(sql: "DROP TABLE IF EXISTS \(copy.table)") }
        let row = try Row.fetchOne(db, sql: JobRunner.duplicateCountSQL(rule, from: copy.table))
        return Discovery(groups: row?[0] ?? 0, losers: row?[1] ?? 0, tableRows: copy.rows)
    }
}
