import Foundation

/// One value as a backend stores it: SQLite's five storage classes, which PostgreSQL's values
/// map onto. The core's bookkeeping reads and writes through it, so it never sees a driver type.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    public var isNull: Bool { if case .null = self { return true } else { return false } }

    public var int64: Int64? {
        switch self {
        case let .integer(value): return value
        case let .real(value): return Int64(exactly: value)
        case let .text(value): return Int64(value)
        default: return nil
        }
    }

    public var int: Int? { int64.map { Int($0) } }

    public var double: Double? {
        switch self {
        case let .integer(value): return Double(value)
        case let .real(value): return value
        case let .text(value): return Double(value)
        default: return nil
        }
    }

    public var string: String? {
        switch self {
        case let .text(value): return value
        case let .integer(value): return String(value)
        case let .real(value): return String(value)
        case let .blob(bytes): return String(decoding: bytes, as: UTF8.self)
        case .null: return nil
        }
    }

    public var bool: Bool? { int64.map { $0 != 0 } }
}

extension SQLValue {
    public init(_ value: Int) { self = .integer(Int64(value)) }
    public init(_ value: Int64) { self = .integer(value) }
    public init(_ value: Double) { self = .real(value) }
    public init(_ value: String) { self = .text(value) }
    public init(_ value: Bool) { self = .integer(value ? 1 : 0) }
    public init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
}

/// One result row.
public struct SQLRow: Sendable, Equatable {
    public var values: [SQLValue]

    public init(_ values: [SQLValue]) { self.values = values }

    public subscript(index: Int) -> SQLValue { values[index] }

    /// Column `index` as a non-null integer, or a typed error naming it.
    public func int(_ index: Int) throws -> Int {
        guard let value = values[index].int else { throw WinnowError.internal("column \(index) is not an integer") }
        return value
    }

    public func int64(_ index: Int) throws -> Int64 {
        guard let value = values[index].int64 else { throw WinnowError.internal("column \(index) is not an integer") }
        return value
    }

    public func string(_ index: Int) throws -> String {
        guard let value = values[index].string else { throw WinnowError.internal("column \(index) is not text") }
        return value
    }

    public func double(_ index: Int) throws -> Double {
        guard let value = values[index].double else { throw WinnowError.internal("column \(index) is not a number") }
        return value
    }
}
