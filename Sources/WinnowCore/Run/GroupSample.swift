import Foundation

/// One duplicate group as shown by `plan`: its key, its rows side by side with the winner
/// first, what a merge would change in the winner, and the children that would be re-pointed.
public struct GroupSample: Sendable, Codable, Equatable {
    /// One row of the group: its identity and the shown columns' values (SQL literals).
    public struct SampleRow: Sendable, Codable, Equatable {
        /// The row's identity: SQLite's rowid (named by its alias column when it has one), or the
        /// primary key on an engine without rowids.
        public var row: RowKey
        public var values: [String]

        public init(row: RowKey, values: [String]) {
            self.row = row
            self.values = values
        }
    }

    /// A column of the winner that `merge` would change.
    public struct MergedValue: Sendable, Codable, Equatable {
        public var column: String
        public var before: String
        public var after: String
        /// The row the new value comes from (the first in winner order that holds it); nil for
        /// a value no row holds (`sum`, `concat`).
        public var from: RowKey?

        public init(column: String, before: String, after: String, from: RowKey? = nil) {
            self.column = column
            self.before = before
            self.after = after
            self.from = from
        }

        /// The first of `rows` whose value (`values`, parallel) is `value`.
        public static func source(of value: SQLValue, values: [SQLValue], rows: [RowKey]) -> RowKey? {
            guard !value.isNull else { return nil }
            return zip(values, rows).first { ValueOrder.identical($0.0, value) }?.1
        }
    }

    /// Child rows of one loser that would point at the winner instead.
    public struct Children: Sendable, Codable, Equatable {
        public var reference: String
        public var loser: RowKey
        public var rows: Int
        /// Whether the child table has a unique key over the reference: a child row that would
        /// duplicate one of the winner's is deleted instead of moved.
        public var mayCollide: Bool

        public init(reference: String, loser: RowKey, rows: Int, mayCollide: Bool = false) {
            self.reference = reference
            self.loser = loser
            self.rows = rows
            self.mayCollide = mayCollide
        }
    }

    public var key: [String]
    public var winner: RowKey
    public var losers: [RowKey]
    /// The columns shown for each row (key, winner order and merged columns first).
    public var columns: [String] = []
    /// The winner first, then the losers in winner order.
    public var rows: [SampleRow] = []
    public var merged: [MergedValue] = []
    public var children: [Children] = []
    /// For a `key: {any: ...}` rule: which alternative linked each loser, and to which row.
    public var linkedBy: [Link] = []

    /// A loser, the alternative that links it, and the row of the group it shares it with.
    public struct Link: Sendable, Codable, Equatable {
        public var row: RowKey
        public var key: String
        public var to: RowKey

        public init(row: RowKey, key: String, to: RowKey) {
            self.row = row
            self.key = key
            self.to = to
        }
    }

    public init(key: [String], winner: RowKey, losers: [RowKey]) {
        self.key = key
        self.winner = winner
        self.losers = losers
    }
}
