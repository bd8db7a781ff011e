import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// The exact, self-delimiting tuple encoding behind journal images and key hashes: it must
/// restore values byte for byte, never let ("ab","c") equal ("a","bc"), and refuse damaged
/// input with an error instead of crashing.
final class ValueCodecTests: XCTestCase {

    // MARK: Helpers

    /// Same storage class and same bytes (a Double by its bit pattern, text by its UTF-8).
    static func identical(_ a: DatabaseValue, _ b: DatabaseValue) -> Bool {
        switch (a.storage, b.storage) {
        case (.null, .null): return true
        case let (.int64(x), .int64(y)): return x == y
        case let (.double(x), .double(y)): return x.bitPattern == y.bitPattern
        case let (.string(x), .string(y)): return Array(x.utf8) == Array(y.utf8)
        case let (.blob(x), .blob(y)): return x == y
        default: return false
        }
    }

    private func assertIdentical(
        _ actual: [DatabaseValue], _ expected: [DatabaseValue], _ message: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let same = actual.count == expected.count && zip(actual, expected).allSatisfy(Self.identical)
        XCTAssertTrue(same, "\(message) decoded \(actual), expected \(expected)", file: file, line: line)
    }

    private func randomString(_ rng: inout SplitMix64) -> String {
        let length = Int.random(in: 0...40, using: &rng)
        var scalars = String.UnicodeScalarView()
        for _ in 0..<length {
            let scalar: Unicode.Scalar
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: scalar = Unicode.Scalar(UInt8.random(in: 0...0x7F, using: &rng))  // ASCII incl. NUL
            case 1: scalar = Unicode.Scalar(UInt32.random(in: 0x80...0x7FF, using: &rng))!  // 2-byte UTF-8
            case 2: scalar = Unicode.Scalar(UInt32.random(in: 0x800...0xD7FF, using: &rng))!  // 3-byte UTF-8
            case 3: scalar = Unicode.Scalar(UInt32.random(in: 0x1F300...0x1FAFF, using: &rng))!  // emoji, 4-byte
            case 4: scalar = Unicode.Scalar(UInt32.random(in: 0x300...0x36F, using: &rng))!  // combining marks
            default: scalar = " "
            }
            scalars.append(scalar)
        }
        if Int.random(in: 0..<20, using: &rng) == 0 { return String(repeating: "x", count: Int.random(in: 128...400, using: &rng)) }
        return String(scalars)
    }

    private func randomValue(_ rng: inout SplitMix64) -> DatabaseValue {
        switch Int.random(in: 0..<5, using: &rng) {
        case 0:
            return .null
        case 1:
            let special: [Int64] = [0, 1, -1, .min, .max, 127, 128, -128, 255, 256]
            return Bool.random(using: &rng)
                ? special.randomElement(using: &rng)!.databaseValue
                : Int64(bitPattern: rng.next()).databaseValue
        case 2:
            let special: [Double] = [
                0, -0.0, 0.1, -1.5, .infinity, -.infinity, .leastNonzeroMagnitude,
                .greatestFiniteMagnitude, 1e-300,
            ]
            if Bool.random(using: &rng) { return special.randomElement(using: &rng)!.databaseValue }
            var d = Double(bitPattern: rng.next())
            while d.isNaN { d = Double(bitPattern: rng.next()) }  // SQLite stores no NaN
            return d.databaseValue
        case 3:
            return randomString(&rng).databaseValue
        default:
            let count = Bool.random(using: &rng) ? Int.random(in: 0...8, using: &rng) : Int.random(in: 0...300, using: &rng)
            return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }).databaseValue
        }
    }

    private func randomTuple(_ rng: inout SplitMix64) -> [DatabaseValue] {
        (0..<Int.random(in: 0...8, using: &rng)).map { _ in randomValue(&rng) }
    }

    // MARK: Format

    func testEncodingLayout() {
        // Tags per the format: NULL 0, INTEGER 1, REAL 2, TEXT 3, BLOB 4.
        XCTAssertEqual(ValueCodec.encode([.null]), [0])
        XCTAssertEqual(ValueCodec.encode([]), [])
        let integer = ValueCodec.encode([Int64(5).databaseValue])
        XCTAssertEqual(integer.count, 9)
        XCTAssertEqual(integer.first, 1)
        let real = ValueCodec.encode([Double(2.5).databaseValue])
        XCTAssertEqual(real.count, 9)
        XCTAssertEqual(real.first, 2)
        XCTAssertEqual(ValueCodec.encode(["ab".databaseValue]), [3, 2, 0x61, 0x62])
        XCTAssertEqual(ValueCodec.encode([Data().databaseValue]), [4, 0])
        XCTAssertEqual(ValueCodec.encode([Data([9]).databaseValue]), [4, 1, 9])
    }

    func testLongLengthsUseAMultiByteVarint() throws {
        let text = String(repeating: "é", count: 150)  // 300 UTF-8 bytes
        let bytes = ValueCodec.encode([text.databaseValue])
        XCTAssertEqual(bytes.count, 1 + 2 + 300)
        assertIdentical(try ValueCodec.decode(bytes), [text.databaseValue])
    }

    func testSeparatorSafety() {
        XCTAssertNotEqual(
            ValueCodec.encode(["ab".databaseValue, "c".databaseValue]),
            ValueCodec.encode(["a".databaseValue, "bc".databaseValue]))
        XCTAssertNotEqual(
            ValueCodec.encode(["".databaseValue, "x".databaseValue]),
            ValueCodec.encode(["x".databaseValue]))
        XCTAssertNotEqual(ValueCodec.encode([.null]), ValueCodec.encode(["".databaseValue]))
        XCTAssertNotEqual(ValueCodec.encode([1.databaseValue]), ValueCodec.encode(["1".databaseValue]))
        XCTAssertNotEqual(ValueCodec.encode([1.databaseValue]), ValueCodec.encode([Double(1.0).databaseValue]))
        XCTAssertNotEqual(ValueCodec.encode(["a".databaseValue]), ValueCodec.encode([Data([0x61]).databaseValue]))
    }

    // MARK: Round trips

    func testRoundTripOfEdgeValues() throws {
        let values: [DatabaseValue] = [
            .null, Int64.min.databaseValue, Int64.max.databaseValue, 0.databaseValue, (-1).databaseValue,
            (-0.0).databaseValue, Double(0.0).databaseValue, Double(0.1).databaseValue, Double.infinity.databaseValue,
            Double.leastNonzeroMagnitude.databaseValue, "".databaseValue, "a\u{0}b".databaseValue,
            "e\u{301}".databaseValue, "\u{E9}".databaseValue, "👩‍👩‍👧 family".databaseValue,
            Data().databaseValue, Data([0, 0, 0]).databaseValue, .null,
        ]
        let decoded = try ValueCodec.decode(ValueCodec.encode(values))
        assertIdentical(decoded, values)
        // Canonically equivalent text stays byte-distinct.
        guard case let .string(decomposed) = decoded[12].storage, case let .string(precomposed) = decoded[13].storage else {
            return XCTFail("\(decoded)")
        }
        XCTAssertEqual(decomposed.unicodeScalars.count, 2)
        XCTAssertEqual(precomposed.unicodeScalars.count, 1)
    }

    func testRandomTuplesRoundTrip() throws {
        for seed in UInt64(1)...UInt64(400) {
            var rng = SplitMix64(state: seed)
            let tuple = randomTuple(&rng)
            let bytes = ValueCodec.encode(tuple)
            assertIdentical(try ValueCodec.decode(bytes), tuple, "seed \(seed):")
        }
    }

    func testEncodingIsInjectiveOnRandomTuples() {
        // Different tuples never share an encoding (what makes the key hash separator-safe).
        var seen: [[UInt8]: [DatabaseValue]] = [:]
        for seed in UInt64(1000)...UInt64(1600) {
            var rng = SplitMix64(state: seed)
            let tuple = randomTuple(&rng)
            let bytes = ValueCodec.encode(tuple)
            if let other = seen[bytes] {
                let same = other.count == tuple.count && zip(other, tuple).allSatisfy(Self.identical)
                XCTAssertTrue(same, "seed \(seed): \(tuple) and \(other) encode alike")
            }
            seen[bytes] = tuple
        }
    }

    func testConcatenatedEncodingsDecodeToConcatenatedTuples() throws {
        for seed in UInt64(2000)...UInt64(2200) {
            var rng = SplitMix64(state: seed)
            let a = randomTuple(&rng)
            let b = randomTuple(&rng)
            assertIdentical(try ValueCodec.decode(ValueCodec.encode(a) + ValueCodec.encode(b)), a + b, "seed \(seed):")
        }
    }

    // MARK: Damaged input

    func testEveryTruncationEitherThrowsOrStopsAtAValueBoundary() throws {
        for seed in UInt64(3000)...UInt64(3150) {
            var rng = SplitMix64(state: seed)
            let tuple = randomTuple(&rng)
            let bytes = ValueCodec.encode(tuple)
            // Offsets where a whole number of values ends.
            var boundaries: [Int: Int] = [:]
            for k in 0...tuple.count { boundaries[ValueCodec.encode(Array(tuple[..<k])).count] = k }
            for cut in 0..<bytes.count {
                let prefix = Array(bytes[..<cut])
                if let k = boundaries[cut] {
                    assertIdentical(try ValueCodec.decode(prefix), Array(tuple[..<k]), "seed \(seed) cut \(cut):")
                } else {
                    XCTAssertThrowsError(try ValueCodec.decode(prefix), "seed \(seed): a cut at \(cut) inside a value must throw")
                }
            }
        }
    }

    func testUnknownTagThrows() {
        for tag: UInt8 in [5, 6, 0x7F, 0xFF] {
            XCTAssertThrowsError(try ValueCodec.decode([tag])) { error in
                XCTAssertTrue(error is WinnowError, "\(error)")
            }
            XCTAssertThrowsError(try ValueCodec.decode(ValueCodec.encode([1.databaseValue]) + [tag, 0]))
        }
    }

    func testTruncatedFixedWidthValuesThrow() {
        XCTAssertThrowsError(try ValueCodec.decode([1]))  // INTEGER without its 8 bytes
        XCTAssertThrowsError(try ValueCodec.decode([1, 0, 0, 0, 0, 0, 0, 0]))  // 7 of 8 bytes
        XCTAssertThrowsError(try ValueCodec.decode([2, 0, 0, 0]))  // REAL cut short
    }

    func testLengthLongerThanInputThrows() {
        XCTAssertThrowsError(try ValueCodec.decode([3, 5, 0x61, 0x62]))  // TEXT of 5 bytes, 2 present
        XCTAssertThrowsError(try ValueCodec.decode([4, 0x80]))  // varint continues past the end
        XCTAssertThrowsError(try ValueCodec.decode([4, 0xAC, 0x02] + [UInt8](repeating: 0, count: 299)))  // 300 wanted
    }

    func testOverlongVarintThrows() {
        // Eleven continuation bytes: more than 64 bits of length.
        XCTAssertThrowsError(try ValueCodec.decode([3] + [UInt8](repeating: 0x80, count: 11) + [0x01]))
    }

    func testHugeLengthThrowsInsteadOfOverflowing() throws {
        // Run in a child process: if decode traps, this one test fails instead of the whole run dying.
        try inChildProcess("testHugeLengthThrowsInsteadOfOverflowing") {
            // A length of 2^63 - 1 (eight 0xFF then 0x7F): larger than any input, and large enough
            // that "offset + length" overflows an Int.
            XCTAssertThrowsError(try ValueCodec.decode([3] + [UInt8](repeating: 0xFF, count: 8) + [0x7F, 0x61]))
            XCTAssertThrowsError(try ValueCodec.decode([4] + [UInt8](repeating: 0xFF, count: 8) + [0x7F]))
            // 2^64 - 1 does not fit an Int at all.
            XCTAssertThrowsError(try ValueCodec.decode([4] + [UInt8](repeating: 0xFF, count: 9) + [0x01]))
        }
    }

    // MARK: Crash isolation

    private static let childVariable = "WINNOW_VALUECODEC_CHILD_TEST"

    /// Runs `body` here when this process is the child started for `test`; otherwise starts a
    /// copy of the test executable that runs only `test`, and fails if it did not exit cleanly
    /// (a Swift trap ends it with a signal).
    private func inChildProcess(
        _ test: String, file: StaticString = #filePath, line: UInt = #line,
        _ body: () throws -> Void
    ) throws {
        if ProcessInfo.processInfo.environment[Self.childVariable] == test {
            return try body()
        }
        let process = Process()
        #if os(macOS)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/xcrun")
        process.arguments = ["xctest", "-XCTest", "WinnowSQLiteTests.ValueCodecTests/\(test)", Bundle(for: Self.self).bundlePath]
        #else
        process.executableURL = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0])
        process.arguments = ["WinnowSQLiteTests.ValueCodecTests/\(test)"]
        #endif
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childVariable] = test
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let lines = text.split(separator: "\n")
        let notable = lines.filter { $0.contains("runtime failure") || $0.contains("Fatal error") }
        let tail = (notable.isEmpty ? Array(lines.suffix(12)) : notable).joined(separator: "\n")
        XCTAssertEqual(
            process.terminationReason, .exit,
            "the child was killed by signal \(process.terminationStatus) (a trap, not a thrown error):\n\(tail)",
            file: file, line: line)
        XCTAssertEqual(process.terminationStatus, 0, "the child test failed:\n\(tail)", file: file, line: line)
    }

    func testRandomGarbageNeverCrashes() {
        var rng = SplitMix64(state: 42)
        for _ in 0..<2000 {
            let count = Int.random(in: 0...24, using: &rng)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Either outcome is fine; a trap is not. A successful decode must re-encode to the input.
            if let values = try? ValueCodec.decode(bytes) {
                let reencoded = ValueCodec.encode(values)
                if reencoded != bytes {
                    // Only invalid UTF-8 in TEXT may be replaced on decode; anything else must be exact.
                    let hasText = values.contains { if case .string = $0.storage { return true } else { return false } }
                    XCTAssertTrue(hasText, "\(bytes) decoded to \(values) but re-encodes to \(reencoded)")
                }
            }
        }
    }
}
