import Foundation

/// A command as `winnow_runs.command` and the summary name it.
public struct RunCommand: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    public static let run: RunCommand = "run"
    public static let plan: RunCommand = "plan"
    public static let check: RunCommand = "check"
    public static let restore: RunCommand = "restore"
}
