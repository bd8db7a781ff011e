import Foundation
import XCTest

@testable import WinnowCore

/// The key hash's encoding, byte by byte as docs/reference.md and ``KeyHash`` state it, and the
/// properties a key needs: no two tuples share an encoding, whole reals group with integers.
final class KeyHashTests: XCTestCase {
    private func encoded(_ values: [SQLValue]) -> [UInt8] {
        var bytes: [UInt8] = []
        for value in values { KeyHash.append(value, to: &bytes) }
        return bytes
    }

    func testEachValueIsATagAndItsBytes() {
        XCTAssertEqual(encoded([.null]), [0])
        XCTAssertEqual(encoded([.integer(1)]), [1, 1, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(encoded([.integer(-2)]), [1, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        XCTAssertEqual(encoded([.real(2.5)]), [2] + withUnsafeBytes(of: (2.5).bitPattern.littleEndian, Array.init))
        XCTAssertEqual(encoded([.text("é")]), [3, 2, 0xC3, 0xA9])
        XCTAssertEqual(encoded([.blob([0, 255])]), [4, 2, 0, 255])
        XCTAssertEqual(encoded([.text(String(repeating: "x", count: 300))]).prefix(3), [3, 0xAC, 0x02], "varint: 7 bits a byte, low first")
    }

    func testWholeRealsAreIntegersAndOthersAreNot() {
        XCTAssertEqual(encoded([.real(1.0)]), encoded([.integer(1)]))
        XCTAssertEqual(encoded([.real(-0.0)]), encoded([.integer(0)]))
        XCTAssertNotEqual(encoded([.real(1.5)]), encoded([.integer(1)]))
        XCTAssertNotEqual(encoded([.real(9.3e18)]), encoded([.integer(Int64.max)]), "out of range stays a real")
        XCTAssertEqual(encoded([.real(9.3e18)]).first, KeyHash.Tag.real.rawValue)
    }

    func testTuplesNeverShareADigest() {
        let tuples: [[SQLValue]] = [
            [.text("ab"), .text("c")], [.text("a"), .text("bc")], [.text("abc")], [.text("1")], [.integer(1)], [.blob(Array("1".utf8))],
            [.null, .text("a")], [.text("a"), .null], [.text("")], [.blob([])], [],
        ]
        let digests = tuples.map { KeyHash.digest($0, nullsEqual: true) }
        XCTAssertEqual(Set(digests.compactMap { $0 }).count, tuples.count)
        XCTAssertEqual(digests.last, KeyHash.hex([]))
        XCTAssertEqual(KeyHash.hex([]), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "SHA-256 of nothing")
    }

    func testANullKeyHasNoDigestUnlessNullsAreEqual() {
        XCTAssertNil(KeyHash.digest([.text("a"), .null], nullsEqual: false))
        XCTAssertNotNil(KeyHash.digest([.text("a"), .null], nullsEqual: true))
    }
}
