import Foundation

/// The `sqlite:` section of a job: what a run may change about a SQLite file itself. A
/// PostgreSQL database ignores it, so the same job runs on both.
public struct SQLiteSettings: Sendable, Equatable {
    /// The journal mode the file should be in. A file's journal mode belongs to every program
    /// that opens it (WAL needs shared memory and `-wal`/`-shm` files beside the database), so
    /// winnow leaves it as it finds it unless the job asks for WAL here (nil).
    public var journalMode: JournalMode?

    public init(journalMode: JournalMode? = nil) {
        self.journalMode = journalMode
    }

    /// The journal modes a job may ask for.
    public enum JournalMode: String, Sendable, CaseIterable {
        /// Write-ahead log: readers never block the application's commits, and winnow's long
        /// reads (finding the duplicate groups) do not hold its writers up. The file stays in WAL.
        case wal
    }
}
