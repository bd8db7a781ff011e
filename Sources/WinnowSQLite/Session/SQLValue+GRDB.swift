import Foundation
import GRDB
import WinnowCore

extension SQLValue {
    /// The value as GRDB binds it.
    public var databaseValue: DatabaseValue {
        switch self {
        case .null: return .null
        case let .integer(value): return value.databaseValue
        case let .real(value): return value.databaseValue
        case let .text(value): return value.databaseValue
        case let .blob(bytes): return Data(bytes).databaseValue
        }
    }

    /// A value GRDB read.
    public init(_ value: DatabaseValue) {
        switch value.storage {
        case .null: self = .null
        case let .int64(v): self = .integer(v)
        case let .double(v): self = .real(v)
        case let .string(v): self = .text(v)
        case let .blob(v): self = .blob([UInt8](v))
        }
    }
}
