import Foundation

/// A JSON value, written by Foundation's `JSONEncoder`.
///
/// The renderers build their objects as `[String: Any]`; ``Renderer/jsonLine(_:stamped:)``
/// converts them to this form before writing. `JSONSerialization` wrote the same objects about
/// seven times slower (`show --format json` of a run with 133,000 deleted rows: 25 s), and
/// sorted keys by the system locale's collation, so the order of column names could depend on
/// the machine. Keys are now sorted by their Unicode code points, the same everywhere.
package enum JSONValue: Encodable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsigned(UInt64)
    case real(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The JSON form of a value the renderers put in their objects; nil for a value JSON has no
    /// form for (the line is then written as `{}`, as `JSONSerialization` refused it).
    package init?(_ any: Any) {
        // Foundation's classes by their metatype: a Swift cast of a collection to a class type
        // (`as? NSNull`) bridges the whole collection to Foundation first. A number parsed by
        // JSONSerialization is an NSNumber, which a cast would also give as a Bool (1 as true).
        let type = Swift.type(of: any)
        if type is NSNull.Type {
            self = .null
            return
        }
        if type is NSNumber.Type, let number = any as? NSNumber {
            self = Self(number)
            return
        }
        switch any {
        case let value as [String: Any]:
            var object: [String: JSONValue] = [:]
            object.reserveCapacity(value.count)
            for (key, element) in value {
                guard let converted = JSONValue(element) else { return nil }
                object[key] = converted
            }
            self = .object(object)
        case let value as [Any]:
            var array: [JSONValue] = []
            array.reserveCapacity(value.count)
            for element in value {
                guard let converted = JSONValue(element) else { return nil }
                array.append(converted)
            }
            self = .array(array)
        case let value as JSONValue: self = value
        case let value as String: self = .string(value)
        case let value as Int: self = .integer(Int64(value))
        case let value as Int64: self = .integer(value)
        case let value as Double: self = .real(value)
        case let value as Bool: self = .bool(value)
        case let value as Int32: self = .integer(Int64(value))
        case let value as UInt32: self = .integer(Int64(value))
        case let value as UInt64: self = .unsigned(value)
        case let value as UInt: self = .unsigned(UInt64(value))
        case let value as Float: self = .real(Double(value))
        case let value as Substring: self = .string(String(value))
        default:
            // An optional that holds nil, as JSONSerialization wrote one: null.
            let mirror = Mirror(reflecting: any)
            guard mirror.displayStyle == .optional else { return nil }
            guard let wrapped = mirror.children.first?.value else {
                self = .null
                return
            }
            self.init(wrapped)
        }
    }

    /// A value as SQL spells it (`'text'`, `42`, `1.5`, `NULL`, `X'00FF'`): a string, a number,
    /// null, or `{"blob": "00ff"}`; anything else (a number too large for a double, `9e999`) as
    /// its text.
    package init(sqlLiteral literal: String) {
        if literal == "NULL" {
            self = .null
        } else if literal.count >= 2, literal.hasPrefix("'"), literal.hasSuffix("'") {
            let inner = literal.dropFirst().dropLast()
            self = .string(inner.contains("''") ? inner.replacingOccurrences(of: "''", with: "'") : String(inner))
        } else if literal.count >= 3, literal.hasPrefix("X'"), literal.hasSuffix("'") {
            self = .object(["blob": .string(literal.dropFirst(2).dropLast().lowercased())])
        } else if let integer = Int64(literal) {
            self = .integer(integer)
        } else if let real = Double(literal), real.isFinite {
            self = .real(real)
        } else {
            self = .string(literal)
        }
    }

    private init(_ number: NSNumber) {
        switch String(cString: number.objCType) {
        case "c" where type(of: number) != NSNumber.self: self = .bool(number.boolValue)
        case "d", "f": self = .real(number.doubleValue)
        case "Q": self = .unsigned(number.uint64Value)
        default: self = .integer(number.int64Value)
        }
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    package func encode(to encoder: Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .integer(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .unsigned(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .real(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .array(let values):
            var container = encoder.unkeyedContainer()
            for value in values { try container.encode(value) }
        case .object(let members):
            var container = encoder.container(keyedBy: Key.self)
            for (key, value) in members { try container.encode(value, forKey: Key(stringValue: key)) }
        }
    }

    /// One line of JSON, keys sorted by code point, `/` unescaped (or as `encoder` writes:
    /// ``prettyEncoder()``); nil where JSON has no form for a number (not finite).
    package func line(_ encoder: JSONEncoder = lineEncoder()) -> String? {
        (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The encoder ``line(_:)`` writes with (one can serve many values in turn).
    package static func lineEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// The same, pretty-printed (two spaces a level, `"key" : value`), as `plan --save` writes.
    package static func prettyEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
