import Foundation
import WinnowCore

/// Reads the user's tables of the session's schema from PostgreSQL's catalog into a
/// ``LiveSchema`` (winnow's own `winnow_*` tables left out), so schema files, drift checks and
/// rules read the same on both engines.
struct PostgresInspector {
    let session: PostgresSession

    private var schema: SQLValue { SQLValue(session.postgresDialect.userSchema) }

    func inspect() throws -> LiveSchema {
        let tables = try session.rows(
            """
            SELECT c.oid::int8, c.relname::text,
                   -- Row-level security applies to this role: enabled, and the role is no superuser, has no
                   -- BYPASSRLS, and is not the owner (unless the owner is forced too).
                   c.relrowsecurity AND NOT r.rolsuper AND NOT r.rolbypassrls AND (c.relforcerowsecurity OR c.relowner <> r.oid)
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            CROSS JOIN (SELECT oid, rolsuper, rolbypassrls FROM pg_catalog.pg_roles WHERE rolname = current_user) AS r
            WHERE n.nspname = ? AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND left(lower(c.relname), 7) <> 'winnow_'
            ORDER BY c.relname
            """, [schema])
        guard !tables.isEmpty else { return LiveSchema(tables: []) }
        let columns = try session.rows(
            """
            SELECT a.attrelid::int8, a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
                   pg_catalog.pg_get_expr(d.adbin, d.adrelid), a.attgenerated <> '', a.attidentity <> '',
                   CASE WHEN a.attcollation <> t.typcollation THEN co.collname::text END
            FROM pg_catalog.pg_attribute a
            JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
            LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            LEFT JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation
            WHERE n.nspname = ? AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY a.attrelid, a.attnum
            """, [schema])
        let indexes = try session.rows(
            """
            SELECT i.indrelid::int8, ic.relname::text, i.indisunique, i.indpred IS NOT NULL, i.indisprimary,
                   EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid = i.indexrelid AND k.contype = 'u'),
                   array_to_json(ARRAY(SELECT CASE WHEN k.attnum = 0 THEN '' ELSE a.attname::text END
                         FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                         LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                         ORDER BY k.ord))::text,
                   i.indisvalid
            FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
            JOIN pg_catalog.pg_class c ON c.oid = i.indrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = ?
            ORDER BY i.indrelid, ic.relname
            """, [schema])
        let foreignKeys = try session.rows(
            """
            SELECT k.conrelid::int8, p.relname::text,
                   array_to_json(ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY AS x(attnum, ord)
                         JOIN pg_catalog.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = x.attnum ORDER BY x.ord))::text,
                   array_to_json(ARRAY(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY AS x(attnum, ord)
                         JOIN pg_catalog.pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = x.attnum ORDER BY x.ord))::text
            FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class c ON c.oid = k.conrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace JOIN pg_catalog.pg_class p ON p.oid = k.confrelid
            WHERE n.nspname = ? AND k.contype = 'f'
            ORDER BY k.conrelid, k.conname
            """, [schema])
        // The columns each table constraint names (PostgreSQL keeps no column-level
        // constraints apart from table-level ones; DROP COLUMN would drop them with it).
        let constrained = try session.rows(
            """
            SELECT k.conrelid::int8, a.attname::text FROM pg_catalog.pg_constraint k
            JOIN pg_catalog.pg_class c ON c.oid = k.conrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_catalog.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)
            WHERE n.nspname = ? AND k.contype IN ('p', 'u', 'c', 'f', 'x')
            """, [schema])
        var result: [LiveTable] = []
        for row in tables {
            let oid = row[0].int64
            let name = row[1].string ?? ""
            let tableIndexes = indexes.filter { $0[0].int64 == oid }
            var primaryKey: [String] = []
            if let pk = tableIndexes.first(where: { $0[4].bool == true }) { primaryKey = Self.textArray(pk[6]) }
            let named = Set(constrained.filter { $0[0].int64 == oid }.compactMap { $0[1].string })
            let liveColumns = columns.filter { $0[0].int64 == oid }.map { column -> LiveColumn in
                let columnName = column[1].string ?? ""
                let identity = column[6].bool == true
                var defaultSQL = column[4].string.map(Self.defaultSQL)
                if identity || defaultSQL?.hasPrefix("nextval(") == true { defaultSQL = nil }
                // A primary key is NOT NULL by itself; like SQLite's inspector, only an explicit
                // constraint is reported (schema files say nothing of a key's nullability).
                let inKey = primaryKey.contains(columnName)
                // PostgreSQL's 4-byte `real` is `float4` in a schema file, where `real` is
                // SQLite's 8-byte float (`double precision` here): a printed schema reads back alike.
                let type = column[2].string ?? ""
                var live = LiveColumn(
                    name: columnName, type: type == "real" ? "float4" : type, notNull: column[3].bool == true && !inKey,
                    defaultSQL: defaultSQL,
                    primaryKeyIndex: (primaryKey.firstIndex(of: columnName) ?? -1) + 1, generated: column[5].bool == true,
                    collation: column[7].string)
                live.inTableConstraint = named.contains(columnName)
                return live
            }
            let liveIndexes = tableIndexes.map { index -> LiveIndex in
                let columns = Self.textArray(index[6]).map { $0.isEmpty ? nil : $0 }
                let origin: IndexOrigin = index[4].bool == true ? .primaryKey : index[5].bool == true ? .uniqueConstraint : .createIndex
                return LiveIndex(
                    name: index[1].string ?? "", columns: columns, unique: index[2].bool == true,
                    partial: index[3].bool == true || index[7].bool == false, origin: origin)
            }
            let liveForeignKeys = foreignKeys.filter { $0[0].int64 == oid }.map { fk in
                LiveForeignKey(
                    childTable: name, childColumns: Self.textArray(fk[2]), parentTable: fk[1].string ?? "",
                    parentColumns: Self.textArray(fk[3]))
            }
            var table = LiveTable(
                name: name, columns: liveColumns, hasRowID: false, isVirtual: false, foreignKeys: liveForeignKeys, indexes: liveIndexes)
            table.rowSecurity = row[2].bool == true
            result.append(table)
        }
        return LiveSchema(tables: result)
    }

    /// Views and triggers of the schema, with their definitions.
    func dependents() throws -> [(name: String, sql: String)] {
        try session.rows(
            """
            SELECT c.relname::text, 'CREATE VIEW ' || quote_ident(c.relname) || ' AS ' || pg_catalog.pg_get_viewdef(c.oid)
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = ? AND c.relkind IN ('v', 'm')
            UNION ALL
            SELECT t.tgname::text, pg_catalog.pg_get_triggerdef(t.oid)
            FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = ? AND NOT t.tgisinternal
            """, [schema, schema]
        ).map { ($0[0].string ?? "", $0[1].string ?? "") }
    }

    /// A JSON array of strings (from `array_to_json(...)::text`).
    static func textArray(_ value: SQLValue) -> [String] {
        guard let text = value.string, let data = text.data(using: .utf8),
            let items = try? JSONSerialization.jsonObject(with: data) as? [Any]
        else { return [] }
        return items.map { $0 as? String ?? "" }
    }

    /// A default as a schema file spells it: `'text'::character varying` is `'text'`, `(-1)` is `-1`.
    static func defaultSQL(_ sql: String) -> String {
        var text = sql.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("'"), let range = text.range(of: "'::", options: .backwards) {
            let literal = String(text[..<range.lowerBound]) + "'"
            if !literal.dropFirst().dropLast().replacingOccurrences(of: "''", with: "").contains("'") { text = literal }
        }
        if text.hasPrefix("("), text.hasSuffix(")"), Double(text.dropFirst().dropLast()) != nil {
            text = String(text.dropFirst().dropLast())
        }
        return text
    }
}
