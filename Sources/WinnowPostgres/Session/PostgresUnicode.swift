import Foundation

/// Character tables for the SQL spelling of the key normalisers, generated once from Swift's
/// Unicode data, so that PostgreSQL groups exactly as ``Normalize`` (and SQLite) does whatever
/// the server's locale or ICU version.
enum PostgresUnicode {
    private static func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    private static func escape(_ scalar: Unicode.Scalar) -> String {
        scalar.value <= 0xFFFF ? String(format: "\\u%04X", scalar.value) : String(format: "\\U%08X", scalar.value)
    }

    /// The scalars the tables are read from: planes 0 and 1. No scalar above them is white
    /// space, a decimal digit or changed by lowercasing (planes 2-3 are CJK ideographs, 14 tags
    /// and variation selectors, 15-16 private use); `PostgresUnicodeTests` checks that against
    /// every scalar of the Swift runtime's Unicode data. Reading these instead of every scalar
    /// keeps the tables' cost out of every run that spells a normaliser.
    static let lastScalar: UInt32 = 0x1FFFF

    static let scalars: [Unicode.Scalar] = (1...lastScalar).compactMap { Unicode.Scalar($0) }

    /// Every white-space scalar (what `Normalize.trim` and `collapseWhitespace` remove).
    static let whitespace: [Unicode.Scalar] = scalars.filter { $0.properties.isWhitespace }

    /// The white space as a SQL string literal (for `btrim`).
    static let whitespaceLiteral = literal(String(String.UnicodeScalarView(whitespace)))

    /// The white space as the inside of a regular-expression bracket.
    static let whitespaceClass = whitespace.map(escape).joined()

    /// The decimal digits (category Nd) as ranges inside a regular-expression bracket.
    static let digitClass: String = {
        var ranges: [(Unicode.Scalar, Unicode.Scalar)] = []
        for scalar in scalars where scalar.properties.numericType == .decimal {
            if let last = ranges.last, last.1.value + 1 == scalar.value {
                ranges[ranges.count - 1].1 = scalar
            } else {
                ranges.append((scalar, scalar))
            }
        }
        return ranges.map { $0.0 == $0.1 ? escape($0.0) : "\(escape($0.0))-\(escape($0.1))" }.joined()
    }()

    /// Scalars whose lowercase is one other scalar (`translate` maps them) and those whose
    /// lowercase is longer (`replace` maps them).
    private static let lowercaseTable: (from: String, to: String, specialFrom: [String], specialTo: [String]) = {
        var from = String.UnicodeScalarView()
        var to = String.UnicodeScalarView()
        var specialFrom: [String] = []
        var specialTo: [String] = []
        for scalar in scalars where scalar.properties.changesWhenLowercased {
            let lower = String(Character(scalar)).lowercased()
            let mapped = Array(lower.unicodeScalars)
            if mapped.count == 1 {
                from.append(scalar)
                to.append(mapped[0])
            } else {
                specialFrom.append(String(Character(scalar)))
                specialTo.append(lower)
            }
        }
        return (String(from), String(to), specialFrom, specialTo)
    }()

    static let lowercaseFrom = literal(lowercaseTable.from)
    static let lowercaseTo = literal(lowercaseTable.to)
    /// The longer mappings (U+0130, capital I with dot above, becomes "i" + U+0307), as literals.
    static let lowercaseSpecials: [(from: String, to: String)] = zip(lowercaseTable.specialFrom, lowercaseTable.specialTo).map {
        (literal($0), literal($1))
    }
}
