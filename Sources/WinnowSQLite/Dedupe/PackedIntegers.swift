/// Integers packed one after another in a blob, each in as few bytes as its size needs: zigzag
/// (so that a small negative integer packs as small as a positive one) in LEB128 (seven bits a
/// byte, the high bit set on every byte but the last). The records of work done ahead keep their
/// rows so (``MovedAheadRecord``, ``TakenLosersRecord``).
struct PackedIntegers {
    private(set) var bytes: [UInt8] = []

    /// Appends `value`.
    mutating func put(_ value: Int64) {
        var zigzag = UInt64(bitPattern: (value << 1) ^ (value >> 63))
        while zigzag >= 0x80 {
            bytes.append(UInt8(zigzag & 0x7F) | 0x80)
            zigzag >>= 7
        }
        bytes.append(UInt8(zigzag))
    }

    /// Reads packed integers back, in the order they were put.
    struct Reader {
        let bytes: [UInt8]
        private var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        /// Whether every byte has been read.
        var atEnd: Bool { index >= bytes.count }

        /// The next integer; nil where the bytes end inside one, or it is longer than 64 bits.
        mutating func next() -> Int64? {
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
    }
}
