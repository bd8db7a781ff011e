import Foundation

/// The normalisers on pure-ASCII bytes, for the SQL functions' fast path. Each gives exactly
/// what its Unicode counterpart in ``Normalize`` gives for ASCII input (ASCII white space is
/// tab, line feed, vertical tab, form feed, carriage return and space; ASCII is NFKC-stable).
package enum ASCII {
    package enum Result {
        case unchanged
        case slice(Range<Int>)
        case bytes([UInt8])
    }

    package static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (byte >= 0x09 && byte <= 0x0D) }

    package static func unchanged(_ bytes: UnsafeBufferPointer<UInt8>) -> Result { .unchanged }

    package static func trim(_ bytes: UnsafeBufferPointer<UInt8>) -> Result {
        var start = 0
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return start == 0 && end == bytes.count ? .unchanged : .slice(start..<end)
    }

    package static func lowercase(_ bytes: UnsafeBufferPointer<UInt8>) -> Result {
        guard bytes.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return .unchanged }
        return .bytes(bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 })
    }

    package static func collapseWhitespace(_ bytes: UnsafeBufferPointer<UInt8>) -> Result {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var inSpace = false
        var changed = false
        for byte in bytes {
            if isSpace(byte) {
                if !inSpace { output.append(0x20) }
                changed = changed || inSpace || byte != 0x20
                inSpace = true
            } else {
                output.append(byte)
                inSpace = false
            }
        }
        return changed ? .bytes(output) : .unchanged
    }

    package static func digitsOnly(_ bytes: UnsafeBufferPointer<UInt8>) -> Result {
        guard bytes.contains(where: { $0 < 0x30 || $0 > 0x39 }) else { return .unchanged }
        return .bytes(bytes.filter { $0 >= 0x30 && $0 <= 0x39 })
    }
}
