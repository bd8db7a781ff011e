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
        /// The job file's bytes, as they were loaded (``Job/digest``).
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

    public init(job: String, database: String, createdAt: String, fingerprints: Fingerprints) {
        self.job = job
        self.database = database
        self.createdAt = createdAt
        self.fingerprints = fingerprints
    }

    static func sha256(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

    /// The fingerprint of the rows the rules would delete (each rule's digest of the losers'
    /// identities, in order).
    public static func duplicatesFingerprint(_ rules: [RuleSummary]) -> String {
        sha256(Data(rules.map { "\($0.index):\($0.table):\($0.deletionDigest ?? "-")" }.joined(separator: "\n").utf8))
    }

    /// Writes the file: this plan's fields and fingerprints, and `summary` as `plan --format
    /// json` prints it (for people and tools; not compared), as one pretty-printed JSON object
    /// with its keys sorted (`plan` last). The summary is written as it is encoded, a sample
    /// group at a time (`plan --verbose --save` lists every group), into a temporary file beside
    /// `path` that then replaces it, so a reader never sees half a plan.
    public func write(to path: String, plan summary: RunSummary) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(".\(URL(fileURLWithPath: path).lastPathComponent).\(getpid()).tmp").path
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: temporary, contents: nil),
                let handle = FileHandle(forWritingAtPath: temporary)
            else { throw WinnowError.io("cannot create \(temporary)") }
            defer { try? handle.close() }
            var buffer = Data()
            var failure: Error?
            func write(_ piece: String) {
                buffer.append(contentsOf: piece.utf8)
                guard buffer.count >= 1 << 20 else { return }
                if failure == nil {
                    do { try handle.write(contentsOf: buffer) } catch { failure = error }
                }
                buffer.removeAll(keepingCapacity: true)
            }
            let (before, after) = Self.around(headerText())
            write(before)
            Renderer.prettyJSON(summary, indent: "  ", write: write)
            write(after + "\n")
            if let failure { throw failure }
            try handle.write(contentsOf: buffer)
            try handle.synchronize()
            guard rename(temporary, path) == 0 else { throw WinnowError.io(String(cString: strerror(errno))) }
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw WinnowError.io("\(path): cannot write the plan (\(error.localizedDescription))")
        }
    }

    /// What stands in for the summary in ``headerText()``.
    static let planMarker = "\u{1}winnow-plan"

    /// The file's object pretty-printed with ``planMarker`` for the summary.
    func headerText() -> String {
        let object: [String: Any] = [
            "format": Self.format, "format_version": Self.formatVersion, "job": job, "database": database, "created_at": createdAt,
            "fingerprints": [
                "job": fingerprints.job, "target_schema": fingerprints.targetSchema, "live_schema": fingerprints.liveSchema,
                "duplicates": fingerprints.duplicates,
            ],
            "plan": Self.planMarker,
        ]
        return JSONValue(object)?.line(JSONValue.prettyEncoder()) ?? "{}"
    }

    /// The header's text before and after the marker (the encoder writes the marker as one
    /// string, escaped, so no other value can read the same).
    static func around(_ text: String) -> (String, String) {
        guard let marker = JSONValue.string(planMarker).line(), let range = text.range(of: marker) else { return (text, "") }
        return (String(text[..<range.lowerBound]), String(text[range.upperBound...]))
    }

    /// Reads a plan file's fields and fingerprints (the summary is not read: see
    /// ``fields(path:)``).
    public static func load(path: String) throws -> SavedPlan {
        guard let data = try fields(path: path) else { throw WinnowError.notFound("\(path): no such plan file") }
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
        return SavedPlan(
            job: object["job"] as? String ?? "", database: object["database"] as? String ?? "",
            createdAt: object["created_at"] as? String ?? "",
            fingerprints: Fingerprints(job: job, targetSchema: target, liveSchema: live, duplicates: duplicates))
    }

    /// The file's object without its `plan` member, whose bytes are read past and not kept: a
    /// plan that lists every group can be far larger than the fields `run --plan` compares.
    /// nil: no such file. A file that is not one whole object comes back unclosed, for the
    /// JSON parser to refuse.
    static func fields(path: String) throws -> Data? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        let planKey = Array("\"plan\"".utf8)
        var kept: [UInt8] = []
        var depth = 0
        var inString = false, escaped = false
        var stringStart = 0
        var lastString: Range<Int>?
        var lastComma: Int?
        // While the `plan` member's value is passed over: whether a comma came before it.
        var skipping: Bool?
        while let chunk = try handle.read(upToCount: 1 << 16), !chunk.isEmpty {
            for byte in chunk {
                if inString {
                    if escaped {
                        escaped = false
                    } else if byte == backslash {
                        escaped = true
                    } else if byte == quote {
                        inString = false
                        if depth == 1, skipping == nil { lastString = stringStart..<kept.count + 1 }
                    }
                    if skipping == nil { kept.append(byte) }
                    continue
                }
                switch byte {
                case quote:
                    inString = true
                    stringStart = kept.count
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                case UInt8(ascii: ","):
                    if depth == 1, let afterComma = skipping {
                        // The value ends; a member after it keeps this comma only if one was
                        // dropped before `plan`.
                        skipping = nil
                        if afterComma { kept.append(byte) }
                        lastComma = afterComma ? kept.count - 1 : nil
                        continue
                    }
                    if depth == 1 { lastComma = kept.count }
                case UInt8(ascii: ":"):
                    if depth == 1, skipping == nil, let key = lastString, kept[key].elementsEqual(planKey) {
                        // `"plan" :` and the comma before it (or, first, the key alone) dropped.
                        skipping = lastComma != nil
                        kept.removeSubrange((lastComma ?? key.lowerBound)...)
                        lastString = nil
                        continue
                    }
                default:
                    break
                }
                if skipping != nil, depth == 0 {
                    // The object closes right after the value.
                    skipping = nil
                }
                if skipping == nil { kept.append(byte) }
                if depth == 0, !kept.isEmpty, byte == UInt8(ascii: "}") { return Data(kept) }
            }
        }
        return Data(kept)
    }
}
