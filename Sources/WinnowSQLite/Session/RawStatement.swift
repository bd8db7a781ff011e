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

    /// Column `index` (0-based) of the current row, as the core's value.
    static func value(_ row: SQLiteStatement, _ index: CInt) -> SQLValue {
        switch sqlite3_column_type(row, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(row, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(row, index))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(row, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(row, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(row, index))
            guard count > 0, let bytes = sqlite3_column_blob(row, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default: return .null
        }
    }

    /// Binds `values` (from parameter 1) and runs the statement to its end.
    func execute(_ values: [SQLValue]) throws {
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        for (offset, value) in values.enumerated() {
            let index = CInt(offset + 1)
            let code: CInt
            switch value {
            case .null: code = sqlite3_bind_null(handle, index)
            case let .integer(integer): code = sqlite3_bind_int64(handle, index, integer)
            case let .real(real): code = sqlite3_bind_double(handle, index, real)
            case let .text(text): code = sqlite3_bind_text(handle, index, text, -1, SQLFunctions.transient)
            case let .blob(bytes):
                code = bytes.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, CInt($0.count), SQLFunctions.transient) }
            }
            guard code == SQLITE_OK else { throw error(code) }
        }
        try run()
    }

    /// Runs the statement to its end with the parameters `bind` sets (every one of them: the
    /// bindings are not cleared between runs, which a statement of many parameters run many
    /// times would pay for), then resets it.
    func execute(binding bind: (SQLiteStatement) -> Void) throws {
        defer { sqlite3_reset(handle) }
        bind(handle)
        try run()
    }

    /// Steps the bound statement to its end.
    private func run() throws {
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
