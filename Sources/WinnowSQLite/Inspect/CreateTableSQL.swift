import Foundation
import WinnowCore

/// A `CREATE TABLE` statement split into its column definitions and table constraints, so a
/// rebuild can change exactly what a migration asks (nullability, default, a dropped or added
/// column, the table name) and keep everything else as it was written.
package struct CreateTableSQL: Equatable {
    package struct Column: Equatable {
        package var name: String
        /// The definition's tokens, name included, trivia trimmed.
        package var tokens: [SQLToken]
    }

    /// Tokens up to and including the table name.
    package var head: [SQLToken]
    package var columns: [Column]
    /// Table constraints (PRIMARY KEY (...), UNIQUE (...), CHECK (...), FOREIGN KEY ...), as written.
    package var constraints: [[SQLToken]]
    /// Tokens after the closing parenthesis (`WITHOUT ROWID`, `STRICT`).
    package var tail: [SQLToken]

    package static let constraintStarts = ["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN"]

    package enum ParseError: Error { case unsupported(String) }

    package static func parse(_ sql: String) throws -> CreateTableSQL {
        let tokens = SQLTokenizer.tokenize(sql)
        guard let open = tokens.firstIndex(where: { $0.kind == .punctuation && $0.text == "(" }) else {
            throw ParseError.unsupported("no column list (CREATE TABLE ... AS SELECT is not supported)")
        }
        var depth = 0
        var parts: [[SQLToken]] = [[]]
        var close: Int?
        for index in (open + 1)..<tokens.count {
            let token = tokens[index]
            if token.kind == .punctuation, token.text == "(" { depth += 1 }
            if token.kind == .punctuation, token.text == ")" {
                if depth == 0 {
                    close = index
                    break
                }
                depth -= 1
            }
            if depth == 0, token.kind == .punctuation, token.text == "," {
                parts.append([])
                continue
            }
            parts[parts.count - 1].append(token)
        }
        guard let close else { throw ParseError.unsupported("unbalanced parentheses") }
        var result = CreateTableSQL(head: trim(Array(tokens[..<open])), columns: [], constraints: [], tail: Array(tokens[(close + 1)...]))
        for part in parts.map(trim) where !part.isEmpty {
            if let first = part.first, constraintStarts.contains(where: first.isKeyword) {
                result.constraints.append(part)
            } else if let name = part.first?.identifierValue {
                result.columns.append(Column(name: name, tokens: part))
            } else {
                throw ParseError.unsupported("cannot read column definition '\(SQLTokenizer.render(part))'")
            }
        }
        return result
    }

    package static func trim(_ tokens: [SQLToken]) -> [SQLToken] {
        var slice = tokens[...]
        while let first = slice.first, first.isTrivia { slice = slice.dropFirst() }
        while let last = slice.last, last.isTrivia { slice = slice.dropLast() }
        return Array(slice)
    }

    package func render(name: String) -> String {
        // Replace the last identifier of the head (the table name, possibly schema-qualified).
        var head = self.head
        if let nameIndex = head.lastIndex(where: { $0.kind == .identifier || $0.kind == .quotedIdentifier || $0.kind == .string }) {
            head[nameIndex] = SQLToken(kind: .quotedIdentifier, text: name.sqlIdentifier)
            // Drop a schema qualifier ("main".) so the statement runs in the main schema.
            if nameIndex >= 2, head[nameIndex - 1].text == "." { head.removeSubrange((nameIndex - 2)..<nameIndex) }
        }
        let items = columns.map { SQLTokenizer.render($0.tokens) } + constraints.map(SQLTokenizer.render)
        return SQLTokenizer.render(head) + " (\n    " + items.joined(separator: ",\n    ") + "\n)" + SQLTokenizer.render(tail)
    }

    package func index(of column: String) -> Int? {
        columns.firstIndex { $0.name.caseInsensitiveCompare(column) == .orderedSame }
    }

    /// Whether a table constraint names this column (then it cannot simply be dropped).
    package func constraintsMention(_ column: String) -> Bool {
        // Column names stand inside parentheses (PRIMARY KEY (a, b), CHECK (a > 0)); a word
        // outside them is a keyword (KEY, UNIQUE) or a constraint name.
        constraints.contains { tokens in
            var depth = 0
            for token in tokens {
                if token.kind == .punctuation, token.text == "(" { depth += 1 }
                if token.kind == .punctuation, token.text == ")" { depth -= 1 }
                if depth > 0, token.kind != .string, token.identifierValue?.caseInsensitiveCompare(column) == .orderedSame { return true }
            }
            return false
        }
    }

    package mutating func dropColumn(_ column: String) {
        if let i = index(of: column) { columns.remove(at: i) }
    }

    package mutating func addColumn(_ definition: String) {
        let tokens = SQLTokenizer.tokenize(definition)
        columns.append(Column(name: tokens.first?.identifierValue ?? definition, tokens: tokens))
    }

    /// Rewrites one column's NOT NULL and DEFAULT clauses; every other clause stays as written.
    package mutating func setConstraints(of column: String, nullable: Bool, defaultValue: DefaultValue?) {
        guard let i = index(of: column) else { return }
        let clauses = Self.clauses(columns[i].tokens)
        var kept = clauses.prefix.isEmpty ? [] : clauses.prefix
        for clause in clauses.clauses {
            let words = clause.filter { !$0.isTrivia }
            // A CONSTRAINT name applies to the clause that follows it.
            let kind = words.first?.isKeyword("CONSTRAINT") == true && words.count > 2 ? words[2] : words.first
            if kind?.isKeyword("NOT") == true || kind?.isKeyword("NULL") == true || kind?.isKeyword("DEFAULT") == true { continue }
            kept += [SQLToken(kind: .space, text: " ")] + Self.trim(clause)
        }
        if !nullable { kept += SQLTokenizer.tokenize(" NOT NULL") }
        if let value = defaultValue, value != .null {
            let sql = value.isLiteral ? value.sql : "(\(value.sql.hasPrefix("(") ? String(value.sql.dropFirst().dropLast()) : value.sql))"
            kept += SQLTokenizer.tokenize(" DEFAULT \(sql)")
        }
        columns[i].tokens = Self.trim(kept)
    }

    /// Splits a column definition into its name-and-type prefix and its constraint clauses.
    package static func clauses(_ tokens: [SQLToken]) -> (prefix: [SQLToken], clauses: [[SQLToken]]) {
        var prefix: [SQLToken] = []
        var clauses: [[SQLToken]] = []
        var depth = 0
        var previousWord: SQLToken?
        var afterConstraintName = 0
        let starts = ["PRIMARY", "UNIQUE", "CHECK", "COLLATE", "REFERENCES", "GENERATED", "AS"]
        for (index, token) in tokens.enumerated() {
            if token.kind == .punctuation, token.text == "(" { depth += 1 }
            if token.kind == .punctuation, token.text == ")" { depth -= 1 }
            var starts_ = false
            if depth == 0, index > 0, token.kind == .identifier, afterConstraintName == 0 {
                let next = tokens[(index + 1)...].first { !$0.isTrivia }
                let afterSet = previousWord?.isKeyword("SET") == true
                if token.isKeyword("CONSTRAINT") {
                    starts_ = true
                    afterConstraintName = 2
                } else if starts.contains(where: token.isKeyword) {
                    starts_ = true
                } else if token.isKeyword("NOT"), next?.isKeyword("NULL") == true {
                    starts_ = true
                } else if token.isKeyword("NULL"), previousWord?.isKeyword("NOT") != true, !afterSet {
                    starts_ = true
                } else if token.isKeyword("DEFAULT"), !afterSet {
                    starts_ = true
                }
            }
            if !token.isTrivia {
                if afterConstraintName > 0 { afterConstraintName -= 1 }
                previousWord = token
            }
            if starts_
                && !(clauses.last.map { c in
                    c.filter { !$0.isTrivia }.count == 2 && c.first { !$0.isTrivia }?.isKeyword("CONSTRAINT") == true
                } ?? false)
            {
                clauses.append([token])
            } else if clauses.isEmpty {
                prefix.append(token)
            } else {
                clauses[clauses.count - 1].append(token)
            }
        }
        return (trim(prefix), clauses)
    }
}
