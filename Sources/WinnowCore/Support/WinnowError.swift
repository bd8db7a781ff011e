import Foundation

/// Every failure winnow reports. Each case maps to one exit code of the contract (sysexits).
public enum WinnowError: Error, Sendable, CustomStringConvertible {
    /// Command-line usage error (exit 64).
    case usage(String)
    /// Invalid job or schema file, pointing at the offending node (exit 65).
    case invalidFile(SourceLocation?, String)
    /// A refusal that is about the data or the change, not the file syntax: a non-lightweight
    /// change, a restricted reference, a delete guard (exit 65).
    case refused(String)
    /// A data guard that stopped a rule or a migration before it changed anything (exit 65),
    /// with what the run had committed before it.
    case guardRefused(GuardRefusal)
    /// Database or input file missing or not a database (exit 66).
    case notFound(String)
    /// I/O or SQLite error (exit 74).
    case io(String)
    /// Another run holds the lock (exit 75).
    case locked(String)
    /// A bug in winnow (exit 70).
    case `internal`(String)

    /// The process exit code of this error (docs/reference.md section 5).
    public var exitCode: Int32 {
        switch self {
        case .usage: return 64
        case .invalidFile, .refused, .guardRefused: return 65
        case .notFound: return 66
        case .io: return 74
        case .locked: return 75
        case .internal: return 70
        }
    }

    /// Several errors of one file reported at once: the first as itself, the others on the
    /// following lines, each with its place (exit 65 when any is an invalid file).
    public static func combined(_ errors: [WinnowError]) -> WinnowError? {
        // In file order: by line, then column; errors without a place keep their order, last.
        func place(_ error: WinnowError, _ offset: Int) -> (Int, Int, Int) {
            if case let .invalidFile(location?, _) = error { return (location.line, location.column, offset) }
            return (Int.max, Int.max, offset)
        }
        let errors = errors.enumerated().sorted { place($0.element, $0.offset) < place($1.element, $1.offset) }.map { $0.element }
        guard let first = errors.first else { return nil }
        guard errors.count > 1, case let .invalidFile(location, message) = first else { return first }
        let rest = errors.dropFirst().map(\.description).joined(separator: "\n")
        return .invalidFile(location, "\(message)\n\(rest)\n(\(errors.count) errors)")
    }

    /// Whether the request was refused (bad usage, an invalid file, a guard or a change that
    /// is not allowed) rather than failed: a run ending so is recorded `refused`.
    public var isRefusal: Bool {
        switch self {
        case .usage, .invalidFile, .refused, .guardRefused: return true
        case .notFound, .io, .locked, .internal: return false
        }
    }

    public var description: String {
        switch self {
        case let .usage(message): return message
        case let .invalidFile(location?, message): return "\(location): \(message)"
        case let .invalidFile(nil, message): return message
        case let .refused(message): return message
        case let .guardRefused(refusal): return refusal.description
        case let .notFound(message): return message
        case let .io(message): return message
        case let .locked(message): return message
        case let .internal(message): return "internal error: \(message)"
        }
    }
}

/// A data guard's refusal: which guard, what it refused, and what stays committed from
/// earlier in the run (nothing, when the guard ran before the first write).
public struct GuardRefusal: Sendable, Equatable, CustomStringConvertible {
    public enum Guard: Sendable, Equatable {
        /// `max_delete_percent`.
        case deleteShare
        /// `references: restrict`.
        case restrictedReference
        /// A unique index the migration creates over a key that rows still share.
        case uniqueIndex
        /// `max_group_size`: the keys of an `any:` rule would form a larger group.
        case groupSize
    }

    public var kind: Guard
    /// What was refused and why, without what stays committed.
    public var message: String
    /// What the run committed before the refusal (migration steps, the seed, batches); empty
    /// when nothing was.
    public var committed: [String] = []

    public init(_ kind: Guard, _ message: String, committed: [String] = []) {
        self.kind = kind
        self.message = message
        self.committed = committed
    }

    public var description: String {
        committed.isEmpty
            ? "\(message); nothing was changed"
            : "\(message); this rule changed nothing, but what the run did before it stays committed (\(committed.joined(separator: ", ")))"
    }
}
