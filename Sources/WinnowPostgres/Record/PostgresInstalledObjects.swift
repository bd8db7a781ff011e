import Foundation
import PostgresNIO
import WinnowCore

/// What winnow created in a PostgreSQL database: the `winnow_*` tables and trigger functions
/// in its schema (`winnow`), the triggers that call those functions on user tables
/// (incremental rules), and the schema itself when nothing else is in it.
struct PostgresInstalledObjects {
    let session: PostgresSession

    private var dialect: PostgresDialect { session.postgresDialect }
    private var schema: String { dialect.bookkeepingSchemaName }
    private static let winnowName = "LIKE 'winnow\\_%' ESCAPE '\\'"

    func list() throws -> [WinnowObject] {
        var objects: [WinnowObject] = []
        for row in try session.rows(
            """
            SELECT t.tgname::text, n.nspname::text, c.relname::text FROM pg_catalog.pg_trigger AS t
            JOIN pg_catalog.pg_class AS c ON c.oid = t.tgrelid JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
            JOIN pg_catalog.pg_proc AS p ON p.oid = t.tgfoid JOIN pg_catalog.pg_namespace AS pn ON pn.oid = p.pronamespace
            WHERE NOT t.tgisinternal AND pn.nspname = ? AND p.proname \(Self.winnowName) AND n.nspname <> ?
            ORDER BY 2, 3, 1
            """, [SQLValue(schema), SQLValue(schema)])
        {
            objects.append(WinnowObject(kind: .trigger, name: try row.string(0), schema: try row.string(1), on: try row.string(2)))
        }
        for row in try session.rows(
            """
            SELECT p.proname::text FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
            WHERE n.nspname = ? AND p.proname \(Self.winnowName) AND p.pronargs = 0 ORDER BY 1
            """, [SQLValue(schema)])
        {
            objects.append(WinnowObject(kind: .function, name: try row.string(0), schema: schema))
        }
        for row in try session.rows(
            """
            SELECT c.relname::text FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
            WHERE n.nspname = ? AND c.relkind IN ('r', 'p') AND c.relname \(Self.winnowName) ORDER BY 1
            """, [SQLValue(schema)])
        {
            let name = try row.string(0)
            let rows = try session.value("SELECT count(*) FROM \(schema.sqlIdentifier).\(name.sqlIdentifier)").int
            objects.append(WinnowObject(kind: .table, name: name, schema: schema, rows: rows))
        }
        if try schemaHoldsOnlyWinnow() { objects.append(WinnowObject(kind: .schema, name: schema)) }
        return objects
    }

    /// Whether the bookkeeping schema is winnow's alone: not the user's schema, and every
    /// relation, function and type in it is one of winnow's (a table's row and array types
    /// are named after it).
    private func schemaHoldsOnlyWinnow() throws -> Bool {
        guard schema != dialect.userSchema,
            try session.row("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = ?", [SQLValue(schema)]) != nil
        else { return false }
        let others =
            try session.value(
                """
                SELECT (SELECT count(*) FROM pg_catalog.pg_class AS c WHERE c.relnamespace = n.oid AND c.relname NOT \(Self.winnowName))
                     + (SELECT count(*) FROM pg_catalog.pg_proc AS p WHERE p.pronamespace = n.oid AND (p.proname NOT \(Self.winnowName) OR p.pronargs > 0))
                     + (SELECT count(*) FROM pg_catalog.pg_type AS t WHERE t.typnamespace = n.oid
                        AND t.typname NOT \(Self.winnowName) AND t.typname NOT LIKE '\\_winnow\\_%' ESCAPE '\\')
                FROM pg_catalog.pg_namespace AS n WHERE n.nspname = ?
                """, [SQLValue(schema)]
            ).int ?? 1
        return others == 0
    }

    /// Triggers, then functions, tables and the schema, each without CASCADE: an object of
    /// the user's that depends on one of them stops the removal (and the transaction rolls
    /// back) instead of going with it.
    func remove(_ objects: [WinnowObject]) throws {
        let order: [WinnowObject.Kind] = [.trigger, .function, .table, .schema]
        for object in order.flatMap({ kind in objects.filter { $0.kind == kind } }) {
            let statement: String
            switch object.kind {
            case .trigger:
                statement =
                    "DROP TRIGGER IF EXISTS \(object.name.sqlIdentifier) ON \((object.schema ?? dialect.userSchema).sqlIdentifier).\((object.on ?? "").sqlIdentifier)"
            case .function:
                statement = "DROP FUNCTION IF EXISTS \(schema.sqlIdentifier).\(object.name.sqlIdentifier)()"
            case .table:
                statement = "DROP TABLE IF EXISTS \(schema.sqlIdentifier).\(object.name.sqlIdentifier)"
            case .schema:
                statement = "DROP SCHEMA IF EXISTS \(object.name.sqlIdentifier)"
            }
            do {
                try session.execute(statement)
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "2BP01" {
                throw WinnowError.refused(
                    """
                    \(session.location): \(object.kind.rawValue) \(object.qualifiedName) cannot be removed: \
                    \(error.serverInfo?[.message] ?? "other objects depend on it") (\(error.serverInfo?[.detail] ?? "")); \
                    nothing was removed
                    """)
            }
        }
    }
}
