import Foundation

/// What discovery found for one rule.
public struct Discovery: Sendable, Equatable {
    public var groups: Int
    public var losers: Int
    public var tableRows: Int
    /// `PRAGMA data_version` read before the discovery: while it is unchanged, no other
    /// connection has committed since, and the losers found need no re-validation.
    package var dataVersion: Int64? = nil

    public init(groups: Int, losers: Int, tableRows: Int) {
        self.groups = groups
        self.losers = losers
        self.tableRows = tableRows
    }

    /// What was found; the data version is bookkeeping of the connection that found it.
    public static func == (a: Discovery, b: Discovery) -> Bool {
        (a.groups, a.losers, a.tableRows) == (b.groups, b.losers, b.tableRows)
    }
}
