import Foundation

/// The run lock: one row in `winnow_lock`, taken and released in short write transactions.
/// A lock whose holder is no longer alive (killed run) is taken over at once.
public enum RunLock {
    public struct Holder: Sendable {
        public var identity: ProcessIdentity
        public var runID: Int64?
        public var acquiredAt: String
    }

    public static func holder(_ session: any DatabaseSession) throws -> Holder? {
        guard try session.tableExists("winnow_lock") else { return nil }
        let lock = session.dialect.bookkeeping("winnow_lock")
        guard let row = try session.row("SELECT pid, process_start, host, run_id, acquired_at FROM \(lock) WHERE id = 1") else {
            return nil
        }
        return Holder(
            identity: ProcessIdentity(pid: Int32(try row.int(0)), start: row[1].string, host: try row.string(2)),
            runID: row[3].int64, acquiredAt: try row.string(4))
    }

    /// Takes the lock inside the caller's write transaction, or throws ``WinnowError/locked(_:)``.
    public static func take(_ session: any DatabaseSession, runID: Int64?, me: ProcessIdentity = .current) throws {
        var claimed = try session.claimRunLock()
        let holder = try holder(session)
        // The engine's lock held by a session whose run is gone (killed, or cut off from the
        // server while the server kept its session): that session is ended and the lock taken.
        if claimed == false, let holder, holder.identity != me, !holder.identity.isAlive {
            claimed = try session.takeOverRunLock()
        }
        if claimed == false || (claimed == nil && holder.map { $0.identity != me && $0.identity.isAlive } == true) {
            guard let holder else {
                throw WinnowError.locked("another winnow run holds the lock of this database; retry later or pass --wait SECONDS")
            }
            throw WinnowError.locked(
                """
                another winnow run holds the lock (run \(holder.runID.map(String.init) ?? "?"), pid \(holder.identity.pid) \
                on \(holder.identity.host), since \(holder.acquiredAt)); retry later or pass --wait SECONDS
                """)
        }
        let lock = session.dialect.bookkeeping("winnow_lock")
        try session.execute("DELETE FROM \(lock) WHERE id = 1")
        try session.execute(
            "INSERT INTO \(lock) (id, run_id, pid, process_start, host, acquired_at) VALUES (1, ?, ?, ?, ?, ?)",
            [
                SQLValue(runID), SQLValue(Int(me.pid)), SQLValue(me.start), SQLValue(me.host),
                SQLValue(Bookkeeping.timestamp()),
            ])
    }

    /// Names the run holding the lock.
    public static func assign(_ session: any DatabaseSession, runID: Int64) throws {
        try session.execute("UPDATE \(session.dialect.bookkeeping("winnow_lock")) SET run_id = ? WHERE id = 1", [SQLValue(runID)])
    }

    public static func release(_ session: any DatabaseSession, me: ProcessIdentity = .current) throws {
        try session.execute(
            "DELETE FROM \(session.dialect.bookkeeping("winnow_lock")) WHERE id = 1 AND pid = ? AND host = ?",
            [SQLValue(Int(me.pid)), SQLValue(me.host)])
    }

    /// Runs `attempt` (which takes the lock) until it succeeds or `wait` seconds pass;
    /// `waiting` hears why it waits (the refusal's message) and the seconds waited so far.
    public static func withRetry<T>(
        wait: TimeInterval?, waiting: (String, TimeInterval) -> Void = { _, _ in }, _ attempt: () throws -> T
    ) throws -> T {
        let started = Date()
        let deadline = started.addingTimeInterval(wait ?? 0)
        while true {
            do {
                return try attempt()
            } catch let error as WinnowError {
                guard case let .locked(message) = error, wait != nil, Date() < deadline else { throw error }
                // "another winnow run holds the lock (run 3, ...)", without the advice.
                waiting(message.components(separatedBy: "; retry").first ?? message, Date().timeIntervalSince(started))
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
    }
}
