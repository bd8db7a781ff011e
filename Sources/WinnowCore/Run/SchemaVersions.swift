import Crypto
import Foundation

/// The applied model version of a database, kept in `winnow_schema` (one row), and the seed
/// markers in `winnow_seeds`.
public enum SchemaVersions {
    public struct Record: Sendable, Equatable {
        public var version: Int
        public var checksum: String
        public var appliedAt: String
    }

    public static func install(_ session: any DatabaseSession) throws {
        for statement in session.dialect.versionSchema { try session.execute(statement) }
    }

    public static func recorded(_ session: any DatabaseSession) throws -> Record? {
        guard try session.tableExists("winnow_schema") else { return nil }
        return try session.row("SELECT version, checksum, applied_at FROM \(session.dialect.bookkeeping("winnow_schema")) WHERE id = 1")
            .map { Record(version: try $0.int(0), checksum: try $0.string(1), appliedAt: try $0.string(2)) }
    }

    /// Records `version` as applied. Called inside a write transaction.
    public static func record(_ session: any DatabaseSession, version: Int, checksum: String, runID: Int64?) throws {
        try install(session)
        let table = session.dialect.bookkeeping("winnow_schema")
        try session.execute("DELETE FROM \(table) WHERE id = 1")
        try session.execute(
            "INSERT INTO \(table) (id, version, checksum, applied_at, run_id) VALUES (1, ?, ?, ?, ?)",
            [SQLValue(version), SQLValue(checksum), SQLValue(Bookkeeping.timestamp()), SQLValue(runID)])
    }

    /// SHA-256 (hex) of the model's canonical rendering: two files describing the same model
    /// have the same checksum whatever their formatting.
    public static func checksum(of model: SchemaModel) throws -> String {
        let text = try SchemaPrinter.render(model)
        return SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    public static func isSeeded(_ session: any DatabaseSession, name: String) throws -> Bool {
        guard try session.tableExists("winnow_seeds") else { return false }
        return try session.row("SELECT 1 FROM \(session.dialect.bookkeeping("winnow_seeds")) WHERE name = ?", [SQLValue(name)]) != nil
    }
}
