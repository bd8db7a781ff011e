import Foundation
import WinnowCore
import GRDB

extension Database {
    /// Attempts of a write transaction whose `BEGIN IMMEDIATE` found the database locked past the
    /// busy timeout, before giving up with exit 75.
    static let writeAttempts = 3

    /// Runs `body` in a deferred transaction of its own, or in the one already open: its reads
    /// see one snapshot, and what it writes to temporary tables is committed once, not once per
    /// statement.
    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        guard !isInsideTransaction else { return try body() }
        var result: T?
        try inTransaction(.deferred) {
            result = try body()
            return .commit
        }
        return result!
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction and commits it.
    ///
    /// A busy timeout does not cover a read transaction's promotion to a write, so every write
    /// transaction starts IMMEDIATE, and one that could not start because another connection held
    /// the write lock is retried whole (its body never ran).
    func writeTransaction(_ body: () throws -> Void) throws {
        var attempt = 1
        while true {
            var started = false
            do {
                try inTransaction(.immediate) {
                    started = true
                    try body()
                    return .commit
                }
                return
            } catch let error as DatabaseError
                where (error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED)
                && !started && attempt < Self.writeAttempts
            {
                attempt += 1
            }
        }
    }
}
