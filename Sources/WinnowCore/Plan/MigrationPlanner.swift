import Foundation

/// Infers a lightweight migration from the live schema and the target model. Pure: it reads
/// only the values given (no database handle), so it is unit-tested on pairs of schemas.
///
/// Lightweight (docs/reference.md section 3): add or rename a table; add a column (nullable, or NOT NULL
/// with a default); rename a column; drop a column or table (only with `allow_data_loss`); make
/// a column nullable; make it NOT NULL when it has a default; change a default; add or drop an
/// index. Anything else is refused with the table, the column and both definitions.
///
/// Drops are asked for by name only (`dropped:`, `dropped_indexes:`, `dropped_tables:`): a
/// table, column or index of the live database that the file does not mention is kept, and the
/// plan lists it (``MigrationPlan/kept``). An application that adds an index or a column after the
/// schema file was written loses neither.
public struct MigrationPlanner: Sendable {
    public var live: LiveSchema
    public var liveVersion: Int?
    public var target: SchemaModel
    public var allowDataLoss: Bool
    /// Tables the job deduplicates: their new unique indexes wait for the dedupe rules.
    public var dedupedTables: Set<String>
    /// Whether the engine that will run the steps drops a column in place
    /// (``DialectCapabilities/dropsColumnInPlace``); otherwise a column drop rebuilds the table.
    public var dropsColumnInPlace: Bool
    /// SQL of views and triggers (a dropped column they use cannot be dropped).
    public var dependents: [(name: String, sql: String)]

    public init(
        live: LiveSchema, liveVersion: Int?, target: SchemaModel, allowDataLoss: Bool,
        dedupedTables: Set<String> = [], dropsColumnInPlace: Bool, dependents: [(name: String, sql: String)] = []
    ) {
        self.live = live
        self.liveVersion = liveVersion
        self.target = target
        self.allowDataLoss = allowDataLoss
        self.dedupedTables = Set(dedupedTables.map { $0.lowercased() })
        self.dropsColumnInPlace = dropsColumnInPlace
        self.dependents = dependents
    }

    package static func same(_ a: String, _ b: String) -> Bool { a.caseInsensitiveCompare(b) == .orderedSame }

    /// The steps, or a ``WinnowError/refused(_:)`` listing every change that is not lightweight.
    public func plan() throws -> MigrationPlan {
        if let liveVersion, liveVersion > target.version {
            throw WinnowError.refused(
                "the database is at model version \(liveVersion), newer than the target version \(target.version); winnow never downgrades a database"
            )
        }
        var refusals: [MigrationRefusal] = []
        var renames: [MigrationStep] = []
        var creates: [MigrationStep] = []
        var columnSteps: [MigrationStep] = []
        var indexDrops: [MigrationStep] = []
        var columnDrops: [MigrationStep] = []
        var indexCreates: [MigrationStep] = []
        var tableDrops: [MigrationStep] = []
        var kept: [KeptObject] = []
        let liveModel = SchemaModel(live: live, version: liveVersion ?? 0)
        var matchedLive = Set<String>()
        // Tables this plan renames (old name → new): a child's foreign key to the old name is
        // carried to the new one by SQLite's RENAME, so it is not a foreign key change.
        var renamedTables: [String: String] = [:]
        for table in target.tables where liveModel.table(named: table.name) == nil {
            if let old = table.renamedFrom.first(where: { liveModel.table(named: $0) != nil && target.table(named: $0) == nil }) {
                renamedTables[liveModel.table(named: old)!.name.lowercased()] = table.name
            }
        }

        for table in target.tables {
            // Which live table is this one: same name, else the newest earlier name that exists.
            var source = liveModel.table(named: table.name)
            if source == nil {
                for old in table.renamedFrom {
                    if let candidate = liveModel.table(named: old), target.table(named: candidate.name) == nil {
                        source = candidate
                        renames.append(.renameTable(from: candidate.name, to: table.name))
                        break
                    }
                }
            }
            guard let liveTable = source else {
                creates.append(.createTable(table))
                // The seed may fill a new table with duplicates the job removes: its unique
                // indexes wait for the dedupe rules too.
                let deduped = dedupedTables.contains(table.name.lowercased())
                for index in table.indexes {
                    indexCreates.append(.createIndex(table: table.name, index: index, afterDedupe: index.unique && deduped))
                }
                continue
            }
            matchedLive.insert(liveTable.name.lowercased())
            let raw = live.table(named: liveTable.name)!
            diffTable(
                liveTable, raw: raw, table, renamedTables: renamedTables, refusals: &refusals, columnSteps: &columnSteps,
                indexDrops: &indexDrops,
                columnDrops: &columnDrops, indexCreates: &indexCreates, kept: &kept)
        }
        for table in liveModel.tables where !matchedLive.contains(table.name.lowercased()) {
            guard let listed = target.droppedTables.first(where: { $0.matches(table.name) }) else {
                kept.append(KeptObject(kind: .table, table: table.name, name: table.name))
                continue
            }
            if allowDataLoss {
                tableDrops.append(.dropTable(table.name))
            } else {
                refusals.append(
                    MigrationRefusal(
                        table: table.name, column: nil,
                        message:
                            "is listed under dropped_tables; dropping it loses its rows: set allow_data_loss: true in the job to drop it, or take it off dropped_tables to keep it",
                        location: listed.location))
            }
        }
        if !refusals.isEmpty {
            throw WinnowError.refused("not a lightweight migration:\n" + refusals.map { "  - \($0)" }.joined(separator: "\n"))
        }
        return MigrationPlan(
            fromVersion: liveVersion, toVersion: target.version,
            steps: renames + creates + indexDrops + columnSteps + columnDrops + indexCreates + tableDrops, kept: kept)
    }

    package func diffTable(
        _ liveTable: TableModel, raw: LiveTable, _ table: TableModel, renamedTables: [String: String],
        refusals: inout [MigrationRefusal],
        columnSteps: inout [MigrationStep], indexDrops: inout [MigrationStep], columnDrops: inout [MigrationStep],
        indexCreates: inout [MigrationStep], kept: inout [KeptObject]
    ) {
        let name = table.name
        var matchedColumns = Set<String>()
        var changed: [ColumnModel] = []
        var rebuildAdds: [ColumnModel] = []
        var reasons: [String] = []
        var drops: [String] = []
        func refuse(_ column: String?, _ message: String, _ at: SourceLocation?) {
            refusals.append(MigrationRefusal(table: name, column: column, message: message, location: at))
        }
        for column in table.columns {
            var source = liveTable.column(named: column.name)
            if source == nil {
                for old in column.renamedFrom {
                    if let candidate = liveTable.column(named: old), table.column(named: candidate.name) == nil {
                        source = candidate
                        columnSteps.append(.renameColumn(table: name, from: candidate.name, to: column.name))
                        break
                    }
                }
            }
            guard let liveColumn = source else {
                // A new column.
                if column.primaryKey {
                    refuse(
                        column.name, "a new primary key column is not a lightweight change (target: \(column.definition))", column.location)
                } else if !column.nullable && (column.defaultValue == nil || column.defaultValue == .null) {
                    refuse(column.name, "a new NOT NULL column needs a default (target: \(column.definition))", column.location)
                } else if let value = column.defaultValue, !value.isConstant {
                    rebuildAdds.append(column)
                    reasons.append("add \(column.name) with the non-constant default \(value.sql)")
                } else if column.references != nil, column.defaultValue != nil, column.defaultValue != .null {
                    rebuildAdds.append(column)
                    reasons.append("add \(column.name), a reference with a default")
                } else {
                    columnSteps.append(.addColumn(table: name, column: column))
                }
                continue
            }
            matchedColumns.insert(liveColumn.name.lowercased())
            let both = "live: \(liveColumn.definition); target: \(column.definition)"
            if liveColumn.normalizedType != column.normalizedType {
                refuse(column.name, "changing the type is not a lightweight change (\(both))", column.location)
                continue
            }
            if liveColumn.primaryKey != column.primaryKey {
                refuse(column.name, "changing the primary key is not a lightweight change (\(both))", column.location)
                continue
            }
            var liveReference = liveColumn.references
            if let old = liveReference?.table.lowercased(), let new = renamedTables[old] { liveReference?.table = new }
            if !ColumnReferenceModel.same(liveReference, column.references) {
                refuse(column.name, "changing a foreign key is not a lightweight change (\(both))", column.location)
                continue
            }
            var needsRebuild = false
            if liveColumn.nullable != column.nullable {
                if column.nullable {
                    reasons.append("make \(column.name) nullable")
                } else if let value = column.defaultValue, value != .null {
                    // The rebuild's batched copy fills the NULLs (coalesce): one pass, not two.
                    reasons.append("make \(column.name) NOT NULL (NULLs become \(value.sql))")
                } else {
                    refuse(column.name, "making a column NOT NULL needs a default to fill its NULLs (\(both))", column.location)
                    continue
                }
                needsRebuild = true
            }
            if !DefaultValue.same(liveColumn.defaultValue, column.defaultValue) {
                reasons.append("default of \(column.name) becomes \(column.defaultValue?.sql ?? "none")")
                needsRebuild = true
            }
            if needsRebuild {
                var target = column
                target.name = liveColumn.name == column.name ? column.name : column.name
                changed.append(target)
            }
        }
        // Indexes: by name; a changed definition is a drop and a create.
        var liveIndexes = liveTable.indexes
        for index in table.indexes {
            if let existing = liveIndexes.first(where: { Self.same($0.name, index.name) }) {
                liveIndexes.removeAll { Self.same($0.name, index.name) }
                if IndexModel.sameDefinition(existing, index) { continue }
                indexDrops.append(.dropIndex(table: name, name: existing.name))
            }
            let deferred =
                index.unique && (dedupedTables.contains(name.lowercased()) || dedupedTables.contains(liveTable.name.lowercased()))
            indexCreates.append(.createIndex(table: name, index: index, afterDedupe: deferred))
        }
        // A live index the file does not describe is kept unless the file lists it to drop.
        for index in liveIndexes {
            if table.drops(index: index.name) {
                indexDrops.append(.dropIndex(table: name, name: index.name))
            } else {
                kept.append(KeptObject(kind: .index, table: name, name: index.name))
            }
        }
        // The indexes the table has after the migration's index steps.
        let remainingIndexes = liveTable.indexes.filter { live in
            table.indexes.contains { Self.same($0.name, live.name) && IndexModel.sameDefinition($0, live) }
                || (!table.indexes.contains { Self.same($0.name, live.name) } && !table.drops(index: live.name))
        }

        // Columns the file does not describe: kept, unless it lists them under `dropped:`.
        for column in liveTable.columns where !matchedColumns.contains(column.name.lowercased()) {
            guard let listed = table.dropped.first(where: { $0.matches(column.name) }) else {
                kept.append(KeptObject(kind: .column, table: name, name: column.name))
                continue
            }
            func refuse(_ message: String) {
                refusals.append(MigrationRefusal(table: name, column: column.name, message: message, location: listed.location))
            }
            guard allowDataLoss else {
                refuse(
                    "is listed under dropped; dropping it loses its values: set allow_data_loss: true in the job to drop it, or take it off dropped to keep it (live: \(column.definition))"
                )
                continue
            }
            if column.primaryKey {
                refuse("dropping a primary key column is not a lightweight change (live: \(column.definition))")
                continue
            }
            if let user = dependents.first(where: { dependent in
                Self.mentions(dependent.sql, column.name) && Self.mentions(dependent.sql, liveTable.name)
            }) {
                refuse("is used by \(user.name); drop or change that first (live: \(column.definition))")
                continue
            }
            let liveColumn = raw.column(named: column.name)
            if liveColumn?.inTableConstraint ?? true {
                refuse(
                    "is named by a table constraint (PRIMARY KEY, UNIQUE, CHECK or FOREIGN KEY); dropping it is not a lightweight change")
                continue
            }
            let indexed =
                remainingIndexes.contains { $0.columns.contains { Self.same($0, column.name) } }
                || raw.indexes.contains { $0.origin != .createIndex && $0.columns.contains { Self.same($0 ?? "", column.name) } }
            let inForeignKey =
                column.references != nil
                || live.foreignKeys(referencing: raw.name).contains {
                    ($0.parentColumns ?? raw.primaryKey).contains { Self.same($0, column.name) }
                }
            let hasUniqueOrCheck = liveColumn?.constrainedInDefinition ?? false
            if !dropsColumnInPlace || indexed || inForeignKey || hasUniqueOrCheck {
                if indexed && !hasUniqueOrCheck && !inForeignKey && dropsColumnInPlace {
                    let names = remainingIndexes.filter { $0.columns.contains { Self.same($0, column.name) } }.map(\.name)
                    refuse(
                        "is indexed by \(names.isEmpty ? "an index the target keeps" : names.joined(separator: ", ")); list the index under dropped_indexes (or take it out of indexes) to drop it first"
                    )
                    continue
                }
                drops.append(column.name)
                reasons.append("drop \(column.name)")
            } else {
                columnDrops.append(.dropColumn(table: name, column: column.name))
            }
        }
        if !changed.isEmpty || !rebuildAdds.isEmpty || !drops.isEmpty {
            columnSteps.append(.rebuild(TableRebuild(table: name, changed: changed, added: rebuildAdds, dropped: drops, reasons: reasons)))
        }
    }

    /// Whether SQL text names an identifier (as a token, any quoting).
    package static func mentions(_ sql: String, _ identifier: String) -> Bool {
        SQLTokenizer.tokenize(sql).contains { $0.identifierValue.map { same($0, identifier) } ?? false }
    }
}
