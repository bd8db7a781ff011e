import Foundation
import WinnowBackends
import WinnowCore
import WinnowTestSupport
import XCTest

/// The engines a cross-engine scenario runs on, from one definition: a copy of a SQLite file,
/// and the test server (`WINNOW_TEST_POSTGRES`) loaded from the same file.
struct CrossEngine {
    var name: String
    /// A fresh location holding the template's rows.
    var prepare: (_ template: String, _ dir: URL) throws -> String
    /// Indexes left INVALID by an interrupted concurrent build (PostgreSQL only).
    var invalidIndexes: (_ location: String) throws -> Int

    /// SQLite, then PostgreSQL (skipped locally without a server; a failure under CI=true).
    static func all() throws -> [CrossEngine] {
        let sqlite = CrossEngine(
            name: "sqlite",
            prepare: { template, dir in
                let copy = dir.appendingPathComponent("copy-\(UUID().uuidString).sqlite").path
                try FileManager.default.copyItem(atPath: template, toPath: copy)
                return copy
            }, invalidIndexes: { _ in 0 })
        let url = try PostgresServer.require()
        let postgres = CrossEngine(
            name: "postgresql",
            prepare: { template, _ in
                try PostgresServer.reset(url)
                try PostgresServer.load(template, into: url)
                return url
            },
            invalidIndexes: { location in
                try BackendRouter().withSession(location, mode: .readOnly) { session in
                    try session.value("SELECT count(*) FROM pg_catalog.pg_index WHERE NOT indisvalid").int ?? 0
                }
            })
        return [sqlite, postgres]
    }
}
