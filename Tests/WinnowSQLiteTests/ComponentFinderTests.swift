import Foundation
import GRDB
import XCTest
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// The groups of an `any:` rule as ``ComponentFinder`` writes them: the same whether its
/// scratch tables are read in one page or in many (a block of similar rows spanning pages), and
/// a row changed since is in no group.
final class ComponentFinderTests: XCTestCase {
    override func tearDown() {
        ComponentFinder.pageRows = 50_000
        super.tearDown()
    }

    /// `rows` people whose e-mails, phones and (inside one birth year) names link them.
    func database(rows: Int) throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        var random = SplitMix64(seed: 7)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, phone TEXT, name TEXT, born INTEGER)")
            for id in 1...rows {
                let email: String? = random.next() % 3 == 0 ? nil : "e\(random.next() % UInt64(rows * 2))"
                let phone: String? = random.next() % 2 == 0 ? nil : "p\(random.next() % UInt64(rows * 2))"
                let name = ["anna", "anne", "hanna", "bob", "rob", "robert"][Int(random.next() % 6)]
                try db.execute(
                    sql: "INSERT INTO people VALUES (?, ?, ?, ?, ?)", arguments: [id, email, phone, name, Int(random.next() % 60)])
            }
        }
        return queue
    }

    func groups(_ queue: DatabaseQueue, pageRows: Int) throws -> [[Int64]] {
        ComponentFinder.pageRows = pageRows
        let yaml = """
            version: 1
            dedupe:
              - entity: people
                key:
                  any:
                    - email
                    - phone
                    - {columns: [born], similar: {columns: name, jaro_winkler: 0.9}}
                max_group_size: 100000
            """
        let rule = try JobLoader.decode(yaml: yaml).dedupe[0]
        return try queue.inDatabase { db in
            let session = SQLiteSession(db)
            let compiled = try RuleCompiler.compile(rule, schema: try session.inspect(), dialect: session.dialect)
            try ComponentFinder.build(compiled, session: session)
            let rows = try Row.fetchAll(db, sql: "SELECT winnow_c, winnow_i0 FROM temp.winnow_components_0 ORDER BY winnow_c, winnow_i0")
            var groups: [Int64: [Int64]] = [:]
            for row in rows { groups[row[0], default: []].append(row[1]) }
            return groups.values.sorted { $0[0] < $1[0] }
        }
    }

    func testPagesDoNotChangeTheGroups() throws {
        let queue = try database(rows: 400)
        let whole = try groups(queue, pageRows: 50_000)
        XCTAssertGreaterThan(whole.count, 5)
        XCTAssertEqual(try groups(queue, pageRows: 3), whole)
        XCTAssertEqual(try groups(queue, pageRows: 1), whole)
    }

    /// A row whose key columns changed after the groups were found reads as in no group.
    func testARowChangedSinceIsInNoGroup() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, phone TEXT);
                    INSERT INTO people VALUES (1, 'a', NULL), (2, 'a', 'x'), (3, NULL, 'x'), (4, 'b', NULL);
                    """)
        }
        let rule = try JobLoader.decode(yaml: "version: 1\ndedupe:\n  - entity: people\n    key: {any: [email, phone]}\n").dedupe[0]
        try queue.inDatabase { db in
            let session = SQLiteSession(db)
            let compiled = try RuleCompiler.compile(rule, schema: try session.inspect(), dialect: session.dialect)
            let outcome = try ComponentFinder.build(compiled, session: session)
            XCTAssertEqual(outcome.groups, 1)
            XCTAssertEqual(outcome.members, 3)
            XCTAssertEqual(outcome.added, [1, 1])
            let group = "SELECT id, \(compiled.componentExpression()) FROM people ORDER BY id"
            XCTAssertEqual(try Row.fetchAll(db, sql: group).map { $0[1] as Int64? }, [1, 1, 1, nil])
            try db.execute(sql: "UPDATE people SET phone = 'y' WHERE id = 3")
            XCTAssertEqual(try Row.fetchAll(db, sql: group).map { $0[1] as Int64? }, [1, 1, nil, nil])
        }
    }
}
