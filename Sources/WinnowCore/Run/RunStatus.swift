import Foundation

/// The status of a run as `winnow_runs` stores it and the summary reports it (docs/reference.md
/// section 4). A typed name over an open set: a database written by a newer winnow may hold a
/// status this one does not know, and `history` still shows it.
public struct RunStatus: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    /// A run in progress (or one whose process died: see ``interrupted``).
    public static let running: RunStatus = "running"
    public static let completed: RunStatus = "completed"
    /// `run --max-duration`: stopped cleanly between batches; the next run continues.
    public static let stopped: RunStatus = "stopped"
    /// A run whose process died before it finished; its committed batches are kept.
    public static let interrupted: RunStatus = "interrupted"
    /// Refused before or during its work (exit 65); nothing past the last commit changed.
    public static let refused: RunStatus = "refused"
    public static let failed: RunStatus = "failed"
    /// `plan`: what a run would do.
    public static let planned: RunStatus = "planned"
    /// `check`: no duplicates and no drift.
    public static let clean: RunStatus = "clean"
    public static let duplicates: RunStatus = "duplicates"
    public static let drift: RunStatus = "drift"
    /// `restore`: the run was put back.
    public static let restored: RunStatus = "restored"

    /// The status a run that failed with `error` is recorded with.
    public static func failure(_ error: WinnowError) -> RunStatus { error.isRefusal ? .refused : .failed }
}
