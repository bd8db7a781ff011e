import Foundation
import XCTest
import WinnowTestSupport

/// The helpers the scenario tests stand on: a wrong executable would fail dozens of them with
/// an unrelated message.
final class TestSupportTests: XCTestCase {
    /// A clone named `winnow` (a directory) on the way up from the build folder must never be
    /// taken for the executable.
    func testADirectoryNamedWinnowIsNotTheExecutable() throws {
        let scratch = try TestSupport.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let clone = scratch.appendingPathComponent("winnow")
        try FileManager.default.createDirectory(at: clone.appendingPathComponent(".build/debug"), withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: clone.path), "a directory passes isExecutableFile")
        XCTAssertNil(TestSupport.product(named: "winnow", in: scratch))

        let binary = clone.appendingPathComponent(".build/debug/winnow")
        try Data("#!/bin/sh\n".utf8).write(to: binary)
        XCTAssertNil(TestSupport.product(named: "winnow", in: binary.deletingLastPathComponent()), "not executable")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: binary.path)
        XCTAssertEqual(TestSupport.product(named: "winnow", in: binary.deletingLastPathComponent())?.path, binary.path)
    }

    /// The executable the tests run is the built product: a regular file in the bin folder
    /// `swift build --show-bin-path` names, that answers `--help`.
    func testTheExecutableIsTheBuiltProduct() throws {
        let executable = TestSupport.executable
        var isDirectory: ObjCBool = false
        XCTAssertTrue(
            FileManager.default.fileExists(atPath: executable.path, isDirectory: &isDirectory),
            "build the winnow executable first (swift build --build-tests)")
        XCTAssertFalse(isDirectory.boolValue, executable.path)
        if ProcessInfo.processInfo.environment["WINNOW_EXECUTABLE"] == nil {
            XCTAssertEqual(
                executable.deletingLastPathComponent().resolvingSymlinksInPath().path,
                try TestSupport.binPath().resolvingSymlinksInPath().path)
        }
        let result = try TestSupport.winnow(["--help"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("USAGE"), result.stdout)
    }
}
