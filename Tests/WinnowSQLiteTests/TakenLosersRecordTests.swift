import Foundation
import GRDB
import XCTest
@testable import WinnowSQLite

/// The packed record of the losers a stretch of merges took (``TakenLosersRecord``): what is
/// appended reads back, in order, whatever the rowids; a blob that is not a record is refused;
/// and the pairs pack small where the record's order makes them so.
final class TakenLosersRecordTests: XCTestCase {
    /// Pairs read back as they were appended, whatever their rowids (negative, past 32 bits, far
    /// apart, adjacent, winners repeated or out of order).
    func testPackedPairsReadBackAsAppended() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var record = TakenLosersRecord()
            var pairs: [TakenLosersRecord.Pair] = []
            var winner = Int64.random(in: -1_000_000...1_000_000, using: &rng)
            for _ in 0..<Int.random(in: 1...300, using: &rng) {
                winner = winner &+ [0, 0, 1, 2, 1_000, 1 << 40, -7].randomElement(using: &rng)!
                let loser = [Int64.min, -1, 0, Int64.max, winner &+ 1, Int64.random(in: Int64.min...Int64.max, using: &rng)]
                    .randomElement(using: &rng)!
                record.append(loser: loser, winner: winner)
                pairs.append(.init(loser: loser, winner: winner))
            }
            XCTAssertEqual(TakenLosersRecord.pairs(record.packed), pairs)
            XCTAssertEqual(record.count, pairs.count)
            // A blob cut inside a value is no record of pairs.
            XCTAssertNil(TakenLosersRecord.pairs(Array(record.packed.dropLast())))
        }
        XCTAssertEqual(TakenLosersRecord.pairs([]), [])
    }

    /// By winner, a winner's further losers step by 0, and a loser beside its winner takes a
    /// byte: a pair takes 2 bytes where the losers sit next to their winner, and at most 8 for
    /// rowids below 2^27 however scattered (a row of the earlier record took about 27).
    func testPairsPackSmall() throws {
        var adjacent = TakenLosersRecord()
        for winner in stride(from: Int64(1), through: 3_000, by: 3) {
            adjacent.append(loser: winner + 1, winner: winner)
            adjacent.append(loser: winner + 2, winner: winner)
        }
        XCTAssertLessThanOrEqual(adjacent.packed.count, 2 * adjacent.count)
        var scattered = TakenLosersRecord()
        var rng = SystemRandomNumberGenerator()
        for winner in stride(from: Int64(1), through: 3_000_000, by: 3_000) {
            scattered.append(loser: Int64.random(in: 1...(1 << 27), using: &rng), winner: winner)
        }
        XCTAssertLessThanOrEqual(scattered.packed.count, 8 * scattered.count)
    }

    /// The records of a database read back by table, with their run, in the order recorded; a
    /// database without the record has none, and a blob that is not one stops the reader.
    func testTheRecordsOfADatabaseReadBackByTable() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            XCTAssertTrue(try TakenLosersRecord.all(db).isEmpty)
            try db.execute(sql: SQLiteDialect.takenLosersTable)
            for (table, runID, pairs) in [("a", 1, [(5, 4), (6, 4)]), ("b", 2, [(9, 8)]), ("a", 3, [(2, 10)])] {
                var record = TakenLosersRecord()
                for (loser, winner) in pairs { record.append(loser: Int64(loser), winner: Int64(winner)) }
                try db.execute(sql: "INSERT INTO winnow_taken_losers VALUES (?, ?, ?)", arguments: [table, runID, Data(record.packed)])
            }
            XCTAssertEqual(
                try TakenLosersRecord.all(db, table: "a").map { "\($0.table) \($0.runID) \($0.pair.loser) \($0.pair.winner)" },
                ["a 1 5 4", "a 1 6 4", "a 3 2 10"])
            XCTAssertEqual(try TakenLosersRecord.all(db).count, 4)
            try db.execute(sql: "INSERT INTO winnow_taken_losers VALUES ('c', 4, ?)", arguments: [Data([0x80])])
            XCTAssertThrowsError(try TakenLosersRecord.all(db))
        }
    }
}
