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

/// The key normalisers as pure Swift functions (the SQL functions call these).
public enum Normalize {
    public static func apply(_ normalizers: [Normalizer], to text: String) -> String {
        normalizers.reduce(text) { value, normalizer in function(for: normalizer)(value) }
    }

    public static func function(for normalizer: Normalizer) -> (String) -> String {
        switch normalizer {
        case .trim: return trim
        case .lowercase: return lowercase
        case .collapseWhitespace: return collapseWhitespace
        case .nfkc: return nfkc
        case .digitsOnly: return digitsOnly
        }
    }

    /// Removes leading and trailing Unicode white space (spaces, tabs, newlines, NBSP, ...).
    public static func trim(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        if first == scalars.startIndex, scalars.index(after: last) == scalars.endIndex { return text }
        return String(scalars[first...last])
    }

    /// Unicode lowercase mapping ("ÉMILE" becomes "émile"), with an ASCII fast path.
    public static func lowercase(_ text: String) -> String {
        var isASCII = true
        var hasUpper = false
        for byte in text.utf8 {
            if byte >= 0x80 {
                isASCII = false
                break
            }
            if byte >= 0x41 && byte <= 0x5A { hasUpper = true }
        }
        if isASCII {
            guard hasUpper else { return text }
            return String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
        return text.lowercased()
    }

    /// Replaces every run of white space with one space.
    public static func collapseWhitespace(_ text: String) -> String {
        var result = String.UnicodeScalarView()
        var inSpace = false
        for scalar in text.unicodeScalars {
            if scalar.properties.isWhitespace {
                if !inSpace { result.append(" ") }
                inSpace = true
            } else {
                result.append(scalar)
                inSpace = false
            }
        }
        return String(result)
    }

    /// Unicode compatibility composition (NFKC): "ﬁ" becomes "fi", full-width "Ａ" becomes "A".
    public static func nfkc(_ text: String) -> String {
        text.precomposedStringWithCompatibilityMapping
    }

    /// Keeps only decimal digits (Unicode category Nd).
    public static func digitsOnly(_ text: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars where scalar.properties.numericType == .decimal {
            result.append(scalar)
        }
        return String(result)
    }
}

extension Normalizer {
    /// The SQL function that applies the normaliser (each backend provides it, with the same
    /// results as ``Normalize``).
    public var sqlFunction: String {
        switch self {
        case .trim: return "winnow_trim"
        case .lowercase: return "winnow_lower"
        case .collapseWhitespace: return "winnow_collapse_ws"
        case .nfkc: return "winnow_nfkc"
        case .digitsOnly: return "winnow_digits"
        }
    }
}
