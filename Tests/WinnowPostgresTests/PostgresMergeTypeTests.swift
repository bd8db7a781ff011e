import WinnowCore
import WinnowSQLite
import XCTest

@testable import WinnowPostgres

/// Which merges a PostgreSQL column's type allows, as a rule is compiled against the live
/// schema (no server needed): the same rule compiles on SQLite whatever the type.
final class PostgresMergeTypeTests: XCTestCase {
    /// Compiles `merge: {v: STRATEGY}` over a column `v` of `type`; nil when it compiles, else
    /// the message.
    func refusal(_ strategy: MergeStrategy, _ type: String, dialect: any SQLDialect = PostgresDialect()) throws -> String? {
        let table = LiveTable(
            name: "t",
            columns: [
                LiveColumn(name: "id", type: "bigint", notNull: true, primaryKeyIndex: 1),
                LiveColumn(name: "k", type: "text", notNull: false, primaryKeyIndex: 0),
                LiveColumn(name: "v", type: type, notNull: false, primaryKeyIndex: 0),
            ], hasRowID: true, isVirtual: false, foreignKeys: [], indexes: [])
        // `latest` and `prefer` rank the rows by another column (here the key, text).
        let written: String
        switch strategy {
        case .latest: written = "{latest: k}"
        case .prefer: written = "{prefer: {column: k, order: [a, b]}}"
        default: written = strategy.rawValue
        }
        let yaml = "version: 1\ndedupe:\n  - entity: t\n    key: k\n    merge: {v: \(written)}\n"
        let job = try JobLoader.decode(yaml: yaml, file: "job.yaml", baseDirectory: nil)
        do {
            _ = try RuleCompiler.compile(job.dedupe[0], schema: LiveSchema(tables: [table]), dialect: dialect)
            return nil
        } catch let error as WinnowError {
            XCTAssertEqual(error.exitCode, 65)
            return error.description
        }
    }

    func testEachStrategyTakesTheTypesItMeansSomethingFor() throws {
        let allowed: [MergeStrategy: [String]] = [
            .sum: [
                "smallint", "integer", "bigint", "numeric(30,10)", "numeric", "real", "float4", "double precision", "money", "interval",
            ],
            .min: [
                "bigint", "numeric(30,10)", "timestamp with time zone", "timestamp(3) without time zone", "date", "text", "boolean", "uuid",
            ],
            .max: ["character varying(20)", "interval", "bytea", "integer[]"],
            .fillNull: ["jsonb", "json", "xml", "point", "integer[]", "text"],
            .longest: ["text", "character varying(20)", "character(3)", "citext", "bytea"],
            .concat: ["text", "character varying(200)", "citext"],
            .latest: ["jsonb", "json", "xml", "point", "integer[]", "text"],
            .prefer: ["jsonb", "json", "xml", "point", "integer[]", "text"],
            .mostFrequent: ["jsonb", "xml", "point", "integer[]", "text", "bigint"],
        ]
        for (strategy, types) in allowed {
            for type in types { XCTAssertNil(try refusal(strategy, type), "\(strategy.rawValue) of \(type)") }
        }
        let refused: [(MergeStrategy, String, String)] = [
            (.sum, "date", "sum adds numbers"), (.sum, "text", "sum adds numbers"), (.sum, "integer[]", "sum adds numbers"),
            (.sum, "boolean", "sum adds numbers"), (.sum, "jsonb", "sum adds numbers"),
            (.min, "jsonb", "min keeps the smallest value, and this type has no order"), (.max, "json", "max keeps the largest value"),
            (.max, "jsonb[]", "max keeps the largest value"), (.min, "point", "min keeps the smallest value, and this type has no order"),
            (.longest, "integer", "longest keeps the longest text"), (.longest, "text[]", "longest keeps the longest text"),
            (.concat, "bigint", "concat joins texts"), (.concat, "bytea", "concat joins texts"),
        ]
        for (strategy, type, words) in refused {
            let message = try refusal(strategy, type)
            XCTAssertTrue(message?.contains("job.yaml:5:") == true, "\(strategy.rawValue) of \(type): \(message ?? "compiled")")
            XCTAssertTrue(
                message?.contains("'v' is \(type): \(words)") == true, "\(strategy.rawValue) of \(type): \(message ?? "compiled")")
        }
    }

    /// SQLite keeps any value in any column: no type refuses a merge there.
    func testEveryTypeTakesEveryMergeOnSQLite() throws {
        for strategy in MergeStrategy.allCases {
            for type in ["jsonb", "date", "integer", "point"] {
                XCTAssertNil(try refusal(strategy, type, dialect: SQLiteDialect()), "\(strategy.rawValue) of \(type)")
            }
        }
    }
}
