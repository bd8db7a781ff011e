import Foundation
import PostgresNIO
import WinnowCore

/// A rule's merges as PostgreSQL resolves them, exactly in each column's own type.
///
/// `sum`, `min` and `max` are computed by the server in the batch's ranking statement, over
/// each group's rows as they are now: `sum` in the type's own arithmetic (`numeric` and `bigint`
/// without rounding, `bigint` widened to `numeric` so that a sum past 2^63 is seen rather than
/// wrapped), `min` and `max` in the type's own order (instants for `timestamptz`, dates, exact
/// decimals; text byte by byte as everywhere in winnow), ties by the winner order. The server
/// also says whether the result differs from the winner's value. `fill_null`, `longest` and
/// `concat` choose or join values: the rows' values travel as the server's text (lossless for
/// every type within one session), are resolved by ``MergeResolver``, and go back as that text
/// cast to the column's type.
///
/// Each merge column is three result columns of the ranking statement: the row's value, the
/// group's merged value (server strategies; NULL otherwise) and whether it changes the winner.
struct PostgresMerge {
    struct Column {
        var name: String
        var strategy: MergeStrategy
        /// The column's declared type (display, and the fit of a merged value).
        var type: String
        /// `latest` and `prefer`: the ranking column, `prefer`'s order, and the column's type.
        var ranking: MergeRanking? = nil
        var rankingType: String? = nil
        var onServer: Bool { [.sum, .min, .max, .latest, .prefer].contains(strategy) }
        /// Whether the merge makes a value the group did not hold (which may not fit).
        var makesValues: Bool { strategy == .sum || strategy == .concat }

        /// The declared type without its modifiers (`character varying(20)` is `character
        /// varying`): a merged value is cast to it and then stored, so that the column's own
        /// assignment rules check its length and precision. An explicit cast to
        /// `character varying(20)` would cut a longer text to 20 characters without a word.
        var castType: String {
            type.replacingOccurrences(of: #"\(\s*\d+\s*(,\s*-?\d+\s*)?\)"#, with: "", options: .regularExpression)
        }
    }

    let columns: [Column]

    /// Result columns per merge column in the ranking statement.
    static let stride = 3

    init(rule: CompiledRule, type: (String) -> String) {
        columns = rule.mergeColumns.enumerated().map { index, merge in
            let ranking = index < rule.mergeRankings.count ? rule.mergeRankings[index] : nil
            return Column(
                name: merge.name, strategy: merge.strategy, type: type(merge.name), ranking: ranking,
                rankingType: ranking.map { type($0.by) })
        }
    }

    var isEmpty: Bool { columns.isEmpty }

    /// Whether any column is resolved by the server (the ranking needs the window over the
    /// whole group).
    var needsWholeGroup: Bool { columns.contains { $0.strategy == .sum } }

    /// The inner ranking SELECT's extra columns over rows `alias`: each merge column's value
    /// and, for the server's strategies, the group's merged value (window `window` spans the
    /// whole group in winner order; `order` is the winner order).
    func innerColumns(alias: String, dialect: PostgresDialect) -> String {
        columns.enumerated().map { index, column in
            let value = "\(alias).\(column.name.sqlIdentifier)"
            var parts = ["\(value) AS winnow_o\(index)"]
            switch column.strategy {
            case .sum: parts.append("sum(\(value)) OVER winnow_all AS winnow_m\(index)")
            case .min, .max: parts.append("first_value(\(value)) OVER winnow_x\(index) AS winnow_m\(index)")
            case .latest, .prefer:
                // The window puts a candidate first when the group has one; NULL otherwise.
                parts.append(
                    "first_value(CASE WHEN \(candidate(column, alias: alias)) THEN \(value) END) OVER winnow_x\(index) AS winnow_m\(index)")
            case .fillNull, .longest, .concat, .mostFrequent: break
            }
            return ", " + parts.joined(separator: ", ")
        }.joined()
    }

    /// The WINDOW definitions the inner columns use, beside `w` (the group in winner order).
    /// `partition` and `order` are the group's PARTITION BY terms and the winner order.
    func windows(alias: String, partition: String, order: String, dialect: PostgresDialect) -> String {
        var windows: [String] = []
        // The sum runs over the whole group in winner order: floating point adds up in the
        // order SQLite's merge adds it.
        if needsWholeGroup { windows.append("winnow_all AS (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)") }
        for (index, column) in columns.enumerated() where column.strategy == .min || column.strategy == .max {
            let term = dialect.orderTerm(
                "\(alias).\(column.name.sqlIdentifier)", type: column.type, descending: column.strategy == .max, nullsLast: true,
                tieBreak: false)
            windows.append("winnow_x\(index) AS (PARTITION BY \(partition) ORDER BY \(term), \(order))")
        }
        for (index, column) in columns.enumerated() where column.strategy == .latest || column.strategy == .prefer {
            guard let ranking = column.ranking else { continue }
            let by = "\(alias).\(ranking.by.sqlIdentifier)"
            let rank =
                column.strategy == .latest
                ? dialect.orderTerm(by, type: column.rankingType, descending: true, nullsLast: true, tieBreak: false)
                : "CASE CAST(\(by) AS text) "
                    + ranking.order.enumerated().map { "WHEN \(dialect.literal($1)) THEN \($0) " }.joined()
                    + "ELSE \(ranking.order.count) END"
            windows.append(
                "winnow_x\(index) AS (PARTITION BY \(partition) ORDER BY CASE WHEN \(candidate(column, alias: alias)) THEN 0 ELSE 1 END, \(rank), \(order))"
            )
        }
        return windows.map { ", " + $0 }.joined()
    }

    /// Whether a row of `alias` may give a `latest` or `prefer` merge its value: the value is not
    /// NULL (and for `latest` neither is the ranking column).
    func candidate(_ column: Column, alias: String) -> String {
        let value = "\(alias).\(column.name.sqlIdentifier) IS NOT NULL"
        guard column.strategy == .latest, let ranking = column.ranking else { return value }
        return "\(value) AND \(alias).\(ranking.by.sqlIdentifier) IS NOT NULL"
    }

    /// The outer SELECT's columns over the inner ranking `alias`: per merge column the row's
    /// value (``readable(_:type:)``), the merged value and whether it changes the winner.
    func outerColumns(alias: String) -> String {
        columns.enumerated().map { index, column in
            let own = "\(alias).winnow_o\(index)"
            guard column.onServer else { return ", \(Self.readable(own, type: column.type)), NULL::text, false" }
            let merged = "\(alias).winnow_m\(index)"
            let collate = PostgresDialect.isText(column.type) ? " COLLATE \"C\"" : ""
            // A pick with no candidate (NULL) leaves the winner's value.
            let picked = column.strategy == .latest || column.strategy == .prefer ? "\(merged) IS NOT NULL AND " : ""
            return ", \(Self.readable(own, type: column.type)), \(Self.readable(merged, type: column.type)), "
                + "(\(picked)\(merged)\(collate) IS DISTINCT FROM \(own)\(collate))"
        }.joined()
    }

    /// A value as ``SQLValue`` carries it exactly: text as text, `bytea` as bytes, every other
    /// type as the server's text for it (`numeric`, `timestamptz`, `jsonb`, ...: no rounding
    /// through a Double).
    static func readable(_ expression: String, type: String) -> String {
        if PostgresDialect.isText(type) || type.lowercased() == "bytea" { return expression }
        return "(\(expression))::text"
    }

    /// The changes a group's merges make to its winner: `rows` are the group's rows, winner
    /// first, each holding ``stride`` values per merge column from the ranking statement.
    func changes(_ rows: [[SQLValue]]) -> [(index: Int, value: SQLValue)] {
        guard let winner = rows.first else { return [] }
        var changes: [(Int, SQLValue)] = []
        for (index, column) in columns.enumerated() {
            let offset = index * Self.stride
            if column.onServer {
                if winner[offset + 2].bool == true { changes.append((index, winner[offset + 1])) }
            } else {
                let values = rows.map { $0[offset] }
                let merged = MergeResolver.merge(column.strategy, values)
                if !ValueOrder.identical(merged, values[0]) { changes.append((index, merged)) }
            }
        }
        return changes
    }

    /// One row's own value of merge column `index` (a row of the ranking statement).
    func ownValue(_ row: [SQLValue], _ index: Int) -> SQLValue { index * Self.stride < row.count ? row[index * Self.stride] : .null }

    /// A group's winner value of merge column `index` (before the merge).
    func winnerValue(_ rows: [[SQLValue]], _ index: Int) -> SQLValue { rows.first?[index * Self.stride] ?? .null }

    /// A value as a plan shows it: text quoted, numbers, dates and the like as the server
    /// prints them, bytes as `X'..'`.
    func display(_ value: SQLValue, column index: Int) -> String {
        if case let .text(text) = value, !PostgresDialect.isText(columns[index].type) { return text }
        return value.quotedLiteral
    }

    /// A merged value that does not fit its column's type: which group and column, and the
    /// server's words.
    struct Misfit: Error {
        var changes: [(winner: [String], index: Int, value: SQLValue)]
        /// The server's error for the batch's update.
        var error: Error
    }

    /// A condition that holds when `value` (text) would not keep its value in column `index`:
    /// cast to the declared type it changes (cut or rounded), or the cast fails.
    func loses(_ value: String, column index: Int) -> String {
        let column = columns[index]
        return "((\(value))::\(column.castType))::\(column.type) IS DISTINCT FROM (\(value))::\(column.castType)"
    }

    /// The first of `pending` that the server cannot store in its column, with the server's
    /// reason; nil when every value fits. Each value is tried alone, outside any transaction.
    func misfit(
        _ pending: [(winner: [String], index: Int, value: SQLValue)], link: PostgresLink
    ) throws -> (
        winner: [String], index: Int, value: SQLValue, reason: String
    )? {
        for change in pending where columns[change.index].makesValues {
            do {
                let changed = try link.query(
                    "SELECT \(loses("$1::text", column: change.index))", PostgresBindings(values: [change.value]))
                if changed.first?.first?.bool == true {
                    return (change.winner, change.index, change.value, "storing it would cut or round it")
                }
            } catch let error as PSQLError {
                guard let state = error.serverInfo?[.sqlState], state.hasPrefix("22") else { throw error }
                var reason = error.serverInfo?[.message] ?? "does not fit"
                if let detail = error.serverInfo?[.detail] { reason += ": \(detail)" }
                return (change.winner, change.index, change.value, reason)
            }
        }
        return nil
    }

    /// The refusal for a merged value that does not fit its column (exit 65).
    func refusal(
        _ misfit: (winner: [String], index: Int, value: SQLValue, reason: String), rule: CompiledRule, primaryKey: [String]
    ) -> WinnowError {
        let column = columns[misfit.index]
        let kept = zip(primaryKey, misfit.winner).map { "\($0) = \($1)" }.joined(separator: ", ")
        let wider = column.strategy == .sum ? "numeric" : "text"
        return .refused(
            "\(rule.rule.keyPath) (\(rule.table)): merge: {\(column.name): \(column.strategy.rawValue)} makes \(display(misfit.value, column: misfit.index)) for the group that keeps \(kept), which does not fit \(column.name)'s type \(column.type) (\(misfit.reason)); that batch changed nothing. Widen the column (ALTER TABLE \(rule.table.sqlIdentifier) ALTER COLUMN \(column.name.sqlIdentifier) TYPE \(wider)) or merge it another way"
        )
    }
}
