import Foundation
import WinnowCore

/// The journal of a rule's deleted losers kept in their table's own column types
/// (docs/postgresql.md, "Journal"): one table per journal shape,
/// `winnow.winnow_journal_rows_<shape>`, made from the user table by `CREATE TABLE ... AS
/// SELECT ... WITH NO DATA` (each column keeps its type, type modifier and collation), filled by
/// the batch's own `DELETE ... RETURNING` through an `INSERT ... SELECT`. No `jsonb` image is
/// built, and each row carries its winner's key, so no `winnow_run_groups` row is written.
///
/// Its columns: `winnow_run`, `winnow_rule`, `winnow_batch`; `winnow_seq`, one value of
/// `winnow_journal`'s own sequence per statement (so `restore` orders these rows among the
/// `jsonb` journal's entries); the winner's key as `winnow_w0`, `winnow_w1`, ...; then the
/// table's stored columns under their own names. `winnow_journal_typed` registers each table
/// with the key its rows were deleted by.
struct PostgresTypedJournal: Equatable {
    static let prefix = "winnow_journal_rows_"
    static let fixed = ["winnow_run", "winnow_rule", "winnow_batch", "winnow_seq"]

    /// The journal shape (`winnow_journal_shapes.id`).
    let shape: Int64
    /// The user table's name, as the shape records it.
    let table: String
    /// The journal table, qualified and quoted.
    let relation: String
    /// The table's stored columns, as journaled.
    let columns: [String]
    /// The primary key the rows were deleted by (each a column of `columns`).
    let key: [String]

    var winners: [String] { key.indices.map { "winnow_w\($0)" } }

    /// The journal table of `shape` for `table` (qualified SQL `source`), created when missing.
    /// Nil where the table's rows cannot be kept this way, and the `jsonb` journal keeps them:
    /// a column named like winnow's own (`winnow_...`), a table too wide for a journal table
    /// beside its columns, or a journal table of the same shape whose column types no longer
    /// match the table's (a type changed since it was made).
    static func prepare(
        session: PostgresSession, shape: Int64, table: String, source: String, columns: [String], key: [String]
    ) throws -> PostgresTypedJournal? {
        // (A table has at most 1,600 columns: the journal table's own and the winner's key
        // must fit beside the table's.)
        guard !key.isEmpty, key.allSatisfy(columns.contains), columns.count + fixed.count + key.count <= 1600,
            !columns.contains(where: { $0.lowercased().hasPrefix(Bookkeeping.tablePrefix) })
        else { return nil }
        let dialect = session.postgresDialect
        let name = prefix + String(shape)
        let relation = dialect.bookkeeping(name)
        let journal = PostgresTypedJournal(shape: shape, table: table, relation: relation, columns: columns, key: key)
        let made = "SELECT \(journal.definition(alias: "t")) FROM \(source) AS t"
        if try session.value("SELECT to_regclass(?)::text", [SQLValue(relation)]).string != nil {
            // Kept only while each column has the type (with its modifier) and collation the
            // same SELECT gives now.
            let attributes = { (relation: String) in
                try session.rows(
                    """
                    SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attcollation::int8
                    FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped
                    ORDER BY a.attnum
                    """, [SQLValue(relation)]
                ).map { (name: try $0.string(0), type: [try $0.string(1), String(try $0.int64(2))]) }
            }
            let user = Dictionary(try attributes(source).map { ($0.name, $0.type) }, uniquingKeysWith: { a, _ in a })
            let now =
                Self.fixed.map { [$0, "bigint", "0"] } + zip(key, journal.winners).map { [$1] + (user[$0] ?? []) }
                + columns.map { [$0] + (user[$0] ?? []) }
            let kept = try attributes(relation).map { [$0.name] + $0.type }
            return now == kept ? journal : nil
        }
        // (A journal table dropped by hand is made again under its registered name.)
        try session.writeTransaction {
            try session.execute(
                """
                CREATE TABLE IF NOT EXISTS \(dialect.bookkeeping("winnow_journal_typed")) (
                    shape_id BIGINT PRIMARY KEY, tbl TEXT NOT NULL, relation TEXT NOT NULL, key TEXT NOT NULL)
                """)
            try session.execute("CREATE TABLE \(relation) AS \(made) WITH NO DATA")
            try session.execute("CREATE INDEX \((name + "_by_run").sqlIdentifier) ON \(relation) (winnow_run, winnow_seq)")
            try session.execute(
                """
                INSERT INTO \(dialect.bookkeeping("winnow_journal_typed")) (shape_id, tbl, relation, key) VALUES (?, ?, ?, ?)
                ON CONFLICT (shape_id) DO UPDATE SET relation = excluded.relation, key = excluded.key
                """,
                [SQLValue(shape), SQLValue(table), SQLValue(name), SQLValue(Self.json(key))])
        }
        return journal
    }

    /// The SELECT list that gives the journal table's columns their types: winnow's columns,
    /// the winner's key (typed like the key), then the table's columns.
    private func definition(alias: String) -> String {
        (Self.fixed.map { "NULL::int8 AS \($0)" }
            + zip(key, winners).map { "\(alias).\($0.sqlIdentifier) AS \($1)" }
            + columns.map { "\(alias).\($0.sqlIdentifier)" }).joined(separator: ", ")
    }

    /// The `INSERT ... SELECT` that journals the rows of `from` (a FROM clause whose alias `c`
    /// has the table's columns): `run`, `rule`, `batch` (SQL), `winners` (the winner's key
    /// columns, as expressions). The statement's number is one value of `winnow_journal`'s
    /// sequence (an init plan: evaluated once per statement).
    func insertSQL(run: Int64, rule: Int, batch: String, winners values: [String], from: String, dialect: PostgresDialect) -> String {
        let names = Self.fixed + winners + columns.map(\.sqlIdentifier)
        let sequence = "(SELECT nextval(pg_get_serial_sequence(\(dialect.literal(dialect.bookkeeping("winnow_journal"))), 'id')))"
        let selected = ["\(run)", "\(rule)", batch, sequence] + values + columns.map { "c.\($0.sqlIdentifier)" }
        return "INSERT INTO \(relation) (\(names.joined(separator: ", "))) SELECT \(selected.joined(separator: ", ")) \(from)"
    }

    /// The journal tables a database has (`winnow_journal_typed`), by shape.
    static func all(_ session: PostgresSession) throws -> [PostgresTypedJournal] {
        guard try session.tableExists("winnow_journal_typed") else { return [] }
        let dialect = session.postgresDialect
        return try session.rows(
            """
            SELECT t.shape_id, t.tbl, t.relation, s.columns, t.key FROM \(dialect.bookkeeping("winnow_journal_typed")) AS t
            JOIN \(dialect.bookkeeping("winnow_journal_shapes")) AS s ON s.id = t.shape_id
            WHERE to_regclass(format('%I.%I', \(dialect.literal(dialect.bookkeepingSchemaName)), t.relation)) IS NOT NULL
            ORDER BY t.shape_id
            """
        ).map { row in
            PostgresTypedJournal(
                shape: try row.int64(0), table: try row.string(1), relation: dialect.bookkeeping(try row.string(2)),
                columns: PostgresJournalReader.decode(row[3].string, as: [String].self) ?? [],
                key: PostgresJournalReader.decode(row[4].string, as: [String].self) ?? [])
        }
    }

    /// The deleted row's key columns, for the row `alias`.
    func ridColumns(alias: String) -> [String] { key.map { "\(alias).\($0.sqlIdentifier)" } }

    /// The winner's key columns, for the row `alias`.
    func winnerColumns(alias: String) -> [String] { winners.map { "\(alias).\($0)" } }

    /// The deleted row's key as the `jsonb` journal's `rid` holds it, for the row `alias`.
    func rid(alias: String) -> String { "jsonb_build_array(\(ridColumns(alias: alias).joined(separator: ", ")))" }

    /// The winner's key, as `rid` spells a key.
    func winner(alias: String) -> String { "jsonb_build_array(\(winnerColumns(alias: alias).joined(separator: ", ")))" }

    static func json(_ names: [String]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: names, options: [.withoutEscapingSlashes])) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
