import Foundation

/// A token of SQLite's SQL, enough to edit `CREATE TABLE` statements without losing anything.
package struct SQLToken: Equatable {
    package enum Kind: Equatable {
        case space, comment, string, identifier, quotedIdentifier, number, punctuation, other
    }

    package var kind: Kind
    package var text: String

    package init(kind: Kind, text: String) {
        self.kind = kind
        self.text = text
    }

    /// The identifier this token names (quotes removed), for identifier tokens.
    package var identifierValue: String? {
        switch kind {
        case .identifier: return text
        case .quotedIdentifier:
            let inner = String(text.dropFirst().dropLast())
            switch text.first {
            case "\"": return inner.replacingOccurrences(of: "\"\"", with: "\"")
            case "`": return inner.replacingOccurrences(of: "``", with: "`")
            default: return inner
            }
        case .string:
            // SQLite accepts 'name' where an identifier is expected in some places.
            return String(text.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'")
        default: return nil
        }
    }

    package var isTrivia: Bool { kind == .space || kind == .comment }

    package func isKeyword(_ word: String) -> Bool { kind == .identifier && text.caseInsensitiveCompare(word) == .orderedSame }
}

package enum SQLTokenizer {
    package static func tokenize(_ sql: String) -> [SQLToken] {
        let chars = Array(sql)
        var tokens: [SQLToken] = []
        var i = 0
        func take(_ kind: SQLToken.Kind, _ end: Int) {
            tokens.append(SQLToken(kind: kind, text: String(chars[i..<min(end, chars.count)])))
            i = min(end, chars.count)
        }
        while i < chars.count {
            let c = chars[i]
            if c.isWhitespace {
                var j = i
                while j < chars.count, chars[j].isWhitespace { j += 1 }
                take(.space, j)
            } else if c == "-", i + 1 < chars.count, chars[i + 1] == "-" {
                var j = i
                while j < chars.count, chars[j] != "\n" { j += 1 }
                take(.comment, j)
            } else if c == "/", i + 1 < chars.count, chars[i + 1] == "*" {
                var j = i + 2
                while j + 1 < chars.count, !(chars[j] == "*" && chars[j + 1] == "/") { j += 1 }
                take(.comment, j + 2)
            } else if c == "'" || c == "\"" || c == "`" {
                var j = i + 1
                while j < chars.count {
                    if chars[j] == c {
                        if j + 1 < chars.count, chars[j + 1] == c {
                            j += 2
                            continue
                        }
                        break
                    }
                    j += 1
                }
                take(c == "'" ? .string : .quotedIdentifier, j + 1)
            } else if c == "[" {
                var j = i + 1
                while j < chars.count, chars[j] != "]" { j += 1 }
                take(.quotedIdentifier, j + 1)
            } else if c.isLetter || c == "_" || (c.unicodeScalars.first.map { $0.value > 127 } ?? false) {
                var j = i
                while j < chars.count,
                    chars[j].isLetter || chars[j].isNumber || chars[j] == "_" || chars[j] == "$"
                        || (chars[j].unicodeScalars.first.map { $0.value > 127 } ?? false)
                { j += 1 }
                take(.identifier, j)
            } else if c.isNumber || (c == "." && i + 1 < chars.count && chars[i + 1].isNumber) {
                var j = i
                while j < chars.count,
                    chars[j].isNumber || chars[j] == "." || chars[j].isLetter
                        || ((chars[j] == "+" || chars[j] == "-") && j > i && (chars[j - 1] == "e" || chars[j - 1] == "E"))
                { j += 1 }
                take(.number, j)
            } else if "(),;.".contains(c) {
                take(.punctuation, i + 1)
            } else {
                take(.other, i + 1)
            }
        }
        return tokens
    }

    package static func render(_ tokens: [SQLToken]) -> String { tokens.map(\.text).joined() }
}
