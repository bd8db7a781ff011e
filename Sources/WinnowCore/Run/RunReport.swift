import Foundation

/// `winnow show`: what one run changed. Counts come from the run's records; the rows (groups,
/// deleted and updated rows, re-pointed children) from its journal and `winnow_run_groups`,
/// which only an archiving run writes.
public struct RunReport: Sendable, Equatable {
    /// One column's value as SQL spells it.
    public struct Value: Sendable, Equatable {
        public var column: String
        public var literal: String

        public init(column: String, literal: String) {
            self.column = column
            self.literal = literal
        }
    }

    /// One column a run changed: its value before the run (from the journal) and now (what
    /// `restore` would overwrite; nil when the row is gone).
    public struct Change: Sendable, Equatable {
        public var column: String
        public var before: String
        public var now: String?

        public init(column: String, before: String, now: String?) {
            self.column = column
            self.before = before
            self.now = now
        }
    }

    /// A row the run deleted, as the journal keeps it.
    public struct DeletedRow: Sendable, Equatable {
        public var table: String
        public var key: RowKey
        public var values: [Value]

        public init(table: String, key: RowKey, values: [Value]) {
            self.table = table
            self.key = key
            self.values = values
        }
    }

    /// A row the run changed (a re-pointed child, a merged winner).
    public struct ChangedRow: Sendable, Equatable {
        public var table: String
        public var key: RowKey
        /// The columns whose value now differs from the journal's before-image.
        public var changes: [Change]
        /// Whether the row is still in its table.
        public var exists: Bool

        public init(table: String, key: RowKey, changes: [Change], exists: Bool) {
            self.table = table
            self.key = key
            self.changes = changes
            self.exists = exists
        }
    }

    /// One duplicate group a rule resolved: the row it kept, the rows it deleted.
    public struct Group: Sendable, Equatable {
        /// The key columns' values (of the first deleted row: every row of the group shares them
        /// once normalised).
        public var key: [Value]
        public var kept: RowKey
        public var deleted: [DeletedRow]
        /// The kept row's merged columns (nil when the merge changed nothing).
        public var updated: ChangedRow?

        public init(key: [Value], kept: RowKey, deleted: [DeletedRow], updated: ChangedRow? = nil) {
            self.key = key
            self.kept = kept
            self.deleted = deleted
            self.updated = updated
        }
    }

    /// What one rule of the run did.
    public struct Rule: Sendable, Equatable {
        public var index: Int
        public var table: String
        public var key: String
        public var counts: Counts
        /// The key's column names (empty for runs recorded by a winnow that did not store them).
        public var keyColumns: [String] = []
        /// The groups listed (all, or the first ``RunReport/groupLimit``).
        public var groups: [Group] = []
        /// Child rows re-pointed from a loser to its winner (of the listed groups' batches).
        public var repointed: [ChangedRow] = []
        /// Child rows deleted because re-pointing made them duplicates.
        public var childrenDeleted: [DeletedRow] = []

        public init(index: Int, table: String, key: String, counts: Counts) {
            self.index = index
            self.table = table
            self.key = key
            self.counts = counts
        }
    }

    /// The journal's rows of one table: deleted rows and before-images of changed rows (merges
    /// on a rule's table, re-pointed children on a child table).
    public struct Journaled: Sendable, Equatable {
        public var table: String
        public var deleted = 0
        public var updated = 0

        public init(table: String, deleted: Int = 0, updated: Int = 0) {
            self.table = table
            self.deleted = deleted
            self.updated = updated
        }
    }

    /// Whether the run's rows are listed, and why not.
    public enum Rows: Sendable, Equatable {
        /// Listed from the journal.
        case listed
        /// The run changed no row.
        case unchanged
        /// `archive: false`: nothing but the counts was kept.
        case notJournaled
        /// The journal was pruned at this time.
        case pruned(String)
        /// Journaled by a winnow that did not record the groups: the journal's tables only.
        case groupsNotRecorded
    }

    public var run: HistoryEntry
    /// Per rule (runs recorded by winnow before `show` existed have none).
    public var rules: [Rule] = []
    /// Per table, from the journal (empty when the run did not archive).
    public var journal: [Journaled] = []
    public var rows: Rows = .unchanged
    /// Groups listed per rule; nil: all of them.
    public var groupLimit: Int? = nil

    public init(run: HistoryEntry) {
        self.run = run
    }
}
