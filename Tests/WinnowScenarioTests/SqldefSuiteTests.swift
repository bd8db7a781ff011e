import Foundation
import GRDB
import XCTest
import Yams
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// A peer's test suite: the SQLite cases of sqldef (shared/datasets/sqldef-sqlite3/*.yml, see the
/// datasets README). Every case is a `current` schema (with rows) migrated by winnow to the
/// `desired` schema. The right answer is either the desired schema (as far as the schema-file
/// format describes it) with every row kept and nothing left to do, or a clean refusal (exit 65,
/// nothing changed) for a change that is not lightweight.
final class SqldefSuiteTests: XCTestCase {
    func testSqldefCasesMigrateOrAreRefusedCleanly() throws {
        // Tests/WinnowScenarioTests/SqldefSuiteTests.swift -> package root -> ../shared/datasets/sqldef-sqlite3
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let folder = packageRoot.deletingLastPathComponent()
            .appendingPathComponent("shared/datasets/sqldef-sqlite3").standardizedFileURL
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw XCTSkip("sqldef dataset not found at \(folder.path)")
        }
        let cases = try SqldefSuite.loadCases(folder)
        guard !cases.isEmpty else { throw XCTSkip("no sqldef cases in \(folder.path)") }

        let scratch = try TestSupport.scratchDirectory("SqldefSuite")
        defer { try? FileManager.default.removeItem(at: scratch) }

        let started = Date()
        var outcomes: [SqldefSuite.Outcome] = []
        for (index, testCase) in cases.enumerated() {
            let dir = scratch.appendingPathComponent(String(format: "%02d-", index) + testCase.name.filter { $0.isLetter || $0.isNumber })
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            var outcome: SqldefSuite.Outcome
            do {
                outcome = try SqldefSuite.runCase(testCase, in: dir)
            } catch {
                outcome = SqldefSuite.Outcome(testCase: testCase, kind: .fail, detail: "test harness error: \(error)")
            }
            outcomes.append(outcome)
        }
        let seconds = Date().timeIntervalSince(started)

        // The report, for a reviewer.
        let passed = outcomes.filter { $0.kind == .pass }
        let refused = outcomes.filter { $0.kind == .refused }
        let failed = outcomes.filter { $0.kind == .fail }
        var report = "\nsqldef SQLite suite: \(cases.count) cases from \(folder.path)\n"
        report += "case".padding(toLength: 46, withPad: " ", startingAt: 0) + "result   data-loss  detail\n"
        report += String(repeating: "-", count: 110) + "\n"
        for outcome in outcomes {
            let name = "\(outcome.testCase.file.replacingOccurrences(of: ".yml", with: ""))/\(outcome.testCase.name)"
            report += name.padding(toLength: max(46, name.count + 1), withPad: " ", startingAt: 0)
            report += outcome.kind.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)
            report += (outcome.allowDataLoss ? "yes" : "no").padding(toLength: 11, withPad: " ", startingAt: 0)
            report += outcome.detail.replacingOccurrences(of: "\n", with: " | ") + "\n"
            for note in outcome.notes { report += "      note: \(note)\n" }
        }
        report += String(repeating: "-", count: 110) + "\n"
        report +=
            "PASS \(passed.count)  REFUSED \(refused.count)  FAIL \(failed.count)  (of \(cases.count), \(String(format: "%.1f", seconds)) s)\n"
        if !refused.isEmpty {
            report += "\nRefusal messages (each should say which table and what change is not lightweight):\n"
            for outcome in refused { report += "  \(outcome.testCase.name): \(outcome.detail)\n" }
        }
        print(report)

        XCTAssertEqual(cases.count, 65, "sqldef-sqlite3 holds 65 cases (datasets README)")
        XCTAssertEqual(failed.count, 0, "failing cases:\n" + failed.map { "\($0.testCase.name): \($0.detail)" }.joined(separator: "\n"))
        XCTAssertEqual(passed.count + refused.count, cases.count)
        for outcome in refused {
            XCTAssertTrue(
                SqldefSuite.isSensibleRefusal(outcome.detail, testCase: outcome.testCase),
                "\(outcome.testCase.name): the refusal should name the table and the change that is not lightweight: \(outcome.detail)")
        }
        XCTAssertLessThan(seconds, 60, "the suite should stay fast")
    }
}

// MARK: - The harness

private enum SqldefSuite {
    static let knownKeys: Set<String> = ["current", "desired", "up", "down", "enable_drop", "legacy_ignore_quotes"]

    struct Case {
        var file: String
        var name: String
        var current: String
        var desired: String
        /// sqldef's `enable_drop` (only in tests_enable_drop.yml): the case is about dropping.
        var enableDrop: Bool?
        var unknownKeys: [String]
    }

    enum Kind: String { case pass = "PASS", refused = "REFUSED", fail = "FAIL" }

    struct Outcome {
        var testCase: Case
        var kind: Kind
        var detail: String
        var allowDataLoss = false
        var notes: [String] = []

        init(testCase: Case, kind: Kind, detail: String, allowDataLoss: Bool = false, notes: [String] = []) {
            self.testCase = testCase
            self.kind = kind
            self.detail = detail
            self.allowDataLoss = allowDataLoss
            self.notes = notes
        }
    }

    struct HarnessError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    // MARK: cases

    static func loadCases(_ folder: URL) throws -> [Case] {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".yml") }.sorted()
        var cases: [Case] = []
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            guard let root = try Yams.compose(yaml: text), case let .mapping(mapping) = root else {
                throw HarnessError("\(file): expected a mapping of test cases")
            }
            for (key, value) in mapping {
                guard let name = key.string, case let .mapping(body) = value else {
                    throw HarnessError("\(file): case \(key) is not a mapping")
                }
                let keys = body.keys.compactMap(\.string)
                cases.append(
                    Case(
                        file: file, name: name,
                        current: body["current"]?.string ?? "",
                        desired: body["desired"]?.string ?? "",
                        enableDrop: body["enable_drop"]?.bool,
                        unknownKeys: keys.filter { !knownKeys.contains($0) }))
            }
        }
        return cases
    }

    // MARK: rename hints

    enum HintTarget: Equatable {
        case table(String)
        case column(table: String, column: String)
        case index(String)
    }

    struct Hint {
        var target: HintTarget
        var from: String
    }

    /// A leading SQL identifier: "x", 'x', `x`, [x] or a bare word; with the rest of the text.
    static func identifier(_ text: Substring) -> (String, Substring)? {
        let s = text.drop { $0.isWhitespace }
        guard let first = s.first else { return nil }
        let closers: [Character: Character] = ["\"": "\"", "'": "'", "`": "`", "[": "]"]
        if let closer = closers[first] {
            var name = ""
            var rest = s.dropFirst()
            while let c = rest.first {
                rest = rest.dropFirst()
                if c == closer {
                    if closer != "]", rest.first == closer {
                        name.append(c)
                        rest = rest.dropFirst()
                        continue
                    }
                    return (name, rest)
                }
                name.append(c)
            }
            return nil
        }
        let word = s.prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "$" }
        guard !word.isEmpty else { return nil }
        return (String(word), s.dropFirst(word.count))
    }

    static func regex(_ pattern: String) -> NSRegularExpression {
        try! NSRegularExpression(pattern: pattern, options: [.caseInsensitive])
    }

    static let hintPattern = regex(#"@renamed\s+from\s*=\s*("[^"]*"|'[^']*'|`[^`]*`|\[[^\]]*\]|[^\s*]+)"#)
    static let createTablePattern = regex(#"^\s*CREATE\s+(?:TEMP\s+|TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"#)
    static let createIndexPattern = regex(#"^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?"#)
    static let createOtherPattern = regex(#"^\s*CREATE\s+"#)

    static func match(_ pattern: NSRegularExpression, _ line: String) -> NSTextCheckingResult? {
        pattern.firstMatch(in: line, range: NSRange(line.startIndex..., in: line))
    }

    /// The `-- @renamed from=OLD` and `/* @renamed from=OLD */` hints of desired SQL, attached to
    /// the table, column or index they follow.
    static func renameHints(_ sql: String) throws -> [Hint] {
        var hints: [Hint] = []
        var table: String?
        for rawLine in sql.components(separatedBy: .newlines) {
            let line = rawLine
            var lineTarget: HintTarget?
            if let m = match(createTablePattern, line) {
                let rest = line[Range(m.range, in: line)!.upperBound...]
                guard let (name, _) = identifier(rest) else { throw HarnessError("cannot read the table name in: \(line)") }
                table = name
                lineTarget = .table(name)
            } else if let m = match(createIndexPattern, line) {
                let rest = line[Range(m.range, in: line)!.upperBound...]
                lineTarget = identifier(rest).map { .index($0.0) }
                table = nil
            } else if match(createOtherPattern, line) != nil {
                table = nil
            } else if let table, let (column, _) = identifier(Substring(line)) {
                lineTarget = .column(table: table, column: column)
            }
            guard let m = match(hintPattern, line) else { continue }
            guard let lineTarget else { throw HarnessError("a rename hint with nothing to attach it to: \(line)") }
            var old = String(line[Range(m.range(at: 1), in: line)!])
            if let (unquoted, rest) = identifier(Substring(old)), rest.trimmingCharacters(in: .whitespaces).isEmpty { old = unquoted }
            hints.append(Hint(target: lineTarget, from: old))
        }
        return hints
    }

    /// The desired schema file: `inspect` of a database built from `desired`, version 2, with the
    /// rename hints carried over as `renamed_from`.
    static func desiredSchema(inspected yaml: String, hints: [Hint], notes: inout [String]) throws -> SchemaModel {
        var model = try SchemaLoader.decode(yaml: yaml, file: "desired.yaml")
        model.version = 2
        for hint in hints {
            switch hint.target {
            case let .table(name):
                guard let t = model.tables.firstIndex(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) else {
                    throw HarnessError("rename hint for table '\(name)', which the inspected schema lacks")
                }
                model.tables[t].renamedFrom.append(hint.from)
            case let .column(table, column):
                guard let t = model.tables.firstIndex(where: { $0.name.caseInsensitiveCompare(table) == .orderedSame }),
                    let c = model.tables[t].columns.firstIndex(where: { $0.name.caseInsensitiveCompare(column) == .orderedSame })
                else {
                    throw HarnessError("rename hint for column '\(table).\(column)', which the inspected schema lacks")
                }
                model.tables[t].columns[c].renamedFrom.append(hint.from)
            case let .index(name):
                notes.append("index rename hint \(hint.from) -> \(name): the schema format has no index renames (drop + create)")
            }
        }
        return model
    }

    // MARK: databases

    static func queue(_ path: String, readonly: Bool = false) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = readonly
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    static func build(_ path: String, sql: String) throws {
        let q = try queue(path)
        defer { try? q.close() }
        try q.write { db in
            let trimmed = sql.trimmingCharacters(in: .whitespacesAndNewlines)
            try db.execute(sql: trimmed.isEmpty ? "PRAGMA user_version = 0" : sql)
        }
    }

    struct ColumnInfo {
        var name: String
        var type: String
        var notNull: Bool
        var pk: Int
        var hidden: Int
    }

    struct ForeignKeyInfo {
        var from: String
        var table: String
        var to: String?
    }

    struct TableInfo {
        var name: String
        var sql: String
        var isVirtual: Bool
        var columns: [ColumnInfo]
        var foreignKeys: [ForeignKeyInfo]
        var stored: [ColumnInfo] { columns.filter { $0.hidden == 0 } }
    }

    static func tables(_ db: Database) throws -> [TableInfo] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT name, coalesce(sql, '') FROM main.sqlite_master
                WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'winnow\\_%' ESCAPE '\\'
                ORDER BY rowid
                """)
        return try rows.map { row in
            let name: String = row[0]
            let sql: String = row[1]
            let isVirtual = sql.range(of: #"^\s*CREATE\s+VIRTUAL\s+TABLE"#, options: [.regularExpression, .caseInsensitive]) != nil
            if isVirtual { return TableInfo(name: name, sql: sql, isVirtual: true, columns: [], foreignKeys: []) }
            let columns = try Row.fetchAll(
                db, sql: "SELECT name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?) ORDER BY cid",
                arguments: [name]
            ).map {
                ColumnInfo(name: $0[0], type: $0[1] ?? "", notNull: $0[2], pk: $0[3], hidden: $0[4])
            }
            let fks = try Row.fetchAll(
                db, sql: "SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(?) ORDER BY id, seq",
                arguments: [name]
            ).map { ForeignKeyInfo(from: $0[0], table: $0[1], to: $0[2]) }
            return TableInfo(name: name, sql: sql, isVirtual: false, columns: columns, foreignKeys: fks)
        }
    }

    /// A deterministic value for row `i` of a column, by SQLite's type-affinity rules (and
    /// STRICT's types): distinct per row (unique constraints) and per column (swaps show).
    static func value(_ column: ColumnInfo, position: Int, row i: Int) -> DatabaseValue {
        let t = column.type.uppercased()
        if t.contains("INT") { return (column.pk > 0 ? Int64(i) : Int64(i * 100 + position)).databaseValue }
        if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") { return "\(column.name)-\(i)".databaseValue }
        if t.contains("BLOB") { return Data([UInt8(i), UInt8(position), 0xAB]).databaseValue }
        if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") { return (Double(i * 100 + position) + 0.5).databaseValue }
        if t.isEmpty { return "\(column.name)-\(i)".databaseValue }
        if t.contains("DATE") || t.contains("TIME") { return "2024-01-0\(i) 12:00:0\(position % 10)".databaseValue }
        return Int64(i * 100 + position).databaseValue  // NUMERIC affinity, ANY
    }

    /// Where `seed` keeps the rowid of a row it inserted (no column name can hold a NUL).
    static let rowIDKey = "\u{0}rowid"

    /// The `INTEGER PRIMARY KEY` column of a rowid table, if any.
    static func rowIDAlias(_ table: TableInfo) -> String? {
        let key = table.columns.filter { $0.pk > 0 }
        guard key.count == 1, key[0].type.uppercased() == "INTEGER",
            table.sql.range(of: "WITHOUT ROWID", options: .caseInsensitive) == nil
        else { return nil }
        return key[0].name
    }

    /// Three rows in every table that is not virtual, parents before children, foreign keys
    /// pointing at the parent's row of the same number.
    static func seed(_ path: String) throws {
        let q = try queue(path)
        defer { try? q.close() }
        try q.write { db in
            let all = try tables(db).filter { !$0.isVirtual }
            func key(_ s: String) -> String { s.lowercased() }
            var ordered: [TableInfo] = []
            var pending = all
            while !pending.isEmpty {
                let ready = pending.filter { table in
                    table.foreignKeys.allSatisfy { fk in
                        key(fk.table) == key(table.name) || ordered.contains { key($0.name) == key(fk.table) }
                            || !all.contains { key($0.name) == key(fk.table) }
                    }
                }
                let next = ready.isEmpty ? [pending[0]] : ready
                ordered += next
                pending.removeAll { p in next.contains { key($0.name) == key(p.name) } }
            }
            var inserted: [String: [[String: DatabaseValue]]] = [:]
            for table in ordered {
                let stored = table.stored
                var rows: [[String: DatabaseValue]] = []
                for i in 1...3 {
                    var row: [String: DatabaseValue] = [:]
                    for (position, column) in stored.enumerated() { row[key(column.name)] = value(column, position: position, row: i) }
                    // A rowid alias takes the next free number: a trigger may have filled the table already.
                    if let alias = rowIDAlias(table) {
                        let next =
                            try Int64.fetchOne(
                                db,
                                sql:
                                    "SELECT coalesce(max(\(alias.quotedDatabaseIdentifier)), 0) + 1 FROM \(table.name.quotedDatabaseIdentifier)"
                            ) ?? Int64(i)
                        row[key(alias)] = next.databaseValue
                    }
                    for fk in table.foreignKeys {
                        let parentRow = key(fk.table) == key(table.name) ? row : inserted[key(fk.table)]?[i - 1]
                        guard let parentRow else {
                            row[key(fk.from)] = .null
                            continue
                        }
                        let parent = all.first { key($0.name) == key(fk.table) }
                        if let target = fk.to ?? parent?.columns.first(where: { $0.pk == 1 })?.name {
                            row[key(fk.from)] = parentRow[key(target)] ?? .null
                        } else {
                            row[key(fk.from)] = parentRow[rowIDKey] ?? .null  // the parent's rowid
                        }
                    }
                    if stored.isEmpty {
                        try db.execute(sql: "INSERT INTO \(table.name.quotedDatabaseIdentifier) DEFAULT VALUES")
                    } else {
                        try db.execute(
                            sql:
                                "INSERT INTO \(table.name.quotedDatabaseIdentifier) (\(stored.map { $0.name.quotedDatabaseIdentifier }.joined(separator: ", "))) VALUES (\(stored.map { _ in "?" }.joined(separator: ", ")))",
                            arguments: StatementArguments(stored.map { row[key($0.name)]! }))
                    }
                    row[rowIDKey] = db.lastInsertedRowID.databaseValue
                    rows.append(row)
                }
                inserted[key(table.name)] = rows
            }
        }
    }

    /// Everything of a database that is not winnow's: its user objects' SQL and every stored
    /// column of every user table.
    struct Snapshot: Equatable {
        struct Rows: Equatable {
            var name: String
            var columns: [String]
            var rows: [[DatabaseValue]]
        }
        var objects: [String]
        var tables: [String: Rows]
        /// Views and triggers, as "view NAME" / "trigger NAME".
        var extras: [String]
    }

    static func snapshot(_ path: String) throws -> Snapshot {
        let q = try queue(path, readonly: true)
        defer { try? q.close() }
        return try q.read { db in
            let objects = try String.fetchAll(
                db,
                sql: """
                    SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM main.sqlite_master
                    WHERE name NOT LIKE 'winnow\\_%' ESCAPE '\\' AND tbl_name NOT LIKE 'winnow\\_%' ESCAPE '\\' ORDER BY type, name
                    """)
            let extras = try String.fetchAll(
                db,
                sql: """
                    SELECT type || ' ' || name FROM main.sqlite_master WHERE type IN ('view', 'trigger')
                    AND name NOT LIKE 'winnow\\_%' ESCAPE '\\' ORDER BY type, name
                    """)
            var result: [String: Snapshot.Rows] = [:]
            for table in try tables(db) where !table.isVirtual {
                let columns = table.stored.map(\.name)
                let select = columns.isEmpty ? "SELECT 1" : columns.map { $0.quotedDatabaseIdentifier }.joined(separator: ", ")
                var rows = try Row.fetchAll(db, sql: "SELECT \(select) FROM \(table.name.quotedDatabaseIdentifier)")
                    .map { Array($0.databaseValues) }
                rows.sort { render($0) < render($1) }
                result[table.name.lowercased()] = Snapshot.Rows(name: table.name, columns: columns, rows: rows)
            }
            return Snapshot(objects: objects, tables: result, extras: extras)
        }
    }

    static func render(_ row: [DatabaseValue]) -> String {
        row.map { value -> String in
            switch value.storage {
            case .null: return "NULL"
            case let .int64(v): return "i:\(v)"
            case let .double(v): return "r:\(v)"
            case let .string(v): return "t:\(v.debugDescription)"
            case let .blob(v): return "b:\(v.map { String(format: "%02x", $0) }.joined())"
            }
        }.joined(separator: ", ")
    }

    static func integrity(_ path: String) throws -> String {
        let q = try queue(path, readonly: true)
        defer { try? q.close() }
        return try q.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
    }

    /// A model for comparison: no version, no hints, tables in name order (SQLite matches table
    /// names case-insensitively), indexes in name order.
    static func comparable(_ model: SchemaModel) -> SchemaModel {
        var m = model
        m.version = 1
        m.tables = m.tables.map { table in
            var t = table
            t.name = t.name.lowercased()
            t.renamedFrom = []
            t.location = nil
            t.columns = t.columns.map { column in
                var c = column
                c.renamedFrom = []
                c.location = nil
                c.references = c.references.map { ColumnReferenceModel(table: $0.table.lowercased(), column: $0.column) }
                return c
            }
            t.indexes.sort { $0.name.lowercased() < $1.name.lowercased() }
            return t
        }.sorted { $0.name < $1.name }
        return m
    }

    // MARK: one case

    static func runCase(_ testCase: Case, in dir: URL) throws -> Outcome {
        var notes: [String] = []
        if !testCase.unknownKeys.isEmpty {
            notes.append("keys not understood by this harness: \(testCase.unknownKeys.joined(separator: ", "))")
        }
        let currentPath = dir.appendingPathComponent("current.sqlite").path
        let desiredPath = dir.appendingPathComponent("desired.sqlite").path
        let schemaPath = dir.appendingPathComponent("schema.yaml").path
        let jobPath = dir.appendingPathComponent("job.yaml").path

        // 1. current, with rows.
        try build(currentPath, sql: testCase.current)
        try seed(currentPath)
        let before = try snapshot(currentPath)
        let currentModel = try SchemaLoader.decode(yaml: try SQLiteBackend.inspectSchema(database: currentPath), file: "current.yaml")

        // 2. desired, inspected, with the rename hints.
        try build(desiredPath, sql: testCase.desired)
        let desiredInspected = try SQLiteBackend.inspectSchema(database: desiredPath)
        var target = try desiredSchema(inspected: desiredInspected, hints: try renameHints(testCase.desired), notes: &notes)
        let desiredSnapshot = try snapshot(desiredPath)
        notes += outsideTheFormat(testCase, desiredPath: desiredPath, desired: desiredSnapshot, current: before)

        // What the target drops: a table, column or index of current that it neither keeps nor
        // renames. sqldef drops them, except in the cases marked `enable_drop: false`, where it
        // skips every DROP. A schema file drops only what it names, so the translation names each
        // drop the case intends; where the case skips drops, it names none and expects them kept.
        func mapped(in model: SchemaModel, for old: String) -> TableModel? {
            model.tables.first { $0.renamedFrom.contains { $0.caseInsensitiveCompare(old) == .orderedSame } }
                ?? model.table(named: old)
        }
        func newColumn(in table: TableModel, for old: String) -> ColumnModel? {
            table.columns.first { $0.renamedFrom.contains { $0.caseInsensitiveCompare(old) == .orderedSame } }
                ?? table.column(named: old)
        }
        let intendsDrops = testCase.enableDrop != false
        var drops: [String] = []
        var expectation = target
        for table in currentModel.tables {
            guard let kept = mapped(in: target, for: table.name),
                let position = target.tables.firstIndex(where: { $0.name == kept.name })
            else {
                drops.append("table \(table.name)")
                if intendsDrops { target.droppedTables.append(DroppedName(table.name)) } else { expectation.tables.append(table) }
                continue
            }
            for column in table.columns where newColumn(in: kept, for: column.name) == nil {
                drops.append("column \(table.name).\(column.name)")
                if intendsDrops {
                    target.tables[position].dropped.append(DroppedName(column.name))
                } else {
                    expectation.tables[position].columns.append(column)
                }
            }
            for index in table.indexes where !kept.indexes.contains(where: { $0.name.caseInsensitiveCompare(index.name) == .orderedSame }) {
                drops.append("index \(index.name)")
                if intendsDrops {
                    target.tables[position].droppedIndexes.append(DroppedName(index.name))
                } else {
                    expectation.tables[position].indexes.append(index)
                }
            }
        }
        let allowDataLoss = testCase.enableDrop == true || (intendsDrops && drops.contains { !$0.hasPrefix("index ") })
        if !drops.isEmpty { notes.append("\(intendsDrops ? "drops" : "keeps (enable_drop: false)") \(drops.joined(separator: ", "))") }
        try TestSupport.writeFile(try SchemaPrinter.render(target) + "\n", to: schemaPath)
        func newTable(for old: String) -> TableModel? { mapped(in: expectation, for: old) }

        // 3. the job.
        try TestSupport.writeFile(
            """
            version: 1
            database: current.sqlite
            schema: schema.yaml
            allow_data_loss: \(allowDataLoss)

            """, to: jobPath)
        let job = try JobLoader.load(path: jobPath)
        func outcome(_ kind: Kind, _ detail: String) -> Outcome {
            Outcome(testCase: testCase, kind: kind, detail: detail, allowDataLoss: allowDataLoss, notes: notes)
        }

        let summary: RunSummary
        do {
            summary = try SQLiteBackend.run(job)
        } catch let error as WinnowError {
            guard error.exitCode == 65 else { return outcome(.fail, "run failed with exit \(error.exitCode): \(error.description)") }
            let after = try snapshot(currentPath)
            if after.objects != before.objects { return outcome(.fail, "refused (\(error.description)) but the schema changed") }
            if after.tables != before.tables { return outcome(.fail, "refused (\(error.description)) but rows changed") }
            return outcome(.refused, error.description)
        } catch {
            return outcome(.fail, "run threw a non-winnow error: \(error)")
        }

        // 4. the result.
        var problems: [String] = []
        let migratedInspected = try SQLiteBackend.inspectSchema(database: currentPath)
        let migratedModel = try SchemaLoader.decode(yaml: migratedInspected, file: "migrated.yaml")
        var desiredModel = try SchemaLoader.decode(yaml: desiredInspected, file: "desired.yaml")
        if !intendsDrops {
            // The database the case expects: desired, plus what its skipped drops keep.
            for table in expectation.tables where desiredModel.table(named: table.name) == nil { desiredModel.tables.append(table) }
            for (position, table) in desiredModel.tables.enumerated() {
                guard let kept = expectation.table(named: table.name) else { continue }
                desiredModel.tables[position].columns += kept.columns.filter { table.column(named: $0.name) == nil }
                desiredModel.tables[position].indexes += kept.indexes.filter { index in
                    !table.indexes.contains { $0.name.caseInsensitiveCompare(index.name) == .orderedSame }
                }
            }
        }
        let migratedComparable = comparable(migratedModel)
        let desiredComparable = comparable(desiredModel)
        if migratedComparable != desiredComparable {
            let drift = migratedModel.drift(to: desiredModel).map(\.description)
            if drift.isEmpty {
                problems.append(
                    "schema differs in order only: migrated\n\(try SchemaPrinter.render(migratedComparable))\ndesired\n\(try SchemaPrinter.render(desiredComparable))"
                )
            } else {
                problems.append("schema differs from desired: \(drift.joined(separator: "; "))")
            }
        } else {
            let exact = migratedModel.tables.map(\.name).sorted()
            let wanted = desiredModel.tables.map(\.name).sorted()
            if exact != wanted { notes.append("table names differ in case only: \(exact) vs desired \(wanted)") }
        }

        let after = try snapshot(currentPath)
        var rowsChecked = 0
        for (_, old) in before.tables.sorted(by: { $0.key < $1.key }) {
            guard let kept = newTable(for: old.name) else { continue }
            guard let now = after.tables[kept.name.lowercased()] else {
                problems.append("table \(old.name) (kept as \(kept.name)) is missing after the migration")
                continue
            }
            var oldIndexes: [Int] = []
            var newIndexes: [Int] = []
            for (index, column) in old.columns.enumerated() {
                guard let keptColumn = newColumn(in: kept, for: column) else { continue }
                guard let position = now.columns.firstIndex(where: { $0.caseInsensitiveCompare(keptColumn.name) == .orderedSame }) else {
                    problems.append("column \(old.name).\(column) (kept as \(keptColumn.name)) is missing after the migration")
                    continue
                }
                oldIndexes.append(index)
                newIndexes.append(position)
            }
            let expected = old.rows.map { row in render(oldIndexes.map { row[$0] }) }.sorted()
            let actual = now.rows.map { row in render(newIndexes.map { row[$0] }) }.sorted()
            rowsChecked += expected.count
            if expected != actual {
                problems.append("rows of \(old.name) changed: before \(expected), after \(actual)")
            }
        }
        let lost = before.extras.filter { !after.extras.contains($0) && desiredSnapshot.extras.contains($0) }
        if !lost.isEmpty { notes.append("lost \(lost.joined(separator: ", ")) that both current and desired have") }

        let integrity = try integrity(currentPath)
        if integrity != "ok" { problems.append("integrity_check: \(integrity)") }

        do {
            let again = try SQLiteBackend.plan(job)
            if !again.migration.isEmpty || again.migrationSteps != 0 {
                problems.append(
                    "a second plan still has \(again.migration.count) step(s): \(again.migration.map(\.summary).joined(separator: "; "))")
            }
        } catch {
            problems.append("a second plan failed: \(error)")
        }

        if !problems.isEmpty { return outcome(.fail, problems.joined(separator: "; ")) }
        let steps = summary.migration.map(\.summary)
        let done = steps.isEmpty ? "no steps" : "\(steps.count) step(s): \(steps.joined(separator: "; "))"
        return outcome(.pass, "\(done); \(rowsChecked) row(s) kept")
    }

    /// What the case has that the schema-file format does not describe (not compared).
    static func outsideTheFormat(_ testCase: Case, desiredPath: String, desired: Snapshot, current: Snapshot) -> [String] {
        var notes: [String] = []
        let sql = testCase.desired.uppercased()
        if sql.range(of: #"\)\s*STRICT"#, options: .regularExpression) != nil || sql.contains(", STRICT") {
            notes.append("desired STRICT table option (outside the format)")
        }
        if sql.contains("WITHOUT ROWID") { notes.append("desired WITHOUT ROWID (outside the format)") }
        if sql.contains("CHECK") { notes.append("desired CHECK constraint (outside the format)") }
        if let info = try? queue(desiredPath, readonly: true).read({ db -> (generated: [String], partial: [String], constraint: [String]) in
            var generated: [String] = []
            var partial: [String] = []
            var constraint: [String] = []
            for table in try tables(db) where !table.isVirtual {
                generated += table.columns.filter { $0.hidden != 0 }.map { "\(table.name).\($0.name)" }
                for row in try Row.fetchAll(db, sql: "SELECT name, origin, partial FROM pragma_index_list(?)", arguments: [table.name]) {
                    if (row[2] as Int) == 1 { partial.append(row[0]) }
                    if (row[1] as String) == "u" { constraint.append("\(table.name)(\(row[0] as String))") }
                }
            }
            return (generated, partial, constraint)
        }) {
            if !info.generated.isEmpty {
                notes.append("generated column(s) \(info.generated.joined(separator: ", ")) (outside the format)")
            }
            if !info.partial.isEmpty { notes.append("partial index(es) \(info.partial.joined(separator: ", ")) (outside the format)") }
            if !info.constraint.isEmpty {
                notes.append("UNIQUE constraint(s) \(info.constraint.joined(separator: ", ")) (outside the format)")
            }
        }
        if !desired.extras.isEmpty || !current.extras.isEmpty {
            notes.append(
                "views/triggers (not compared): current [\(current.extras.joined(separator: ", "))], desired [\(desired.extras.joined(separator: ", "))]"
            )
        }
        return notes
    }

    /// A refusal worth showing an operator: it names a table of the case and a column (or the
    /// primary key) whose change is not lightweight.
    static func isSensibleRefusal(_ message: String, testCase: Case) -> Bool {
        // Judge the words after the schema file's path (the scratch path holds the case name).
        let lower = (message.range(of: "schema.yaml:").map { String(message[$0.upperBound...]) } ?? message).lowercased()
        let current = tableAndColumnNames(testCase.current)
        let desired = tableAndColumnNames(testCase.desired)
        let namesTable = (current.tables + desired.tables).contains { lower.contains($0.lowercased()) }
        let namesColumn = (current.columns + desired.columns).contains { lower.contains($0.lowercased()) } || lower.contains("primary key")
        let namesChange = ["type", "primary key", "not null", "nullable", "lightweight"].contains { lower.contains($0) }
        return namesTable && namesColumn && namesChange
    }

    static func tableAndColumnNames(_ sql: String) -> (tables: [String], columns: [String]) {
        guard !sql.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty,
            let q = try? DatabaseQueue(),  // in memory
            let result = try? q.write({ db -> ([String], [String]) in
                try db.execute(sql: sql)
                let all = try tables(db)
                return (all.map(\.name), all.flatMap { $0.columns.map(\.name) })
            })
        else { return ([], []) }
        return result
    }
}
