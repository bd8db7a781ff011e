import Foundation
import GRDB
import XCTest
import WinnowCore
import WinnowSQLite

/// Small helpers for the scenario tests: jobs from YAML text, queries, dataset copies, exit codes.
package enum ScenarioKit {
    /// `shared/datasets` beside the repository (see its README).
    package static let datasets = TestSupport.repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/datasets")

    /// Decodes job text through the library's loader.
    package static func job(_ yaml: String, dir: URL? = nil, file: String = "job.yaml") throws -> Job {
        try JobLoader.decode(yaml: yaml, file: file, baseDirectory: dir)
    }

    @discardableResult
    package static func run(
        _ yaml: String, db: String, batchSize: Int? = nil,
        onEvent: @escaping (RunEvent) -> Void = { _ in }
    ) throws -> RunSummary {
        try SQLiteBackend.run(try job(yaml), options: RunOptions(database: db, batchSize: batchSize), onEvent: onEvent)
    }

    package static func plan(_ yaml: String, db: String) throws -> RunSummary {
        try SQLiteBackend.plan(try job(yaml), options: RunOptions(database: db, sampleLimit: nil))
    }

    package static func check(_ yaml: String, db: String) throws -> RunSummary {
        try SQLiteBackend.check(try job(yaml), options: RunOptions(database: db))
    }

    /// Rows of a query, as arrays of values.
    package static func rows(_ db: String, _ sql: String) throws -> [[DatabaseValue]] {
        let queue = try DatabaseQueue(path: db)
        defer { try? queue.close() }
        return try queue.read { db in try Row.fetchAll(db, sql: sql).map { Array($0.databaseValues) } }
    }

    /// The first column of a query.
    package static func column<T: DatabaseValueConvertible>(_ db: String, _ sql: String, as: T.Type = T.self) throws -> [T?] {
        try rows(db, sql).map { T.fromDatabaseValue($0[0]) }
    }

    package static func int(_ db: String, _ sql: String) throws -> Int {
        let queue = try DatabaseQueue(path: db)
        defer { try? queue.close() }
        return try queue.read { db in try Int.fetchOne(db, sql: sql) ?? -1 }
    }

    package static func execute(_ db: String, _ sql: String, arguments: StatementArguments = []) throws {
        let queue = try DatabaseQueue(path: db)
        defer { try? queue.close() }
        try queue.write { db in try db.execute(sql: sql, arguments: arguments) }
    }

    /// Everything of a database that is not winnow's: the schema of user objects and every
    /// user table's rows with rowids.
    package struct UserState: Equatable {
        package var schema: [String]
        package var dump: [String: [[DatabaseValue]]]
    }

    package static func userState(_ path: String) throws -> UserState {
        let queue = try DatabaseQueue(
            path: path,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        let schema = try queue.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master
                    WHERE lower(tbl_name) NOT LIKE 'winnow\\_%' ESCAPE '\\' ORDER BY type, name
                    """)
        }
        try queue.close()
        return UserState(schema: schema, dump: try TestSupport.contentDump(path))
    }

    /// A writable copy of a dataset of `shared/datasets` in `dir`.
    package static func copyDataset(_ name: String, into dir: URL) throws -> String {
        let target = dir.appendingPathComponent(name)
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: datasets.appendingPathComponent(name), to: target)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: target.path)
        return target.path
    }

    /// Asserts that `body` throws a ``WinnowError`` with the given exit code.
    package static func expectExit(
        _ code: Int32, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
        _ body: () throws -> Void
    ) {
        do {
            try body()
            XCTFail("expected exit \(code), but nothing was thrown. \(message)", file: file, line: line)
        } catch let error as WinnowError {
            XCTAssertEqual(error.exitCode, code, "\(error). \(message)", file: file, line: line)
        } catch {
            XCTFail("expected a WinnowError with exit \(code), got \(error). \(message)", file: file, line: line)
        }
    }

    /// SQL text literal.
    package static func lit(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }
}
