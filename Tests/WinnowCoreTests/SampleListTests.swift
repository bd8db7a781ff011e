import Foundation
import XCTest

@testable import WinnowCore

/// A rule's sample groups beyond ``SampleList/heldInMemory`` go to a temporary file and come
/// back in order, whole, through every way the list is read.
final class SampleListTests: XCTestCase {
    var savedLimit = SampleList.heldInMemory

    override func setUp() { savedLimit = SampleList.heldInMemory }
    override func tearDown() { SampleList.heldInMemory = savedLimit }

    static func key(_ id: Int) -> RowKey { RowKey(stored: "\(id)", parts: [RowKey.Part(column: "rowid", literal: "\(id)")]) }

    /// A sample with every kind of detail, so that a lossy round trip through the file shows.
    static func sample(_ n: Int) -> GroupSample {
        var sample = GroupSample(key: ["'k\(n)@example.com'", "NULL"], winner: key(n * 10), losers: [key(n * 10 + 1), key(n * 10 + 2)])
        sample.columns = ["email", "visits"]
        sample.rows = [
            .init(row: key(n * 10), values: ["'K\(n)@example.com'", "\(n)"]),
            .init(row: key(n * 10 + 1), values: ["'k\(n)@example.com\nline two'", "X'00ff'"]),
        ]
        sample.merged = [.init(column: "visits", before: "\(n)", after: "\(n * 3)", from: key(n * 10 + 1))]
        sample.children = [.init(reference: "orders.customer_id", loser: key(n * 10 + 1), rows: n % 4, mayCollide: n % 2 == 0)]
        sample.linkedBy = [.init(row: key(n * 10 + 2), key: "phone", to: key(n * 10))]
        return sample
    }

    static func samples(_ range: Range<Int>) -> [GroupSample] { range.map(sample) }

    /// Every field of each sample, as JSON (a `RowKey` equals another by its stored form alone,
    /// so `==` would not see its parts lost).
    static func fields(_ samples: some Sequence<GroupSample>) throws -> [String] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try samples.map { String(decoding: try encoder.encode($0), as: UTF8.self) }
    }

    func testASmallListIsHeldInMemoryAndReadInOrder() throws {
        var list = SampleList()
        try list.append(contentsOf: Self.samples(0..<5))
        try list.append(contentsOf: Self.samples(5..<7))
        XCTAssertEqual(list.count, 7)
        XCTAssertEqual(Array(list), Self.samples(0..<7))
        XCTAssertEqual(list.first, Self.sample(0))
        XCTAssertNil(list.readFailure)
    }

    func testSamplesBeyondTheLimitComeBackFromTheFileWhole() throws {
        SampleList.heldInMemory = 3
        var list = SampleList()
        for start in stride(from: 0, to: 2_500, by: 250) { try list.append(contentsOf: Self.samples(start..<start + 250)) }
        XCTAssertEqual(list.count, 2_500)
        XCTAssertEqual(
            try Self.fields(list), try Self.fields(Self.samples(0..<2_500)),
            "every sample, in order, with its rows, merges, children and links")
        XCTAssertEqual(Array(list), Self.samples(0..<2_500), "read twice")
        XCTAssertEqual(list, SampleList(Self.samples(0..<2_500)), "equal to the same samples held in memory")
        XCTAssertNotEqual(list, SampleList(Self.samples(0..<2_499) + [Self.sample(7)]))
    }

    func testAnEmptyListAndAListOfOnlyFileSamples() throws {
        SampleList.heldInMemory = 0
        var list = SampleList()
        XCTAssertTrue(list.isEmpty)
        XCTAssertNil(list.first)
        try list.append(contentsOf: [GroupSample]())
        XCTAssertTrue(list.isEmpty)
        try list.append(contentsOf: Self.samples(0..<3))
        XCTAssertEqual(list.first, Self.sample(0))
        XCTAssertEqual(Array(list), Self.samples(0..<3))
    }

    /// Two copies of one list appended to each write their own samples, not each other's.
    func testCopiesAppendedToStayApart() throws {
        SampleList.heldInMemory = 2
        var base = SampleList()
        try base.append(contentsOf: Self.samples(0..<6))
        var left = base
        var right = base
        try left.append(contentsOf: Self.samples(100..<103))
        try right.append(contentsOf: Self.samples(200..<201))
        try left.append(contentsOf: Self.samples(103..<104))
        XCTAssertEqual(Array(base), Self.samples(0..<6))
        XCTAssertEqual(Array(left), Self.samples(0..<6) + Self.samples(100..<104))
        XCTAssertEqual(Array(right), Self.samples(0..<6) + Self.samples(200..<201))
    }

    func testMapKeepsOrderAcrossMemoryAndFile() throws {
        SampleList.heldInMemory = 4
        var list = SampleList()
        try list.append(contentsOf: Self.samples(0..<2_100))
        let mapped = try list.map { sample in
            var changed = sample
            changed.key = ["mapped"] + sample.key
            return changed
        }
        XCTAssertEqual(mapped.count, 2_100)
        XCTAssertEqual(Array(mapped).map(\.key), Self.samples(0..<2_100).map { ["mapped"] + $0.key })
        XCTAssertEqual(Array(list), Self.samples(0..<2_100), "the source is unchanged")
    }

    func testSequentialAccessReadsInOrderAndStartsAgainWhenAskedBack() throws {
        SampleList.heldInMemory = 2
        var list = SampleList()
        try list.append(contentsOf: Self.samples(0..<10))
        let sample = list.sequentialAccess()
        XCTAssertEqual((0..<10).map { sample($0) }, Self.samples(0..<10))
        XCTAssertNil(sample(10))
        XCTAssertEqual(sample(3), Self.sample(3), "back to an earlier index")
        XCTAssertEqual(sample(7), Self.sample(7), "forward past several")
    }

    /// A record gives back the sample it was made of, and no prefix of it nor the record with
    /// a byte more reads as a sample.
    func testARecordReadsBackWholeAndATruncatedOneDoesNot() throws {
        for sample in Self.samples(0..<4) + [GroupSample(key: [], winner: Self.key(1), losers: [])] {
            var data: [UInt8] = []
            sample.appendRecord(to: &data)
            let read = try XCTUnwrap(data.withUnsafeBytes { GroupSample.record($0) })
            XCTAssertEqual(try Self.fields([read]), try Self.fields([sample]))
            for cut in 0..<data.count {
                XCTAssertNil(data.prefix(cut).withUnsafeBytes { GroupSample.record($0) }, "\(cut) of \(data.count) bytes")
            }
            XCTAssertNil((data + [0]).withUnsafeBytes { GroupSample.record($0) })
        }
    }

    /// A file that cannot be created is an I/O error (exit 74), not a crash or a silent cut.
    func testAFileThatCannotBeCreatedIsAnIOError() throws {
        SampleList.heldInMemory = 1
        let saved = ProcessInfo.processInfo.environment["TMPDIR"]
        setenv("TMPDIR", "/nonexistent-winnow-directory", 1)
        defer { if let saved { setenv("TMPDIR", saved, 1) } else { unsetenv("TMPDIR") } }
        var list = SampleList()
        XCTAssertThrowsError(try list.append(contentsOf: Self.samples(0..<3))) { error in
            guard case WinnowError.io(let message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("/nonexistent-winnow-directory"), message)
            XCTAssertEqual((error as? WinnowError)?.exitCode, 74)
        }
    }

    /// The text and JSON summaries read a list from the file as they read one in memory.
    func testRenderersListTheSameWhetherHeldOrInAFile() throws {
        var plan = RendererGoldenTests.plan
        plan.rules[0].samples = SampleList(Self.samples(0..<40))
        plan.rules[0].counts.groups = 40
        let text = Renderer.text(plan, includeTimes: false)
        let json = Renderer.json(plan, includeTimes: false)
        SampleList.heldInMemory = 5
        var spilled = SampleList()
        try spilled.append(contentsOf: Self.samples(0..<40))
        plan.rules[0].samples = spilled
        XCTAssertEqual(Renderer.text(plan, includeTimes: false), text)
        var streamed = ""
        Renderer.json(plan, includeTimes: false) { streamed += $0 }
        XCTAssertEqual(streamed, json)
        XCTAssertEqual(text.components(separatedBy: "  group ").count - 1, 40)
    }
}
