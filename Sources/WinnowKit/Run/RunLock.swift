import Foundation
import GRDB

/// Who holds (or held) the run lock: enough to tell whether that process is still alive.
public struct ProcessIdentity: Sendable, Equatable {
    public var pid: Int32
    /// The process's start time in clock ticks since boot (Linux `/proc/PID/stat` field 22), so
    /// that a reused pid is not mistaken for the original holder.
    public var start: String?
    public var host: String

    public static var current: ProcessIdentity {
        let pid = getpid()
        return ProcessIdentity(pid: pid, start: startTime(of: pid), host: hostName)
    }

    static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
        return String(cString: buffer)
    }

    static func startTime(of pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after the command name (which may hold spaces): field 3 is first.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? String(fields[19]) : nil
    }

    /// Whether this process still runs. A holder on another host is assumed alive.
    public var isAlive: Bool {
        guard host == ProcessIdentity.hostName else { return true }
        if kill(pid, 0) != 0 && errno != EPERM { return false }
        if let start, let now = ProcessIdentity.startTime(of: pid), now != start { return false }
        return true
    }
}

/// The run lock: one row in `winnow_lock`, taken and released in short IMMEDIATE transactions.
/// A lock whose holder is no longer alive (killed run) is taken over at once.
enum RunLock {
    struct Holder {
        var identity: ProcessIdentity
        var runID: Int64?
        var acquiredAt: String
    }

    static func holder(_ db: Database) throws -> Holder? {
        guard try db.tableExists("winnow_lock") else { return nil }
        guard let row = try Row.fetchOne(db, sql: "SELECT pid, process_start, host, run_id, acquired_at FROM winnow_lock WHERE id = 1") else {
            return nil
        }
        return Holder(identity: ProcessIdentity(pid: row[0], start: row[1], host: row[2]), runID: row[3], acquiredAt: row[4])
    }

    /// Takes the lock inside the caller's write transaction, or throws ``WinnowError/locked(_:)``.
    static func take(_ db: Database, runID: Int64?, me: ProcessIdentity = .current) throws {
        if let holder = try holder(db), holder.identity != me, holder.identity.isAlive {
            throw WinnowError.locked("""
                another winnow run holds the lock (run \(holder.runID.map(String.init) ?? "?"), pid \(holder.identity.pid) \
                on \(holder.identity.host), since \(holder.acquiredAt)); retry later or pass --wait SECONDS
                """)
        }
        try db.execute(sql: """
            INSERT OR REPLACE INTO winnow_lock (id, run_id, pid, process_start, host, acquired_at) VALUES (1, ?, ?, ?, ?, ?)
            """, arguments: [runID, me.pid, me.start, me.host, Bookkeeping.timestamp()])
    }

    static func release(_ db: Database, me: ProcessIdentity = .current) throws {
        try db.execute(sql: "DELETE FROM winnow_lock WHERE id = 1 AND pid = ? AND host = ?", arguments: [me.pid, me.host])
    }

    /// Runs `attempt` (which takes the lock) until it succeeds or `wait` seconds pass.
    static func withRetry<T>(wait: TimeInterval?, _ attempt: () throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(wait ?? 0)
        while true {
            do {
                return try attempt()
            } catch let error as WinnowError {
                guard case .locked = error, wait != nil, Date() < deadline else { throw error }
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
    }
}
