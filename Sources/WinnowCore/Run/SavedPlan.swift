import Crypto
import Foundation

/// `plan --save FILE` / `run --plan FILE`: the plan a person (or CI) approved, with fingerprints
/// of everything it depends on. A run given the file applies the job only while every
/// fingerprint still matches, so the run is the plan that was reviewed; otherwise it refuses
/// (exit 65) before its first write.
public struct SavedPlan: Sendable, Equatable {
    public static let format = "winnow-plan"
    public static let formatVersion = 1

    /// What the plan depends on, each as a SHA-256 (hex).
    public struct Fingerprints: Sendable, Equatable {
        /// The job file's bytes.
        public var job: String
        /// The target schema's canonical rendering (`none` without a schema).
        public var targetSchema: String
        /// The live schema's canonical rendering, with its recorded version.
        public var liveSchema: String
        /// The rows each rule would delete (their identities, rule by rule).
        public var duplicates: String

        public init(job: String, targetSchema: String, liveSchema: String, duplicates: String) {
            self.job = job
            self.targetSchema = targetSchema
            self.liveSchema = liveSchema
            self.duplicates = duplicates
        }

        /// The names of the fingerprints that differ from `other`, in a fixed order.
        public func differences(from other: Fingerprints) -> [String] {
            var names: [String] = []
            if job != other.job { names.append("the job file changed") }
            if targetSchema != other.targetSchema { names.append("the target schema changed") }
            if liveSchema != other.liveSchema { names.append("the database's schema changed") }
            if duplicates != other.duplicates { names.append("the duplicates changed (other rows would be deleted)") }
            return names
        }
    }

    public var job: String
    public var database: String
    public var createdAt: String
    public var fingerprints: Fingerprints
    /// The plan's summary as `plan --format json` prints it (for people and tools; not compared).
    public var summaryJSON: String

    public init(job: String, database: String, createdAt: String, fingerprints: Fingerprints, summaryJSON: String) {
        self.job = job
        self.database = database
        self.createdAt = createdAt
        self.fingerprints = fingerprints
        self.summaryJSON = summaryJSON
    }

    static func sha256(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

    /// The fingerprint of a job file's bytes.
    public static func fingerprint(jobFile path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw WinnowError.notFound("\(path): no such job file") }
        return sha256(data)
    }

    /// Combines the rules' digests of what they would delete, in rule order.
    public static func duplicatesFingerprint(_ rules: [RuleSummary]) -> String {
        sha256(Data(rules.map { "\($0.index):\($0.table):\($0.deletionDigest ?? "-")" }.joined(separator: "\n").utf8))
    }

    /// Writes the plan to `path` (atomically), creating its folder as `plan --save plans/x.plan`
    /// in a fresh checkout expects.
    public func write(to path: String) throws {
        do {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try encoded().write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw WinnowError.io("\(path): cannot write the plan (\(error.localizedDescription))")
        }
    }

    /// The file's text: one JSON object.
    public func encoded() -> String {
        let summary = (try? JSONSerialization.jsonObject(with: Data(summaryJSON.utf8))) ?? [String: Any]()
        let object: [String: Any] = [
            "format": Self.format, "format_version": Self.formatVersion, "job": job, "database": database, "created_at": createdAt,
            "fingerprints": [
                "job": fingerprints.job, "target_schema": fingerprints.targetSchema, "live_schema": fingerprints.liveSchema,
                "duplicates": fingerprints.duplicates,
            ],
            "plan": summary,
        ]
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// Reads a saved plan; a file that is not one is refused with exit 65 (66 when missing).
    public static func load(path: String) throws -> SavedPlan {
        guard let data = FileManager.default.contents(atPath: path) else { throw WinnowError.notFound("\(path): no such plan file") }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            object["format"] as? String == format
        else {
            throw WinnowError.invalidFile(nil, "\(path): not a plan saved by `winnow plan --save`")
        }
        guard object["format_version"] as? Int == formatVersion else {
            throw WinnowError.invalidFile(nil, "\(path): plan format version \(object["format_version"] ?? "?") is not \(formatVersion)")
        }
        guard let prints = object["fingerprints"] as? [String: Any], let job = prints["job"] as? String,
            let target = prints["target_schema"] as? String, let live = prints["live_schema"] as? String,
            let duplicates = prints["duplicates"] as? String
        else {
            throw WinnowError.invalidFile(nil, "\(path): the plan's fingerprints are missing or damaged")
        }
        let summary = (object["plan"]).flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }
        return SavedPlan(
            job: object["job"] as? String ?? "", database: object["database"] as? String ?? "",
            createdAt: object["created_at"] as? String ?? "",
            fingerprints: Fingerprints(job: job, targetSchema: target, liveSchema: live, duplicates: duplicates),
            summaryJSON: summary.map { String(decoding: $0, as: UTF8.self) } ?? "{}")
    }
}
