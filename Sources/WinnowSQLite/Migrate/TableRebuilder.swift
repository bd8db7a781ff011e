import Foundation
import WinnowCore
import GRDB

/// Rebuilds one table online, by SQLite's generalised ALTER TABLE procedure, while other
/// connections keep writing to it:
///
/// 1. `PRAGMA foreign_keys=OFF` (outside any transaction: inside one it is ignored, and a DROP
///    of the old table would then fire ON DELETE CASCADE on its children). Checked, not assumed.
/// 2. One transaction creates the new table, its indexes (under temporary names, so that they
///    grow batch by batch instead of in one long build), a log table and triggers on the old
///    table that log the rowid of every row another connection inserts, updates or deletes.
/// 3. Rows are copied in rowid ranges, one short `BEGIN IMMEDIATE` transaction each, sized to
///    `max_transaction_ms`; logged rows are re-copied (deleted and copied again) in batches.
/// 4. Cut-over, one short transaction whose length does not grow with the table: the last
///    logged rows, then the old table renamed aside (`winnow_retired_<table>`, its indexes too),
///    the new one renamed to the real name, the indexes renamed to their real names, triggers
///    and views recreated. Dropping the old table here would free every one of its pages while
///    holding the write lock, for a time that grows with the table.
/// 5. `foreign_keys` back on, and `PRAGMA foreign_key_check` of the table must be clean.
/// 6. The retired table is dropped at once when that fits in `max_transaction_ms`, else emptied
///    in batches sized to it and then dropped. A run killed before that finishes it the next
///    time (see ``finishRetired(_:settings:)``); the rows it holds are a copy, never read again.
struct TableRebuilder {
    let db: Database
    let rebuild: TableRebuild
    let settings: BatchSettings
    /// Rows copied so far and rows to copy (counted once before the copy), after each range.
    var progress: (Int, Int) -> Void = { _, _ in }

    static func temporaryName(_ table: String) -> String { TableRebuild.temporaryName(table) }
    static func retiredName(_ table: String) -> String { TableRebuild.retiredName(table) }
    static let logTable = "winnow_rebuild_log"
    static let captureTriggers = ["winnow_capture_insert", "winnow_capture_update", "winnow_capture_delete"]

    /// Empties and drops the old tables that finished cut-overs set aside and a killed run left
    /// (in short transactions; see ``drain(_:table:settings:gap:)``). The runner calls it before any
    /// migration step, so a rebuild never finds its table's retired copy in the way.
    static func finishRetired(_ db: Database, settings: BatchSettings) throws {
        var gap = WriteGap(settings: settings, db: db)
        let retired = try String.fetchAll(
            db,
            sql: """
                SELECT name FROM main.sqlite_master WHERE type = 'table' AND name LIKE 'winnow\\_retired\\_%' ESCAPE '\\'
                """)
        for name in retired { try drain(db, table: name, settings: settings, gap: &gap) }
    }

    /// Removes what a rebuild killed before its cut-over left behind: the capture triggers on
    /// the user's table (they would keep logging the application's writes), the half-built new
    /// table and the log. The old table was never touched, so nothing else needs undoing. Runs
    /// while the run lock is held, so no rebuild can be in progress.
    static func cleanUpInterrupted(_ db: Database) throws {
        let leftovers = try String.fetchAll(
            db,
            sql: """
                SELECT name FROM main.sqlite_master WHERE (type = 'table' AND (name = ? OR name LIKE 'winnow\\_rebuild\\_%' ESCAPE '\\'))
                OR (type = 'trigger' AND name IN ('winnow_capture_insert', 'winnow_capture_update', 'winnow_capture_delete'))
                """, arguments: [logTable])
        guard !leftovers.isEmpty else { return }
        try db.writeTransaction {
            for trigger in captureTriggers { try db.execute(sql: "DROP TRIGGER IF EXISTS main.\(trigger.sqlIdentifier)") }
            for name in leftovers where name.hasPrefix("winnow_rebuild") {
                try db.execute(sql: "DROP TABLE IF EXISTS main.\(name.sqlIdentifier)")
            }
            return
        }
    }

    /// Whether the old table of `rows` rows can be dropped in one transaction within
    /// `max_transaction_ms`, judged by its copy (`copied` rows in `copySeconds`): a DROP frees a
    /// row's pages in about half the time its copy took.
    static func dropsAtOnce(copySeconds: Double, copied: Int, rows: Int, maxTransactionMilliseconds: Int) -> Bool {
        let estimate = copySeconds / Double(max(1, copied)) * Double(rows) * 0.5
        return estimate <= Double(maxTransactionMilliseconds) / 1000
    }

    /// Empties `table` in batches (each one short transaction, sized to `max_transaction_ms`),
    /// then drops it: the write lock is never held for a time that grows with the table.
    /// Returns the number of batches.
    @discardableResult
    static func drain(_ db: Database, table: String, settings: BatchSettings, gap: inout WriteGap) throws -> Int {
        var sizer = BatchSizer(
            configured: max(1000, settings.size * 10), maxTransactionMilliseconds: settings.maxTransactionMilliseconds,
            start: BatchSizer.rowRangeStart)
        let name = "main.\(table.sqlIdentifier)"
        var batches = 0
        while true {
            let started = Date()
            var deleted = 0
            try db.writeTransaction {
                try db.cachedStatement(sql: "DELETE FROM \(name) WHERE rowid IN (SELECT rowid FROM \(name) ORDER BY rowid LIMIT ?)")
                    .execute(arguments: [sizer.current])
                deleted = db.changesCount
                if deleted == 0 { try db.execute(sql: "DROP TABLE \(name)") }
            }
            batches += 1
            if deleted == 0 { return batches }
            let seconds = Date().timeIntervalSince(started)
            sizer.record(size: sizer.current, seconds: seconds)
            gap.wait(after: seconds, db: db)
        }
    }

    /// Rows copied, and concurrent changes replayed.
    struct Outcome {
        var copied = 0
        var replayed = 0
        var batches = 0
        var resumed = false
    }

    /// Whether the leftovers of an interrupted rebuild are exactly this rebuild's, still capturing.
    static func isResumable(_ db: Database, table: String, newName: String, createSQL: String) throws -> Bool {
        guard
            let existing = try String.fetchOne(
                db, sql: "SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = ?",
                arguments: [newName]), existing == createSQL,
            try db.tableExists(logTable)
        else { return false }
        let triggers =
            try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM main.sqlite_master WHERE type = 'trigger' AND tbl_name = ? AND name IN
                    ('winnow_capture_insert', 'winnow_capture_update', 'winnow_capture_delete')
                    """, arguments: [table]) ?? 0
        return triggers == captureTriggers.count
    }

    /// What a rebuild of one table works with, read once before its first write: the table,
    /// the names of the new and retired tables, the new table's statement, the statement that
    /// copies rows into it, and the table's own indexes with the temporary names they are built
    /// under.
    struct Copy {
        var table: LiveTable
        /// SQL naming the old table's rowid, and the new table's.
        var rowID: String
        var newRowID: String
        var newName: String
        var retired: String
        var createSQL: String
        /// `INSERT INTO new (...) SELECT ... FROM old`, without its `WHERE`.
        var copySQL: String
        var indexes: [(name: String, sql: String)]
        var indexNames: [String: String]
    }

    func run() throws -> Outcome {
        guard !db.isInsideTransaction else { throw WinnowError.internal("a table rebuild must start outside a transaction") }
        // 1. Foreign keys off, for the whole rebuild (a DROP or RENAME would act on them).
        let foreignKeys = try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") ?? false
        try db.execute(sql: "PRAGMA foreign_keys = OFF")
        guard try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") == false else {
            throw WinnowError.io("cannot switch foreign keys off before rebuilding \(rebuild.table); nothing was changed")
        }
        defer { if foreignKeys { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
        // From here on, every commit of another connection is seen: the copy, the replay and
        // the emptying of the old table leave writers the gap they need from their first batch.
        var gap = WriteGap(settings: settings, db: db)
        var outcome = Outcome()
        let copy = try prepare()
        // A rebuild of this same change killed before its cut-over left the new table, the log
        // and the capture triggers: every write since its copy began is in the log, so the copy
        // goes on from the highest rowid it reached instead of starting again.
        var after = Int64.min
        if try Self.isResumable(db, table: copy.table.name, newName: copy.newName, createSQL: copy.createSQL) {
            after = try Int64.fetchOne(db, sql: "SELECT max(\(copy.newRowID)) FROM main.\(copy.newName.sqlIdentifier)") ?? Int64.min
            outcome.resumed = true
        } else {
            try createNewTable(copy)
        }
        let (copySeconds, chunk) = try copyRows(copy, after: after, outcome: &outcome, gap: &gap)
        try replayChanges(copy, chunk: chunk, outcome: &outcome, gap: &gap)
        try cutOver(copy, chunk: chunk, outcome: &outcome)
        if foreignKeys { try checkForeignKeys(copy) }
        try retireOldRows(copy, copySeconds: copySeconds, outcome: &outcome, gap: &gap)
        return outcome
    }

    /// Reads the table and builds what the steps need; refuses a table it cannot rebuild.
    private func prepare() throws -> Copy {
        guard let table = try SchemaInspector.table(db, named: rebuild.table) else {
            throw WinnowError.refused("cannot rebuild \(rebuild.table): no such table")
        }
        guard table.hasRowID, let rowID = table.rowIDExpression else {
            throw WinnowError.refused("cannot rebuild \(table.name): WITHOUT ROWID tables are not rebuilt online")
        }
        let newName = Self.temporaryName(table.name)
        let createSQL = try MigrationSQL.rebuiltTable(rebuild, currentSQL: table.sql, newName: newName)
        let newColumns = try CreateTableSQL.parse(createSQL).columns.map(\.name)
        // What each new column is filled from: the old column, with a NOT NULL default filling NULLs.
        let fills = Dictionary(rebuild.fills.map { ($0.column.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        var targets: [String] = []
        var sources: [String] = []
        for name in newColumns {
            guard let old = table.column(named: name), old.isStored else { continue }
            targets.append(name.sqlIdentifier)
            sources.append(
                fills[name.lowercased()].map { MigrationSQL.filling(old.name.sqlIdentifier, with: $0) } ?? old.name.sqlIdentifier)
        }
        let keepsRowID = table.rowIDAlias == nil
        let insertColumns = (keepsRowID ? ["rowid"] : []) + targets
        let selectColumns = (keepsRowID ? [rowID] : []) + sources
        // The table's own indexes, kept: built on the new table under temporary names.
        let indexes = try Row.fetchAll(
            db, sql: "SELECT name, sql FROM main.sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
            arguments: [table.name]
        ).map { (name: $0[0] as String, sql: $0[1] as String) }
        return Copy(
            table: table, rowID: rowID, newRowID: table.rowIDAlias.map(\.sqlIdentifier) ?? "rowid", newName: newName,
            retired: Self.retiredName(table.name), createSQL: createSQL,
            copySQL:
                "INSERT INTO \(newName.sqlIdentifier) (\(insertColumns.joined(separator: ", "))) SELECT \(selectColumns.joined(separator: ", ")) FROM main.\(table.name.sqlIdentifier)",
            indexes: indexes,
            indexNames: Dictionary(uniqueKeysWithValues: indexes.enumerated().map { ($1.name, "winnow_rebuild_ix\($0)_\(table.name)") }))
    }

    /// 2. One transaction: the new table, its indexes, the change log and the capture triggers.
    private func createNewTable(_ copy: Copy) throws {
        let table = copy.table
        try db.writeTransaction {
            for trigger in Self.captureTriggers { try db.execute(sql: "DROP TRIGGER IF EXISTS main.\(trigger.sqlIdentifier)") }
            try db.execute(sql: "DROP TABLE IF EXISTS main.\(copy.newName.sqlIdentifier)")
            try db.execute(sql: copy.createSQL)
            for index in copy.indexes {
                try db.execute(sql: try Self.retarget(indexSQL: index.sql, name: copy.indexNames[index.name]!, table: copy.newName))
            }
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS main.\(Self.logTable) (rid INTEGER PRIMARY KEY)")
            try db.execute(sql: "DELETE FROM main.\(Self.logTable)")
            let oldRowID = table.rowIDAlias.map(\.sqlIdentifier) ?? "rowid"
            let t = table.name.sqlIdentifier
            try db.execute(
                sql: """
                    CREATE TRIGGER main.winnow_capture_insert AFTER INSERT ON \(t) BEGIN
                        INSERT OR IGNORE INTO \(Self.logTable) (rid) VALUES (NEW.\(oldRowID)); END;
                    CREATE TRIGGER main.winnow_capture_update AFTER UPDATE ON \(t) BEGIN
                        INSERT OR IGNORE INTO \(Self.logTable) (rid) VALUES (OLD.\(oldRowID));
                        INSERT OR IGNORE INTO \(Self.logTable) (rid) VALUES (NEW.\(oldRowID)); END;
                    CREATE TRIGGER main.winnow_capture_delete AFTER DELETE ON \(t) BEGIN
                        INSERT OR IGNORE INTO \(Self.logTable) (rid) VALUES (OLD.\(oldRowID)); END;
                    """)
            return
        }
    }

    /// 3. Copies the rows after rowid `after` in rowid ranges, one short transaction each;
    /// returns the time the copy took and the size its ranges reached (the replay's chunk).
    private func copyRows(_ copy: Copy, after start: Int64, outcome: inout Outcome, gap: inout WriteGap) throws -> (Double, Int) {
        let total = try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\(rebuild.table.sqlIdentifier)") ?? 0
        var after = start
        var copySeconds = 0.0
        var sizer = BatchSizer(
            configured: max(1000, settings.size * 10), maxTransactionMilliseconds: settings.maxTransactionMilliseconds,
            start: BatchSizer.rowRangeStart)
        while true {
            let started = Date()
            var done = false
            try db.writeTransaction {
                // One pass over the range: copy the next rows in rowid order, then the copy's
                // highest rowid (the same rowids: kept explicitly or by the alias column).
                try db.execute(
                    sql: "\(copy.copySQL) WHERE \(copy.rowID) > ? ORDER BY \(copy.rowID) LIMIT ?", arguments: [after, sizer.current])
                let copied = db.changesCount
                guard copied > 0,
                    let upTo = try Int64.fetchOne(db, sql: "SELECT max(\(copy.newRowID)) FROM main.\(copy.newName.sqlIdentifier)")
                else {
                    done = true
                    return
                }
                outcome.copied += copied
                after = upTo
                return
            }
            if done { break }
            progress(outcome.copied, max(total, outcome.copied))
            outcome.batches += 1
            let seconds = Date().timeIntervalSince(started)
            copySeconds += seconds
            sizer.record(size: sizer.current, seconds: seconds)
            gap.wait(after: seconds, db: db)  // the next step (replay, cut-over) is a write too: let others in first
        }
        return (copySeconds, max(100, sizer.current))
    }

    /// Copies again up to `limit` rows that changed since they were copied (the log's rowids).
    private func replay(_ copy: Copy, limit: Int) throws -> Int {
        let ids = try Int64.fetchAll(db, sql: "SELECT rid FROM main.\(Self.logTable) ORDER BY rid LIMIT ?", arguments: [limit])
        guard !ids.isEmpty else { return 0 }
        let list = ids.map(String.init).joined(separator: ",")
        try db.execute(sql: "DELETE FROM main.\(copy.newName.sqlIdentifier) WHERE \(copy.newRowID) IN (\(list))")
        try db.execute(sql: "\(copy.copySQL) WHERE \(copy.rowID) IN (\(list))")
        try db.execute(sql: "DELETE FROM main.\(Self.logTable) WHERE rid IN (\(list))")
        return ids.count
    }

    /// Re-copies rows that changed meanwhile, in batches, until at most a `chunk` is left.
    private func replayChanges(_ copy: Copy, chunk: Int, outcome: inout Outcome, gap: inout WriteGap) throws {
        while try (Int.fetchOne(db, sql: "SELECT count(*) FROM main.\(Self.logTable)") ?? 0) > chunk {
            let started = Date()
            try db.writeTransaction {
                outcome.replayed += try replay(copy, limit: chunk)
                return
            }
            outcome.batches += 1
            gap.wait(after: Date().timeIntervalSince(started), db: db)
        }
    }

    /// 4. Cut-over, one short transaction: the last changes, the capture triggers off, the old
    /// table aside and the new one in its place with its indexes, triggers, views and
    /// AUTOINCREMENT counter.
    private func cutOver(_ copy: Copy, chunk: Int, outcome: inout Outcome) throws {
        let table = copy.table
        try db.writeTransaction {
            while true {
                let n = try replay(copy, limit: chunk)
                outcome.replayed += n
                if n == 0 { break }
            }
            try db.execute(
                sql:
                    "DROP TRIGGER main.winnow_capture_insert; DROP TRIGGER main.winnow_capture_update; DROP TRIGGER main.winnow_capture_delete"
            )
            // The table's own triggers: dropped here (they would follow the old table aside)
            // and created again on the new one.
            let triggers = try Row.fetchAll(
                db, sql: "SELECT name, sql FROM main.sqlite_master WHERE type = 'trigger' AND tbl_name = ?",
                arguments: [table.name]
            ).map { (name: $0[0] as String, sql: $0[1] as String?) }
            let views = try Row.fetchAll(db, sql: "SELECT name, sql FROM main.sqlite_master WHERE type = 'view'")
                .filter { MigrationPlanner.mentions($0[1], table.name) }
                .map { (name: $0[0] as String, sql: $0[1] as String) }
            for view in views { try db.execute(sql: "DROP VIEW main.\(view.name.sqlIdentifier)") }
            for trigger in triggers { try db.execute(sql: "DROP TRIGGER main.\(trigger.name.sqlIdentifier)") }
            // AUTOINCREMENT never reuses a rowid: keep the old table's counter, not the copy's.
            let sequence =
                try db.tableExists("sqlite_sequence")
                ? try Int64.fetchOne(db, sql: "SELECT seq FROM main.sqlite_sequence WHERE name = ?", arguments: [table.name]) : nil
            // Legacy rename: references to the table's name elsewhere (foreign keys of children,
            // triggers of other tables) already say the final name and must stay as written.
            try db.execute(sql: "PRAGMA legacy_alter_table = ON")
            defer { try? db.execute(sql: "PRAGMA legacy_alter_table = OFF") }
            // The old table goes aside, not away: a DROP would free all of its pages here. (No
            // retired copy is left from before: the runner finished those before any step.)
            try db.execute(sql: "ALTER TABLE main.\(table.name.sqlIdentifier) RENAME TO \(copy.retired.sqlIdentifier)")
            try db.execute(sql: "ALTER TABLE main.\(copy.newName.sqlIdentifier) RENAME TO \(table.name.sqlIdentifier)")
            try renameIndexes(
                copy.indexes.enumerated().map { ("winnow_retired_ix\($0)_\(table.name)", $1.name) }
                    + copy.indexes.map { ($0.name, copy.indexNames[$0.name]!) })
            if let sequence {
                try db.execute(
                    sql: "UPDATE main.sqlite_sequence SET seq = ? WHERE name = ? AND seq < ?", arguments: [sequence, table.name, sequence])
                if db.changesCount == 0,
                    try Int64.fetchOne(db, sql: "SELECT seq FROM main.sqlite_sequence WHERE name = ?", arguments: [table.name]) == nil
                {
                    try db.execute(sql: "INSERT INTO main.sqlite_sequence (name, seq) VALUES (?, ?)", arguments: [table.name, sequence])
                }
            }
            for sql in triggers.compactMap(\.sql) { try db.execute(sql: sql) }
            for view in views { try db.execute(sql: view.sql) }
            try db.execute(sql: "DROP TABLE main.\(Self.logTable)")
            return
        }
        outcome.batches += 1
    }

    /// 5. Foreign keys back on; the rebuilt table must satisfy them.
    private func checkForeignKeys(_ copy: Copy) throws {
        try db.execute(sql: "PRAGMA foreign_keys = ON")
        let violations = try Row.fetchAll(db, sql: "SELECT * FROM pragma_foreign_key_check(?)", arguments: [copy.table.name])
        if !violations.isEmpty {
            throw WinnowError.io("\(copy.table.name) has \(violations.count) foreign key violation(s) after its rebuild")
        }
    }

    /// 6. The old rows: dropped at once when that fits in `max_transaction_ms` (a DROP frees a
    /// row's pages in about half the time its copy took; docs/reference.md section 3), else
    /// emptied in short transactions first.
    private func retireOldRows(_ copy: Copy, copySeconds: Double, outcome: inout Outcome, gap: inout WriteGap) throws {
        if Self.dropsAtOnce(
            copySeconds: copySeconds, copied: outcome.copied, rows: outcome.copied + outcome.replayed,
            maxTransactionMilliseconds: settings.maxTransactionMilliseconds)
        {
            try db.writeTransaction { try db.execute(sql: "DROP TABLE main.\(copy.retired.sqlIdentifier)") }
            outcome.batches += 1
        } else {
            outcome.batches += try Self.drain(db, table: copy.retired, settings: settings, gap: &gap)
        }
    }

    /// Gives the indexes built under temporary names their real names. SQLite has no RENAME
    /// INDEX; the index's entry in `sqlite_master` is renamed in place (as SQLite's documented
    /// procedure for schema changes does), inside the cut-over transaction.
    private func renameIndexes(_ pairs: [(final: String, temporary: String)]) throws {
        guard !pairs.isEmpty else { return }
        let version = try Int.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
        try db.execute(sql: "PRAGMA writable_schema = ON")
        defer { try? db.execute(sql: "PRAGMA writable_schema = OFF") }
        for (final, temporary) in pairs {
            guard
                let sql = try String.fetchOne(
                    db, sql: "SELECT sql FROM main.sqlite_master WHERE type = 'index' AND name = ?", arguments: [temporary])
            else {
                throw WinnowError.internal("index \(temporary) vanished during a rebuild")
            }
            let renamed = try Self.retarget(indexSQL: sql, name: final, table: nil)
            try db.execute(
                sql: "UPDATE main.sqlite_master SET name = ?, sql = ? WHERE type = 'index' AND name = ?",
                arguments: [final, renamed, temporary])
        }
        try db.execute(sql: "PRAGMA schema_version = \(version + 1)")
    }

    /// An index's CREATE statement with another index name and (optionally) table name.
    static func retarget(indexSQL: String, name: String, table: String?) throws -> String {
        var tokens = SQLTokenizer.tokenize(indexSQL)
        func nextWord(after index: Int) -> Int? {
            tokens[(index + 1)...].firstIndex { !$0.isTrivia }
        }
        guard let indexKeyword = tokens.firstIndex(where: { $0.isKeyword("INDEX") }) else {
            throw WinnowError.internal("cannot read index statement \(indexSQL)")
        }
        var nameAt = nextWord(after: indexKeyword)
        if let at = nameAt, tokens[at].isKeyword("IF") {  // IF NOT EXISTS
            nameAt = nextWord(after: nextWord(after: nextWord(after: at)!)!)
        }
        guard var at = nameAt else { throw WinnowError.internal("cannot read index statement \(indexSQL)") }
        // A schema-qualified name: main.ix
        if let dot = nextWord(after: at), tokens[dot].text == ".", let real = nextWord(after: dot) {
            tokens.removeSubrange(at...dot)
            at = real - (dot - at + 1)
        }
        tokens[at] = SQLToken(kind: .quotedIdentifier, text: name.sqlIdentifier)
        if let table {
            guard let on = tokens[(at + 1)...].firstIndex(where: { $0.isKeyword("ON") }), let tableAt = nextWord(after: on) else {
                throw WinnowError.internal("cannot read index statement \(indexSQL)")
            }
            tokens[tableAt] = SQLToken(kind: .quotedIdentifier, text: table.sqlIdentifier)
        }
        return SQLTokenizer.render(tokens)
    }
}
