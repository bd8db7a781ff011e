import Foundation

/// Renders events and summaries as text for people, JSON lines for machines, and JUnit XML for CI.
/// Pure functions of their input, so their output is golden-tested.
public enum Renderer {
    // Shared by the formats: aligned tables and times. Each format is in its own file:
    // Renderer+JSON, Renderer+Text, Renderer+CI (JUnit, GitHub), Renderer+Fleet, Renderer+Show,
    // Renderer+Maintenance.

    /// An aligned table: each column as wide as its widest cell, two spaces apart, `numeric`
    /// columns right-aligned; the last column is not padded.
    package static func table(_ header: [String], _ rows: [[String]], numeric: Set<Int> = []) -> [String] {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        return all.map { cells in
            cells.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: max(0, widths[column] - cell.count))
                if column == cells.count - 1, !numeric.contains(column) { return cell }
                return numeric.contains(column) ? pad + cell : cell + pad
            }.joined(separator: "  ")
        }
    }

    /// `2026-11-21T10:00:05.123Z` as `2026-11-21 10:00:05`.
    package static func shortTimestamp(_ iso: String) -> String {
        let trimmed = iso.replacingOccurrences(of: "T", with: " ")
        return String(trimmed.prefix(19))
    }

    /// Seconds for people: `0.42 s`, `12.3 s`, `4 min 05 s`, `2 h 03 min`.
    package static func duration(_ seconds: Double) -> String {
        if seconds < 10 { return String(format: "%.2f s", seconds) }
        if seconds < 60 { return String(format: "%.1f s", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 3600 { return String(format: "%d min %02d s", whole / 60, whole % 60) }
        return String(format: "%d h %02d min", whole / 3600, (whole % 3600) / 60)
    }
}
