import Foundation

/// How long a connection waits for a lock another connection holds on the file, and who hears
/// of a wait that lasts.
///
/// SQLite answers "database is locked" when a statement needs a lock another connection holds
/// (its write transaction, `BEGIN EXCLUSIVE`, a checkpoint, a rollback-journal reader while a
/// commit waits) and the busy handler gives up. This handler sleeps the way SQLite's own busy
/// timeout does (1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, then 100 ms) until `limit` seconds have
/// passed since the lock was first found taken, and tells `observer` how long it has waited once
/// that passes ``reportAfter``, so that a terminal can say what the run is waiting for.
public struct BusyWait: Sendable {
    /// The wait when nothing asks for another: SQLite's usual few seconds.
    public static let defaultLimit: TimeInterval = 5
    /// A wait shorter than this is the ordinary traffic of a shared file: nobody hears of it.
    public static let reportAfter: TimeInterval = 1
    static let delays: [TimeInterval] = [0.001, 0.002, 0.005, 0.010, 0.015, 0.020, 0.025, 0.025, 0.025, 0.050, 0.050, 0.100]

    /// Seconds to wait for one lock.
    public var limit: TimeInterval
    /// Hears the seconds waited so far, about every 100 ms while a wait lasts.
    public var observer: (@Sendable (TimeInterval) -> Void)?

    public init(limit: TimeInterval = defaultLimit, observer: (@Sendable (TimeInterval) -> Void)? = nil) {
        self.limit = limit
        self.observer = observer
    }

    /// The wait of a command given `--wait SECONDS`: that long, never less than the default.
    public init(wait: TimeInterval?, observer: (@Sendable (TimeInterval) -> Void)? = nil) {
        self.init(limit: max(Self.defaultLimit, wait ?? 0), observer: observer)
    }

    /// The busy handler of one connection: `tries` counts the calls for the same lock, so the
    /// first call (0) starts the clock. Returns false to give up (the statement fails busy).
    func handler() -> @Sendable (Int) -> Bool {
        let clock = Clock()
        let limit = limit
        let observer = observer
        return { tries in
            let waited = clock.elapsed(restart: tries == 0)
            StatementProfile.shared.note(String(format: "busy try %d after %.1f ms", tries, waited * 1000))
            guard waited < limit else { return false }
            if waited >= Self.reportAfter { observer?(waited) }
            Thread.sleep(forTimeInterval: min(Self.delays[min(tries, Self.delays.count - 1)], limit - waited))
            return true
        }
    }

    /// When the current wait began (a connection is used by one thread at a time; the lock
    /// keeps it right regardless).
    private final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var began = Date()

        func elapsed(restart: Bool) -> TimeInterval {
            lock.withLock {
                let now = Date()
                if restart { began = now }
                return now.timeIntervalSince(began)
            }
        }
    }
}
