import Foundation
import XCTest

/// A scenario test that runs the built `winnow` executable in a scratch folder of its own:
/// the folder, files in it, the executable with its exit code checked, JSON lines.
open class CLITestCase: XCTestCase {
    package var dir: URL!

    /// The scratch folder's name prefix (the subclass's name by default).
    open var scratchName: String { String(describing: type(of: self)) }

    open override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory(scratchName)
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: TestSupport.executable.path), "build the winnow executable first")
    }

    open override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    package func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    @discardableResult
    package func write(_ name: String, _ text: String) throws -> String { try TestSupport.writeFile(text, to: path(name)) }

    /// Runs `winnow ARGS` in the scratch folder and checks its exit code.
    @discardableResult
    package func winnow(
        _ args: [String], expect: Int32, file: StaticString = #filePath, line: UInt = #line
    ) throws
        -> TestSupport.Result
    {
        let result = try TestSupport.winnow(args, in: dir)
        XCTAssertEqual(
            result.status, expect, "winnow \(args.joined(separator: " "))\nstdout: \(result.stdout)\nstderr: \(result.stderr)",
            file: file, line: line)
        return result
    }

    /// One JSON object from one line, or nil.
    package func json(_ line: Substring) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }
}
