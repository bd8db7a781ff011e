import Foundation
import GRDB
import WinnowCore

/// Stops a rule whose rows may have moved to other rowids since its discovery.
///
/// What a rule's discovery finds (the queue, the merge decisions, the children's map, the merges
/// a stretch has taken) names rows by rowid, over many transactions. SQLite keeps a rowid only
/// where an `INTEGER PRIMARY KEY` names it: `VACUUM` may number the other tables' rows afresh
/// (it does for a table without any index). `VACUUM`, like any change of the schema, adds one
/// to `PRAGMA schema_version`. So where the rule's table or a table referencing it has no such
/// column, every write transaction of the rule first compares that version with the one its
/// discovery found (`temp.winnow_found.schema`, brought forward by winnow's own changes of the
/// schema); if another connection changed it, the rule ends there with exit 75, its committed
/// batches kept, and the next run finds the rows as they are. Without the check, the merges of
/// such a table went on by the old rowids into other rows.
enum RowidWatch {
    /// The tables of `rule` (its own, then those referencing it) that name their rows by a
    /// rowid no column holds, each once.
    static func tables(_ rule: CompiledRule) -> [String] {
        let named = [(rule.table, rule.identity)] + rule.references.map { ($0.childTable, $0.childIdentity) }
        return named.reduce(into: [String]()) { tables, entry in
            guard case .rowid(_, nil) = entry.1, !tables.contains(entry.0) else { return }
            tables.append(entry.0)
        }
    }

    /// Whether some table of `rule` names its rows by a rowid no column holds.
    static func applies(to rule: CompiledRule) -> Bool { !tables(rule).isEmpty }

    static func current(_ db: Database) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA main.schema_version"))
    }

    /// Throws where the schema version is no longer the one recorded for the rule (call inside
    /// the transaction, before anything is read or written).
    static func verify(_ db: Database, rule: CompiledRule) throws {
        let recorded = try Int64.fetchOne(db.cachedStatement(sql: "SELECT schema FROM temp.winnow_found"))
        guard let recorded, let now = try current(db), now != recorded else { return }
        throw WinnowError.locked(
            """
            \(rule.rule.keyPath) (\(rule.table)): another connection changed the database's schema or rebuilt it \
            (VACUUM) during the run; \(named(tables(rule))) no INTEGER PRIMARY KEY, so rows may have moved to other rowids \
            and what the run found no longer names them; the batches committed so far stay; run again
            """)
    }

    /// Records winnow's own change of the schema (in the transaction that made it, which
    /// ``verify(_:rule:)`` checked first).
    static func note(_ db: Database) throws {
        guard let now = try current(db) else { return }
        try db.execute(sql: "UPDATE temp.winnow_found SET schema = ?", arguments: [now])
    }

    private static func named(_ tables: [String]) -> String {
        tables.count == 1 ? "\(tables[0]) has" : "\(tables.joined(separator: ", ")) have"
    }
}
