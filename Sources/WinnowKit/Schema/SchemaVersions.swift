import Crypto
import Foundation
import GRDB

/// The applied model version of a database, kept in `winnow_schema` (one row), and the seed
/// markers in `winnow_seeds`.
public enum SchemaVersions {
    public struct Record: Sendable, Equatable {
        public var version: Int
        public var checksum: String
        public var appliedAt: String
    }

    static func install(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE IF NOT EXISTS winnow_schema (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                version INTEGER NOT NULL,
                checksum TEXT NOT NULL,
                applied_at TEXT NOT NULL,
                run_id INTEGER
            );
            CREATE TABLE IF NOT EXISTS winnow_seeds (
                name TEXT PRIMARY KEY,
                seeded_at TEXT NOT NULL,
                run_id INTEGER,
                rows INTEGER NOT NULL DEFAULT 0
            );
            """)
    }

    public static func recorded(_ db: Database) throws -> Record? {
        guard try db.tableExists("winnow_schema") else { return nil }
        return try Row.fetchOne(db, sql: "SELECT version, checksum, applied_at FROM winnow_schema WHERE id = 1").map {
            Record(version: $0[0], checksum: $0[1], appliedAt: $0[2])
        }
    }

    static func record(_ db: Database, version: Int, checksum: String, runID: Int64?) throws {
        try install(db)
        try db.execute(sql: "INSERT OR REPLACE INTO winnow_schema (id, version, checksum, applied_at, run_id) VALUES (1, ?, ?, ?, ?)",
                       arguments: [version, checksum, Bookkeeping.timestamp(), runID])
    }

    /// SHA-256 (hex) of the model's canonical rendering: two files describing the same model
    /// have the same checksum whatever their formatting.
    public static func checksum(of model: SchemaModel) throws -> String {
        let text = try SchemaPrinter.render(model)
        return SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    public static func isSeeded(_ db: Database, name: String) throws -> Bool {
        guard try db.tableExists("winnow_seeds") else { return false }
        return try Bool.fetchOne(db, sql: "SELECT 1 FROM winnow_seeds WHERE name = ?", arguments: [name]) ?? false
    }
}
