import Foundation
import WinnowCore
import GRDB

/// An exact, self-delimiting binary encoding of a tuple of SQLite values.
///
/// Each value is a type tag followed by its bytes: NULL `0`; INTEGER `1` + 8 bytes; REAL `2` +
/// the 8 bytes of its IEEE-754 bit pattern; TEXT `3` and BLOB `4` + a varint length + the bytes.
/// It is the key hash's encoding (``KeyHash``, in the core) without the key's one rule (a whole
/// real is not turned into an integer): the journal's row images are restored byte for byte.
public enum ValueCodec {
    typealias Tag = KeyHash.Tag

    static func appendVarint(_ value: Int, to bytes: inout [UInt8]) { KeyHash.appendVarint(value, to: &bytes) }

    static func appendInteger(_ value: Int64, to bytes: inout [UInt8]) { KeyHash.appendInteger(value, to: &bytes) }

    /// Encodes Swift-side values (used by tests and by restore's round-trip checks).
    public static func encode(_ values: [DatabaseValue]) -> [UInt8] {
        var bytes: [UInt8] = []
        for value in values { KeyHash.append(SQLValue(value), to: &bytes, wholeRealsAsIntegers: false) }
        return bytes
    }

    /// Decodes an image written by ``encode(_:)`` or by the `winnow_pack` SQL function.
    public static func decode(_ bytes: [UInt8]) throws -> [DatabaseValue] {
        var values: [DatabaseValue] = []
        var i = 0
        func need(_ n: Int) throws {
            guard n >= 0, n <= bytes.count - i else { throw WinnowError.io("journal image is truncated or corrupt") }
        }
        func integer() throws -> UInt64 {
            try need(8)
            var v: UInt64 = 0
            for k in 0..<8 { v |= UInt64(bytes[i + k]) << (8 * UInt64(k)) }
            i += 8
            return v
        }
        func varint() throws -> Int {
            var v: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                try need(1)
                let b = bytes[i]
                i += 1
                v |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { break }
                shift += 7
                guard shift < 64 else { throw WinnowError.io("journal image is corrupt (varint)") }
            }
            guard v <= UInt64(Int.max) else { throw WinnowError.io("journal image is corrupt (length)") }
            return Int(v)
        }
        while i < bytes.count {
            let tag = bytes[i]
            i += 1
            switch Tag(rawValue: tag) {
            case .null: values.append(.null)
            case .integer: values.append(Int64(bitPattern: try integer()).databaseValue)
            case .real: values.append(Double(bitPattern: try integer()).databaseValue)
            case .text:
                let n = try varint()
                try need(n)
                values.append(String(decoding: bytes[i..<i + n], as: UTF8.self).databaseValue)
                i += n
            case .blob:
                let n = try varint()
                try need(n)
                values.append(Data(bytes[i..<i + n]).databaseValue)
                i += n
            case nil:
                throw WinnowError.io("journal image is corrupt (tag \(tag))")
            }
        }
        return values
    }
}
