import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The stores one command works on: `--database` paths and globs (quoted, so winnow expands
/// them), `--databases-from FILE` (one per line, `-` for standard input, `#` comments), or the
/// job's `database:` (a path or a glob). Pure but for the file system reads of the expansion.
public enum StoreList {
    /// Whether `text` has glob characters.
    public static func isPattern(_ text: String) -> Bool { text.contains(where: { "*?[".contains($0) }) }

    /// Expands globs in name order; a pattern matching nothing is an error naming it. A server
    /// URL is kept as it is. Duplicates are removed (first place kept).
    public static func expand(_ items: [String]) throws -> [String] {
        var result: [String] = []
        var seen = Set<String>()
        for item in items {
            var matches: [String]
            if DatabaseURL.isPostgres(item) || !isPattern(item) {
                matches = [item]
            } else {
                matches = files(matching: item)
                if matches.isEmpty { throw WinnowError.usage("--database '\(item)': no file matches the pattern") }
            }
            for match in matches where seen.insert(match).inserted { result.append(match) }
        }
        return result
    }

    /// The lines of a list of stores (blank lines and `#` comments left out).
    public static func parse(list text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// The file system's matches of a pattern, sorted.
    static func files(matching pattern: String) -> [String] {
        var matches = glob_t()
        defer { globfree(&matches) }
        guard glob(pattern, 0, nil, &matches) == 0 else { return [] }
        return (0..<Int(matches.gl_pathc)).compactMap { matches.gl_pathv[$0].map { String(cString: $0) } }.sorted()
    }
}

/// How a fleet runs: `--parallel`, `--canary`, `--continue-on-error`.
public struct FleetOptions: Sendable {
    /// Stores worked on at once.
    public var parallel: Int
    /// Stores that run first, alone; the rollout stops if any of them fails.
    public var canary: Int
    /// Keep scheduling stores after a failure (default: stop scheduling, let running ones finish).
    public var continueOnError: Bool

    public init(parallel: Int = ProcessInfo.processInfo.activeProcessorCount, canary: Int = 0, continueOnError: Bool = false) {
        self.parallel = max(1, parallel)
        self.canary = max(0, canary)
        self.continueOnError = continueOnError
    }
}

/// What happened to one store.
public struct StoreOutcome: Sendable {
    public enum Status: String, Sendable {
        /// The command ran (`run`: completed or stopped; `check`: clean or with findings).
        case done
        /// Another run holds the store's lock: skipped (exit 75 for the store).
        case locked
        /// The command failed on this store.
        case failed
        /// Not started: an earlier failure (or a failed canary) stopped the rollout.
        case notRun = "not run"
    }

    public var store: String
    public var status: Status
    public var summary: RunSummary?
    public var error: WinnowError?
    public var seconds: Double
    /// The store's exit code as a single run would have given it.
    public var exitCode: Int32

    public init(store: String, status: Status, summary: RunSummary? = nil, error: WinnowError? = nil, seconds: Double = 0, exitCode: Int32)
    {
        self.store = store
        self.status = status
        self.summary = summary
        self.error = error
        self.seconds = seconds
        self.exitCode = exitCode
    }

    /// The outcome without its summary's sample groups: what a fleet keeps of a store once the
    /// store has been reported. A store's groups can be many, and a list of more than a
    /// thousand holds a temporary file open (``SampleList``): kept for every store, a fleet of
    /// a thousand such stores ran out of file descriptors.
    public func withoutSamples() -> StoreOutcome {
        guard var summary, summary.rules.contains(where: { !$0.samples.isEmpty }) else { return self }
        for index in summary.rules.indices { summary.rules[index].samples = SampleList() }
        var outcome = self
        outcome.summary = summary
        return outcome
    }
}

/// Runs one command over many stores: canaries first, then a bounded pool; each store is an
/// independent run (its own lock, batches, history row), so a failure or a kill in one store
/// never touches another.
public enum FleetRunner {
    /// The exit code of a fleet: the most severe of its stores'. Severity, highest first:
    /// 70 (internal error), 74 (I/O), 66 (cannot open), 65 (refused, invalid), 64 (usage),
    /// 75 (locked, skipped), 1 (check found something), 0.
    public static let severity: [Int32] = [70, 74, 66, 65, 64, 75, 1, 0]

    public static func exitCode(_ outcomes: [StoreOutcome]) -> Int32 {
        worst(outcomes.filter { $0.status != .notRun }.map(\.exitCode))
    }

    /// The most severe of exit codes (0 for none).
    public static func worst(_ codes: [Int32]) -> Int32 {
        codes.min { (severity.firstIndex(of: $0) ?? 0) < (severity.firstIndex(of: $1) ?? 0) } ?? 0
    }

    /// Runs `work` on every store; `finished` hears of each store as it ends (from the worker's
    /// thread, one call at a time). `work` returns the store's summary and exit code, or throws.
    /// The outcomes returned keep no sample groups (``StoreOutcome/withoutSamples()``): only
    /// `finished` sees them.
    public static func run(
        _ stores: [String], options: FleetOptions,
        stop: StopSignal? = nil,
        work: @escaping @Sendable (String) throws -> (RunSummary, Int32),
        started: @escaping @Sendable (String) -> Void = { _ in },
        finished: @escaping @Sendable (StoreOutcome) -> Void = { _ in }
    ) -> [StoreOutcome] {
        let state = FleetState(stores)
        let canaries = Array(stores.indices.prefix(options.canary))
        let rest = Array(stores.indices.dropFirst(options.canary))
        @Sendable func runOne(_ index: Int) {
            let store = stores[index]
            started(store)
            let begin = Date()
            var outcome: StoreOutcome
            do {
                let (summary, code) = try work(store)
                outcome = StoreOutcome(
                    store: store, status: .done, summary: summary, seconds: Date().timeIntervalSince(begin), exitCode: code)
            } catch let error as WinnowError {
                if case .locked = error {
                    outcome = StoreOutcome(
                        store: store, status: .locked, error: error, seconds: Date().timeIntervalSince(begin), exitCode: error.exitCode)
                } else {
                    outcome = StoreOutcome(
                        store: store, status: .failed, error: error, seconds: Date().timeIntervalSince(begin), exitCode: error.exitCode)
                }
            } catch {
                let wrapped = WinnowError.internal("\(error)")
                outcome = StoreOutcome(
                    store: store, status: .failed, error: wrapped, seconds: Date().timeIntervalSince(begin), exitCode: wrapped.exitCode)
            }
            if outcome.status == .failed, !options.continueOnError { stop?.raise() }
            state.finish(index, outcome, finished)
        }
        func pool(_ indexes: [Int], stopOnFailure: Bool) {
            let queue = DispatchQueue(label: "winnow.fleet", attributes: .concurrent)
            let group = DispatchGroup()
            let slots = DispatchSemaphore(value: options.parallel)
            for index in indexes {
                slots.wait()
                if stopOnFailure, state.failed {
                    slots.signal()
                    break
                }
                group.enter()
                queue.async {
                    runOne(index)
                    slots.signal()
                    group.leave()
                }
            }
            group.wait()
        }
        pool(canaries, stopOnFailure: false)
        if !canaries.isEmpty, state.failed {
            return state.outcomes(notRunReason: "a canary store failed; the rollout stopped")
        }
        pool(rest, stopOnFailure: !options.continueOnError)
        return state.outcomes(notRunReason: "an earlier store failed; the rollout stopped (--continue-on-error goes on)")
    }
}

/// The fleet's shared results, under a lock.
final class FleetState: @unchecked Sendable {
    private let lock = NSLock()
    private let stores: [String]
    private var results: [Int: StoreOutcome] = [:]
    private(set) var anyFailed = false

    init(_ stores: [String]) { self.stores = stores }

    var failed: Bool { lock.withLock { anyFailed } }

    func finish(_ index: Int, _ outcome: StoreOutcome, _ report: (StoreOutcome) -> Void) {
        lock.withLock {
            if outcome.status == .failed { anyFailed = true }
            report(outcome)
            results[index] = outcome.withoutSamples()
        }
    }

    func outcomes(notRunReason: String) -> [StoreOutcome] {
        lock.withLock {
            stores.indices.map { index in
                results[index]
                    ?? StoreOutcome(store: stores[index], status: .notRun, error: .refused(notRunReason), exitCode: 0)
            }
        }
    }
}
