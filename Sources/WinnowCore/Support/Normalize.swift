import Foundation

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
