import Foundation
import GRDB
import XCTest
@testable import WinnowKit

/// Shared helpers for the scenario tests: scratch folders, databases built from SQL, content
/// digests, and the `winnow` executable.
enum TestSupport {
    /// A new empty folder under the system's temporary folder.
    static func scratchDirectory(_ name: String = #function) throws -> URL {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("winnow-tests-\(safe)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Creates a database file from SQL statements and returns its path.
    @discardableResult
    static func makeDatabase(at path: String, sql: String) throws -> String {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: sql) }
        try queue.close()
        return path
    }

    /// Writes a job file and returns its path.
    @discardableResult
    static func writeFile(_ text: String, to path: String) throws -> String {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Every user table's rows (with rowids), in a canonical order: equal content gives equal dumps.
    static func contentDump(_ path: String, includeRowIDs: Bool = true) throws -> [String: [[DatabaseValue]]] {
        let queue = try DatabaseQueue(path: path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        defer { try? queue.close() }
        return try queue.read { db in
            var dump: [String: [[DatabaseValue]]] = [:]
            for name in try SchemaInspector.tableNames(db) {
                let select = includeRowIDs ? "SELECT rowid, * FROM \(name.sqlIdentifier) ORDER BY rowid"
                                           : "SELECT * FROM \(name.sqlIdentifier)"
                var rows = try Row.fetchAll(db, sql: select).map { Array($0.databaseValues) }
                if !includeRowIDs { rows.sort { "\($0)" < "\($1)" } }
                dump[name] = rows
            }
            return dump
        }
    }

    /// SHA-256-free byte checksum of a file (for "not a byte changed" checks).
    static func fileBytes(_ path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path))
    }

    /// The built `winnow` executable (next to the test bundle).
    static var executable: URL {
        var url = Bundle(for: Marker.self).bundleURL
        while url.pathComponents.count > 1 {
            let candidate = url.deletingLastPathComponent().appendingPathComponent("winnow")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            url = url.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: ".build/debug/winnow")
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `winnow ARGS...` in `directory` and waits for it.
    @discardableResult
    static func winnow(_ arguments: [String], in directory: URL? = nil) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self))
    }

    final class Marker {}
}

/// SplitMix64: the one seeded generator of the tests, so every failing case replays from its seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(state: UInt64) { self.state = state }

    /// The tests' usual seeding: the first value already mixed.
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A whole number in `0..<n` (0 when `n` is 0 or 1).
    mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
    /// A uniform number in `[0, 1)`.
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    mutating func uniform(_ low: Double, _ high: Double) -> Double { low + (max(high, low) - low) * unit() }
}
