import Foundation
import WinnowCore

extension PostgresSession {
    /// The rows a cursor fetches at a time (``forEachRow(_:page:_:)``); tests lower it.
    nonisolated(unsafe) static var cursorPage = 5_000

    /// Calls `body` with each row of `sql`, read through a cursor ``cursorPage`` rows at a time,
    /// so that no more than a page is held whatever the statement returns. Outside a
    /// transaction the cursor gets one of its own (read-only, repeatable read), so every page
    /// comes from the same snapshot; inside one, it reads in that transaction.
    ///
    /// `sql` takes no parameters (a cursor's statement is declared as text): callers write
    /// their values into it as literals.
    func forEachRow(_ sql: String, page: Int = cursorPage, _ body: (SQLRow) throws -> Void) throws {
        let own = !inTransaction
        if own { try link.command("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") }
        do {
            try link.command("DECLARE winnow_rows NO SCROLL CURSOR FOR \(sql)")
            while true {
                let rows = try link.query("FETCH FORWARD \(max(page, 1)) FROM winnow_rows")
                for row in rows { try body(SQLRow(row)) }
                if rows.count < max(page, 1) { break }
            }
            try link.command("CLOSE winnow_rows")
            if own { try link.command("COMMIT") }
        } catch {
            // The cursor goes with the transaction; in the caller's, it is closed so that the
            // caller may read again after an error of its own (a server's error has aborted that
            // transaction, and its rollback closes the cursor).
            _ = try? link.command(own ? "ROLLBACK" : "CLOSE winnow_rows")
            throw error
        }
    }
}
