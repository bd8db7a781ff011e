import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// The key normalisers of docs/reference.md section 2 (`trim`, `lowercase` (Unicode-aware),
/// `collapse_whitespace`, `nfkc`, `digits_only`), as Swift functions and as the SQL functions
/// registered on every connection, plus the separator-safe `winnow_hash` and `winnow_pack`.
final class NormalizeTests: XCTestCase {

    /// Swift's `==` on strings is canonical equivalence ("e\u{301}" == "é"); normalisers must be
    /// compared on their exact scalars.
    private func assertScalars(_ actual: String, _ expected: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(
            actual.unicodeScalars.map(\.value), expected.unicodeScalars.map(\.value),
            "'\(actual)' is not exactly '\(expected)'", file: file, line: line)
    }

    /// Every normaliser's SQL function is NULL exactly when its argument is NULL (a value that
    /// normalises to nothing is '' , never NULL): rules test the raw key columns for NULL.
    func testNormalisersMapNullToNullAndValuesToValues() throws {
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            try SQLFunctions.register(on: db)
            for normalizer in Normalizer.allCases {
                let function = SQLFunctions.name(of: normalizer)
                XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT \(function)(NULL) IS NULL"), 1, function)
                for value in ["''", "'   '", "'abc'", "'\u{3000}'", "x'00ff'", "0", "1.5", "-7"] {
                    XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT \(function)(\(value)) IS NOT NULL"), 1, "\(function)(\(value))")
                }
            }
        }
    }

    // MARK: trim

    func testTrimRemovesUnicodeWhitespaceAtBothEnds() {
        assertScalars(Normalize.trim("\t\n\u{00A0} Émile \u{00A0}\r\n"), "Émile")
        assertScalars(Normalize.trim("\u{3000}ideographic\u{2003}"), "ideographic")
    }

    func testTrimKeepsInnerWhitespace() {
        assertScalars(Normalize.trim("  Ada \t Lovelace  "), "Ada \t Lovelace")
    }

    func testTrimOfOnlyWhitespaceIsEmpty() {
        assertScalars(Normalize.trim(" \t\n\u{00A0}"), "")
        assertScalars(Normalize.trim(""), "")
    }

    func testTrimLeavesCleanTextAlone() {
        assertScalars(Normalize.trim("a"), "a")
        assertScalars(Normalize.trim("e\u{301}"), "e\u{301}")  // does not normalise as a side effect
    }

    // MARK: lowercase

    func testLowercaseIsUnicodeAware() {
        assertScalars(Normalize.lowercase("ÉMILE"), "émile")
        assertScalars(Normalize.lowercase("ΣΟΦΙΑ"), "σοφια")
        assertScalars(Normalize.lowercase("ДМИТРИЙ"), "дмитрий")
        assertScalars(Normalize.lowercase("Ÿ"), "ÿ")
    }

    /// Every normaliser maps ASCII text to ASCII text: PostgreSQL's chains test once, on the
    /// stored value, whether the lowercase and NFKC fast paths apply (`PostgresDialect`).
    func testEveryNormalizerKeepsASCIITextASCII() {
        var rng = SplitMix64(seed: 20_261_123)
        var samples = [
            "", " ", "\t a \r\n", "ABC xyz", "  Mixed  CASE\u{7F}  ", String((0..<128).map { Character(Unicode.Scalar(UInt8($0))) }),
        ]
        for _ in 0..<500 {
            samples.append(String((0..<rng.below(40)).map { _ in Character(Unicode.Scalar(UInt8(rng.below(128)))) }))
        }
        for normalizer in Normalizer.allCases {
            for sample in samples {
                let out = Normalize.function(for: normalizer)(sample)
                XCTAssertTrue(
                    out.unicodeScalars.allSatisfy(\.isASCII), "\(normalizer) of \(sample.debugDescription) is \(out.debugDescription)")
            }
            // Chains too, in every order of two.
            for other in Normalizer.allCases {
                for sample in samples.prefix(50) {
                    let out = Normalize.apply([normalizer, other], to: sample)
                    XCTAssertTrue(out.unicodeScalars.allSatisfy(\.isASCII), "\(normalizer), \(other) of \(sample.debugDescription)")
                }
            }
        }
    }

    func testLowercaseASCIIFastPath() {
        assertScalars(Normalize.lowercase("Hello World 123"), "hello world 123")
        // The letters next to A-Z in ASCII ('@' 0x40 and '[' 0x5B, '`' 0x60) are not letters.
        assertScalars(Normalize.lowercase("@AZ[`az{"), "@az[`az{")
        assertScalars(Normalize.lowercase("already lower"), "already lower")
        assertScalars(Normalize.lowercase(""), "")
    }

    func testLowercaseMixedASCIIAndNonASCII() {
        // The first non-ASCII byte comes after ASCII capitals: both must be lowered.
        assertScalars(Normalize.lowercase("ANNE-ÉLISE"), "anne-élise")
    }

    // MARK: collapse_whitespace

    func testCollapseWhitespaceMakesOneSpaceOfEveryRun() {
        assertScalars(Normalize.collapseWhitespace("a \t\n b\u{00A0}\u{00A0}c"), "a b c")
        assertScalars(Normalize.collapseWhitespace("New\u{2003}\u{2003}York"), "New York")
    }

    func testCollapseWhitespaceDoesNotTrim() {
        assertScalars(Normalize.collapseWhitespace("\t\t a  "), " a ")
        assertScalars(Normalize.collapseWhitespace("nospace"), "nospace")
    }

    // MARK: nfkc

    func testNFKC() {
        assertScalars(Normalize.nfkc("ﬁle"), "file")
        assertScalars(Normalize.nfkc("ＡＢＣ１"), "ABC1")
        assertScalars(Normalize.nfkc("e\u{301}"), "\u{E9}")  // composes
        assertScalars(Normalize.nfkc("x²"), "x2")
    }

    func testNFKCDoesNotChangeCase() {
        assertScalars(Normalize.nfkc("ÉMILE"), "ÉMILE")
    }

    // MARK: digits_only

    func testDigitsOnly() {
        assertScalars(Normalize.digitsOnly("+1 (555) 010-9999"), "15550109999")
        assertScalars(Normalize.digitsOnly("no digits here"), "")
        assertScalars(Normalize.digitsOnly("007"), "007")  // leading zeros are part of the key
    }

    // MARK: chains

    func testApplyRunsInTheOrderWritten() {
        // U+210C BLACK-LETTER CAPITAL H has no lowercase mapping, but NFKC turns it into "H".
        assertScalars(Normalize.apply([.nfkc, .lowercase], to: "ℌello"), "hello")
        assertScalars(Normalize.apply([.lowercase, .nfkc], to: "ℌello"), "Hello")
        // Circled digits are not decimal digits until NFKC makes them so.
        assertScalars(Normalize.apply([.nfkc, .digitsOnly], to: "①②③"), "123")
        assertScalars(Normalize.apply([.digitsOnly, .nfkc], to: "①②③"), "")
    }

    func testApplyTypicalEmailChain() {
        assertScalars(Normalize.apply([.trim, .lowercase], to: " \u{00A0}Émile@Example.COM\n"), "émile@example.com")
        assertScalars(Normalize.apply([.collapseWhitespace, .trim], to: "  Jean \t Pierre  "), "Jean Pierre")
    }

    func testApplyWithNoNormalisersIsIdentity() {
        assertScalars(Normalize.apply([], to: "  As Is\t"), "  As Is\t")
    }

    func testFunctionForEachNormaliser() {
        let input = " Ｔel: +1 ① "
        XCTAssertEqual(Normalize.function(for: .trim)(input), Normalize.trim(input))
        XCTAssertEqual(Normalize.function(for: .lowercase)(input), Normalize.lowercase(input))
        XCTAssertEqual(Normalize.function(for: .collapseWhitespace)(input), Normalize.collapseWhitespace(input))
        XCTAssertEqual(Normalize.function(for: .nfkc)(input), Normalize.nfkc(input))
        XCTAssertEqual(Normalize.function(for: .digitsOnly)(input), Normalize.digitsOnly(input))
    }

    // MARK: SQL functions on a real connection

    private var folder: URL!
    private var queue: DatabaseQueue!

    override func setUpWithError() throws {
        folder = try TestSupport.scratchDirectory()
        queue = try DatabaseOpener.open(
            path: folder.appendingPathComponent("functions.sqlite").path,
            mode: .readWrite(create: true))
    }

    override func tearDownWithError() throws {
        try queue?.close()
        if let folder { try? FileManager.default.removeItem(at: folder) }
    }

    private func value(_ sql: String, _ arguments: StatementArguments = []) throws -> DatabaseValue {
        try queue.read { db in try DatabaseValue.fetchOne(db, sql: sql, arguments: arguments) ?? .null }
    }

    private func flag(_ sql: String, file: StaticString = #filePath, line: UInt = #line) throws -> Bool {
        let result = try value(sql)
        guard case let .int64(v) = result.storage else {
            XCTFail("\(sql) gave \(result), not 0 or 1", file: file, line: line)
            return false
        }
        return v != 0
    }

    func testSQLNormalisersTransformText() throws {
        XCTAssertEqual(try value("SELECT winnow_lower('ÉMILE')"), "émile".databaseValue)
        XCTAssertEqual(try value("SELECT winnow_trim(char(9, 160, 32) || 'x' || char(10, 160))"), "x".databaseValue)
        XCTAssertEqual(try value("SELECT winnow_collapse_ws('a' || char(9, 9) || 'b   c')"), "a b c".databaseValue)
        XCTAssertEqual(try value("SELECT winnow_nfkc(?)", ["ＡＢＣ１"]), "ABC1".databaseValue)
        XCTAssertEqual(try value("SELECT winnow_digits('+1 (555) 010-9999')"), "15550109999".databaseValue)
        XCTAssertEqual(try value("SELECT winnow_lower(winnow_trim('  ΣΟΦΙΑ '))"), "σοφια".databaseValue)
    }

    func testSQLNormalisersPassNonTextThrough() throws {
        XCTAssertEqual(try value("SELECT typeof(winnow_lower(42)) || ':' || winnow_lower(42)"), "integer:42".databaseValue)
        XCTAssertEqual(try value("SELECT winnow_lower(42)"), 42.databaseValue)
        XCTAssertEqual(try value("SELECT typeof(winnow_digits(1.5))"), "real".databaseValue)
        XCTAssertEqual(
            try value("SELECT winnow_trim(x'20410A')"), Data([0x20, 0x41, 0x0A]).databaseValue,
            "a blob is not text: left alone")
        for function in ["winnow_trim", "winnow_lower", "winnow_collapse_ws", "winnow_nfkc", "winnow_digits"] {
            XCTAssertTrue(try flag("SELECT \(function)(NULL) IS NULL"), "\(function)(NULL) must stay NULL")
        }
    }

    func testSQLNormalisersKeepEmbeddedNUL() throws {
        // Text is counted by bytes, not up to the first NUL.
        XCTAssertEqual(try value("SELECT length(CAST(winnow_lower('A' || char(0) || 'B') AS BLOB))"), 3.databaseValue)
        XCTAssertEqual(try value("SELECT hex(winnow_lower('A' || char(0) || 'B'))"), "610062".databaseValue)
    }

    func testHashIsSeparatorSafe() throws {
        XCTAssertTrue(try flag("SELECT winnow_hash(0, 'ab', 'c') <> winnow_hash(0, 'a', 'bc')"))
        XCTAssertTrue(try flag("SELECT winnow_hash(0, 'a,b', 'c') <> winnow_hash(0, 'a', 'b,c')"))
        XCTAssertTrue(try flag("SELECT winnow_hash(0, 'abc') <> winnow_hash(0, 'ab', 'c')"))
        XCTAssertTrue(try flag("SELECT winnow_hash(1, NULL, 'x') <> winnow_hash(1, '', 'x')"), "NULL is not the empty string")
    }

    func testHashIsDeterministicOverTheNormalisedTuple() throws {
        XCTAssertTrue(try flag("SELECT winnow_hash(0, 'a', 2) = winnow_hash(0, 'a', 2)"))
        XCTAssertTrue(try flag("SELECT winnow_hash(0, winnow_lower('ÉMILE')) = winnow_hash(0, 'émile')"))
        XCTAssertTrue(try flag("SELECT winnow_hash(0, 'a', 'b') <> winnow_hash(0, 'b', 'a')"), "order of key columns matters")
    }

    func testHashNullPolicy() throws {
        XCTAssertTrue(try flag("SELECT winnow_hash(0, NULL, 'x') IS NULL"), "nulls: distinct: a NULL key part is never a duplicate")
        XCTAssertTrue(try flag("SELECT winnow_hash(0, 'x', NULL) IS NULL"))
        XCTAssertTrue(try flag("SELECT winnow_hash(1, NULL, 'x') IS NOT NULL"), "nulls: equal: NULL is a value")
        XCTAssertTrue(try flag("SELECT winnow_hash(1, NULL, 'x') = winnow_hash(1, NULL, 'x')"), "NULL matches NULL")
    }

    func testHashIsSixtyFourLowercaseHexCharacters() throws {
        for sql in ["SELECT winnow_hash(0, 'x')", "SELECT winnow_hash(1, NULL)", "SELECT winnow_hash(0, 1, 2.5, x'00')"] {
            let result = try value(sql)
            guard case let .string(hex) = result.storage else {
                XCTFail("\(sql) gave \(result)")
                continue
            }
            XCTAssertEqual(hex.utf8.count, 64, sql)
            XCTAssertTrue(hex.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }, "\(sql): \(hex)")
        }
    }

    func testHashDistinguishesStorageClasses() throws {
        XCTAssertTrue(try flag("SELECT winnow_hash(0, 1) <> winnow_hash(0, '1')"))
        XCTAssertTrue(try flag("SELECT winnow_hash(0, 'a') <> winnow_hash(0, x'61')"))
    }

    // MARK: winnow_pack

    /// Same storage class and same bytes (Double compared by bit pattern).
    private func assertIdentical(
        _ actual: [DatabaseValue], _ expected: [DatabaseValue],
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(actual.count, expected.count, "\(actual) vs \(expected)", file: file, line: line)
        for (a, e) in zip(actual, expected) {
            switch (a.storage, e.storage) {
            case (.null, .null): break
            case let (.int64(x), .int64(y)): XCTAssertEqual(x, y, file: file, line: line)
            case let (.double(x), .double(y)): XCTAssertEqual(x.bitPattern, y.bitPattern, "\(x) vs \(y)", file: file, line: line)
            case let (.string(x), .string(y)): XCTAssertEqual(Array(x.utf8), Array(y.utf8), file: file, line: line)
            case let (.blob(x), .blob(y)): XCTAssertEqual(x, y, file: file, line: line)
            default: XCTFail("\(a) is not the same storage class as \(e)", file: file, line: line)
            }
        }
    }

    func testPackRoundTripsThroughValueCodec() throws {
        // Text with an embedded NUL and the empty blob are built in SQL (a bound Swift string
        // stops at NUL, a bound empty Data is NULL).
        let sql = "SELECT winnow_pack(NULL, ?, ?, 0, ?, ?, ?, ?, 'a' || char(0) || 'b', x'00FF10', x'')"
        let emoji = "héllo 👋🏽 世界"
        let arguments: StatementArguments = [Int64.min, Int64.max, -0.0, 0.1, 1e308, emoji]
        let packed = try value(sql, arguments)
        guard case let .blob(data) = packed.storage else { return XCTFail("winnow_pack gave \(packed), not a blob") }
        let expected: [DatabaseValue] = [
            .null, Int64.min.databaseValue, Int64.max.databaseValue, 0.databaseValue,
            (-0.0).databaseValue, Double(0.1).databaseValue, Double(1e308).databaseValue, emoji.databaseValue,
            "a\u{0}b".databaseValue, Data([0x00, 0xFF, 0x10]).databaseValue, Data().databaseValue,
        ]
        assertIdentical(try ValueCodec.decode(Array(data)), expected)
        // The SQL encoder and the Swift encoder write the same bytes.
        XCTAssertEqual(Array(data), ValueCodec.encode(expected))
    }

    func testPackKeepsNegativeZeroDistinct() throws {
        let packed = try value("SELECT winnow_pack(?)", [-0.0])
        guard case let .blob(data) = packed.storage else { return XCTFail("\(packed)") }
        let decoded = try ValueCodec.decode(Array(data))
        guard case let .double(d)? = decoded.first?.storage else { return XCTFail("\(decoded)") }
        XCTAssertEqual(d.sign, .minus, "-0.0 must come back as -0.0, not 0.0")
    }

    func testPackIsSeparatorSafe() throws {
        XCTAssertTrue(try flag("SELECT winnow_pack('ab', 'c') <> winnow_pack('a', 'bc')"))
        XCTAssertTrue(try flag("SELECT winnow_pack(1) <> winnow_pack('1')"))
    }

    func testPackOfTableRowsRoundTrips() throws {
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t(a, b, c)")
            try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?)", arguments: [3, "x y", 2.5])
            try db.execute(sql: "INSERT INTO t VALUES (NULL, x'', -7)")
        }
        let rows = try queue.read { db in try Data.fetchAll(db, sql: "SELECT winnow_pack(a, b, c) FROM t ORDER BY rowid") }
        assertIdentical(try ValueCodec.decode(Array(rows[0])), [3.databaseValue, "x y".databaseValue, Double(2.5).databaseValue])
        assertIdentical(try ValueCodec.decode(Array(rows[1])), [.null, Data().databaseValue, (-7).databaseValue])
    }
}
