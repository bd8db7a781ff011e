import Foundation

/// One migration step as `plan` and `run` report it.
public struct PlannedStep: Sendable, Equatable {
    public var summary: String
    public var sql: [String]
    public var rebuildsTable: Bool

    public init(summary: String, sql: [String], rebuildsTable: Bool) {
        self.summary = summary
        self.sql = sql
        self.rebuildsTable = rebuildsTable
    }
}
