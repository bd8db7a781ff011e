import Foundation

/// One row of `winnow_run_groups`: a loser a rule deleted and the winner it kept, in the batch
/// that did it (written with the journal, in the batch's transaction).
public struct GroupRecord: Sendable, Equatable {
    public var rule: Int
    public var batch: Int
    public var table: String
    public var winner: RowKey
    public var loser: RowKey

    public init(rule: Int, batch: Int, table: String, winner: RowKey, loser: RowKey) {
        self.rule = rule
        self.batch = batch
        self.table = table
        self.winner = winner
        self.loser = loser
    }
}
