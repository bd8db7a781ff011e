import Foundation
import WinnowCore

/// A one-line progress bar on standard error, drawn only when it is a terminal.
final class Progress {
    static let shared = Progress()
    private var drawn = false
    var enabled = false

    func update(_ report: BatchReport) {
        guard enabled, report.total > 0 else { return }
        let fraction = min(1, Double(report.done) / Double(report.total))
        let width = 30
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let line = String(
            format: "\r[%@] %3d%%  dedupe[%d] %@  batch %d  %d/%d rows", bar, Int(fraction * 100), report.rule,
            report.table, report.batch, report.done, report.total)
        FileHandle.standardError.write(Data(line.utf8))
        drawn = true
    }

    func clear() {
        guard drawn else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
        drawn = false
    }
}
