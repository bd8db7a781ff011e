import Foundation

/// A rebuild of one table by SQLite's generalised ALTER TABLE procedure (new table, batched
/// copy, cut-over), for the changes ALTER TABLE cannot make.
public struct TableRebuild: Sendable, Equatable {
    public var table: String
    /// Columns whose NOT NULL or DEFAULT changes: their target definition.
    public var changed: [ColumnModel]
    /// Columns to add that ALTER TABLE ADD COLUMN cannot add (a non-constant default).
    public var added: [ColumnModel]
    /// Columns to drop that ALTER TABLE DROP COLUMN cannot drop.
    public var dropped: [String]
    /// Why each change needs a rebuild, for plans.
    public var reasons: [String]

    /// Columns made NOT NULL, with the default the copy fills their NULLs with.
    public var fills: [(column: String, value: DefaultValue)] {
        changed.compactMap { column in
            guard !column.nullable, let value = column.defaultValue, value != .null else { return nil }
            return (column.name, value)
        }
    }
}

/// One typed step of a migration, in execution order.
public enum MigrationStep: Sendable, Equatable {
    case createTable(TableModel)
    case renameTable(from: String, to: String)
    case renameColumn(table: String, from: String, to: String)
    case addColumn(table: String, column: ColumnModel)
    case rebuild(TableRebuild)
    case dropIndex(table: String, name: String)
    case dropColumn(table: String, column: String)
    /// `afterDedupe`: a unique index on a table that the job deduplicates is created after the
    /// table's dedupe rules ran.
    case createIndex(table: String, index: IndexModel, afterDedupe: Bool)
    case dropTable(String)

    /// Whether the step rewrites a whole table.
    /// A unique index created only after the rules have run (today's duplicates would fail it).
    public var waitsForDedupe: Bool {
        if case let .createIndex(_, _, afterDedupe) = self { return afterDedupe }
        return false
    }

    public var rebuildsTable: Bool {
        if case .rebuild = self { return true }
        return false
    }

    /// The table the step is about.
    public var table: String {
        switch self {
        case let .createTable(t): return t.name
        case let .renameTable(_, to): return to
        case let .renameColumn(t, _, _), let .addColumn(t, _), let .dropIndex(t, _),
            let .dropColumn(t, _), let .createIndex(t, _, _):
            return t
        case let .rebuild(r): return r.table
        case let .dropTable(t): return t
        }
    }

    public var summary: String {
        switch self {
        case let .createTable(t): return "create table \(t.name)"
        case let .renameTable(from, to): return "rename table \(from) to \(to)"
        case let .renameColumn(t, from, to): return "rename column \(t).\(from) to \(to)"
        case let .addColumn(t, c): return "add column \(t).\(c.name) (\(c.definition))"
        case let .rebuild(r): return "rebuild table \(r.table): \(r.reasons.joined(separator: "; "))"
        case let .dropIndex(t, name): return "drop index \(name) on \(t)"
        case let .dropColumn(t, c): return "drop column \(t).\(c)"
        case let .createIndex(t, i, after):
            return
                "create \(i.unique ? "unique " : "")index \(i.name) on \(t) (\(i.columns.joined(separator: ", ")))\(after ? ", after deduplication" : "")"
        case let .dropTable(t): return "drop table \(t)"
        }
    }
}

/// What it takes to bring a database to a target model.
public struct MigrationPlan: Sendable, Equatable {
    public var fromVersion: Int?
    public var toVersion: Int
    public var steps: [MigrationStep]
    /// Live tables, columns and indexes the target does not describe and does not list to
    /// drop: the migration leaves them as they are.
    public var kept: [KeptObject]

    public init(fromVersion: Int?, toVersion: Int, steps: [MigrationStep], kept: [KeptObject] = []) {
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.steps = steps
        self.kept = kept
    }

    public var isEmpty: Bool { steps.isEmpty }

    /// The unique indexes the plan creates, with their tables (checked against the rows before
    /// anything changes: rows that would still share their key refuse the job).
    public var uniqueIndexes: [(table: String, index: IndexModel)] {
        steps.compactMap { step in
            if case let .createIndex(table, index, _) = step, index.unique { return (table, index) }
            return nil
        }
    }
}

/// A table, column or index of the live database that the schema file does not mention: a
/// migration keeps it, and says so.
public struct KeptObject: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable { case table, column, index }
    public var kind: Kind
    /// The table (for a table: its own name).
    public var table: String
    public var name: String

    public init(kind: Kind, table: String, name: String) {
        self.kind = kind
        self.table = table
        self.name = name
    }

    /// The key of the schema file that would drop it.
    public var dropKey: String {
        switch kind {
        case .table: return "dropped_tables"
        case .column: return "dropped"
        case .index: return "dropped_indexes"
        }
    }

    /// `index my_idx on Track`, `column Track.extra`, `table legacy`.
    public var subject: String {
        switch kind {
        case .table: return "table \(name)"
        case .column: return "column \(table).\(name)"
        case .index: return "index \(name) on \(table)"
        }
    }

    /// What `plan` and `run` print after `kept:`: what is kept, and why.
    public var description: String {
        "\(subject) (not in the schema file; list it under \(dropKey) to drop it)"
    }
}

/// A change that is not a lightweight migration, named precisely.
public struct MigrationRefusal: Sendable, Equatable, CustomStringConvertible {
    public var table: String
    public var column: String?
    public var message: String
    public var location: SourceLocation?

    public var description: String {
        let place = column.map { "\(table).\($0)" } ?? table
        return "\(place): \(message)"
    }
}

extension TableRebuild {
    /// The new table a rebuild fills before its cut-over.
    public static func temporaryName(_ table: String) -> String { "\(Bookkeeping.tablePrefix)rebuild_\(table)" }
    /// The old table, renamed aside at the cut-over until its rows are dropped.
    public static func retiredName(_ table: String) -> String { "\(Bookkeeping.tablePrefix)retired_\(table)" }
}

extension TableRebuild {
    /// `expression` with its NULLs replaced by `value` (SQL): how a rebuild fills a column made
    /// NOT NULL, and how a preview shows the rows it will leave, on every engine.
    public static func filling(_ expression: String, withSQL value: String) -> String {
        "coalesce(\(expression), \(value))"
    }
}
