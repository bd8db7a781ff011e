import Foundation

/// The moves of one stretch of children as `winnow_moved_ahead` keeps them
/// (``SQLiteDialect/movedAheadTable``): one row per stretch and reference, its moves packed in
/// one blob, each move three variable-length integers (the child's rowid as the step from the
/// one before, its loser's and its winner's rowids; zigzag LEB128, so that a negative rowid
/// packs too). About 7 bytes a move where a row of its own took 25 and a quarter of a
/// microsecond (merge-500 at 1,600,000 customers: 8 MB against 26.7 MB; docs/performance.md).
struct MovedAheadRecord {
    /// One recorded move: the child row now points at `winner`, and pointed at `loser`.
    struct Move: Equatable {
        var child: Int64
        var loser: Int64
        var winner: Int64
    }

    private(set) var packed: [UInt8] = []
    private var last: Int64 = 0
    private(set) var count = 0

    /// Appends a move; children come in ascending rowid order.
    mutating func append(child: Int64, loser: Int64, winner: Int64) {
        put(child &- last)
        put(loser)
        put(winner)
        last = child
        count += 1
    }

    private mutating func put(_ value: Int64) {
        var zigzag = UInt64(bitPattern: (value << 1) ^ (value >> 63))
        while zigzag >= 0x80 {
            packed.append(UInt8(zigzag & 0x7F) | 0x80)
            zigzag >>= 7
        }
        packed.append(UInt8(zigzag))
    }

    /// The moves of a packed blob, in the order they were appended; nil for bytes that are not
    /// such a blob (cut short, or a value too long).
    static func moves(_ bytes: [UInt8]) -> [Move]? {
        var moves: [Move] = []
        var index = 0
        func next() -> Int64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1) }
                shift += 7
            }
            return nil
        }
        var last: Int64 = 0
        while index < bytes.count {
            guard let step = next(), let loser = next(), let winner = next() else { return nil }
            last = last &+ step
            moves.append(Move(child: last, loser: loser, winner: winner))
        }
        return moves
    }
}
