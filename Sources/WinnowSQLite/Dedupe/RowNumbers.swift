import Foundation
import GRDB
import WinnowCore

/// How the SQLite batch engine names the rows of a rule's table, or of a table referencing it,
/// in its temporary tables, which hold rows as 64-bit integers.
///
/// A rowid table's row is its rowid. A `WITHOUT ROWID` table has none: its rows are numbered in
/// primary-key order in a map (`temp.winnow_ids` for the rule's table, `temp.winnow_cids_N` for
/// the child table of reference path N: `winnow_id`, then the key's values as stored,
/// `winnow_k0`, `winnow_k1`, ...) when the rule's duplicates are found, and every statement
/// reaches the table through that map by its primary key. What outlives the run (the journal,
/// `winnow_run_groups`) holds the key itself, packed (``ValueCodec``), never a number.
///
/// Rows written after the map was made have no number; the discovery and the maps are made in
/// one read transaction, so every row the discovery finds has one, and child rows written by
/// another connection since are numbered before a batch reads them (``topUp``).
struct RowNumbers {
    /// The table as the rule reads it (`main."t"`, or a migration preview's `SELECT`).
    let table: String
    /// The map's name (`temp.` is implied).
    let map: String
    let identity: RowIdentity
    /// The declared types of a `WITHOUT ROWID` table's key columns: the map's columns take the
    /// same affinity, so that comparisons between the two convert nothing and can use both
    /// tables' indexes.
    let types: [String]

    init(table: String, identity: RowIdentity, types: [String], map: String) {
        self.table = table
        self.map = map
        self.identity = identity
        self.types = types
    }

    /// The rowid expression of a rowid table; nil for a `WITHOUT ROWID` table.
    var rowid: String? {
        if case let .rowid(expression, _) = identity { return expression }
        return nil
    }

    /// The primary key's columns of a `WITHOUT ROWID` table, in key order (none for a rowid table).
    var key: [String] {
        if case let .primaryKey(columns) = identity { return columns }
        return []
    }

    /// The rows of the rule's table.
    init(_ rule: CompiledRule) {
        var types: [String] = []
        if case let .primaryKey(columns) = rule.identity { types = columns.map { rule.columnTypes[$0] ?? "" } }
        self.init(table: rule.qualifiedTable, identity: rule.identity, types: types, map: "winnow_ids")
    }

    /// The rows of the child table of the rule's reference path `index`.
    init(_ rule: CompiledRule, path index: Int) {
        let path = rule.references[index]
        self.init(
            table: rule.qualified(path.childTable), identity: path.childIdentity, types: path.childKeyTypes, map: "winnow_cids_\(index)")
    }

    /// Whether rows are numbered through a map.
    var mapped: Bool { rowid == nil }

    private var mapColumns: [String] { key.indices.map { "winnow_k\($0)" } }

    private func qualified(_ column: String, _ alias: String?) -> String {
        alias.map { "\($0).\(column.sqlIdentifier)" } ?? column.sqlIdentifier
    }

    /// Empties and fills the map: every row of the table, numbered in primary-key order.
    /// Nothing for a rowid table.
    var fillMap: String? {
        guard mapped else { return nil }
        let columns = mapColumns.joined(separator: ", ")
        let definitions = zip(mapColumns, types).map { $1.isEmpty ? $0 : "\($0) \($1)" }.joined(separator: ", ")
        return """
            DROP TABLE IF EXISTS temp.\(map);
            CREATE TEMP TABLE \(map) (winnow_id INTEGER PRIMARY KEY, \(definitions), UNIQUE (\(columns)));
            \(topUp!);
            """
    }

    /// Numbers the rows the map does not hold yet (all of them, in key order, into an empty map).
    var topUp: String? {
        guard mapped else { return nil }
        let keys = key.map(\.sqlIdentifier).joined(separator: ", ")
        return "INSERT OR IGNORE INTO temp.\(map) (\(mapColumns.joined(separator: ", "))) SELECT \(keys) FROM \(table) ORDER BY \(keys)"
    }

    /// A `CROSS JOIN` that brings in the table's row numbered `number` as `alias`.
    func join(_ alias: String, numbered number: String) -> String {
        guard mapped else { return "CROSS JOIN \(table) AS \(alias) ON \(alias).\(rowid!) = \(number)" }
        let mapAlias = "\(alias)_id"
        let match = zip(key, mapColumns).map { "\(alias).\($0.sqlIdentifier) = \(mapAlias).\($1)" }.joined(separator: " AND ")
        return "CROSS JOIN temp.\(map) AS \(mapAlias) ON \(mapAlias).winnow_id = \(number) CROSS JOIN \(table) AS \(alias) ON \(match)"
    }

    /// The number of the row `alias` names (`main."t"` in a statement on the table itself;
    /// nil: the table's columns unqualified).
    func number(of alias: String?) -> String {
        guard mapped else { return alias.map { "\($0).\(rowid!)" } ?? rowid! }
        let match = zip(mapColumns, key).map { "\($0) = \(qualified($1, alias))" }.joined(separator: " AND ")
        return "(SELECT winnow_id FROM temp.\(map) WHERE \(match))"
    }

    /// A condition on the row `alias` names: its number is one `numbers` (SQL selecting
    /// numbers) selects. It reaches the table by its primary key (or rowid).
    func among(_ numbers: String, alias: String? = nil) -> String {
        guard mapped else { return "\(number(of: alias)) IN (\(numbers))" }
        let columns = key.map { qualified($0, alias) }
        let tuple = columns.count == 1 ? columns[0] : "(\(columns.joined(separator: ", ")))"
        return "\(tuple) IN (SELECT \(mapColumns.joined(separator: ", ")) FROM temp.\(map) WHERE winnow_id IN (\(numbers)))"
    }

    /// A condition on the row `alias` names: it is numbered `number` (an expression).
    func numbered(_ number: String, alias: String? = nil) -> String {
        guard mapped else { return "\(self.number(of: alias)) = \(number)" }
        return among("SELECT \(number)", alias: alias)
    }

    /// A condition on the table's rows (unqualified): numbered in `(?1, ?2]`.
    var inRange: String {
        guard mapped else { return "\(rowid!) > ? AND \(rowid!) <= ?" }
        let columns = key.map(\.sqlIdentifier)
        let tuple = columns.count == 1 ? columns[0] : "(\(columns.joined(separator: ", ")))"
        return "\(tuple) IN (SELECT \(mapColumns.joined(separator: ", ")) FROM temp.\(map) WHERE winnow_id > ? AND winnow_id <= ?)"
    }

    /// The last number of the next rows.
    var nextBound: RangeBound {
        mapped ? RangeBound("winnow_id", in: "temp.\(map)") : RangeBound(rowid!, in: table)
    }

    /// The row's identity as the journal keeps it, over the table's own columns (unqualified):
    /// the rowid, or the primary key packed.
    var journalKey: String {
        mapped ? SQLFunctions.pack(key.map(\.sqlIdentifier)) : rowid!
    }

    /// The identity of the row numbered `number` as the journal keeps it.
    func journalKey(numbered number: String) -> String {
        guard mapped else { return number }
        return "(SELECT \(SQLFunctions.pack(mapColumns)) FROM temp.\(map) WHERE winnow_id = \(number))"
    }

    /// Reads the identities of numbered rows as people name them (samples, refusals).
    func keys(_ db: Database) -> Keys { Keys(db: db, numbers: self) }

    struct Keys {
        let db: Database
        let numbers: RowNumbers

        /// The row numbered `number`: its rowid, or its primary key as SQL spells its values.
        func key(_ number: Int64) throws -> RowKey {
            guard numbers.mapped else { return numbers.identity.key(rowid: number) }
            let quoted = numbers.mapColumns.map { "quote(\($0))" }.joined(separator: ", ")
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT \(quoted) FROM temp.\(numbers.map) WHERE winnow_id = ?"), arguments: [number])
            return numbers.identity.key(literals: numbers.key.indices.map { row?[$0] as String? ?? "NULL" })
        }
    }
}
