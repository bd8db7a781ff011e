import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// The SQL normaliser functions take a byte-level path for pure-ASCII text. Property: on any
/// ASCII input it gives exactly what the Unicode implementation gives.
final class NormalizeFastPathTests: XCTestCase {
    var queue: DatabaseQueue!

    override func setUpWithError() throws {
        var config = Configuration()
        config.prepareDatabase { db in try SQLFunctions.register(on: db) }
        queue = try DatabaseQueue(configuration: config)
    }

    func sqlNormalize(_ normalizer: Normalizer, _ text: String) throws -> String? {
        try queue.read { db in try String.fetchOne(db, sql: "SELECT \(SQLFunctions.name(of: normalizer))(?)", arguments: [text]) }
    }

    func testEveryASCIIByteAloneAndInContext() throws {
        for normalizer in Normalizer.allCases {
            for byte in UInt8(1)...UInt8(127) {
                let c = String(UnicodeScalar(byte))
                for text in [c, "a\(c)b", "\(c)\(c)x\(c)", " \(c) "] {
                    XCTAssertEqual(
                        try sqlNormalize(normalizer, text), Normalize.apply([normalizer], to: text),
                        "\(normalizer.rawValue) of \(Array(text.utf8))")
                }
            }
        }
    }

    func testRandomASCIIStringsAgree() throws {
        var generator = SplitMix64(state: 0x5EED)
        let alphabet: [UInt8] = Array(1...127)
        for _ in 0..<2000 {
            let length = Int(generator.next() % 12)
            let text = String(decoding: (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }, as: UTF8.self)
            for normalizer in Normalizer.allCases {
                XCTAssertEqual(
                    try sqlNormalize(normalizer, text), Normalize.apply([normalizer], to: text),
                    "\(normalizer.rawValue) of \(Array(text.utf8))")
            }
        }
    }

    func testUnchangedTextKeepsItsValue() throws {
        let row = try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT winnow_lower('abc'), typeof(winnow_trim('x')), winnow_digits('123')")
        }
        XCTAssertEqual(row?[0] as String?, "abc")
        XCTAssertEqual(row?[1] as String?, "text")
        XCTAssertEqual(row?[2] as String?, "123")
    }

}
