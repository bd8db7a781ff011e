import Crypto
import Foundation

/// The value a `hash_column` holds, the same on every engine: the lowercase hexadecimal
/// SHA-256 of the key's values in a self-delimiting tuple encoding, so that ("ab", "c") and
/// ("a", "bc") never collide.
///
/// Each value is a type tag and its bytes: NULL `0`; an integer `1` + 8 bytes little-endian; a
/// real `2` + the 8 bytes of its IEEE-754 bit pattern, little-endian; text `3` and bytes `4` + a
/// varint length (7 bits a byte, low first) + the bytes. A real that equals an integer is
/// encoded as that integer, because grouping puts 1 and 1.0 in one group and the hash must
/// group the same way. Each engine computes it where its rows are (SQLite in a SQL function
/// built on these primitives, PostgreSQL in SQL); a test checks both against ``digest(_:nullsEqual:)``.
public enum KeyHash {
    /// The type tags of the encoding (also the journal's on SQLite).
    public enum Tag: UInt8 {
        case null = 0, integer = 1, real = 2, text = 3, blob = 4
    }

    public static func appendVarint(_ value: Int, to bytes: inout [UInt8]) {
        var v = UInt64(value)
        while v >= 0x80 {
            bytes.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    public static func appendInteger(_ value: Int64, to bytes: inout [UInt8]) {
        var v = UInt64(bitPattern: value)
        for _ in 0..<8 {
            bytes.append(UInt8(v & 0xFF))
            v >>= 8
        }
    }

    /// The integer a real stands for in a key, when it is whole and in range.
    public static func wholeInteger(_ real: Double) -> Int64? {
        guard real == real.rounded(), real >= -9_223_372_036_854_775_808.0, real < 9_223_372_036_854_775_808.0 else { return nil }
        return Int64(real)
    }

    /// Appends one value. In a key (`wholeRealsAsIntegers`) a whole real is encoded as its
    /// integer; elsewhere (a journal image, restored byte for byte) every value keeps its type.
    public static func append(_ value: SQLValue, to bytes: inout [UInt8], wholeRealsAsIntegers: Bool = true) {
        switch value {
        case .null:
            bytes.append(Tag.null.rawValue)
        case let .integer(v):
            bytes.append(Tag.integer.rawValue)
            appendInteger(v, to: &bytes)
        case let .real(v):
            if wholeRealsAsIntegers, let whole = wholeInteger(v) {
                bytes.append(Tag.integer.rawValue)
                appendInteger(whole, to: &bytes)
            } else {
                bytes.append(Tag.real.rawValue)
                appendInteger(Int64(bitPattern: v.bitPattern), to: &bytes)
            }
        case let .text(s):
            bytes.append(Tag.text.rawValue)
            let utf8 = Array(s.utf8)
            appendVarint(utf8.count, to: &bytes)
            bytes.append(contentsOf: utf8)
        case let .blob(b):
            bytes.append(Tag.blob.rawValue)
            appendVarint(b.count, to: &bytes)
            bytes.append(contentsOf: b)
        }
    }

    /// The lowercase hexadecimal SHA-256 of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// The hash of a key; nil when a value is NULL and NULLs are not equal (`nulls: distinct`:
    /// such a row is in no group).
    public static func digest(_ values: [SQLValue], nullsEqual: Bool) -> String? {
        var bytes: [UInt8] = []
        for value in values {
            if value.isNull && !nullsEqual { return nil }
            append(value, to: &bytes)
        }
        return hex(bytes)
    }
}
