import Foundation
import GRDB
import XCTest
import WinnowCore
import WinnowSQLite
@_exported import WinnowTestFiles

/// Helpers that build and read SQLite files for the tests.
extension TestSupport {
    /// Creates a database file from SQL statements and returns its path.
    @discardableResult
    package static func makeDatabase(at path: String, sql: String) throws -> String {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: sql) }
        try queue.close()
        return path
    }

    /// Every user table's rows (with rowids), in a canonical order: equal content gives equal dumps.
    package static func contentDump(_ path: String, includeRowIDs: Bool = true) throws -> [String: [[DatabaseValue]]] {
        let queue = try DatabaseQueue(
            path: path,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        defer { try? queue.close() }
        return try queue.read { db in
            var dump: [String: [[DatabaseValue]]] = [:]
            for name in try SchemaInspector.tableNames(db) {
                // (A WITHOUT ROWID table's rows come in primary-key order; it has no rowid to show.)
                let rowIDs = try includeRowIDs && SchemaInspector.table(db, named: name)?.hasRowID != false
                let select =
                    rowIDs
                    ? "SELECT rowid, * FROM \(name.sqlIdentifier) ORDER BY rowid"
                    : "SELECT * FROM \(name.sqlIdentifier)"
                var rows = try Row.fetchAll(db, sql: select).map { Array($0.databaseValues) }
                if !includeRowIDs { rows.sort { "\($0)" < "\($1)" } }
                dump[name] = rows
            }
            return dump
        }
    }
}
