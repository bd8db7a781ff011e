import Foundation
import XCTest

@testable import WinnowCore

/// Values and layout the renderers compute (not whole outputs: those are golden files).
final class RendererValueTests: XCTestCase {
    /// Plan samples carry key values as JSON values, not as SQL literals inside strings.
    func testSampleKeysBecomeJSONValues() throws {
        XCTAssertEqual(Renderer.jsonValue(sqlLiteral: "'it''s'") as? String, "it's")
        XCTAssertEqual(Renderer.jsonValue(sqlLiteral: "''") as? String, "")
        XCTAssertEqual(Renderer.jsonValue(sqlLiteral: "42") as? Int64, 42)
        XCTAssertEqual(Renderer.jsonValue(sqlLiteral: "-1.5") as? Double, -1.5)
        XCTAssertTrue(Renderer.jsonValue(sqlLiteral: "NULL") is NSNull)
        XCTAssertEqual(Renderer.jsonValue(sqlLiteral: "X'00FF'") as? [String: String], ["blob": "00ff"])
        // A text that looks like a number stays text: the quotes decide.
        XCTAssertEqual(Renderer.jsonValue(sqlLiteral: "'42'") as? String, "42")
    }

    /// Values as SQL spells them, as `show` lists the journal's rows.
    func testQuotedLiterals() {
        XCTAssertEqual(SQLValue.text("it's 'x'").quotedLiteral, "'it''s ''x'''")
        XCTAssertEqual(SQLValue.text("plain").quotedLiteral, "'plain'")
        XCTAssertEqual(SQLValue.text("").quotedLiteral, "''")
        XCTAssertEqual(SQLValue.blob([0x00, 0x0A, 0xAB, 0xFF]).quotedLiteral, "X'000AABFF'")
        XCTAssertEqual(SQLValue.blob([]).quotedLiteral, "X''")
        XCTAssertEqual(SQLValue.integer(-9).quotedLiteral, "-9")
        XCTAssertEqual(SQLValue.null.quotedLiteral, "NULL")
    }

    func testTableAlignsColumnsAndRightAlignsNumbers() {
        let lines = Renderer.table(["id", "name", "n"], [["1", "alpha", "10"], ["22", "b", "3"]], numeric: [0, 2])
        XCTAssertEqual(lines, ["id  name    n", " 1  alpha  10", "22  b       3"])
    }

    func testDurationsReadAsPeopleSayThem() {
        XCTAssertEqual(Renderer.duration(0.4213), "0.42 s")
        XCTAssertEqual(Renderer.duration(12.34), "12.3 s")
        XCTAssertEqual(Renderer.duration(245), "4 min 05 s")
        XCTAssertEqual(Renderer.duration(7380), "2 h 03 min")
    }

    /// GitHub workflow commands escape what would end a property or the message.
    func testGithubAnnotationsEscapeTheirFields() {
        let line = Renderer.workflowCommand(
            location: SourceLocation(file: "jobs/a,b.yaml", line: 7, column: 3), fallbackFile: "x", title: "t: x", "50% done\nnext")
        XCTAssertEqual(line, "::error file=jobs/a%2Cb.yaml,line=7,col=3,title=t%3A x::50%25 done%0Anext")
    }
}
