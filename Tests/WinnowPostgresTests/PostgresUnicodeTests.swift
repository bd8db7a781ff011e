import XCTest

@testable import WinnowPostgres

/// The character tables of PostgreSQL's normalisers are read from planes 0 and 1 only: nothing
/// above them may be white space, a decimal digit or changed by lowercasing in the Swift
/// runtime's Unicode data (a newer Unicode version that adds one fails here, not in a survivor).
final class PostgresUnicodeTests: XCTestCase {
    func testNoScalarAboveTheReadPlanesMattersToANormaliser() {
        var found: [String] = []
        for value in (PostgresUnicode.lastScalar + 1)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let properties = scalar.properties
            if properties.isWhitespace || properties.numericType == .decimal || properties.changesWhenLowercased {
                found.append(String(format: "U+%04X", value))
            }
        }
        XCTAssertEqual(found, [], "scalars above U+\(String(format: "%04X", PostgresUnicode.lastScalar)) that a normaliser reads")
    }

    func testTheTablesHoldScalarsOfBothPlanes() {
        // Plane 1 holds cased letters (Deseret, Osage, Adlam) and digits (Osmanya, Adlam).
        XCTAssertTrue(PostgresUnicode.scalars.contains(Unicode.Scalar(0x10400)!))  // DESERET CAPITAL LONG I
        XCTAssertTrue(PostgresUnicode.lowercaseFrom.unicodeScalars.contains(Unicode.Scalar(0x10400)!))
        XCTAssertTrue(PostgresUnicode.lowercaseFrom.unicodeScalars.contains(Unicode.Scalar(0x1E900)!))  // ADLAM CAPITAL ALIF
        XCTAssertTrue(PostgresUnicode.digitClass.contains("\\U000104A0"))  // OSMANYA DIGIT ZERO starts a range
    }
}
