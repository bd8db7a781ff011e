import Foundation

/// What discovery found for one rule.
public struct Discovery: Sendable, Equatable {
    public var groups: Int
    public var losers: Int
    public var tableRows: Int

    public init(groups: Int, losers: Int, tableRows: Int) {
        self.groups = groups
        self.losers = losers
        self.tableRows = tableRows
    }
}
