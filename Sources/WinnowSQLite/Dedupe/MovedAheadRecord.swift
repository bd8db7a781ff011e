import Foundation

/// The moves of one stretch of children as `winnow_moved_ahead` keeps them
/// (``SQLiteDialect/movedAheadTable``): one row per stretch and reference, its moves packed in
/// one blob, each move three variable-length integers (the child's rowid as the step from the
/// one before, its loser's and its winner's rowids; ``PackedIntegers``, so that a negative rowid
/// packs too). About 7 bytes a move where a row of its own took 25 and a quarter of a
/// microsecond (merge-500 at 1,600,000 customers: 8 MB against 26.7 MB; docs/performance.md).
struct MovedAheadRecord {
    /// One recorded move: the child row now points at `winner`, and pointed at `loser`.
    struct Move: Equatable {
        var child: Int64
        var loser: Int64
        var winner: Int64
    }

    private var integers = PackedIntegers()
    private var last: Int64 = 0
    private(set) var count = 0

    /// The blob of the moves appended so far.
    var packed: [UInt8] { integers.bytes }

    /// Appends a move; children come in ascending rowid order.
    mutating func append(child: Int64, loser: Int64, winner: Int64) {
        integers.put(child &- last)
        integers.put(loser)
        integers.put(winner)
        last = child
        count += 1
    }

    /// The moves of a packed blob, in the order they were appended; nil for bytes that are not
    /// such a blob (cut short, or a value too long).
    static func moves(_ bytes: [UInt8]) -> [Move]? {
        var moves: [Move] = []
        var reader = PackedIntegers.Reader(bytes)
        var last: Int64 = 0
        while !reader.atEnd {
            guard let step = reader.next(), let loser = reader.next(), let winner = reader.next() else { return nil }
            last = last &+ step
            moves.append(Move(child: last, loser: loser, winner: winner))
        }
        return moves
    }
}
