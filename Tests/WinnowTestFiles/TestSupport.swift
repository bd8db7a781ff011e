import Foundation
import XCTest

/// Shared helpers for every test target, with no database library: scratch folders, files,
/// and the `winnow` executable. Helpers that build and read SQLite files are in
/// `WinnowTestSupport`.
package enum TestSupport {
    /// A new empty folder under the system's temporary folder.
    package static func scratchDirectory(_ name: String = #function) throws -> URL {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("winnow-tests-\(safe)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Writes a job file and returns its path.
    @discardableResult
    package static func writeFile(_ text: String, to path: String) throws -> String {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// SHA-256-free byte checksum of a file (for "not a byte changed" checks).
    package static func fileBytes(_ path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path))
    }

    /// The repository's root folder (this file is `Tests/WinnowTestSupport/TestSupport.swift`).
    package static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The built `winnow` executable: the product in the build's bin folder, as
    /// `swift build --show-bin-path` names it for this configuration. `WINNOW_EXECUTABLE`
    /// overrides it. Never an entry found by walking up from the test bundle: a clone named
    /// `winnow` (a directory) would pass for it.
    package static let executable: URL = {
        if let path = ProcessInfo.processInfo.environment["WINNOW_EXECUTABLE"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        // The test runner lives in the bin folder (`.build/<triple>/debug/winnowPackageTests.xctest`);
        // `swift build --show-bin-path` names the same folder.
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        if let product = product(named: "winnow", in: runner.deletingLastPathComponent()) { return product }
        if let bin = try? binPath(), let product = product(named: "winnow", in: bin) { return product }
        // Not built (the tests that need it say so): a path that does not exist.
        return repositoryRoot.appendingPathComponent(".build/\(configuration)/winnow")
    }()

    #if DEBUG
    package static let configuration = "debug"
    #else
    package static let configuration = "release"
    #endif

    /// `swift build --show-bin-path` for this configuration, run in the repository root.
    package static func binPath() throws -> URL {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "build", "--show-bin-path", "-c", configuration]
        process.currentDirectoryURL = repositoryRoot
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let path = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0, !path.isEmpty else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "swift build --show-bin-path"])
        }
        return URL(fileURLWithPath: path)
    }

    /// The executable product `name` in `bin`: a regular file that can be executed (a directory
    /// of that name, such as a clone of the repository, is not one).
    package static func product(named name: String, in bin: URL) -> URL? {
        let candidate = bin.appendingPathComponent(name)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue,
            FileManager.default.isExecutableFile(atPath: candidate.path)
        else { return nil }
        return candidate
    }

    package struct Result {
        package var status: Int32
        package var stdout: String
        package var stderr: String
    }

    /// Runs `winnow ARGS...` in `directory` and waits for it; `environment` adds to (or
    /// overrides) the test's own.
    @discardableResult
    package static func winnow(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:]) throws -> Result {
        try run(
            executable, arguments, in: directory,
            environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 })
    }

    /// Runs `program ARGS...` in `directory` (with `environment`, else this process's) and waits
    /// for it, its output collected.
    package static func run(
        _ program: URL, _ arguments: [String], in directory: URL? = nil, environment: [String: String]? = nil
    ) throws -> Result {
        let process = Process()
        process.executableURL = program
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        if let environment { process.environment = environment }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }
}

/// SplitMix64: the one seeded generator of the tests, so every failing case replays from its seed.
package struct SplitMix64: RandomNumberGenerator {
    package var state: UInt64

    package init(state: UInt64) { self.state = state }

    /// The tests' usual seeding: the first value already mixed.
    package init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A whole number in `0..<n` (0 when `n` is 0 or 1).
    package mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
    package mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    package mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
    /// A uniform number in `[0, 1)`.
    package mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    package mutating func uniform(_ low: Double, _ high: Double) -> Double { low + (max(high, low) - low) * unit() }
}

/// The name some suites use for ``SplitMix64``.
package typealias SeededGenerator = SplitMix64
