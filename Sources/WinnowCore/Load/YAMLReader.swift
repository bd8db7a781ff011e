import Foundation
import Yams

/// Decodes a composed YAML tree by hand so that every error points at the node that caused it
/// (`FILE:LINE:COLUMN: key.path: message`). Job and schema loaders are built on it.
package struct YAMLReader {
    /// The file name used in locations.
    package let file: String

    /// Largest file accepted, a guard against reading something that is not a job at all.
    package static let maximumFileBytes = 4 << 20

    /// Reads and composes a file; returns its bytes too, as read. Missing file: exit 66;
    /// unreadable or not YAML: exit 65.
    package static func load(path: String) throws -> (reader: YAMLReader, root: Node, bytes: Data) {
        let url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw WinnowError.notFound("\(path): no such file")
        }
        if isDirectory.boolValue { throw WinnowError.notFound("\(path): is a directory, not a file") }
        // A device, socket or pipe (`/dev/null`) is not a job or schema file either.
        if let type = try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType, type != .typeRegular {
            throw WinnowError.notFound("\(path): is not a regular file")
        }
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw WinnowError.io("\(path): cannot read: \(error.localizedDescription)")
        }
        let reader = YAMLReader(file: path)
        guard data.count <= maximumFileBytes else {
            throw WinnowError.invalidFile(
                reader.location(line: 1, column: 1),
                "file is \(data.count) bytes; a job or schema file is at most \(maximumFileBytes)")
        }
        guard let text = String(data: data, encoding: .utf8), !text.contains("\u{0}") else {
            throw WinnowError.invalidFile(reader.location(line: 1, column: 1), "not a UTF-8 text file")
        }
        return (reader, try reader.compose(text), data)
    }

    package func location(line: Int, column: Int) -> SourceLocation {
        SourceLocation(file: file, line: line, column: column)
    }

    package func location(_ node: Node) -> SourceLocation? {
        node.mark.map { location(line: $0.line, column: $0.column) }
    }

    /// Anchored nodes used as mapping keys or merged (`<<: *x`) make the composer hash or copy
    /// whole aliased trees: an alias "bomb" there takes exponential time. Job and schema keys are
    /// plain names, so a file that defines anchors may use aliases only as values.
    package func rejectAliasKeys(_ text: String) throws {
        guard text.range(of: #"&[^\s,\[\]{}]"#, options: .regularExpression) != nil else { return }
        let patterns: [(String, String)] = [
            (#"(^|[\s,{\[])\*[^\s,\[\]{}]+\s*:(\s|$)"#, "an alias used as a key"),
            (#"<<\s*:"#, "a merge key (<<)"),
            (#"(^|\n)\s*\?(\s|$)"#, "a complex key (?)"),
            (#"[\]}]\s*:(\s|$)"#, "a list or mapping used as a key"),
        ]
        for (pattern, what) in patterns {
            if let range = text.range(of: pattern, options: .regularExpression) {
                let line = text[..<range.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
                throw WinnowError.invalidFile(
                    location(line: line, column: 1),
                    "\(what) is not supported in a file that defines anchors; keys are plain names")
            }
        }
    }

    /// Parses YAML text into a node tree, mapping libyaml's errors to located ones.
    package func compose(_ text: String) throws -> Node {
        try rejectAliasKeys(text)
        do {
            guard let node = try Yams.compose(yaml: text) else {
                throw WinnowError.invalidFile(location(line: 1, column: 1), "the file is empty; expected a mapping")
            }
            return node
        } catch let error as YamlError {
            if case let .duplicatedKeysInMapping(duplicates, context) = error, let key = duplicates.first,
                let repeat_ = Self.secondOccurrence(of: key, in: text, mappingLine: context.mark.line, column: context.mark.column)
            {
                throw WinnowError.invalidFile(
                    location(line: repeat_, column: context.mark.column),
                    "duplicated key '\(key)' in a mapping (first written on line \(context.mark.line))")
            }
            throw translate(error)
        }
    }

    /// The line of the second `key:` at the mapping's column, from the mapping's first line on
    /// (Yams reports a duplicated key at the mapping's start). nil when not found.
    package static func secondOccurrence(of key: String, in text: String, mappingLine: Int, column: Int) -> Int? {
        // Lines as YAML counts them: CR LF, CR and LF all end one.
        let lines = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false)
        guard mappingLine >= 1, mappingLine <= lines.count, column >= 1 else { return nil }
        var seen = 0
        for index in (mappingLine - 1)..<lines.count {
            let chars = Array(lines[index])
            guard chars.count >= column else { continue }
            let rest = String(chars[(column - 1)...])
            for form in ["\(key):", "\"\(key)\":", "'\(key)':"] where rest.hasPrefix(form) {
                seen += 1
                if seen == 2 { return index + 1 }
            }
        }
        return nil
    }

    private func translate(_ error: YamlError) -> WinnowError {
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _),
            let .composer(context, problem, mark, _):
            let prefix = context.map { "\($0.text) " } ?? ""
            return .invalidFile(location(line: mark.line, column: mark.column), "invalid YAML: \(prefix)\(problem)")
        case let .duplicatedKeysInMapping(duplicates, context):
            return .invalidFile(
                location(line: context.mark.line, column: context.mark.column),
                "duplicated key \(duplicates.map { "'\($0)'" }.joined(separator: ", ")) in a mapping")
        case let .reader(problem, _, _, _):
            return .invalidFile(location(line: 1, column: 1), "invalid YAML: \(problem)")
        default:
            return .invalidFile(location(line: 1, column: 1), "invalid YAML: \(error)")
        }
    }

    package func error(_ node: Node, _ path: String, _ message: String) -> WinnowError {
        .invalidFile(location(node), path.isEmpty ? message : "\(path): \(message)")
    }

    // MARK: Scalars

    package static func describe(_ node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        case let .scalar(scalar):
            switch scalar.tagName {
            case .null: return "null"
            case .bool: return "a boolean (\(scalar.string))"
            case .int: return "an integer (\(scalar.string))"
            case .float: return "a number (\(scalar.string))"
            default: return "'\(scalar.string)'"
            }
        }
    }

    package func string(_ node: Node, _ path: String, what: String = "a string") throws -> Located<String> {
        guard case let .scalar(scalar) = node, scalar.tagName == .str else {
            throw error(node, path, "expected \(what), found \(Self.describe(node))")
        }
        guard !scalar.string.isEmpty else { throw error(node, path, "expected \(what), found an empty string") }
        return Located(scalar.string, at: location(node))
    }

    /// A string that may be empty (used for defaults and file contents, not names).
    package func text(_ node: Node, _ path: String) throws -> String {
        guard case let .scalar(scalar) = node, scalar.tagName == .str else {
            throw error(node, path, "expected a string, found \(Self.describe(node))")
        }
        return scalar.string
    }

    package func int(_ node: Node, _ path: String, range: ClosedRange<Int>) throws -> Int {
        guard case let .scalar(scalar) = node, scalar.tagName == .int, let value = node.int else {
            throw error(node, path, "expected an integer, found \(Self.describe(node))")
        }
        guard range.contains(value) else {
            throw error(node, path, "must be between \(range.lowerBound) and \(range.upperBound), found \(value)")
        }
        return value
    }

    package func number(_ node: Node, _ path: String, range: ClosedRange<Double>) throws -> Double {
        guard case let .scalar(scalar) = node, scalar.tagName == .int || scalar.tagName == .float,
            let value = node.float, value.isFinite
        else {
            throw error(node, path, "expected a number, found \(Self.describe(node))")
        }
        guard range.contains(value) else {
            throw error(
                node, path, "must be between \(range.lowerBound.formatted6) and \(range.upperBound.formatted6), found \(value.formatted6)")
        }
        return value
    }

    package func bool(_ node: Node, _ path: String) throws -> Bool {
        guard case let .scalar(scalar) = node, scalar.tagName == .bool, let value = node.bool else {
            throw error(node, path, "expected true or false, found \(Self.describe(node))")
        }
        return value
    }

    package func isNull(_ node: Node) -> Bool {
        if case let .scalar(scalar) = node, scalar.tagName == .null { return true }
        return false
    }

    /// One of a fixed set of words.
    package func word<T: RawRepresentable & CaseIterable>(_ node: Node, _ path: String, as type: T.Type, what: String) throws -> T
    where T.RawValue == String {
        guard case let .scalar(scalar) = node, scalar.tagName == .str else {
            throw error(node, path, "expected \(what) (\(Self.choices(T.self))), found \(Self.describe(node))")
        }
        guard let value = T(rawValue: scalar.string) else {
            throw error(node, path, "unknown \(what) '\(scalar.string)'; expected one of \(Self.choices(T.self))")
        }
        return value
    }

    package static func choices<T: RawRepresentable & CaseIterable>(_ type: T.Type) -> String where T.RawValue == String {
        T.allCases.map(\.rawValue).joined(separator: ", ")
    }

    // MARK: Collections

    /// A list; `allowScalar` also accepts one item written without brackets.
    package func list(_ node: Node, _ path: String, allowScalar: Bool = false, allowEmpty: Bool = true) throws -> [(Node, String)] {
        switch node {
        case let .sequence(sequence):
            guard allowEmpty || !sequence.isEmpty else { throw error(node, path, "must not be empty") }
            return sequence.enumerated().map { ($1, "\(path)[\($0)]") }
        case .scalar where allowScalar && !isNull(node):
            return [(node, path)]
        default:
            throw error(node, path, "expected a list, found \(Self.describe(node))")
        }
    }

    /// A mapping whose unknown keys are recorded in `errors` and left out, so the rest of it can
    /// still be read; nil (with the error recorded) when the node is not a mapping.
    package func lenientMapping(
        _ node: Node, _ path: String, allowed: [String], what: String, log: ErrorLog
    )
        -> MappingReader?
    {
        guard case let .mapping(mapping) = node else {
            log.record(error(node, path, "expected \(what) (a mapping), found \(Self.describe(node))"))
            return nil
        }
        var entries: [(key: String, keyNode: Node, value: Node)] = []
        for (keyNode, value) in mapping {
            guard case let .scalar(scalar) = keyNode,
                scalar.tagName == .str || scalar.tagName == .null || scalar.tagName == .bool || scalar.tagName == .int
            else {
                log.record(error(keyNode, path, "expected a key, found \(Self.describe(keyNode))"))
                continue
            }
            if !allowed.isEmpty, !allowed.contains(scalar.string) {
                log.record(
                    error(keyNode, path, "unknown key '\(scalar.string)' in \(what); expected one of \(allowed.joined(separator: ", "))"))
                continue
            }
            entries.append((scalar.string, keyNode, value))
        }
        return MappingReader(node: node, path: path, entries: entries, reader: self)
    }

    package func mapping(_ node: Node, _ path: String, allowed: [String], what: String) throws -> MappingReader {
        guard case let .mapping(mapping) = node else {
            throw error(node, path, "expected \(what) (a mapping), found \(Self.describe(node))")
        }
        var entries: [(key: String, keyNode: Node, value: Node)] = []
        for (keyNode, value) in mapping {
            guard case let .scalar(scalar) = keyNode,
                scalar.tagName == .str || scalar.tagName == .null || scalar.tagName == .bool || scalar.tagName == .int
            else {
                throw error(keyNode, path, "expected a key, found \(Self.describe(keyNode))")
            }
            if !allowed.isEmpty, !allowed.contains(scalar.string) {
                throw error(keyNode, path, "unknown key '\(scalar.string)' in \(what); expected one of \(allowed.joined(separator: ", "))")
            }
            entries.append((scalar.string, keyNode, value))
        }
        return MappingReader(node: node, path: path, entries: entries, reader: self)
    }
}

/// The entries of one YAML mapping, looked up by key.
package struct MappingReader {
    package let node: Node
    package let path: String
    package let entries: [(key: String, keyNode: Node, value: Node)]
    package let reader: YAMLReader

    package func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The value of `key`, or nil when absent or written as `null`.
    package func optional(_ key: String) -> Node? {
        guard let value = entries.first(where: { $0.key == key })?.value else { return nil }
        return reader.isNull(value) ? nil : value
    }

    package func required(_ key: String, what: String) throws -> Node {
        guard let value = optional(key) else {
            throw reader.error(node, path, "missing required key '\(key)' (\(what))")
        }
        return value
    }
}

extension Double {
    /// Up to six significant digits, no trailing zeros.
    package var formatted6: String {
        if self == rounded(), abs(self) < 1e15 { return String(Int64(self)) }
        return String(format: "%g", self)
    }
}

extension Node.Scalar {
    /// The resolved tag (`str`, `int`, `bool`, `float`, `null`, ...).
    package var tagName: Tag.Name {
        let name = Resolver.default.resolveTag(of: Node.scalar(self))
        return name == .nonSpecific ? .str : name
    }
}
