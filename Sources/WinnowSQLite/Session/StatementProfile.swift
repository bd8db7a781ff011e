import Foundation
import WinnowCore
import GRDB

/// Time spent per SQL statement, for profiling the batch path: with `WINNOW_SQL_PROFILE` set in
/// the environment, every connection winnow opens reports each statement's duration here, and
/// the totals go to standard error when the process exits (most expensive first), each
/// statement cut at 160 characters (`WINNOW_SQL_PROFILE=full`: whole).
final class StatementProfile: @unchecked Sendable {
    static let shared = StatementProfile()
    private let lock = NSLock()
    private var totals: [String: (count: Int, seconds: Double)] = [:]
    private var registered = false

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
        let key = sql.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        let old = totals[key] ?? (0, 0)
        totals[key] = (old.count + 1, old.seconds + seconds)
    }

    private func report() {
        lock.lock()
        defer { lock.unlock() }
        let all = totals.values.reduce(0) { $0 + $1.seconds }
        let width = ProcessInfo.processInfo.environment["WINNOW_SQL_PROFILE"] == "full" ? Int.max : 160
        var lines = ["-- SQL profile: \(String(format: "%.3f", all)) s in \(totals.values.reduce(0) { $0 + $1.count }) statements"]
        for (sql, total) in totals.sorted(by: { $0.value.seconds > $1.value.seconds }).prefix(25) {
            lines.append(String(format: "%8.3f s %7d× %@", total.seconds, total.count, String(sql.prefix(width))))
        }
        FileHandle.standardError.write((lines.joined(separator: "\n") + "\n").data(using: .utf8)!)
    }
}
