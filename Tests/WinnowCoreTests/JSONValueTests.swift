import Foundation
import XCTest

@testable import WinnowCore

/// JSON lines as `JSONValue` writes them, and `show --format json` written in pieces.
final class JSONValueTests: XCTestCase {
    /// The line without its `"time"` member (the only part that changes between runs).
    static func unstamped(_ line: String) -> String {
        line.replacingOccurrences(of: #","time":"[^"]*""#, with: "", options: .regularExpression)
    }

    func testShowJSONInPiecesJoinsToTheWholeLine() throws {
        var report = RendererGoldenTests.report
        var quiet = RunReport.Rule(index: 1, table: "tags", key: "name", counts: RendererGoldenTests.sampleCounts(groups: 0, deleted: 0))
        quiet.keyColumns = ["name"]
        report.rules.append(quiet)
        var pieces: [String] = []
        Renderer.json(report) { pieces.append($0) }
        // Two groups, two re-pointed rows and one child row of the first rule, each its own piece.
        XCTAssertGreaterThanOrEqual(pieces.count, 5 + 6)
        let line = pieces.joined()
        XCTAssertEqual(Self.unstamped(line), Self.unstamped(Renderer.json(report)))
        XCTAssertFalse(line.contains("winnow-list"), line)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let rules = try XCTUnwrap(object["rules"] as? [[String: Any]])
        XCTAssertEqual(rules.count, 2)
        XCTAssertEqual((rules[0]["groups"] as? [Any])?.count, 2)
        XCTAssertEqual((rules[1]["groups"] as? [Any])?.count, 0)
        XCTAssertEqual((rules[1]["children_deleted"] as? [Any])?.count, 0)
        // The exact text: members in key order, lists where the markers were.
        let url = RendererGoldenTests.goldenDirectory.appendingPathComponent("show-line.json")
        if ProcessInfo.processInfo.environment["WINNOW_UPDATE_GOLDEN"] == "1" {
            try (Self.unstamped(line) + "\n").write(to: url, atomically: true, encoding: .utf8)
        }
        XCTAssertEqual(Self.unstamped(line) + "\n", try String(contentsOf: url, encoding: .utf8))
    }

    /// `plan --format json` (the summary) in pieces: each sample group its own piece, joined to
    /// the golden line of the whole summary; a rule without samples has no list.
    func testSummaryJSONInPiecesJoinsToTheGoldenLine() throws {
        var plan = RendererGoldenTests.plan
        var pieces: [String] = []
        Renderer.json(plan, includeTimes: false) { pieces.append($0) }
        XCTAssertEqual(pieces.count, 1 + 2 + 2, "the text up to the list, each group, the closing bracket, the rest")
        let url = RendererGoldenTests.goldenDirectory.appendingPathComponent("plan.json")
        XCTAssertEqual(pieces.joined() + "\n", try String(contentsOf: url, encoding: .utf8))
        XCTAssertEqual(pieces.joined(), Renderer.json(plan, includeTimes: false))
        plan.rules[0].samples = []
        pieces = []
        Renderer.json(plan, includeTimes: false) { pieces.append($0) }
        XCTAssertEqual(pieces, [Renderer.json(plan, includeTimes: false)])
        XCTAssertFalse(pieces[0].contains("sample_groups"), pieces[0])
    }

    func testShowJSONOfAReportThatSpellsAMarker() throws {
        // A key spelling the marker of the re-pointed rows (written before them: keys sorted),
        // and a table spelling the groups' marker with its key.
        var report = RendererGoldenTests.report
        report.rules[0].key = "\u{1}winnow-list-1"
        report.rules[0].table = #""groups":"\u0001winnow-list-0""#
        let line = Renderer.json(report)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let rule = try XCTUnwrap((object["rules"] as? [[String: Any]])?.first)
        XCTAssertEqual(rule["key"] as? String, "\u{1}winnow-list-1")
        XCTAssertEqual(rule["table"] as? String, #""groups":"\u0001winnow-list-0""#)
        XCTAssertEqual((rule["groups"] as? [Any])?.count, 2)
        XCTAssertEqual((rule["repointed"] as? [Any])?.count, 2)
    }

    func testKeysAreSortedByCodePointWhateverTheLocale() throws {
        var report = RendererGoldenTests.report
        let columns = ["v9", "é", "a", "v10", "B", "_x"]
        report.rules[0].groups[0].deleted[0].values = columns.map { RunReport.Value(column: $0, literal: "1") }
        let line = Renderer.json(report)
        // A locale's collation would put a before B and v9 before v10.
        XCTAssertTrue(line.contains(#""values":{"B":1,"_x":1,"a":1,"v10":1,"v9":1,"é":1}"#), line)
        // Every JSON line, not only show's.
        let object = Dictionary(uniqueKeysWithValues: columns.map { ($0, 1) })
        XCTAssertEqual(Renderer.jsonLine(object, stamped: false), #"{"B":1,"_x":1,"a":1,"v10":1,"v9":1,"é":1}"#)
    }

    func testNumbersFoundationParsedKeepTheirKind() throws {
        let parsed = try JSONSerialization.jsonObject(with: Data("[true, 1, 0, 1.5, false, 9223372036854775807, null]".utf8))
        XCTAssertEqual(
            JSONValue(parsed),
            .array([.bool(true), .integer(1), .integer(0), .real(1.5), .bool(false), .integer(Int64.max), .null]))
        XCTAssertEqual(JSONValue(parsed)?.line(), "[true,1,0,1.5,false,9223372036854775807,null]")
    }

    func testSwiftValuesAndOptionals() {
        let none: Int? = nil
        let some: Int? = 3
        let object: [String: Any] = ["a": [1, "x", NSNull(), true, 2.5] as [Any], "none": none as Any, "some": some as Any]
        XCTAssertEqual(JSONValue(object)?.line(), #"{"a":[1,"x",null,true,2.5],"none":null,"some":3}"#)
        XCTAssertNil(JSONValue(Date()), "a value JSON has no form for")
        XCTAssertEqual(Renderer.jsonLine(["when": Date()], stamped: false), "{}")
        XCTAssertEqual(Renderer.jsonLine(["x": Double.infinity], stamped: false), "{}")
    }

    func testSQLLiterals() {
        XCTAssertEqual(JSONValue(sqlLiteral: "'it''s'"), .string("it's"))
        XCTAssertEqual(JSONValue(sqlLiteral: "'a/b'").line(), #""a/b""#)
        XCTAssertEqual(JSONValue(sqlLiteral: "-7"), .integer(-7))
        XCTAssertEqual(JSONValue(sqlLiteral: "1e-300"), .real(1e-300))
        XCTAssertEqual(JSONValue(sqlLiteral: "X'0A'"), .object(["blob": .string("0a")]))
        // Too large for a double: its text, not a line JSON cannot write.
        XCTAssertEqual(JSONValue(sqlLiteral: "9e999"), .string("9e999"))
    }
}
