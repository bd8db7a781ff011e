import Foundation
import WinnowCore

/// One status line on standard error, drawn only when it is a terminal: the phase in progress
/// (discovery, a migration step, the batches of a rule) with its elapsed time, and where the
/// work can be counted a bar, the rate and the time left. Redrawn at most ten times a second,
/// and at least every second while a phase runs (a timer keeps the elapsed time moving during
/// one long statement). A wait for a lock that lasts (`--wait`) takes the line while it goes
/// on. `--verbose` keeps each phase's time for the end of the run.
final class Progress: @unchecked Sendable {
    static let shared = Progress()

    var enabled = false
    /// Keep phase timings (`--verbose`).
    var recordsTimings = false
    private(set) var timings: [(phase: String, seconds: Double)] = []

    private let lock = NSLock()
    private var drawn = false
    private var phase: String?
    private var phaseStarted = Date()
    private var done = 0
    private var total = 0
    private var countedSince: (date: Date, done: Int)?
    private var lastDraw = Date.distantPast
    private var timer: DispatchSourceTimer?
    /// A lock being waited for: what holds it, the seconds waited when last heard, and when.
    private var waiting: (what: String, seconds: Double, heard: Date)?
    /// The longest a run waits for a lock (`--wait`, else SQLite's default), for the line.
    var waitLimit: Double?

    func handle(_ event: RunEvent) {
        lock.lock()
        defer { lock.unlock() }
        switch event {
        case let .phaseStarted(name):
            phase = name
            phaseStarted = Date()
            done = 0
            total = 0
            countedSince = nil
            startTimer()
            draw(force: true)
        case let .phaseProgress(name, done, total):
            phase = name
            count(done, of: total)
            draw(force: false)
        case let .batch(report):
            count(report.done, of: report.total)
            draw(force: false)
        case let .phaseFinished(name, seconds):
            if recordsTimings { timings.append((name, seconds)) }
            if phase == name { phase = nil }
            stopTimer()
            erase()
        case let .waiting(what, seconds):
            waiting = (what, seconds, Date())
            startTimer()
            draw(force: false)
        default:
            break
        }
    }

    /// A wait for another connection's lock on a SQLite file, heard from the busy handler.
    func busy(_ seconds: Double) {
        handle(.waiting("another connection holds a lock on the database", seconds: seconds))
    }

    private func count(_ done: Int, of total: Int) {
        if countedSince == nil { countedSince = (Date(), self.done) }
        self.done = done
        self.total = total
    }

    private func startTimer() {
        guard enabled, timer == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
        timer.schedule(deadline: .now() + 0.25, repeating: 0.25)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            self.lock.lock()
            self.draw(force: false)
            self.lock.unlock()
        }
        timer.resume()
        self.timer = timer
    }

    private func stopTimer() {
        timer?.cancel()
        timer = nil
    }

    /// Draws the line (under the lock); at most ten times a second unless forced.
    private func draw(force: Bool) {
        guard enabled else { return }
        let now = Date()
        // A wait is heard about every 100-200 ms while it lasts; silence means it is over.
        if let waiting, now.timeIntervalSince(waiting.heard) > 0.5 { self.waiting = nil }
        guard force || now.timeIntervalSince(lastDraw) >= 0.1 else { return }
        if let waiting {
            lastDraw = now
            let waited = Renderer.duration(waiting.seconds + now.timeIntervalSince(waiting.heard))
            show("waiting: \(waiting.what)  \(waited)\(waitLimit.map { " of at most \(Renderer.duration($0))" } ?? "")")
            return
        }
        guard let phase else {
            // A wait that ended outside any phase: nothing left to show.
            erase()
            stopTimer()
            return
        }
        lastDraw = now
        let elapsed = now.timeIntervalSince(phaseStarted)
        var line = "\(phase)  \(Renderer.duration(elapsed))"
        if total > 0 {
            let fraction = min(1, Double(done) / Double(total))
            let width = 24
            let filled = Int(fraction * Double(width))
            line =
                "[\(String(repeating: "#", count: filled))\(String(repeating: ".", count: width - filled))] \(Int(fraction * 100))%  "
                + line + "  \(done)/\(total)"
            if let since = countedSince, now.timeIntervalSince(since.date) > 0.5, done > since.done {
                let rate = Double(done - since.done) / now.timeIntervalSince(since.date)
                line += String(format: "  %.0f/s", rate)
                if total > done { line += "  \(Renderer.duration(Double(total - done) / rate)) left" }
            }
        }
        show(line)
    }

    /// Writes `line` over the status line, cut to the terminal's width.
    private func show(_ line: String) {
        var line = line
        let columns = Self.terminalColumns
        if line.count > columns - 1 { line = String(line.prefix(max(10, columns - 2))) + "…" }
        FileHandle.standardError.write(Data("\r\u{1B}[2K\(line)".utf8))
        drawn = true
    }

    /// The terminal's width (standard error's), else `COLUMNS`, else 100.
    static var terminalColumns: Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 { return Int(size.ws_col) }
        return Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "") ?? 100
    }

    private func erase() {
        guard drawn else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
        drawn = false
    }

    func clear() {
        lock.lock()
        defer { lock.unlock() }
        stopTimer()
        phase = nil
        waiting = nil
        erase()
    }
}
