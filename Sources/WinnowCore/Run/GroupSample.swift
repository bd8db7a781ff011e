import Foundation

/// One duplicate group as shown by `plan`.
public struct GroupSample: Sendable, Codable, Equatable {
    public var key: [String]
    public var winner: Int64
    public var losers: [Int64]

    public init(key: [String], winner: Int64, losers: [Int64]) {
        self.key = key
        self.winner = winner
        self.losers = losers
    }
}
