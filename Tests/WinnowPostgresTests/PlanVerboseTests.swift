import Foundation
import WinnowCore
import WinnowTestSupport
import XCTest

/// `plan --verbose` lists every group, on both engines, in text and JSON, where there are more
/// groups than a list holds in memory (``SampleList/heldInMemory``): those beyond it come back
/// from the temporary file, each once, in order.
final class PlanVerboseTests: XCTestCase {
    static let groups = 1_300

    func testEveryGroupIsListedBeyondTheGroupsHeldInMemoryOnBothEngines() throws {
        XCTAssertGreaterThan(Self.groups, SampleList.heldInMemory, "more groups than a list holds in memory")
        // 3,250 rows, keys scattered through the table: row i has key i % 1,300, so each key's
        // rows are 1,300 rows apart; the earliest row (lowest `created`, here its id) wins.
        let (url, dir, data) = try PostgresServer.engines(
            "people.sqlite",
            sql: """
                CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, created INTEGER NOT NULL);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3250)
                INSERT INTO people SELECT i, 'P' || (i % \(Self.groups)) || '@example.com', i FROM n;
                """)
        let job = try TestSupport.writeFile(
            """
            version: 1
            dedupe:
              - {entity: people, key: email, normalize: [lowercase], winner: [{created: asc}]}

            """,
            to: dir.appendingPathComponent("job.yaml").path)
        // Each group's winner and losers as the rows say: ids ≡ k (mod 1,300), the smallest kept.
        var expected: [Int: [Int]] = [:]
        for id in 1...3_250 { expected[id % Self.groups, default: []].append(id) }
        let groups = expected.values.map { $0.sorted() }.sorted { $0[0] < $1[0] }
        for engine in [data, url] {
            let json = try TestSupport.winnow(["plan", job, "--database", engine, "--format", "json", "--verbose"])
            XCTAssertEqual(json.status, 0, "\(engine): \(json.stderr)")
            let summary = json.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.first { $0["event"] as? String == "summary" }
            let rule = try XCTUnwrap((summary?["rules"] as? [[String: Any]])?.first, "\(engine): \(json.stdout.prefix(500))")
            let samples = try XCTUnwrap(rule["sample_groups"] as? [[String: Any]], engine)
            XCTAssertEqual(samples.count, Self.groups, "\(engine): every group once")
            let listed = samples.map { sample -> [Int] in
                let ids = [sample["winner"]] + ((sample["losers"] as? [Any]) ?? []).map { Optional($0) }
                return ids.compactMap { ($0 as? NSNumber)?.intValue }
            }.sorted { $0[0] < $1[0] }
            XCTAssertEqual(listed, groups, "\(engine): each group's winner and losers")
            XCTAssertEqual(Set(samples.compactMap { ($0["rows"] as? [Any])?.count }), [3, 2], "\(engine): each group's rows")

            let text = try TestSupport.winnow(["plan", job, "--database", engine, "--verbose"])
            XCTAssertEqual(text.status, 0, "\(engine): \(text.stderr)")
            let lines = text.stdout.split(separator: "\n").filter { $0.hasPrefix("  group ") }
            XCTAssertEqual(lines.count, Self.groups, "\(engine): every group in the text")
            XCTAssertEqual(Set(lines).count, Self.groups, "\(engine): each once")
            XCTAssertTrue(lines.contains("  group 'P1299@example.com': keep id 1299; delete id 2599"), "\(engine): \(lines.suffix(3))")
            XCTAssertFalse(text.stdout.contains("more groups"), engine)
            XCTAssertTrue(
                text.stdout.contains("planned: \(Self.groups) duplicate groups, 1950 rows to delete"), text.stdout.suffix(300).description)

            // Saved with every group, then applied: the file lists them all and still loads.
            let saved = dir.appendingPathComponent("every-group.plan").path
            let save = try TestSupport.winnow(["plan", job, "--database", engine, "--verbose", "--save", saved])
            XCTAssertEqual(save.status, 0, "\(engine): \(save.stderr)")
            let file = try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: saved))) as? [String: Any]
            let savedRules = (file?["plan"] as? [String: Any])?["rules"] as? [[String: Any]]
            XCTAssertEqual((savedRules?.first?["sample_groups"] as? [Any])?.count, Self.groups, "\(engine): every group saved")
            let run = try TestSupport.winnow(["run", job, "--database", engine, "--plan", saved, "--format", "json"])
            XCTAssertEqual(run.status, 0, "\(engine): \(run.stderr)")
            XCTAssertTrue(run.stdout.contains("\"deleted\":1950"), "\(engine): \(run.stdout.suffix(400))")
        }
    }
}
