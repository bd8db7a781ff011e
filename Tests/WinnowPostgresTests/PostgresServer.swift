import Foundation
import WinnowBackends
import WinnowCore
import WinnowPostgres
import WinnowSQLite
import WinnowTestSupport
import XCTest

/// The server the PostgreSQL suites run against: `WINNOW_TEST_POSTGRES` (a postgresql:// URL
/// to a database the tests may empty). `.ci/run` starts a throwaway cluster and sets it; without
/// it the suites are skipped locally and fail under CI=true.
enum PostgresServer {
    static var url: String? { ProcessInfo.processInfo.environment["WINNOW_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 } }

    static func require() throws -> String {
        if let url { return url }
        let how =
            "set WINNOW_TEST_POSTGRES=postgresql://USER@127.0.0.1:PORT/DB to run the PostgreSQL suites (README: Testing on PostgreSQL)"
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            XCTFail("no PostgreSQL server under CI=true: \(how)")
            throw XCTSkip(how)
        }
        throw XCTSkip(how)
    }

    /// Empties the test database's `public` and `winnow` schemas.
    static func reset(_ url: String) throws {
        try PostgresBackend().withSession(url, mode: .readWrite(create: false)) { session in
            try session.execute("DROP SCHEMA IF EXISTS winnow CASCADE")
            try session.execute("DROP SCHEMA IF EXISTS public CASCADE")
            try session.execute("CREATE SCHEMA public")
        }
    }

    /// Creates a SQLite file at `path` from `sql`, empties the test database and loads the file
    /// into it: the same rows on both engines.
    static func reset(_ url: String, loading path: String, sql: String) throws {
        try TestSupport.makeDatabase(at: path, sql: sql)
        try reset(url)
        try load(path, into: url)
    }

    /// The same through a SQLite file of a scratch directory of its own.
    static func reset(_ url: String, sql: String) throws {
        try reset(url, loading: TestSupport.scratchDirectory().appendingPathComponent("t.sqlite").path, sql: sql)
    }

    /// The setup of a test that compares both engines: a scratch folder, a SQLite file `name` in
    /// it made from `sql`, and the emptied test database loaded from that file.
    static func engines(_ name: String, sql: String) throws -> (url: String, dir: URL, data: String) {
        let url = try require()
        let dir = try TestSupport.scratchDirectory()
        let data = dir.appendingPathComponent(name).path
        try reset(url, loading: data, sql: sql)
        return (url, dir, data)
    }

    /// `url` as `user` instead of the test's superuser.
    static func connect(_ url: String, as user: String) throws -> String {
        let location = try PostgresLocation.parse(url)
        return "postgresql://\(user)@\(location.host):\(location.port)/\(location.database)"
    }

    /// One integer column of a table in its order, on either engine (`location`: a path or URL).
    static func integers(_ location: String, _ column: String, of table: String) throws -> [Int] {
        try BackendRouter().withSession(location, mode: .readOnly) { session in
            try session.rows("SELECT \(column) FROM \(session.dialect.table(table)) ORDER BY \(column)").compactMap { $0.values.first?.int }
        }
    }

    /// A row lock another session holds until ``release()`` (or 30 s): `select` (a
    /// `SELECT ... FOR UPDATE`) runs in that session's open transaction before `init` returns.
    final class RowLock: @unchecked Sendable {
        private let locked = DispatchSemaphore(value: 0)
        private let released = DispatchSemaphore(value: 0)

        init(_ url: String, _ select: String) throws {
            let thread = Thread { [locked, released] in
                try? PostgresBackend().withSession(url, mode: .readWrite(create: false)) { other in
                    try other.writeTransaction {
                        _ = try other.rows(select, [])
                        locked.signal()
                        _ = released.wait(timeout: .now() + 30)
                    }
                }
                locked.signal()
            }
            thread.start()
            guard locked.wait(timeout: .now() + 10) == .success else { throw WinnowError.io("the row lock was not taken: \(select)") }
        }

        /// Ends the other session's transaction (more than once is harmless).
        func release() { released.signal() }
    }

    /// Each run's recorded deleted, groups and batches (`winnow_runs`), in run order.
    static func runCounts(_ url: String) throws -> [[Int]] {
        try BackendRouter().withSession(url, mode: .readOnly) { session in
            try session.rows("SELECT deleted, groups, batches FROM winnow.winnow_runs ORDER BY id", []).map { row in
                try (0..<3).map { try row.int($0) }
            }
        }
    }

    /// Loads a SQLite file into the test database (scripts/pg-load).
    static func load(_ sqlite: String, into url: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", TestSupport.repositoryRoot.appendingPathComponent("scripts/pg-load").path, sqlite, url]
        let err = Pipe()
        process.standardError = err
        try process.run()
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw WinnowError.io("pg-load failed: \(message)") }
    }

    /// Every row of every named table, as text, sorted (what "same survivors" compares).
    /// `keep` chooses the columns compared (default: every stored column).
    static func rows(
        _ location: String, tables: [String], keep: (_ table: String, LiveColumn) -> Bool = { _, _ in true }
    ) throws -> [String: [String]] {
        try BackendRouter().withSession(location, mode: .readOnly) { session in
            var result: [String: [String]] = [:]
            for table in tables {
                let columns = try session.inspect().table(named: table)?.storedColumns.filter { keep(table, $0) }.map(\.name) ?? []
                let rows = try session.rows(
                    "SELECT \(columns.map(\.sqlIdentifier).joined(separator: ", ")) FROM \(session.dialect.table(table))")
                result[table] = rows.map { row in
                    row.values.map { value -> String in
                        switch value {
                        case .null: return "NULL"
                        case let .integer(v): return String(v)
                        case let .real(v): return v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v)
                        case let .text(v): return v
                        case let .blob(v): return v.map { String(format: "%02x", $0) }.joined()
                        }
                    }.joined(separator: "|")
                }.sorted()
            }
            return result
        }
    }
}
