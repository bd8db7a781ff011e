import Foundation
import WinnowCore
import GRDB

/// Time spent per SQL statement, for profiling the batch path: with `WINNOW_SQL_PROFILE` set in
/// the environment, every connection winnow opens reports each statement's duration here, and
/// the totals go to standard error when the process exits (most expensive first), each
/// statement cut at 160 characters (`WINNOW_SQL_PROFILE=full`: whole).
///
/// A statement is timed from its first step to its reset, so one whose rows are read while other
/// statements run (a merge read that inserts each group's decision) is charged their time and
/// the recording of each of them too: read such a total as an upper bound. Statements are
/// totalled by their text as run and folded onto one line only for printing, so a run of one
/// costs a lookup.
///
/// `WINNOW_SQL_PROFILE=trace` also prints, as they end, every statement of 5 ms or more and every
/// transaction (from its `BEGIN` to its `COMMIT` or `ROLLBACK`) of 20 ms or more, each with the
/// wall-clock time it ended at (seconds since 1970), and (``note(_:)``) each gap ``WriteGap``
/// leaves and each try of ``BusyWait``'s handler: what held a lock, and when, to set beside
/// another connection's waits.
final class StatementProfile: @unchecked Sendable {
    static let shared = StatementProfile()
    private let lock = NSLock()
    /// By each statement's text as run.
    private var totals: [String: (count: Int, seconds: Double)] = [:]
    private var registered = false
    let traces = ProcessInfo.processInfo.environment["WINNOW_SQL_PROFILE"] == "trace"
    /// When the transaction in progress began, in seconds since 1970 (trace only).
    private var began: Double?

    func attach(to db: Database) {
        lock.lock()
        if !registered {
            registered = true
            atexit { StatementProfile.shared.report() }
        }
        lock.unlock()
        db.trace(options: .profile) { [weak self] event in
            guard case let .profile(statement, duration) = event else { return }
            self?.record(statement.sql, duration)
        }
    }

    private func record(_ sql: String, _ seconds: Double) {
        lock.lock()
        defer { lock.unlock() }
        let old = totals[sql] ?? (0, 0)
        totals[sql] = (old.count + 1, old.seconds + seconds)
        if traces { trace(sql, seconds) }
    }

    /// A statement's text on one line: each line trimmed, joined by spaces.
    private static func folded(_ sql: String) -> String {
        sql.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }

    /// Prints `what` with the time now, in trace mode.
    func note(_ what: @autoclosure () -> String) {
        guard traces else { return }
        let line = String(format: "-- %.3f ", Date().timeIntervalSince1970) + what() + "\n"
        FileHandle.standardError.write(line.data(using: .utf8)!)
    }

    private func trace(_ sql: String, _ seconds: Double) {
        let now = Date().timeIntervalSince1970
        var lines: [String] = []
        if seconds >= 0.005 {
            lines.append(String(format: "-- %.3f statement %8.1f ms %@", now, seconds * 1000, String(Self.folded(sql).prefix(160))))
        }
        let word = sql.drop(while: \.isWhitespace).prefix(8).uppercased()
        if word.hasPrefix("BEGIN") {
            began = now - seconds
        } else if word.hasPrefix("COMMIT") || word.hasPrefix("ROLLBACK") || word.hasPrefix("END"), let start = began {
            began = nil
            if now - start >= 0.020 { lines.append(String(format: "-- %.3f transaction %6.1f ms", now, (now - start) * 1000)) }
        }
        if !lines.isEmpty { FileHandle.standardError.write((lines.joined(separator: "\n") + "\n").data(using: .utf8)!) }
    }

    private func report() {
        lock.lock()
        defer { lock.unlock() }
        // Texts that differ only in their line breaks and indentation are one statement.
        var totals: [String: (count: Int, seconds: Double)] = [:]
        for (sql, total) in self.totals {
            let key = Self.folded(sql)
            let old = totals[key] ?? (0, 0)
            totals[key] = (old.count + total.count, old.seconds + total.seconds)
        }
        let all = totals.values.reduce(0) { $0 + $1.seconds }
        let width = ProcessInfo.processInfo.environment["WINNOW_SQL_PROFILE"] == "full" ? Int.max : 160
        var lines = ["-- SQL profile: \(String(format: "%.3f", all)) s in \(totals.values.reduce(0) { $0 + $1.count }) statements"]
        for (sql, total) in totals.sorted(by: { $0.value.seconds > $1.value.seconds }).prefix(25) {
            lines.append(String(format: "%8.3f s %7d× %@", total.seconds, total.count, String(sql.prefix(width))))
        }
        FileHandle.standardError.write((lines.joined(separator: "\n") + "\n").data(using: .utf8)!)
    }
}
