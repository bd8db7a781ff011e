import Foundation
import XCTest

@testable import WinnowCore

/// `plan --save` writes the summary a group at a time, and `run --plan` reads the file only as
/// far as its fingerprints.
final class SavedPlanTests: XCTestCase {
    var savedLimit = SampleList.heldInMemory
    override func setUp() { savedLimit = SampleList.heldInMemory }
    override func tearDown() { SampleList.heldInMemory = savedLimit }

    static let prints = SavedPlan.Fingerprints(job: "j1", targetSchema: "none", liveSchema: "l2", duplicates: "d3")

    func path(_ name: String) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("winnow-savedplan-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir.appendingPathComponent(name).path
    }

    /// The file as it was written whole: the one-line summary parsed and pretty-printed with
    /// the plan's fields by `JSONSerialization`.
    static func wholeFile(_ plan: SavedPlan, _ summary: RunSummary) throws -> String {
        let parsed = try JSONSerialization.jsonObject(with: Data(Renderer.json(summary, includeTimes: false).utf8))
        let object: [String: Any] = [
            "format": SavedPlan.format, "format_version": SavedPlan.formatVersion, "job": plan.job, "database": plan.database,
            "created_at": plan.createdAt,
            "fingerprints": [
                "job": plan.fingerprints.job, "target_schema": plan.fingerprints.targetSchema,
                "live_schema": plan.fingerprints.liveSchema, "duplicates": plan.fingerprints.duplicates,
            ],
            "plan": parsed,
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// Written a group at a time, the file is the same, byte for byte, as written whole; with
    /// the groups in memory or in a file; with a job path that holds quotes, braces and `"plan"`.
    func testTheStreamedFileIsTheWholeOneAndLoadsItsFingerprints() throws {
        SampleList.heldInMemory = 3
        var samples = SampleList()
        try samples.append(contentsOf: SampleListTests.samples(0..<25))
        for list in [SampleList(SampleListTests.samples(0..<25)), samples, SampleList()] {
            var summary = RendererGoldenTests.plan
            summary.rules[0].samples = list
            summary.rules.append(summary.rules[0])
            summary.rules[1].samples = []
            let plan = SavedPlan(
                job: "jobs/{\"plan\": [x]}\\.yaml", database: "db.sqlite", createdAt: "2026-12-06T00:00:00.000Z", fingerprints: Self.prints)
            let file = try path("p.plan")
            try plan.write(to: file, plan: summary)
            XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), try Self.wholeFile(plan, summary), "\(list.count) groups")
            XCTAssertEqual(try SavedPlan.load(path: file), plan)
            XCTAssertEqual(
                try FileManager.default.contentsOfDirectory(atPath: URL(fileURLWithPath: file).deletingLastPathComponent().path),
                ["p.plan"], "no temporary file left")
        }
    }

    /// `run --plan` reads the members but `plan`, wherever it is; a file cut anywhere, or not
    /// a plan, is refused as before.
    func testLoadReadsTheFieldsAroundThePlan() throws {
        let plan = SavedPlan(job: "job.yaml", database: "db", createdAt: "t", fingerprints: Self.prints)
        let file = try path("p.plan")
        try plan.write(to: file, plan: RendererGoldenTests.plan)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        XCTAssertEqual(try SavedPlan.load(path: file), plan)
        let planAt = try XCTUnwrap(text.range(of: "\"plan\" : {"))
        let fields =
            #""format" : "winnow-plan", "format_version" : 1, "job" : "a,b:\"plan\"", "fingerprints" : {"job" : "j1", "target_schema" : "none", "live_schema" : "l2", "duplicates" : "d3"}"#
        let value = #"[1, {"x" : "}\"],", "plan" : 2}]"#
        let split = try XCTUnwrap(fields.range(of: ", \"job\""))
        let head = String(fields[..<split.lowerBound]), tail = String(fields[split.lowerBound...])
        let variants: [String] = [
            "{\"plan\" : \(value), \(fields)}", "{\(fields)}", "{\(fields), \"plan\" : \(value)}",
            "{\(head), \"plan\" : \(value)\(tail)}", "{\(head),\"plan\":\(value)\(tail)}\n",
        ]
        for variant in variants {
            try variant.write(toFile: file, atomically: true, encoding: .utf8)
            XCTAssertEqual(try SavedPlan.load(path: file).fingerprints, Self.prints, variant)
            XCTAssertEqual(try SavedPlan.load(path: file).job, "a,b:\"plan\"", variant)
        }
        // Cut inside the plan, inside the fingerprints, or not JSON at all: refused (exit 65).
        let liveAt = try XCTUnwrap(text.range(of: "\"live_schema\""))
        let damaged = [String(text[..<planAt.upperBound]) + "\u{0}damaged", String(text.dropLast(3)), String(text[..<liveAt.lowerBound])]
        // Cut inside the fingerprints, or not JSON at all: refused (exit 65).
        for bad in damaged + ["not json", ""] {
            try bad.write(toFile: file, atomically: true, encoding: .utf8)
            XCTAssertThrowsError(try SavedPlan.load(path: file), String(bad.suffix(80))) {
                XCTAssertEqual(($0 as? WinnowError)?.exitCode, 65)
            }
        }
        XCTAssertThrowsError(try SavedPlan.load(path: file + ".missing")) { XCTAssertEqual(($0 as? WinnowError)?.exitCode, 66) }
    }

    /// A plan that cannot be put in place (here the path is a folder that holds a file): an
    /// I/O error (exit 74), no temporary file left, what was there untouched.
    func testAPlanThatCannotBePutInPlaceIsAnIOError() throws {
        let file = try path("p.plan")
        try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: true)
        try "kept".write(toFile: file + "/inside", atomically: true, encoding: .utf8)
        let plan = SavedPlan(job: "job.yaml", database: "db", createdAt: "t", fingerprints: Self.prints)
        XCTAssertThrowsError(try plan.write(to: file, plan: RendererGoldenTests.plan)) {
            XCTAssertEqual(($0 as? WinnowError)?.exitCode, 74)
            XCTAssertTrue("\($0)".contains("cannot write the plan"), "\($0)")
        }
        XCTAssertEqual(try String(contentsOfFile: file + "/inside", encoding: .utf8), "kept")
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: URL(fileURLWithPath: file).deletingLastPathComponent().path),
            ["p.plan"], "no temporary file left")
    }

    static let jobText = "version: 1\ndatabase: people.sqlite\ndedupe:\n  - entity: people\n    key: email\n    winner:\n      - id: asc\n"

    /// A job's fingerprint is the SHA-256 of the bytes it was loaded from (`sha256sum` of the
    /// same text), whether read from a file or given as text; the file is not read again, and
    /// loading the edited file gives another.
    func testAJobIsFingerprintedByTheBytesItWasLoadedFrom() throws {
        let file = try path("job.yaml")
        try Self.jobText.write(toFile: file, atomically: true, encoding: .utf8)
        let loaded = try JobLoader.load(path: file)
        XCTAssertEqual(loaded.digest, "6500bede4ef3289421062e862d9762e5171fa6cf3d2a139d5b0ba9f5e195d4be")
        XCTAssertEqual(try JobLoader.decode(yaml: Self.jobText).digest, loaded.digest)
        try (Self.jobText + "# reviewed\n").write(toFile: file, atomically: true, encoding: .utf8)
        let edited = try JobLoader.load(path: file)
        XCTAssertNotEqual(edited.digest, loaded.digest)
        XCTAssertEqual(edited.dedupe.map(\.entity.value), loaded.dedupe.map(\.entity.value), "the same job, other bytes")
    }
}
