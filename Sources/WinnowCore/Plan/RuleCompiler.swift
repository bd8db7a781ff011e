import Foundation

/// Binds a ``DedupeRule`` to a ``LiveSchema`` snapshot. Pure: it reads only the values given.
///
/// Every identifier of the rule is looked up in the live schema (case-insensitively, as SQLite
/// does) and replaced by its canonical spelling; an unknown table or column is an
/// ``WinnowError/invalidFile(_:_:)`` pointing at the node that named it.
public enum RuleCompiler {
    /// Why no rule can deduplicate `table` on this engine (nil when one can): a virtual table,
    /// or rows the engine gives no name winnow can use (SQLite: a WITHOUT ROWID table, or a
    /// rowid every spelling of which a column shadows; PostgreSQL: no primary key, or one of a
    /// type rows cannot be looked up by). `init` lists such tables with this reason.
    public static func notDeduplicable(_ table: LiveTable, dialect: any SQLDialect) -> String? {
        if table.isVirtual { return "'\(table.name)' is a virtual table; only ordinary tables can be deduplicated" }
        guard dialect.rowIdentity(of: table) != nil else {
            if !table.hasRowID, table.primaryKey.isEmpty {
                return
                    "'\(table.name)' has no primary key; on \(dialect.name) winnow identifies a row by its primary key (add one, e.g. ALTER TABLE \(table.name.sqlIdentifier) ADD PRIMARY KEY (...))"
            }
            if table.hasRowID {
                return
                    "'\(table.name)' has columns named rowid, _rowid_ and oid and no INTEGER PRIMARY KEY, so its rowid cannot be named; winnow cannot deduplicate it"
            }
            return "'\(table.name)' is a WITHOUT ROWID table; winnow deduplicates rowid tables only"
        }
        return dialect.unsupportedIdentity(of: table)
    }

    public static func compile(_ rule: DedupeRule, schema: LiveSchema, dialect: any SQLDialect) throws -> CompiledRule {
        let path = rule.keyPath
        func fail(_ location: SourceLocation?, _ key: String, _ message: String) -> WinnowError {
            .invalidFile(location ?? rule.location, "\(path).\(key): \(message)")
        }
        guard !Bookkeeping.isWinnowTable(rule.entity.value) else {
            throw fail(rule.entity.location, "entity", "winnow_* tables are winnow's own bookkeeping and are never deduplicated")
        }
        guard let table = schema.table(named: rule.entity.value) else {
            let known = schema.tables.map(\.name).joined(separator: ", ")
            throw fail(
                rule.entity.location, "entity",
                "no table '\(rule.entity.value)' in the database (tables: \(known.isEmpty ? "none" : known))")
        }
        if let reason = notDeduplicable(table, dialect: dialect) { throw fail(rule.entity.location, "entity", reason) }
        guard let identity = dialect.rowIdentity(of: table) else {
            throw WinnowError.internal("'\(table.name)' has no row identity, yet was not refused")
        }
        func column(_ name: Located<String>, _ key: String, stored: Bool = false) throws -> LiveColumn {
            guard let column = table.column(named: name.value) else {
                throw fail(
                    name.location, key,
                    "table '\(table.name)' has no column '\(name.value)' (columns: \(table.columns.map(\.name).joined(separator: ", ")))")
            }
            if stored, !column.isStored {
                throw fail(name.location, key, "'\(table.name).\(column.name)' is a generated column and cannot be written")
            }
            return column
        }

        let keyColumns = try rule.key.map { try column($0, "key").name }
        for (index, name) in keyColumns.enumerated() where keyColumns[..<index].contains(name) {
            throw fail(
                rule.key[index].location, "key",
                "column '\(rule.key[index].value)' is '\(name)' again (column names are case-insensitive)")
        }
        var normalizers: [String: [Normalizer]] = [:]
        for (written, canonical) in zip(rule.key.map(\.value), keyColumns) {
            normalizers[canonical] = rule.normalizers(for: written)
        }

        var hashColumn: String?
        if let hc = rule.hashColumn {
            if let reason = dialect.unsupported(.hashColumn, on: table) { throw fail(hc.location, "hash_column", reason) }
            let live = try column(hc, "hash_column", stored: true)
            guard live.primaryKeyIndex == 0 else { throw fail(hc.location, "hash_column", "'\(live.name)' is part of the primary key") }
            guard !keyColumns.contains(live.name) else {
                throw fail(hc.location, "hash_column", "the hash column cannot also be a key column")
            }
            hashColumn = live.name
        }

        var winnerTerms: [OrderTerm] = []
        let nonKeyStored = table.storedColumns.filter { $0.primaryKeyIndex == 0 }.map(\.name)
        switch rule.winner {
        case .mostComplete:
            winnerTerms.append(.completeness(nonKeyStored))
        case let .ordered(terms):
            for term in terms {
                let name = try column(term.column, "winner").name
                winnerTerms.append(.column(name, descending: term.descending, nullsLast: term.nullsLast))
            }
        }

        var mergeColumns: [(name: String, strategy: MergeStrategy)] = []
        var mergeRankings: [MergeRanking?] = []
        for merge in rule.merge {
            let live = try column(merge.column, "merge", stored: true)
            guard live.primaryKeyIndex == 0 else {
                throw fail(merge.column.location, "merge", "'\(live.name)' is part of the primary key and cannot be merged")
            }
            guard !keyColumns.contains(live.name), live.name != hashColumn else {
                throw fail(merge.column.location, "merge", "a key column cannot be merged: every row of a group already shares its value")
            }
            guard !mergeColumns.contains(where: { $0.name == live.name }) else {
                throw fail(merge.column.location, "merge", "column '\(live.name)' is merged twice")
            }
            if let reason = dialect.unsupportedMerge(merge.strategy, type: live.type) {
                throw fail(merge.column.location, "merge", "'\(live.name)' is \(live.type): \(reason)")
            }
            mergeColumns.append((live.name, merge.strategy))
            mergeRankings.append(
                try merge.by.map { by in
                    let ranking = try column(by, "merge")
                    // `latest` orders the rows by its column, as `max` orders its values.
                    if merge.strategy == .latest, let reason = dialect.unsupportedMerge(.max, type: ranking.type) {
                        throw fail(by.location, "merge", "latest ranks rows by '\(ranking.name)', which is \(ranking.type): \(reason)")
                    }
                    return MergeRanking(by: ranking.name, order: merge.order)
                })
        }

        let references = try referencePaths(rule, table: table, schema: schema, dialect: dialect)

        var collations: [String: String]? = table.collationsKnown ? [:] : nil
        for term in winnerTerms {
            if case let .column(name, _, _) = term, let collation = table.column(named: name)?.collation { collations?[name] = collation }
        }
        var compiled = CompiledRule(
            rule: rule, table: table.name, identity: identity,
            storedColumns: table.storedColumns.map(\.name), primaryKey: table.primaryKey,
            keyColumns: keyColumns, mergeColumns: mergeColumns, references: references,
            hashColumn: hashColumn, winnerTerms: winnerTerms, tieBreakColumns: nonKeyStored,
            normalizers: normalizers, dialect: dialect)
        compiled.winnerCollations = collations
        compiled.tableHasIndex = !table.indexes.isEmpty
        compiled.mergeRankings = mergeRankings
        compiled.rowSecurityTables = ([table.name] + references.map(\.childTable)).filter { name in
            schema.table(named: name)?.rowSecurity == true
        }.reduce(into: [String]()) { names, name in if !names.contains(name) { names.append(name) } }
        compiled.columnTypes = Dictionary(table.columns.map { ($0.name, $0.type) }, uniquingKeysWith: { a, _ in a })
        compiled.foreignKeysSuspendable = foreignKeysSuspendable(
            table: table, schema: schema, references: references,
            written: mergeColumns.map(\.name) + (hashColumn.map { [$0] } ?? []))
        if rule.linksByAny {
            // Each alternative's columns in their canonical spelling (the rule's `key` lists
            // them all, so every one was looked up above).
            let canonical = Dictionary(zip(rule.key.map(\.value), keyColumns), uniquingKeysWith: { a, _ in a })
            compiled.components = ComponentKey(
                table: "winnow_components_\(rule.index)",
                alternatives: rule.anyOf.map { alternative in
                    ComponentKey.Alternative(
                        label: alternative.label,
                        columns: alternative.columns.map { canonical[$0.value] ?? $0.value },
                        similar: alternative.similar.map { similar in
                            (similar.columns.map { canonical[$0.value] ?? $0.value }, similar.measure)
                        },
                        normalizers: Dictionary(
                            alternative.normalize.map { (canonical[$0.key] ?? $0.key, $0.value) }, uniquingKeysWith: { a, _ in a }))
                },
                maxGroupSize: rule.effectiveMaxGroupSize)
        }
        if rule.incremental {
            if let reason = dialect.unsupported(.incremental, on: table) { throw fail(rule.location, "incremental", reason) }
            compiled.lookupColumns = try lookupColumns(
                rule, table: table, keyColumns: keyColumns, hashColumn: hashColumn,
                normalizers: normalizers)
        }
        return compiled
    }

    /// What an incremental run looks a changed row's key up by: plain key columns that lead an
    /// index, or a hash column that leads one. Anything else would mean a full scan per run.
    package static func lookupColumns(
        _ rule: DedupeRule, table: LiveTable, keyColumns: [String], hashColumn: String?,
        normalizers: [String: [Normalizer]]
    ) throws -> [String] {
        let leadsAnIndex = table.hasIndex(leading:)
        if rule.hash {
            if let hashColumn, leadsAnIndex([hashColumn]) { return [hashColumn] }
            throw WinnowError.invalidFile(
                rule.location,
                "\(rule.keyPath).incremental: a hashed key is looked up by its hash_column; give the rule a hash_column and create an index on it"
            )
        }
        let plain = keyColumns.allSatisfy { normalizers[$0, default: []].isEmpty }
        if plain, leadsAnIndex(keyColumns) { return keyColumns }
        if !plain {
            throw WinnowError.invalidFile(
                rule.location,
                "\(rule.keyPath).incremental: a normalised key cannot be looked up through an index; use hash: true with an indexed hash_column"
            )
        }
        throw WinnowError.invalidFile(
            rule.location,
            "\(rule.keyPath).incremental: needs an index on (\(keyColumns.joined(separator: ", "))) of \(table.name) to look keys up")
    }

    /// Whether the rule's batches may run with SQLite's foreign-key enforcement off, checking the
    /// references they touch themselves (see ``CompiledRule/foreignKeysSuspendable``): only when
    /// every declared foreign key into the table is re-pointed by the rule, no column the rule
    /// writes on its table (`written`) takes part in a declared foreign key (in or out), and no
    /// child row the rule may delete (link-table collisions) is itself referenced.
    package static func foreignKeysSuspendable(
        table: LiveTable, schema: LiveSchema, references: [ReferencePath],
        written: [String]
    ) -> Bool {
        let incoming = schema.foreignKeys(referencing: table.name)
        guard !incoming.isEmpty, incoming.count == references.filter(\.declared).count else { return false }
        let writtenLower = Set(written.map { $0.lowercased() })
        let referencedColumns = incoming.flatMap { $0.parentColumns ?? table.primaryKey } + table.foreignKeys.flatMap(\.childColumns)
        guard referencedColumns.allSatisfy({ !writtenLower.contains($0.lowercased()) }) else { return false }
        return references.allSatisfy { path in
            path.uniqueKeys.isEmpty || schema.foreignKeys(referencing: path.childTable).isEmpty
        }
    }

    /// Declared foreign keys into the table, then `referenced_by:` entries not already declared.
    package static func referencePaths(
        _ rule: DedupeRule, table: LiveTable, schema: LiveSchema, dialect: any SQLDialect
    ) throws -> [ReferencePath] {
        var paths: [ReferencePath] = []
        func uniqueKeys(of child: LiveTable, containing columns: [String]) -> [[String]] {
            var keys: [[String]] = []
            if let alias = child.rowIDAlias, columns.contains(alias) { keys.append([alias]) }
            for index in child.indexes where index.unique {
                let names = index.columns.compactMap { $0 }
                guard names.count == index.columns.count, names.contains(where: columns.contains) else { continue }
                keys.append(names)
            }
            return keys
        }
        func childTable(_ name: String, location: SourceLocation?) throws -> LiveTable {
            guard let child = schema.table(named: name) else {
                throw WinnowError.invalidFile(
                    location ?? rule.location, "\(rule.keyPath).referenced_by: no table '\(name)' in the database")
            }
            guard dialect.rowIdentity(of: child) != nil, !child.isVirtual else {
                if !child.hasRowID, child.primaryKey.isEmpty {
                    throw WinnowError.invalidFile(
                        location ?? rule.location,
                        "\(rule.keyPath): '\(child.name)' references '\(table.name)' but has no primary key; on \(dialect.name) winnow re-points and journals a row by its primary key"
                    )
                }
                throw WinnowError.invalidFile(
                    location ?? rule.location,
                    "\(rule.keyPath): '\(child.name)' references '\(table.name)' but is a WITHOUT ROWID or virtual table; winnow cannot re-point or journal its rows"
                )
            }
            return child
        }
        for fk in schema.foreignKeys(referencing: table.name) {
            let parentColumns: [String]
            if let explicit = fk.parentColumns {
                parentColumns = explicit.map { table.column(named: $0)?.name ?? $0 }
            } else {
                parentColumns = table.primaryKey
            }
            guard parentColumns.count == fk.childColumns.count, !parentColumns.isEmpty,
                parentColumns.allSatisfy({ table.column(named: $0) != nil })
            else { continue }  // a mismatched key SQLite itself rejects
            let child = try childTable(fk.childTable, location: rule.entity.location)
            let childColumns = fk.childColumns.map { child.column(named: $0)?.name ?? $0 }
            paths.append(
                ReferencePath(
                    childTable: child.name, childColumns: childColumns, parentColumns: parentColumns,
                    childRowID: dialect.rowIdentity(of: child)!.sql, childStoredColumns: child.storedColumns.map(\.name),
                    uniqueKeys: uniqueKeys(of: child, containing: childColumns), declared: true,
                    indexed: child.hasIndex(leading: childColumns)
                ).identified(by: child, dialect))
        }
        for ref in rule.referencedBy {
            let child = try childTable(ref.table, location: ref.location)
            guard let column = child.column(named: ref.column) else {
                throw WinnowError.invalidFile(
                    ref.location ?? rule.location,
                    "\(rule.keyPath).referenced_by: table '\(child.name)' has no column '\(ref.column)'")
            }
            let parentKey: String
            if table.primaryKey.count == 1 {
                parentKey = table.primaryKey[0]
            } else if table.primaryKey.isEmpty {
                throw WinnowError.invalidFile(
                    ref.location ?? rule.location,
                    "\(rule.keyPath).referenced_by: '\(table.name)' has no declared primary key for '\(child.name).\(column.name)' to hold")
            } else {
                throw WinnowError.invalidFile(
                    ref.location ?? rule.location,
                    "\(rule.keyPath).referenced_by: '\(table.name)' has a primary key of \(table.primaryKey.count) columns; referenced_by needs a single-column key"
                )
            }
            if paths.contains(where: { $0.childTable == child.name && $0.childColumns == [column.name] }) { continue }
            paths.append(
                ReferencePath(
                    childTable: child.name, childColumns: [column.name], parentColumns: [parentKey],
                    childRowID: dialect.rowIdentity(of: child)!.sql, childStoredColumns: child.storedColumns.map(\.name),
                    uniqueKeys: uniqueKeys(of: child, containing: [column.name]), declared: false,
                    indexed: child.hasIndex(leading: [column.name])
                ).identified(by: child, dialect))
        }
        return paths
    }
}

extension ReferencePath {
    /// The path with its child table's identity (and the types of its key's columns).
    func identified(by child: LiveTable, _ dialect: any SQLDialect) -> ReferencePath {
        var path = self
        if let identity = dialect.rowIdentity(of: child) {
            path.childIdentity = identity
            if case let .primaryKey(columns) = identity { path.childKeyTypes = columns.map { child.column(named: $0)?.type ?? "" } }
        }
        return path
    }
}
