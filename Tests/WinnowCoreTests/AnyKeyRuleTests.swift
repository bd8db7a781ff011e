import Foundation
import XCTest
@testable import WinnowCore
import WinnowTestFiles

/// `key: {any: [...]}` as a job file states it, the similarity measures it links by, and the
/// union-find that turns links into groups.
final class AnyKeyRuleTests: XCTestCase {
    func rule(_ key: String, _ extra: String = "") throws -> DedupeRule {
        let yaml = "version: 1\ndedupe:\n  - entity: people\n    key:\n\(key)\n\(extra)"
        let job = try JobLoader.decode(yaml: yaml, file: "job.yaml")
        return try XCTUnwrap(job.dedupe.first)
    }

    func refusal(_ key: String, _ extra: String = "") -> String {
        do {
            _ = try rule(key, extra)
            return "decoded"
        } catch let error as WinnowError {
            XCTAssertEqual(error.exitCode, 65, error.description)
            return error.description
        } catch {
            return "\(error)"
        }
    }

    func testAlternativesDecodeWithTheirOwnOrTheRulesNormalisers() throws {
        let decoded = try rule(
            """
                  any:
                    - soc_sec_id
                    - [given_name, surname, date_of_birth]
                    - {columns: [email], normalize: [trim, lowercase]}
                    - columns: date_of_birth
                      similar: {columns: [given_name, surname], jaro_winkler: 0.9}
            """, "    normalize: [trim]\n    max_group_size: 7\n")
        XCTAssertEqual(decoded.anyOf.count, 4)
        XCTAssertEqual(
            decoded.anyOf.map(\.label),
            [
                "soc_sec_id", "given_name + surname + date_of_birth", "email", "date_of_birth ~ given_name surname (jaro_winkler >= 0.9)",
            ])
        // Every column once, in order of first use.
        XCTAssertEqual(decoded.key.map(\.value), ["soc_sec_id", "given_name", "surname", "date_of_birth", "email"])
        XCTAssertEqual(decoded.anyOf[0].normalize["soc_sec_id"], [.trim])
        XCTAssertEqual(decoded.anyOf[2].normalize["email"], [.trim, .lowercase])
        XCTAssertEqual(decoded.anyOf[3].similar?.measure, .jaroWinkler(0.9))
        XCTAssertEqual(decoded.anyOf[3].normalize["surname"], [.trim])
        XCTAssertEqual(decoded.effectiveMaxGroupSize, 7)
        XCTAssertEqual(try rule("      any: [a, b]").effectiveMaxGroupSize, 50)
        XCTAssertNil(try rule("      a").effectiveMaxGroupSize)
    }

    func testMistakesAreRefusedWithTheirPlace() {
        XCTAssertTrue(refusal("      any: [a]").contains("two or more alternatives"))
        XCTAssertTrue(refusal("      any: [a, b, a]").contains("this alternative repeats"))
        XCTAssertTrue(refusal("      anyof: [a, b]").contains("anyof"))
        XCTAssertTrue(refusal("      any: [a, b]", "    hash: true\n").contains("hash and hash_column are for a rule with one key"))
        XCTAssertTrue(refusal("      any: [a, b]", "    incremental: true\n").contains("incremental is for a rule with one key"))
        XCTAssertTrue(
            refusal("      any: [a, {columns: [b], similar: {columns: c}}]").contains("exactly one of jaro_winkler"))
        XCTAssertTrue(
            refusal("      any: [a, {columns: [b], similar: {columns: c, jaro_winkler: 1.5}}]").contains("jaro_winkler"))
        XCTAssertTrue(refusal("      any: [a, b]", "    max_group_size: 1\n").contains("max_group_size"))
        XCTAssertTrue(refusal("      a", "    max_group_size: 5\n").contains("a rule with one key forms no chains"))
        XCTAssertTrue(refusal("      any: [a, b]", "    merge: {b: fill_null}\n").contains("a key column cannot be merged"))
    }

    func scalars(_ text: String) -> [Unicode.Scalar] { Array(text.unicodeScalars) }

    /// Textbook values (Winkler 1990; the usual worked examples).
    func testJaroWinklerMatchesTheTextbookValues() {
        let cases: [(String, String, Double)] = [
            ("martha", "marhta", 0.9611), ("dwayne", "duane", 0.84), ("dixon", "dicksonx", 0.8133),
            ("jones", "johnson", 0.8323), ("abc", "abc", 1), ("abc", "xyz", 0), ("", "", 1), ("a", "", 0),
        ]
        for (a, b, expected) in cases {
            XCTAssertEqual(SimilarityMeasure.jaroWinkler(scalars(a), scalars(b)), expected, accuracy: 0.0001, "\(a) / \(b)")
            XCTAssertEqual(
                SimilarityMeasure.jaroWinkler(scalars(a), scalars(b)), SimilarityMeasure.jaroWinkler(scalars(b), scalars(a)),
                accuracy: 1e-12, "symmetric: \(a) / \(b)")
        }
        // Scalars, not bytes: one accented letter is one scalar.
        XCTAssertTrue(SimilarityMeasure.jaroWinkler(0.9).matches(scalars("zoë smith"), scalars("zoe smith")))
    }

    func testLevenshteinCountsSingleScalarEdits() {
        let cases: [(String, String, Int)] = [
            ("kitten", "sitting", 3), ("flaw", "lawn", 2), ("", "abc", 3), ("abc", "abc", 0), ("zoë", "zoe", 1), ("ab", "ba", 2),
        ]
        for (a, b, expected) in cases {
            XCTAssertEqual(SimilarityMeasure.levenshtein(scalars(a), scalars(b), limit: 10), expected, "\(a) / \(b)")
            // Past the limit it says only "more".
            if expected > 0 {
                XCTAssertEqual(SimilarityMeasure.levenshtein(scalars(a), scalars(b), limit: expected - 1), expected, "\(a) / \(b)")
            }
        }
        XCTAssertTrue(SimilarityMeasure.levenshtein(2).matches(scalars("flaw"), scalars("lawn")))
        XCTAssertFalse(SimilarityMeasure.levenshtein(1).matches(scalars("flaw"), scalars("lawn")))
    }

    /// Property: whatever order the links arrive in, every row ends under the smallest row of
    /// its component, and the components are those of the links.
    func testUnionFindGroupsDoNotDependOnTheOrderOfLinks() {
        var random = SplitMix64(seed: 42)
        for _ in 0..<50 {
            let count = 2 + Int(random.next() % 60)
            var links: [(Int32, Int32)] = []
            for _ in 0..<Int(random.next() % 80) {
                let a = Int32(1 + random.next() % UInt64(count))
                let b = Int32(1 + random.next() % UInt64(count))
                links.append((a, b))
            }
            func roots(_ order: [(Int32, Int32)]) -> [Int32] {
                var sets = UnionFind(count: count)
                for (a, b) in order { sets.union(a, b) }
                return (1...count).map { sets.root(Int32($0)) }
            }
            let expected = roots(links)
            var reordered: [(Int32, Int32)] = []
            for (a, b) in links.shuffled(using: &random) { reordered.append(random.next() % 2 == 0 ? (a, b) : (b, a)) }
            XCTAssertEqual(roots(reordered), expected)
            // A reference closure: each row's smallest reachable row.
            var reach = (0...count).map { Set([Int32($0)]) }
            var changed = true
            while changed {
                changed = false
                for (a, b) in links where reach[Int(a)] != reach[Int(b)] {
                    let joined = reach[Int(a)].union(reach[Int(b)])
                    for member in joined { reach[Int(member)] = joined }
                    changed = true
                }
            }
            let closure: [Int32] = (1...count).map { reach[$0].min() ?? 0 }
            XCTAssertEqual(expected, closure)
        }
    }
}

/// The survivorship strategies that pick a value by rank or by count: `latest`, `prefer`,
/// `most_frequent`. Values are one column of a group, winner first, then the losers in winner
/// order.
final class SurvivorshipPickTests: XCTestCase {
    let values: [SQLValue] = [.text("w"), .null, .text("b"), .text("c"), .text("b")]

    func testLatestTakesTheRowWithTheGreatestColumnSkippingNulls() {
        // Row 1 has the greatest date but no value; row 3's date is NULL; row 2 wins over row 4
        // (the same date) by the winner order.
        let by: [SQLValue] = [.text("2024-01-01"), .text("2026-01-01"), .text("2025-06-01"), .null, .text("2025-06-01")]
        XCTAssertEqual(MergeResolver.merge(.latest, values, by: by), .text("b"))
        // Numbers compare as numbers (SQLite's order), not as text.
        XCTAssertEqual(MergeResolver.merge(.latest, [.text("a"), .text("b")], by: [.integer(9), .integer(10)]), .text("b"))
        // No candidate: the winner keeps its value.
        XCTAssertEqual(MergeResolver.merge(.latest, [.text("w"), .text("x")], by: [.null, .null]), .text("w"))
        XCTAssertEqual(MergeResolver.merge(.latest, [.null, .null], by: [.integer(1), .integer(2)]), .null)
    }

    func testPreferTakesTheFirstSourceInTheListThenTheWinnerOrder() {
        let by: [SQLValue] = [.text("import"), .text("crm"), .text("web"), .text("crm"), .null]
        // crm first: row 1 has no value, so row 3.
        XCTAssertEqual(MergeResolver.merge(.prefer, values, by: by, order: ["crm", "web", "import"]), .text("c"))
        // A source not in the list ranks last, by the winner order.
        XCTAssertEqual(
            MergeResolver.merge(.prefer, [.text("w"), .text("x")], by: [.text("other"), .text("web")], order: ["web"]), .text("x"))
        XCTAssertEqual(
            MergeResolver.merge(.prefer, [.text("w"), .text("x")], by: [.text("other"), .text("else")], order: ["web"]), .text("w"))
        // Numbers are compared as the text they are written as in the job.
        XCTAssertEqual(
            MergeResolver.merge(.prefer, [.text("w"), .text("x")], by: [.integer(2), .integer(1)], order: ["1", "2"]), .text("x"))
    }

    func testMostFrequentCountsIdenticalValuesAndBreaksTiesByWinnerOrder() {
        XCTAssertEqual(MergeResolver.merge(.mostFrequent, values), .text("b"))
        // A tie: the value met first in winner order.
        XCTAssertEqual(MergeResolver.merge(.mostFrequent, [.text("x"), .text("y"), .text("y"), .text("x")]), .text("x"))
        // An INTEGER 1 is not a REAL 1.0, nor the text '1'.
        XCTAssertEqual(MergeResolver.merge(.mostFrequent, [.integer(1), .real(1), .text("1"), .real(1)]), .real(1))
        XCTAssertEqual(MergeResolver.merge(.mostFrequent, [.null, .null, .integer(3)]), .integer(3))
    }

    func testRankedChangesReadEachRowsRankingColumnsAfterItsValues() {
        // Two merge columns: phone by latest updated, city most_frequent; rows hold
        // phone, city, updated, NULL.
        let flat: [SQLValue] = [
            .text("111"), .text("Oslo"), .integer(1), .null,
            .null, .text("Rome"), .integer(9), .null,
            .text("222"), .text("Rome"), .integer(5), .null,
        ]
        let changes = MergeResolver.changes(strategies: [.latest, .mostFrequent], orders: [[], []], flat: flat, ranked: true)
        XCTAssertEqual(changes.map(\.index), [0, 1])
        XCTAssertEqual(changes.map(\.value), [.text("222"), .text("Rome")])
    }

    func testMergeStrategiesWithAColumnDecode() throws {
        let yaml = """
            version: 1
            dedupe:
              - entity: c
                key: email
                merge:
                  phone: {latest: updated_at}
                  city: {prefer: {column: source, order: [crm, web, 3]}}
                  tier: most_frequent
            """
        let merges = try XCTUnwrap(JobLoader.decode(yaml: yaml).dedupe.first?.merge)
        XCTAssertEqual(merges.map(\.strategy), [.latest, .prefer, .mostFrequent])
        XCTAssertEqual(merges.map { $0.by?.value }, ["updated_at", "source", nil])
        XCTAssertEqual(merges[1].order, ["crm", "web", "3"])
        for (strategy, message) in [
            ("latest", "latest needs the column"), ("prefer", "prefer needs a column and an order"),
            ("{latest: a, prefer: {column: b, order: [x]}}", "write one of"), ("{prefer: {column: b}}", "order"),
            ("{prefer: {column: b, order: [x, x]}}", "listed twice"),
        ] {
            XCTAssertThrowsError(
                try JobLoader.decode(yaml: "version: 1\ndedupe:\n  - entity: c\n    key: email\n    merge:\n      phone: \(strategy)\n")
            ) { error in
                XCTAssertTrue("\(error)".contains(message), "\(strategy): \(error)")
            }
        }
    }
}
