import Foundation
import PostgresNIO
import WinnowCore

/// A batch that only deletes, in one round trip: the prepared statement, the session's timeouts around the batches, and the counts it returns.
extension PostgresBatch {
    /// Prepares the one-trip statement and sets the batches' timeouts for the session (each
    /// batch is its own transaction, so `SET LOCAL` has no transaction to live in); returns
    /// what ``finishOneTrip(_:)`` restores afterwards. Nil, and nothing done, where batches
    /// take the transaction path.
    func prepareOneTrip() throws -> [SQLValue]? {
        guard let oneTripSQL, !session.inTransaction else { return nil }
        let counts = Array(repeating: "int8", count: 3 + Counts.columns.count).joined(separator: ", ")
        try link.command("PREPARE \(oneTripName) (\(counts)) AS \(oneTripSQL)")
        if let decidedOneTripSQL { try link.command("PREPARE \(oneTripName)_d (\(counts)) AS \(decidedOneTripSQL)") }
        if let trustedOneTripSQL { try link.command("PREPARE \(oneTripName)_t (\(counts)) AS \(trustedOneTripSQL)") }
        if let leftOneTripSQL { try link.command("PREPARE \(oneTripName)_l (\(counts), int8[]) AS \(leftOneTripSQL)") }
        let before = try link.query("SELECT current_setting('statement_timeout'), current_setting('lock_timeout')").first ?? []
        let (statement, lock) = timeouts
        try link.command("SELECT set_config('statement_timeout', '\(statement)', false), set_config('lock_timeout', '\(lock)', false)")
        return before
    }

    /// Drops the one-trip statement and puts the session's timeouts back (best effort: a
    /// connection that is gone takes both with it).
    func finishOneTrip(_ before: [SQLValue]) {
        _ = try? link.command("DEALLOCATE \(oneTripName)")
        if decidedOneTripSQL != nil { _ = try? link.command("DEALLOCATE \(oneTripName)_d") }
        if trustedOneTripSQL != nil { _ = try? link.command("DEALLOCATE \(oneTripName)_t") }
        if leftOneTripSQL != nil { _ = try? link.command("DEALLOCATE \(oneTripName)_l") }
        guard before.count == 2, let statement = before[0].string, let lock = before[1].string else { return }
        _ = try? link.command(
            "SELECT set_config('statement_timeout', $1, false), set_config('lock_timeout', $2, false)",
            PostgresBindings(values: [SQLValue(statement), SQLValue(lock)]))
    }

    /// One fused batch in one round trip: the batch, its journal and the run's progress in one
    /// statement that the server commits on its own.
    /// `decide`: whether to try the decided batch first (``decidedOneTripSQL``); `trust`:
    /// whether to try the trusted batch before it (``trustedOneTripSQL``).
    func runOneTrip(
        groups range: Range<Int>, batch: Int, totals: Counts, decide: Bool = true, trust: Bool = true
    ) throws -> PostgresBatchWork {
        // The statements' parameters: the group range, the batch and the run's counts before it.
        func arguments(_ totals: Counts) -> String {
            ([Int64(range.lowerBound + 1), Int64(range.upperBound + 1), Int64(batch)] + totals.columnValues.map { $0.int64 ?? 0 })
                .map(String.init).joined(separator: ", ")
        }
        let list = arguments(totals)
        var work = PostgresBatchWork()
        var row: [SQLValue] = []
        if decide, trust, trustedOneTripSQL != nil {
            do {
                try retrying { row = try link.query("EXECUTE \(oneTripName)_t(\(list))").first ?? [] }
                Self.trustsApplied += 1
            } catch let error as PSQLError where Self.isChangedSinceDiscovery(error) {
                // Rolled back whole by the server; the decided batch compares before it applies.
                Self.trustsMissed += 1
                work.trustMissed = true
                row = []
            }
        }
        if decide, decidedOneTripSQL != nil {
            if row.isEmpty {
                try retrying { row = try link.query("EXECUTE \(oneTripName)_d(\(list))").first ?? [] }
            }
            work.decided = Self.applied(row)
            if work.decided == true {
                let (counts, left) = Self.decidedCounts(row, groups: range)
                work.counts = counts
                // The groups it left, by the fused statement, committed on its own; the run's
                // progress row takes the counts so far (the batch is still one batch).
                if !left.isEmpty {
                    var before = totals + work.counts
                    before.batches = totals.batches
                    let groups = "'{\(left.map(String.init).joined(separator: ","))}'"
                    do {
                        try retrying { row = try link.query("EXECUTE \(oneTripName)_l(\(arguments(before)), \(groups))").first ?? [] }
                    } catch {
                        // The decided part is committed (and in the run's progress row).
                        throw PartlyCommittedBatch(counts: work.counts, error: error)
                    }
                    work.add(left: left.count, row: row)
                }
                return work
            }
        }
        if work.decided != true {
            try retrying { row = try link.query("EXECUTE \(oneTripName)(\(list))").first ?? [] }
        }
        work.counts = Self.fusedCounts(row, groups: range.count)
        return work
    }

    /// Whether a decided batch's row (``decidedSQL``) says it applied; false for any other row.
    static func applied(_ row: [SQLValue]) -> Bool { row.count > 3 && row[3].int == 1 }

    /// What a fused batch did, from its one row: losers deleted, groups that still had a loser,
    /// members of the batch's `groups` (the planned losers not deleted are skipped).
    static func fusedCounts(_ row: [SQLValue], groups: Int) -> Counts {
        var counts = Counts()
        counts.deleted = row.first?.int ?? 0
        counts.groups = row.count > 1 ? row[1].int ?? 0 : 0
        counts.skipped = max(0, (row.count > 2 ? row[2].int ?? 0 : 0) - groups - counts.deleted)
        counts.batches = 1
        return counts
    }
}
