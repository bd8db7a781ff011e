import Foundation
import WinnowCore
import GRDB
import GRDBSQLite

/// Steps a statement prepared by GRDB through SQLite's C API, for the batch path's per-group
/// loops (tens of thousands of rows per second): GRDB's `Row` cursor and `StatementArguments`
/// cost more there than the SQL itself. Only for statements run inside a transaction winnow
/// opened; GRDB prepares, caches and finalizes them as usual.
struct RawStatement {
    let statement: Statement

    init(_ statement: Statement) { self.statement = statement }

    private var handle: SQLiteStatement { statement.sqliteStatement }

    /// Calls `body` with the handle of each result row, then resets the statement.
    func forEachRow(_ body: (SQLiteStatement) throws -> Void) throws {
        defer { sqlite3_reset(handle) }
        while true {
            switch sqlite3_step(handle) {
            case SQLITE_ROW: try body(handle)
            case SQLITE_DONE: return
            case let code: throw error(code)
            }
        }
    }

    /// Binds `values` (from parameter 1) and runs the statement to its end.
    func execute(_ values: [DatabaseValue]) throws {
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        for (offset, value) in values.enumerated() {
            let index = CInt(offset + 1)
            let code: CInt
            switch value.storage {
            case .null: code = sqlite3_bind_null(handle, index)
            case let .int64(integer): code = sqlite3_bind_int64(handle, index, integer)
            case let .double(real): code = sqlite3_bind_double(handle, index, real)
            case let .string(text): code = sqlite3_bind_text(handle, index, text, -1, SQLFunctions.transient)
            case let .blob(data):
                code = data.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, CInt($0.count), SQLFunctions.transient) }
            }
            guard code == SQLITE_OK else { throw error(code) }
        }
        while true {
            switch sqlite3_step(handle) {
            case SQLITE_ROW: continue
            case SQLITE_DONE: return
            case let code: throw error(code)
            }
        }
    }

    private func error(_ code: CInt) -> DatabaseError {
        let connection = sqlite3_db_handle(handle)
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
    }
}
