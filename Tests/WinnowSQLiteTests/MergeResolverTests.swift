import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite

/// Survivorship (docs/reference.md section 2, `merge:`): what a winner takes from its group. The values
/// passed are one column of every row of a group, winner first, then the losers in winner order.
final class MergeResolverTests: XCTestCase {

    private let null = DatabaseValue.null
    private func int(_ v: Int64) -> DatabaseValue { v.databaseValue }
    private func real(_ v: Double) -> DatabaseValue { v.databaseValue }
    private func text(_ v: String) -> DatabaseValue { v.databaseValue }
    private func blob(_ v: [UInt8]) -> DatabaseValue { Data(v).databaseValue }

    /// Same storage class and same bytes: an INTEGER 3 is not a REAL 3.0 here.
    private func assertIdentical(
        _ actual: DatabaseValue, _ expected: DatabaseValue, _ message: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let same: Bool
        switch (actual.storage, expected.storage) {
        case (.null, .null): same = true
        case let (.int64(x), .int64(y)): same = x == y
        case let (.double(x), .double(y)): same = x.bitPattern == y.bitPattern
        case let (.string(x), .string(y)): same = Array(x.utf8) == Array(y.utf8)
        case let (.blob(x), .blob(y)): same = x == y
        default: same = false
        }
        XCTAssertTrue(same, "\(message) got \(actual), expected \(expected)", file: file, line: line)
    }

    // MARK: fill_null

    func testFillNullKeepsANonNullWinner() {
        assertIdentical(MergeResolver.merge(.fillNull, [text("winner"), text("loser")]), text("winner"))
        assertIdentical(MergeResolver.merge(.fillNull, [text(""), text("loser")]), text(""), "the empty string is not NULL:")
        assertIdentical(MergeResolver.merge(.fillNull, [int(0), int(9)]), int(0), "zero is not NULL:")
    }

    func testFillNullTakesTheFirstNonNullLoserInWinnerOrder() {
        assertIdentical(
            MergeResolver.merge(.fillNull, [null, null, text("second loser"), text("third loser")]),
            text("second loser"))
        assertIdentical(MergeResolver.merge(.fillNull, [null, int(7), text("x")]), int(7))
    }

    func testFillNullOfAllNullsStaysNull() {
        assertIdentical(MergeResolver.merge(.fillNull, [null, null, null]), null)
        assertIdentical(MergeResolver.merge(.fillNull, [null]), null)
    }

    // MARK: sum

    func testSumOfIntegersIsAnInteger() {
        assertIdentical(MergeResolver.merge(.sum, [int(1), int(2), null, int(4)]), int(7))
        assertIdentical(MergeResolver.merge(.sum, [int(10), int(-3)]), int(7))
        assertIdentical(MergeResolver.merge(.sum, [null, int(5)]), int(5), "a NULL winner takes the sum:")
        assertIdentical(MergeResolver.merge(.sum, [int(3)]), int(3), "a group of one keeps its value:")
    }

    func testSumWithARealIsReal() {
        assertIdentical(MergeResolver.merge(.sum, [int(1), real(2.5)]), real(3.5))
        assertIdentical(MergeResolver.merge(.sum, [real(0.5), int(1), int(2)]), real(3.5))
    }

    func testSumOfAllNullsStaysNull() {
        assertIdentical(MergeResolver.merge(.sum, [null, null]), null)
    }

    // MARK: min / max

    func testMinAndMaxOfNumbers() {
        assertIdentical(MergeResolver.merge(.min, [int(3), int(1), int(2)]), int(1))
        assertIdentical(MergeResolver.merge(.max, [int(3), int(1), int(2)]), int(3))
        assertIdentical(MergeResolver.merge(.min, [int(2), real(1.5)]), real(1.5), "integers and reals compare numerically:")
        assertIdentical(MergeResolver.merge(.max, [int(2), real(1.5)]), int(2))
        assertIdentical(MergeResolver.merge(.min, [int(-5), int(10)]), int(-5))
    }

    func testMinAndMaxIgnoreNullLikeSQLiteAggregates() {
        // SQLite's min()/max() aggregates skip NULLs; a NULL winner is filled.
        assertIdentical(MergeResolver.merge(.min, [null, int(5), int(2)]), int(2))
        assertIdentical(MergeResolver.merge(.max, [int(5), null, int(2)]), int(5))
        assertIdentical(MergeResolver.merge(.min, [null, null]), null)
        assertIdentical(MergeResolver.merge(.max, [null, null]), null)
    }

    func testMinAndMaxAcrossStorageClasses() {
        // SQLite's order: NULL < numbers < text < blob.
        let mixed = [text("b"), int(10), blob([0x00]), real(-1.5)]
        assertIdentical(MergeResolver.merge(.min, mixed), real(-1.5))
        assertIdentical(MergeResolver.merge(.max, mixed), blob([0x00]))
        assertIdentical(MergeResolver.merge(.max, [int(1_000_000), text("0")]), text("0"), "any text is above any number:")
        assertIdentical(MergeResolver.merge(.min, [blob([]), text("zzz")]), text("zzz"), "any blob is above any text:")
    }

    func testMinAndMaxOfTextAreBinary() {
        // BINARY collation: 'B' (0x42) sorts before 'a' (0x61).
        assertIdentical(MergeResolver.merge(.min, [text("apple"), text("Banana")]), text("Banana"))
        assertIdentical(MergeResolver.merge(.max, [text("apple"), text("Banana")]), text("apple"))
        assertIdentical(MergeResolver.merge(.min, [text("ab"), text("a")]), text("a"), "a prefix sorts first:")
        assertIdentical(MergeResolver.merge(.max, [text("é"), text("z")]), text("é"), "UTF-8 bytes 0xC3 > 'z':")
    }

    // MARK: longest

    func testLongestPicksTheLongestText() {
        assertIdentical(MergeResolver.merge(.longest, [text("abc"), text("abcde"), text("xy")]), text("abcde"))
        assertIdentical(MergeResolver.merge(.longest, [null, text("a")]), text("a"))
        assertIdentical(MergeResolver.merge(.longest, [null, null]), null)
    }

    func testLongestTiesGoToTheEarlierRow() {
        assertIdentical(MergeResolver.merge(.longest, [text("abc"), text("xyz")]), text("abc"))
        assertIdentical(MergeResolver.merge(.longest, [text("ab"), text("abc"), text("xyz")]), text("abc"))
        assertIdentical(MergeResolver.merge(.longest, [null, text("first"), text("later")]), text("first"))
    }

    func testLongestCountsCharactersNotBytes() {
        // Three emoji are 12 UTF-8 bytes but 3 characters; "abcd" is 4 characters.
        assertIdentical(MergeResolver.merge(.longest, [text("😀😀😀"), text("abcd")]), text("abcd"))
        assertIdentical(MergeResolver.merge(.longest, [text("abcd"), text("ééééé")]), text("ééééé"))
    }

    // MARK: concat

    func testConcatJoinsDistinctNonEmptyValuesInWinnerOrder() {
        let values = [text("a"), text("b"), text("a"), null, text(""), text("c")]
        assertIdentical(MergeResolver.merge(.concat, values), text("a, b, c"))
        assertIdentical(MergeResolver.merge(.concat, [text("z"), text("a")]), text("z, a"), "winner order, not sorted:")
    }

    func testConcatWithANullWinner() {
        assertIdentical(MergeResolver.merge(.concat, [null, text("x"), text("y")]), text("x, y"))
        assertIdentical(MergeResolver.merge(.concat, [null, text("x")]), text("x"))
    }

    func testConcatOfOneDistinctValue() {
        assertIdentical(MergeResolver.merge(.concat, [text("a"), text("a"), null]), text("a"))
        assertIdentical(MergeResolver.merge(.concat, [text("a"), text("")]), text("a"))
    }

    func testConcatWithAnEmptyWinnerTakesTheLoserValue() {
        // The distinct non-empty values are just ["x"]: joined, that is "x".
        assertIdentical(MergeResolver.merge(.concat, [text(""), text("x")]), text("x"))
    }

    func testConcatOfAllNullsStaysNull() {
        assertIdentical(MergeResolver.merge(.concat, [null, null]), null)
    }

    // MARK: changes

    func testChangesListsOnlyColumnsThatDiffer() {
        let rows: [[DatabaseValue]] = [
            [null, int(1), text("a"), text("keep")],
            [text("p"), int(2), text("b"), text("other")],
            [text("q"), null, text("a"), null],
        ]
        let changes = MergeResolver.changes(strategies: [.fillNull, .sum, .concat, .fillNull], rows: rows)
        XCTAssertEqual(changes.map(\.index), [0, 1, 2])
        guard changes.count == 3 else { return }
        assertIdentical(changes[0].value, text("p"))
        assertIdentical(changes[1].value, int(3))
        assertIdentical(changes[2].value, text("a, b"))
    }

    func testNoChangesWhenTheWinnerAlreadyHoldsTheMergedValues() {
        let rows: [[DatabaseValue]] = [
            [text("p"), int(5), text("a"), int(9)],
            [null, null, text("a"), int(1)],
        ]
        XCTAssertTrue(MergeResolver.changes(strategies: [.fillNull, .sum, .concat, .max], rows: rows).isEmpty)
    }

    func testChangesOfAnEmptyGroup() {
        XCTAssertTrue(MergeResolver.changes(strategies: [.sum], rows: []).isEmpty)
    }

    func testChangesSeeATypeChangeAsAChange() {
        // 1 + 0.0 = 1.0: numerically equal to the winner's 1, but a REAL now, so it is written.
        let changes = MergeResolver.changes(strategies: [.sum], rows: [[int(1)], [real(0.0)]])
        XCTAssertEqual(changes.map(\.index), [0])
        if let first = changes.first { assertIdentical(first.value, real(1.0)) }
    }

    // MARK: SQLiteOrder

    func testCompareFollowsSQLiteOrderAcrossClasses() {
        // Strictly increasing in SQLite's order.
        let ordered: [DatabaseValue] = [
            null, real(-1e300), int(.min), int(-5), real(-0.5), int(0), int(2), real(2.5), int(3), real(.infinity),
            text(""), text("A"), text("B"), text("a"), text("ab"), text("é"),
            blob([]), blob([0x00]), blob([0x00, 0x00]), blob([0x01]), blob([0xFF]),
        ]
        for (i, a) in ordered.enumerated() {
            for (j, b) in ordered.enumerated() {
                let expected = i == j ? 0 : (i < j ? -1 : 1)
                XCTAssertEqual(SQLiteOrder.compare(a, b).signum(), expected, "compare(\(a), \(b))")
            }
        }
    }

    func testCompareIntegerAndRealNumerically() {
        XCTAssertEqual(SQLiteOrder.compare(int(1), real(1.0)), 0)
        XCTAssertEqual(SQLiteOrder.compare(real(1.0), int(1)), 0)
        XCTAssertEqual(SQLiteOrder.compare(real(-0.0), real(0.0)), 0)
        XCTAssertEqual(SQLiteOrder.compare(int(2), real(2.000001)).signum(), -1)
    }

    func testCompareLargeIntegerAndRealExactly() {
        // 2^53 + 1 is not representable as a Double; SQLite still compares it exactly:
        // SELECT 9007199254740993 > 9007199254740992.0 gives 1.
        XCTAssertEqual(SQLiteOrder.compare(int(9_007_199_254_740_993), real(9_007_199_254_740_992.0)).signum(), 1)
        XCTAssertEqual(SQLiteOrder.compare(real(9_007_199_254_740_992.0), int(9_007_199_254_740_993)).signum(), -1)
        XCTAssertEqual(SQLiteOrder.compare(int(.max), real(9_223_372_036_854_775_808.0)).signum(), -1)
    }

    func testCompareTextIsBinaryNotCanonical() {
        // Canonically equivalent but different bytes: not equal for SQLite's BINARY collation.
        XCTAssertNotEqual(SQLiteOrder.compare(text("e\u{301}"), text("\u{E9}")), 0)
        XCTAssertEqual(SQLiteOrder.compare(text("e\u{301}"), text("\u{E9}")).signum(), -1)  // 0x65 < 0xC3
    }

    func testCompareAgreesWithSQLite() throws {
        let values: [DatabaseValue] = [
            int(0), int(-1), int(1), int(.max), int(.min), int(9_007_199_254_740_993),
            real(0.5), real(-0.0), real(1.0), real(-1e18), real(9_007_199_254_740_992.0), real(9.3e18),
            text(""), text("0"), text("1"), text("a"), text("A"), text("ab"), text("é"), text("e\u{301}"),
            blob([]), blob([0]), blob([0x61]), blob([0x61, 0x62]),
        ]
        let db = try DatabaseQueue()
        try db.read { db in
            for a in values {
                for b in values {
                    // Bound parameters have no affinity: SQLite compares them by storage class and value.
                    let row = try Row.fetchOne(db, sql: "SELECT ?1 < ?2, ?1 = ?2", arguments: [a, b])!
                    let less: Bool = row[0]
                    let equal: Bool = row[1]
                    let sqlite = less ? -1 : (equal ? 0 : 1)
                    XCTAssertEqual(SQLiteOrder.compare(a, b).signum(), sqlite, "compare(\(a), \(b)) vs SQLite")
                }
            }
        }
    }

    func testIdentical() {
        XCTAssertTrue(SQLiteOrder.identical(null, null))
        XCTAssertTrue(SQLiteOrder.identical(int(3), int(3)))
        XCTAssertFalse(SQLiteOrder.identical(int(1), real(1.0)), "same number, different storage class")
        XCTAssertFalse(SQLiteOrder.identical(real(0.0), real(-0.0)), "different bit patterns")
        XCTAssertTrue(SQLiteOrder.identical(real(0.1), real(0.1)))
        XCTAssertFalse(SQLiteOrder.identical(text("1"), int(1)))
        XCTAssertFalse(SQLiteOrder.identical(text("e\u{301}"), text("\u{E9}")), "different bytes")
        XCTAssertFalse(SQLiteOrder.identical(text("a"), blob([0x61])))
        XCTAssertTrue(SQLiteOrder.identical(blob([]), blob([])))
        XCTAssertFalse(SQLiteOrder.identical(null, text("")))
    }
}
