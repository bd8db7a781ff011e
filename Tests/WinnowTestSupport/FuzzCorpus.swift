import Foundation
import Yams

// The fuzz corpus and mutator shared by the SQLite fuzz suite (WinnowScenarioTests.FuzzTests)
// and the cross-engine one (WinnowPostgresTests.CrossEngineFuzzTests): one definition of the
// files and of how they are broken, so both engines see the same cases for a seed.

package struct FuzzDocument {
    package enum Kind: Sendable { case job, schema }
    package var name: String
    package var kind: Kind
    package var text: String
    /// The database (under `work/`) its plan runs against.
    package var database: String
    /// Whether the unmutated file plans successfully against that database.
    package var plannable: Bool

    package init(name: String, kind: Kind, text: String, database: String, plannable: Bool) {
        self.name = name
        self.kind = kind
        self.text = text
        self.database = database
        self.plannable = plannable
    }
}

package enum FuzzCorpus {
    /// The example jobs and schemas of the repository, plus files that use every key.
    package static func documents(repository: URL) -> [FuzzDocument] {
        var documents: [FuzzDocument] = []
        let fm = FileManager.default
        for folder in ["jobs", "schemas"] {
            let url = repository.appendingPathComponent(folder)
            let names = ((try? fm.contentsOfDirectory(atPath: url.path)) ?? []).filter { $0.hasSuffix(".yaml") }.sorted()
            for name in names {
                guard let text = try? String(contentsOf: url.appendingPathComponent(name), encoding: .utf8) else { continue }
                let crm = name.hasPrefix("crm")
                let plannable: Bool
                if folder == "schemas" {
                    plannable = true
                } else {
                    // contacts-restrict.yaml is refused on purpose (max_delete_percent: 10).
                    plannable = (name.hasPrefix("contacts") && name != "contacts-restrict.yaml") || name == "example.yaml" || crm
                }
                documents.append(
                    FuzzDocument(
                        name: name, kind: folder == "jobs" ? .job : .schema, text: text,
                        database: crm ? "crm.sqlite" : "contacts.sqlite", plannable: plannable))
            }
        }
        documents += own
        return documents
    }

    package static let own: [FuzzDocument] = [
        FuzzDocument(
            name: "fuzz-every-key.yaml", kind: .job,
            text: """
                # Every key of a job file, in block style.
                version: 1
                database: ../work/contacts.sqlite
                schema: ../schemas/fuzz-contacts-v2.yaml
                allow_data_loss: false
                seed:
                  name: fuzz-companies
                  from: ../examples/crm-seed.sqlite
                  tables: [companies]
                dedupe:
                  - entity: contacts
                    key: [first_name, last_name, birth_date]
                    hash: true
                    hash_column: key_hash
                    normalize:
                      first_name: [nfkc, trim, lowercase]
                      last_name: [collapse_whitespace, lowercase]
                      birth_date: trim
                    nulls: equal
                    winner: most_complete
                    merge:
                      visits: sum
                      notes: concat
                      phone: fill_null
                      company_id: max
                      email: longest
                    references: repoint
                    referenced_by: [{table: orders, column: contact_id}, contact_tags.contact_id]
                    archive: true
                    max_delete_percent: 50.5
                  - entity: orders
                    key: contact_id
                    winner:
                      - placed_at: desc
                      - id: asc
                    merge:
                      total: min
                    references: restrict
                    archive: false
                    max_delete_percent: 100
                batch:
                  size: 2
                  max_transaction_ms: 100
                  pause_ms: 0

                """, database: "contacts.sqlite", plannable: true),
        FuzzDocument(
            name: "fuzz-flow.yaml", kind: .job,
            text: """
                {version: 1, database: "../work/contacts.sqlite", allow_data_loss: true,
                 dedupe: [{entity: contacts, key: email, normalize: [trim, lowercase, nfkc, digits_only, collapse_whitespace],
                           nulls: distinct, winner: {latest: created_at}, merge: {phone: fill_null, visits: max, notes: longest},
                           references: repoint, archive: true},
                          {entity: 'tags', key: ['label'], winner: {earliest: id}, hash: true}],
                 batch: {size: 1000000, max_transaction_ms: 3600000, pause_ms: 1}}

                """, database: "contacts.sqlite", plannable: true),
        FuzzDocument(
            name: "fuzz-crm.yaml", kind: .job,
            text: """
                version: 1
                database: "../work/crm.sqlite"
                schema: '../schemas/crm-v2.yaml'
                dedupe:
                  - entity: contacts
                    key: [email]
                    normalize: {email: [trim, lowercase]}
                    winner:
                      - created_at: asc
                    merge: {name: longest, phone: fill_null}
                    max_delete_percent: 50
                    archive: false

                """, database: "crm.sqlite", plannable: true),
        FuzzDocument(
            name: "fuzz-minimal.yaml", kind: .job, text: "version: 1\ndedupe:\n- entity: contacts\n  key: email\n",
            database: "contacts.sqlite", plannable: true),
        FuzzDocument(
            name: "fuzz-contacts-v2.yaml", kind: .schema,
            text: """
                # The example contacts database, one version on: every key of a schema file.
                version: 2
                tables:
                  companies:
                    columns:
                      - {name: id, type: integer, primary_key: true}
                      - {name: name, type: text, nullable: false}
                  contacts:
                    renamed_from: [people, persons]
                    columns:
                      - {name: id, type: integer, primary_key: true}
                      - {name: email, type: text}
                      - {name: first_name, type: text}
                      - {name: last_name, type: text}
                      - {name: birth_date, type: text}
                      - {name: phone, type: text, renamed_from: phone_number}
                      - {name: visits, type: integer, nullable: false, default: 0}
                      - {name: notes, type: text}
                      - {name: company_id, type: integer, references: {table: companies, column: id}}
                      - {name: created_at, type: text, nullable: false}
                      - {name: key_hash, type: text}
                      - name: nickname
                        type: text
                        nullable: true
                        default: "n/a"
                        renamed_from: [nick, alias]
                      - {name: score, type: real, default: 1.5}
                      - {name: active, type: integer, default: true}
                      - {name: stamp, type: text, default: {sql: CURRENT_TIMESTAMP}}
                      - {name: nothing, type: text, default: null}
                    indexes:
                      - {name: contacts_key_hash, columns: [key_hash]}
                      - {name: contacts_nick, columns: nickname, unique: false}
                  orders:
                    columns:
                      - {name: id, type: integer, primary_key: true}
                      - {name: contact_id, type: integer, nullable: false, references: {table: contacts, column: id}}
                      - {name: total, type: real, nullable: false}
                      - {name: placed_at, type: text, nullable: false}
                    indexes:
                      - {name: orders_contact, columns: [contact_id]}
                  tags:
                    columns:
                      - {name: id, type: integer, primary_key: true}
                      - {name: label, type: text, nullable: false}
                  contact_tags:
                    columns:
                      - {name: contact_id, type: integer, nullable: false, primary_key: true, references: {table: contacts, column: id}}
                      - {name: tag_id, type: integer, nullable: false, primary_key: true, references: {table: tags, column: id}}

                """, database: "contacts.sqlite", plannable: true),
        FuzzDocument(
            name: "fuzz-crm-block.yaml", kind: .schema,
            text: """
                version: 4
                tables:
                  contacts:
                    renamed_from: people
                    columns:
                      - name: id
                        type: integer
                        primary_key: true
                      - name: email
                        type: text
                        nullable: false
                        default: ""
                      - name: name
                        type: text
                      - name: phone
                        type: text
                        renamed_from: [phone_number]
                      - name: created_at
                        type: text
                        nullable: false
                        default:
                          sql: CURRENT_TIMESTAMP
                      - name: visits
                        type: integer
                        default: -1
                    indexes:
                      - name: people_created
                        columns:
                          - created_at
                      - name: contacts_email
                        columns: [email]
                        unique: true

                """, database: "crm.sqlite", plannable: true),
    ]
}

// MARK: - Mutations

/// Deterministic for a (seed, stream, case) triple on every platform.
package typealias FuzzRandom = SplitMix64

extension SplitMix64 {
    package init(seed: UInt64, stream: UInt64, index: Int) {
        self.init(state: seed ^ (stream &* 0x9E37_79B9_7F4A_7C15) ^ (UInt64(truncatingIfNeeded: index) &* 0xD1B5_4A32_D192_ED03))
        _ = next()
    }
}

package enum FuzzMutator {
    /// Scalars of other types and hostile content, written as YAML source.
    static let hostileValues: [String] = [
        "~", "null", "true", "false", "yes", "no", "0", "-1", "1", "2", "100", "101", "1.5", "-0.0", "1e400", "-1e400", ".inf", "-.inf",
        ".nan", "0x10", "0o17", "0b101", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
        "99999999999999999999999999999", "2147483648", "1_000", "[]", "{}", "[a, b]", "[1, 2]", "[[]]", "{a: 1}", "[contacts]",
        "{table: contacts, column: id}", "''", "\"\"", "' '", "\"\\0\"", "\"a\\u0000b\"", "\"\\x01\\x02\\x7f\\e[2J\"", "\"\\t\\r\\n\"",
        "\"\\uD800\"", "\"\\U0010FFFF\"", "\"\\u202Eevil\"", "'x\"; DROP TABLE contacts; --'", "\"contacts\\\"; DROP TABLE orders; --\"",
        "\"a' OR '1'='1\"", "\"]; DELETE FROM contacts; --\"", "\"`x`\"", "\"[x]\"", "\"/* c */\"", "|\n  block\n  text", ">-\n  folded",
        "!!binary AAAA", "&anchor value", "*anchor", "*undefined", "? x", "- x", "x: y", "@reserved", "`backtick", "%directive",
        "#comment", "contacts", "email", "created_at", "id", "phone", "visits", "people", "companies", "orders", "asc", "desc",
        "most_complete", "trim", "sum", "concat", "repoint", "restrict", "distinct", "equal", "rowid", "oid", "_rowid_", "sqlite_master",
        "sqlite_sequence", "winnow_runs", "winnow_lock", "main", "temp", "../work/contacts.sqlite", "../work/crm.sqlite",
        "../schemas/crm-v1.yaml", "../schemas/crm-v3.yaml", "../jobs/example.yaml", "/dev/null", "/", ".", "..",
        "/nonexistent/x.sqlite", "Ünïcødé", "名前", "😀", "\"\\u00A0\"", "integer", "text", "blob", "real",
        "{sql: CURRENT_TIMESTAMP}", "{sql: \"1); DROP TABLE contacts; --\"}", "{sql: ''}", "{earliest: created_at}",
        "{latest: id, earliest: id}", "[{id: asc}, {id: desc}]", "[{created_at: sideways}]", "{email: [trim]}",
    ]

    static let hostileKeys: [String] = [
        "zz_unknown", "Version", "VERSION", "version ", " entity", "\"entity\"", "'key'", "entity\\u0000", "\"entity\\u0000\"", "1", "-1",
        "true", "null", "~", "1.5", "\"\"", "? [a, b]\n", "? {a: 1}\n", "<<", "tables", "dedupe", "key", "columns", "name", "名前",
        "😀", "sqlite_x", "winnow_x",
    ]

    static let tags = [
        "!!str", "!!int", "!!float", "!!bool", "!!null", "!!binary", "!!map", "!!seq", "!custom", "!<tag:yaml.org,2002:str>",
        "!!timestamp", "!!set", "!!omap", "!", "!!python/object",
    ]

    static let byteInsertions: [[UInt8]] = [
        [0x00], [0x01], [0x07], [0x08], [0x0B], [0x0C], [0x1B], [0x7F], [0x09], [0x0D], [0xFF], [0xFE], [0xC0, 0x80], [0xED, 0xA0, 0x80],
        [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xEF, 0xBB, 0xBF], [0xC2, 0x85], [0xE2, 0x80, 0xA8], [0xE2, 0x80, 0xA9],
        [0xC2, 0xA0], [0xE2, 0x80, 0x8B], Array("\n".utf8), Array("\r\n".utf8), Array(": ".utf8), Array("- ".utf8), Array("#".utf8),
        Array("'".utf8), Array("\"".utf8), Array("[".utf8), Array("{".utf8), Array("&a ".utf8), Array("*a".utf8), Array("!".utf8),
        Array("|".utf8), Array("%".utf8), Array("---\n".utf8), Array("...\n".utf8), Array("\t".utf8),
    ]

    /// One to three structural mutations, then sometimes a byte-level one.
    package static func mutate(_ text: String, rng: inout FuzzRandom) -> (Data, [String]) {
        var steps: [String] = []
        var current = text
        let count = rng.chance(60) ? 1 : 2 + rng.below(2)
        for _ in 0..<count {
            let (next, step) = structural(current, rng: &rng)
            current = next
            steps.append(step)
        }
        var bytes = Array(current.utf8)
        if rng.chance(20) {
            let (next, step) = byteLevel(bytes, rng: &rng)
            bytes = next
            steps.append(step)
        }
        return (Data(bytes), steps)
    }

    static func lines(_ text: String) -> [String] { text.components(separatedBy: "\n") }

    /// Where a line's value starts (after `key: ` or `- `), if it has one.
    static func valueStart(_ line: String) -> String.Index? {
        if let range = line.range(of: ": ") { return range.upperBound }
        let trimmed = line.drop { $0 == " " }
        if trimmed.hasPrefix("- ") { return line.index(trimmed.startIndex, offsetBy: 2) }
        return nil
    }

    static func indentation(_ line: String) -> String { String(line.prefix { $0 == " " }) }

    static func longString(_ rng: inout FuzzRandom) -> String {
        let unit = rng.pick(["x", "ab", "名", "😀", "\\\"", "; DROP TABLE contacts; --"])
        let count = rng.pick([256, 4096, 70_000])
        return "\"" + String(repeating: unit, count: count / max(1, unit.count)) + "\""
    }

    static func nested(_ rng: inout FuzzRandom) -> String {
        let depth = rng.pick([2, 10, 100, 400])
        return rng.chance(50)
            ? String(repeating: "[", count: depth) + "x" + String(repeating: "]", count: depth)
            : String(repeating: "{a: ", count: depth) + "1" + String(repeating: "}", count: depth)
    }

    static func smallBomb(_ rng: inout FuzzRandom) -> String {
        let levels = 2 + rng.below(4)
        var parts = ["&b0 [lol, lol, lol, lol]"]
        for level in 1..<levels {
            parts.append("&b\(level) [" + Array(repeating: "*b\(level - 1)", count: 4).joined(separator: ", ") + "]")
        }
        return "[" + parts.joined(separator: ", ") + "]"
    }

    static func value(_ rng: inout FuzzRandom) -> String {
        switch rng.below(12) {
        case 0: return longString(&rng)
        case 1: return nested(&rng)
        case 2: return smallBomb(&rng)
        default: return rng.pick(hostileValues)
        }
    }

    static func structural(_ text: String, rng: inout FuzzRandom) -> (String, String) {
        var lines = lines(text)
        guard !lines.isEmpty else { return (text, "none") }
        let i = rng.below(lines.count)
        let valueLines = lines.indices.filter { valueStart(lines[$0]) != nil }
        switch rng.below(16) {
        case 0:
            lines.remove(at: i)
            return (lines.joined(separator: "\n"), "delete line \(i + 1)")
        case 1:
            lines.insert(lines[i], at: i)
            return (lines.joined(separator: "\n"), "duplicate line \(i + 1)")
        case 2:
            let j = rng.below(lines.count)
            lines.swapAt(i, j)
            return (lines.joined(separator: "\n"), "swap lines \(i + 1) and \(j + 1)")
        case 3:
            let change = rng.pick(["+1", "-1", "+2", "-2", "+4", "tab", "zero"])
            var line = lines[i]
            switch change {
            case "+1": line = " " + line
            case "+2": line = "  " + line
            case "+4": line = "    " + line
            case "-1": if line.hasPrefix(" ") { line.removeFirst() }
            case "-2": line = line.hasPrefix("  ") ? String(line.dropFirst(2)) : line
            case "tab": line = "\t" + line.drop { $0 == " " }
            default: line = String(line.drop { $0 == " " })
            }
            lines[i] = line
            return (lines.joined(separator: "\n"), "indent line \(i + 1) \(change)")
        case 4, 5, 6, 7:
            guard let v = valueLines.isEmpty ? nil : rng.pick(valueLines), let start = valueStart(lines[v]) else { break }
            let replacement = value(&rng)
            let (head, tail) =
                replacement.contains("\n") && !replacement.hasPrefix("\"")
                ? (
                    replacement.components(separatedBy: "\n")[0],
                    replacement.components(separatedBy: "\n").dropFirst().map { indentation(lines[v]) + "  " + $0 }.joined(separator: "\n")
                )
                : (replacement, "")
            lines[v] = String(lines[v][..<start]) + head + (tail.isEmpty ? "" : "\n" + tail)
            return (lines.joined(separator: "\n"), "value of line \(v + 1) -> \(String(replacement.prefix(40)).debugDescription)")
        case 8:
            let key = rng.pick(hostileKeys)
            let indent = indentation(lines[i].hasPrefix(" ") || !lines[i].contains(":") ? lines[i] : "")
            let entry = key.hasPrefix("?") ? "\(indent)\(key)\(indent): 1" : "\(indent)\(key): \(rng.chance(50) ? "1" : value(&rng))"
            lines.insert(entry, at: min(lines.count, i + 1))
            return (lines.joined(separator: "\n"), "insert key \(key.debugDescription) after line \(i + 1)")
        case 9:
            guard !valueLines.isEmpty else { break }
            let a = rng.pick(valueLines), b = rng.pick(valueLines)
            guard let startA = valueStart(lines[a]) else { break }
            lines[a] = String(lines[a][..<startA]) + "&x " + lines[a][startA...]
            if let startB = valueStart(lines[b]) { lines[b] = String(lines[b][..<startB]) + (rng.chance(80) ? "*x" : "*y") }
            return (lines.joined(separator: "\n"), "anchor line \(a + 1), alias line \(b + 1)")
        case 10:
            let indent = indentation(lines[i])
            let merge = rng.pick([
                "<<: *x", "<<: {entity: contacts, key: email}", "<<: [{nulls: equal}, {archive: false}]", "<<: 1", "<<: *nope",
                "<<: {columns: [{name: id}]}", "'<<': {a: 1}",
            ])
            lines.insert(indent + merge, at: min(lines.count, i + 1))
            if rng.chance(60), let v = valueLines.isEmpty ? nil : rng.pick(valueLines), let start = valueStart(lines[v]) {
                lines[v] = String(lines[v][..<start]) + "&x " + lines[v][start...]
            }
            return (lines.joined(separator: "\n"), "merge key \(merge.debugDescription) after line \(i + 1)")
        case 11:
            guard let v = valueLines.isEmpty ? nil : rng.pick(valueLines), let start = valueStart(lines[v]) else { break }
            let tag = rng.pick(tags)
            lines[v] = String(lines[v][..<start]) + tag + " " + lines[v][start...]
            return (lines.joined(separator: "\n"), "tag \(tag) on line \(v + 1)")
        case 12:
            if let restyled = restyle(text, rng: &rng) { return (restyled, "restyle (flow/block, scalar styles)") }
        case 13:
            guard let v = valueLines.isEmpty ? nil : rng.pick(valueLines), let start = valueStart(lines[v]) else { break }
            let colon = lines[v].range(of: ":")?.lowerBound
            let keyStart = lines[v].firstIndex { $0 != " " && $0 != "-" } ?? lines[v].startIndex
            guard let colon, keyStart < colon, colon < start else { break }
            let key = rng.pick(hostileKeys).replacingOccurrences(of: "\n", with: "")
            lines[v] = String(lines[v][..<keyStart]) + key + String(lines[v][colon...])
            return (lines.joined(separator: "\n"), "rename key on line \(v + 1) to \(key.debugDescription)")
        case 14:
            let offset = rng.below(text.utf8.count + 1)
            let cut = String(decoding: Array(text.utf8).prefix(offset), as: UTF8.self)
            return (cut, "truncate at byte \(offset)")
        default:
            guard let v = valueLines.isEmpty ? nil : rng.pick(valueLines), let start = valueStart(lines[v]) else { break }
            // A scalar becomes a list of itself, or a mapping, or the reverse.
            let old = String(lines[v][start...])
            let new = rng.pick(["[\(old)]", "{\(old): 1}", "- \(old)", "[\(old), \(old)]", "\"\(old)\"", "'\(old)'"])
            lines[v] = String(lines[v][..<start]) + new
            return (lines.joined(separator: "\n"), "line \(v + 1) value \(old.debugDescription) -> \(new.debugDescription)")
        }
        // Fallback when the chosen mutation did not apply.
        lines.insert(lines[i], at: i)
        return (lines.joined(separator: "\n"), "duplicate line \(i + 1) (fallback)")
    }

    /// Re-emits the document with some collections switched between flow and block style and
    /// some scalars re-quoted.
    static func restyle(_ text: String, rng: inout FuzzRandom) -> String? {
        guard let node = try? Yams.compose(yaml: text) else { return nil }
        func walk(_ node: Node) -> Node {
            switch node {
            case var .mapping(mapping):
                if rng.chance(40) { mapping.style = mapping.style == .flow ? .block : .flow }
                let pairs = mapping.map { (walk($0.key), walk($0.value)) }
                return .mapping(Node.Mapping(pairs, mapping.tag, mapping.style))
            case var .sequence(sequence):
                if rng.chance(40) { sequence.style = sequence.style == .flow ? .block : .flow }
                return .sequence(Node.Sequence(sequence.map(walk), sequence.tag, sequence.style))
            case var .scalar(scalar):
                if rng.chance(15) { scalar.style = rng.pick([.plain, .singleQuoted, .doubleQuoted, .literal, .folded]) }
                return .scalar(scalar)
            case .alias:
                return node
            }
        }
        return try? Yams.serialize(node: walk(node))
    }

    static func byteLevel(_ bytes: [UInt8], rng: inout FuzzRandom) -> ([UInt8], String) {
        var bytes = bytes
        switch rng.below(6) {
        case 0:
            let offset = rng.below(bytes.count + 1)
            return (Array(bytes.prefix(offset)), "truncate bytes at \(offset)")
        case 1, 2:
            let insertion = rng.pick(byteInsertions)
            let offset = rng.below(bytes.count + 1)
            bytes.insert(contentsOf: insertion, at: offset)
            return (bytes, "insert bytes \(insertion.map { String(format: "%02X", $0) }.joined()) at \(offset)")
        case 3:
            guard !bytes.isEmpty else { return (bytes, "none") }
            let offset = rng.below(bytes.count)
            let value = UInt8(truncatingIfNeeded: rng.next())
            bytes[offset] = value
            return (bytes, "byte \(offset) = \(String(format: "%02X", value))")
        case 4:
            let ending: [UInt8] = rng.pick([[0x0D, 0x0A], [0x0D], [0xC2, 0x85], [0xE2, 0x80, 0xA8]])
            var out: [UInt8] = []
            for byte in bytes { if byte == 0x0A { out += ending } else { out.append(byte) } }
            return (out, "line endings \(ending.map { String(format: "%02X", $0) }.joined())")
        default:
            return ([0xEF, 0xBB, 0xBF] + bytes, "byte order mark")
        }
    }
}

// MARK: - Running cases

/// Runs one input in process or through the executable and judges the outcome.

/// Runs the executable with a timeout; output goes to files (no pipe can fill up).
package enum FuzzProcess {
    package struct Result {
        package var status: Int32
        package var signaled: Bool
        package var timedOut: Bool
        package var stdout: String
        package var stderr: String
    }

    package static func run(
        _ arguments: [String], executable: URL = TestSupport.executable, environment: [String: String]? = nil,
        timeout: TimeInterval
    ) throws -> Result {
        let fm = FileManager.default
        let base = fm.temporaryDirectory.appendingPathComponent("winnow-fuzz-out-\(UUID().uuidString)")
        let outURL = base.appendingPathExtension("out"), errURL = base.appendingPathExtension("err")
        _ = fm.createFile(atPath: outURL.path, contents: nil)
        _ = fm.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? fm.removeItem(at: outURL)
            try? fm.removeItem(at: errURL)
        }
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        defer {
            try? out.close()
            try? err.close()
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        var timedOut = false
        if done.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            kill(process.processIdentifier, SIGKILL)
            done.wait()
        }
        let stdout = String(decoding: (try? Data(contentsOf: outURL)) ?? Data(), as: UTF8.self)
        let stderr = String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self)
        return Result(
            status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal && !timedOut,
            timedOut: timedOut, stdout: stdout, stderr: stderr)
    }
}
