import Foundation

/// How a command opens its database.
public enum AccessMode: Sendable {
    /// `plan`, `check`, `schema inspect`, `history`: a read-only connection.
    case readOnly
    /// `run` and `restore`; `create` allows a missing database to be created.
    case readWrite(create: Bool)
}

/// A database engine winnow can work on. It opens sessions; everything else goes through them.
public protocol DatabaseBackend: Sendable {
    /// Opens `location` and runs `body` with a session that is valid only inside it. Errors
    /// thrown by `body` or by the engine come out mapped to ``WinnowError`` (exit codes).
    func withSession<T>(_ location: String, mode: AccessMode, _ body: (any DatabaseSession) throws -> T) throws -> T
}
