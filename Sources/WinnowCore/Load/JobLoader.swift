import Foundation
import Yams

/// Reads job files (docs/reference.md section 2) into ``Job`` values, checking everything that can be
/// checked without a database. Errors are ``WinnowError/invalidFile(_:_:)`` with the location
/// of the offending node.
public enum JobLoader {
    package static let rootKeys = ["version", "database", "schema", "allow_data_loss", "seed", "dedupe", "journal", "batch", "sqlite"]
    package static let ruleKeys = [
        "entity", "key", "hash", "hash_column", "normalize", "nulls", "winner", "merge",
        "references", "referenced_by", "archive", "max_delete_percent", "incremental", "max_group_size",
    ]
    package static let supportedVersions = 1...1

    /// Loads and checks a job file. Relative paths inside it are resolved against its folder.
    /// The job's ``Job/digest`` is of the bytes read here: a saved plan fingerprints the job
    /// as it was loaded, and the file is not read again.
    public static func load(path: String) throws -> Job {
        let (reader, root, bytes) = try YAMLReader.load(path: path)
        var job = try decode(root, reader: reader, baseDirectory: URL(fileURLWithPath: path).deletingLastPathComponent())
        job.digest = SavedPlan.sha256(bytes)
        return job
    }

    /// Decodes job text (for tests and tools); `file` names it in messages. The job's
    /// ``Job/digest`` is of the text's UTF-8 bytes.
    public static func decode(yaml: String, file: String = "job.yaml", baseDirectory: URL? = nil) throws -> Job {
        let reader = YAMLReader(file: file)
        let root = try reader.compose(yaml)
        var job = try decode(
            root, reader: reader,
            baseDirectory: baseDirectory ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        job.digest = SavedPlan.sha256(Data(yaml.utf8))
        return job
    }

    package static func decode(_ root: Node, reader: YAMLReader, baseDirectory: URL) throws -> Job {
        let map = try reader.mapping(root, "", allowed: rootKeys, what: "a job")
        let version = try reader.int(try map.required("version", what: "the job format version, 1"), "version", range: 0...Int.max)
        guard supportedVersions.contains(version) else {
            throw reader.error(
                try map.required("version", what: ""), "version",
                "unsupported job format version \(version); this winnow reads version \(supportedVersions.upperBound)")
        }
        var job = Job(file: reader.file, version: version)
        // Every section and every rule is read even after an error, so one pass reports all of them.
        let log = ErrorLog()
        func path(_ key: String) throws -> Located<String>? {
            guard let node = map.optional(key) else { return nil }
            let raw = try reader.string(node, key, what: "a file path")
            return Located(resolve(raw.value, against: baseDirectory), at: raw.location)
        }
        log.attempt {
            // A server's URL is kept as written; its password belongs in PGPASSWORD or ~/.pgpass.
            if let node = map.optional("database"), let raw = try? reader.string(node, "database", what: "a file path"),
                DatabaseURL.isPostgres(raw.value)
            {
                guard !DatabaseURL.hasPassword(raw.value) else {
                    throw WinnowError.invalidFile(
                        raw.location,
                        "database: the URL carries a password; a job file is shared and committed, so set PGPASSWORD (or ~/.pgpass) instead"
                    )
                }
                job.database = raw
            } else {
                job.database = try path("database")
            }
        }
        log.attempt { job.schema = try path("schema") }
        if let node = map.optional("allow_data_loss") { log.attempt { job.allowDataLoss = try reader.bool(node, "allow_data_loss") } }
        if let node = map.optional("seed") { log.attempt { job.seed = try decodeSeed(node, reader: reader, baseDirectory: baseDirectory) } }
        if let node = map.optional("batch") { log.attempt { job.batch = try decodeBatch(node, reader: reader) } }
        if let node = map.optional("journal") { log.attempt { job.journal = try decodeJournal(node, reader: reader) } }
        if let node = map.optional("sqlite") { log.attempt { job.sqlite = try decodeSQLite(node, reader: reader) } }
        if let node = map.optional("dedupe") {
            log.attempt {
                for (index, item) in try reader.list(node, "dedupe").enumerated() {
                    if let rule = decodeRule(item.0, index: index, reader: reader, log: log) { job.dedupe.append(rule) }
                }
            }
        }
        try log.throwIfAny()
        return job
    }

    package static func resolve(_ path: String, against base: URL) -> String {
        if path.hasPrefix("/") { return path }
        return base.appendingPathComponent(path).standardizedFileURL.path
    }

    package static func decodeSeed(_ node: Node, reader: YAMLReader, baseDirectory: URL) throws -> SeedSpec {
        let map = try reader.mapping(node, "seed", allowed: ["name", "from", "tables"], what: "the seed section")
        let name = try reader.string(try map.required("name", what: "the seed marker's name"), map.child("name"))
        let fromRaw = try reader.string(try map.required("from", what: "the seed database path"), map.child("from"), what: "a file path")
        let tables = try reader.list(
            try map.required("tables", what: "the tables to copy"), map.child("tables"),
            allowScalar: true, allowEmpty: false
        )
        .map { try reader.string($0.0, $0.1, what: "a table name") }
        try rejectDuplicates(tables, reader: reader, path: map.child("tables"), what: "table")
        return SeedSpec(
            name: name, from: Located(resolve(fromRaw.value, against: baseDirectory), at: fromRaw.location),
            tables: tables)
    }

    package static func decodeBatch(_ node: Node, reader: YAMLReader) throws -> BatchSettings {
        let map = try reader.mapping(node, "batch", allowed: ["size", "max_transaction_ms", "pause_ms"], what: "the batch section")
        var batch = BatchSettings()
        if let size = map.optional("size") { batch.size = try reader.int(size, map.child("size"), range: 1...1_000_000) }
        if let ms = map.optional("max_transaction_ms") {
            batch.maxTransactionMilliseconds = try reader.int(ms, map.child("max_transaction_ms"), range: 1...3_600_000)
        }
        if let ms = map.optional("pause_ms") { batch.pauseMilliseconds = try reader.int(ms, map.child("pause_ms"), range: 0...3_600_000) }
        return batch
    }

    package static func decodeJournal(_ node: Node, reader: YAMLReader) throws -> JournalSettings {
        let map = try reader.mapping(node, "journal", allowed: ["keep_days"], what: "the journal section")
        let days = try map.required("keep_days", what: "how many days the journal keeps a run's entries")
        let value = try reader.int(days, map.child("keep_days"), range: 0...36_500)
        return JournalSettings(keepDays: Located(value, at: reader.location(days)))
    }

    package static func decodeSQLite(_ node: Node, reader: YAMLReader) throws -> SQLiteSettings {
        let map = try reader.mapping(node, "sqlite", allowed: ["journal_mode"], what: "the sqlite section")
        var settings = SQLiteSettings()
        if let mode = map.optional("journal_mode") {
            settings.journalMode = try reader.word(
                mode, map.child("journal_mode"), as: SQLiteSettings.JournalMode.self, what: "journal mode")
        }
        return settings
    }

    package static func rejectDuplicates(_ names: [Located<String>], reader: YAMLReader, path: String, what: String) throws {
        var seen = Set<String>()
        for name in names where !seen.insert(name.value).inserted {
            throw WinnowError.invalidFile(name.location, "\(path): \(what) '\(name.value)' is listed twice")
        }
    }

    /// Reads one rule, reporting every error it has (each section is read even after an error).
    package static func decodeRule(_ node: Node, index: Int, reader: YAMLReader) throws -> DedupeRule {
        let log = ErrorLog()
        let rule = decodeRule(node, index: index, reader: reader, log: log)
        try log.throwIfAny()
        guard let rule else { throw WinnowError.internal("dedupe[\(index)] was not read and no error was reported") }
        return rule
    }

    /// Reads one rule, its errors into `log`: nil when it cannot be built (no entity or key); its other
    /// sections are still read and their errors recorded too.
    package static func decodeRule(_ node: Node, index: Int, reader: YAMLReader, log: ErrorLog) -> DedupeRule? {
        let path = "dedupe[\(index)]"
        guard let map = reader.lenientMapping(node, path, allowed: ruleKeys, what: "a dedupe rule", log: log) else { return nil }
        var entity: Located<String>?
        var key: [Located<String>]?
        log.attempt {
            entity = try reader.string(
                try map.required("entity", what: "the table to deduplicate"), map.child("entity"), what: "a table name")
        }
        var alternatives: [KeyAlternative] = []
        log.attempt {
            let keyNode = try map.required("key", what: "a column or a list of columns")
            if case .mapping = keyNode {
                alternatives = try decodeAny(keyNode, reader: reader, path: map.child("key"))
                // Every column the alternatives read, once, in order of first use.
                var seen = Set<String>()
                key = alternatives.flatMap(\.allColumns).filter { seen.insert($0.value).inserted }
                return
            }
            let columns = try reader.list(keyNode, map.child("key"), allowScalar: true, allowEmpty: false)
                .map { try reader.string($0.0, $0.1, what: "a column name") }
            try rejectDuplicates(columns, reader: reader, path: map.child("key"), what: "column")
            key = columns
        }
        let built = DedupeRule(index: index, location: reader.location(node), entity: entity ?? Located("", at: nil), key: key ?? [])
        var rule = built
        rule.anyOf = alternatives
        let keyColumns = key ?? []
        readOptions(map, into: &rule, key: keyColumns, reader: reader, log: log)
        if !rule.linksByAny, key != nil, let size = map.optional("max_group_size") {
            log.attempt {
                throw reader.error(
                    size, map.child("max_group_size"),
                    "max_group_size guards the groups of key: {any: ...}, where keys chain rows together; a rule with one key forms no chains"
                )
            }
        }
        if rule.linksByAny {
            // The rule's normalisers reach every alternative that has none of its own.
            for index in rule.anyOf.indices where !rule.anyOf[index].ownNormalize {
                let columns = rule.anyOf[index].allColumns.map(\.value)
                rule.anyOf[index].normalize = rule.normalize.filter { columns.contains($0.key) }
            }
            log.attempt {
                if rule.hash || rule.hashColumn != nil {
                    throw reader.error(
                        map.optional("hash") ?? map.optional("hash_column") ?? node, map.child("hash"),
                        "hash and hash_column are for a rule with one key, not for key: {any: ...}")
                }
                if rule.incremental, let flag = map.optional("incremental") {
                    throw reader.error(
                        flag, map.child("incremental"),
                        "incremental is for a rule with one key: a new row may join groups by any of the keys, so key: {any: ...} reads the whole table"
                    )
                }
            }
        }
        guard entity != nil, key != nil else { return nil }
        return rule
    }

    /// `key: {any: [ALTERNATIVE, ...]}`: two or more alternatives, each a column, a list of
    /// columns, or `{columns: [...], normalize: ..., similar: {columns: [...], jaro_winkler: X | levenshtein: N}}`.
    package static func decodeAny(_ node: Node, reader: YAMLReader, path: String) throws -> [KeyAlternative] {
        guard case let .mapping(mapping) = node, mapping.keys.contains(where: { $0.string == "any" }) else {
            let keys: [String]
            if case let .mapping(mapping) = node { keys = mapping.keys.compactMap(\.string) } else { keys = [] }
            throw reader.error(
                node, path,
                "expected a column, a list of columns or {any: [ALTERNATIVES]}, found a mapping of \(keys.joined(separator: ", "))")
        }
        let map = try reader.mapping(node, path, allowed: ["any"], what: "a key (a column, a list of columns, or {any: [...]})")
        let listNode = try map.required("any", what: "the alternative keys, two or more")
        let items = try reader.list(listNode, map.child("any"), allowEmpty: false)
        guard items.count >= 2 else {
            throw reader.error(
                listNode, map.child("any"), "any: needs two or more alternatives; a single key is written key: COLUMN or key: [COLUMNS]")
        }
        var seen: [String: String] = [:]
        return try items.map { item, itemPath in
            var alternative: KeyAlternative
            if case .mapping = item {
                let entry = try reader.mapping(item, itemPath, allowed: ["columns", "normalize", "similar"], what: "a key alternative")
                let columnsNode = try entry.required("columns", what: "the columns of this alternative")
                let columns = try reader.list(columnsNode, entry.child("columns"), allowScalar: true, allowEmpty: false)
                    .map { try reader.string($0.0, $0.1, what: "a column name") }
                alternative = KeyAlternative(location: reader.location(item), columns: columns)
                if let similarNode = entry.optional("similar") {
                    alternative.similar = try decodeSimilar(similarNode, reader: reader, path: entry.child("similar"))
                }
                try rejectDuplicates(alternative.allColumns, reader: reader, path: itemPath, what: "column")
                if let normalizeNode = entry.optional("normalize") {
                    alternative.normalize = try decodeNormalize(
                        normalizeNode, key: alternative.allColumns, reader: reader, path: entry.child("normalize"))
                    alternative.ownNormalize = true
                }
            } else {
                let columns = try reader.list(item, itemPath, allowScalar: true, allowEmpty: false)
                    .map { try reader.string($0.0, $0.1, what: "a column name") }
                try rejectDuplicates(columns, reader: reader, path: itemPath, what: "column")
                alternative = KeyAlternative(location: reader.location(item), columns: columns)
            }
            // The same alternative twice links nothing more; it is most likely a slip.
            let signature = alternative.label
            if let earlier = seen[signature] {
                throw reader.error(item, itemPath, "this alternative repeats \(earlier)")
            }
            seen[signature] = itemPath
            return alternative
        }
    }

    /// `similar: {columns: [...], jaro_winkler: X}` or `{columns: [...], levenshtein: N}`.
    package static func decodeSimilar(_ node: Node, reader: YAMLReader, path: String) throws -> Similarity {
        let map = try reader.mapping(node, path, allowed: ["columns", "jaro_winkler", "levenshtein"], what: "a similarity condition")
        let columnsNode = try map.required("columns", what: "the columns to compare")
        let columns = try reader.list(columnsNode, map.child("columns"), allowScalar: true, allowEmpty: false)
            .map { try reader.string($0.0, $0.1, what: "a column name") }
        let jaro = map.optional("jaro_winkler")
        let edits = map.optional("levenshtein")
        switch (jaro, edits) {
        case let (jaro?, nil):
            let threshold = try reader.number(jaro, map.child("jaro_winkler"), range: 0...1)
            return Similarity(columns: columns, measure: .jaroWinkler(threshold))
        case let (nil, edits?):
            let limit = try reader.int(edits, map.child("levenshtein"), range: 0...100)
            return Similarity(columns: columns, measure: .levenshtein(limit))
        default:
            throw reader.error(node, path, "write exactly one of jaro_winkler: X (0 to 1) or levenshtein: N (edits)")
        }
    }

    /// The optional sections of a rule, each read even when another has an error.
    static func readOptions(
        _ map: MappingReader, into rule: inout DedupeRule, key: [Located<String>], reader: YAMLReader, log: ErrorLog
    ) {
        log.attempt {
            if let node = map.optional("hash") { rule.hash = try reader.bool(node, map.child("hash")) }
        }
        log.attempt {
            if let node = map.optional("hash_column") {
                rule.hashColumn = try reader.string(node, map.child("hash_column"), what: "a column name")
                guard rule.hash else {
                    throw reader.error(node, map.child("hash_column"), "hash_column stores the key hash; it needs 'hash: true'")
                }
                if key.contains(where: { $0.value == rule.hashColumn?.value }) {
                    throw reader.error(node, map.child("hash_column"), "the hash column cannot also be a key column")
                }
            }
        }
        log.attempt {
            if let node = map.optional("normalize") {
                rule.normalize = try decodeNormalize(node, key: key, reader: reader, path: map.child("normalize"))
            }
        }
        log.attempt {
            if let node = map.optional("nulls") {
                rule.nulls = try reader.word(node, map.child("nulls"), as: NullPolicy.self, what: "NULL policy")
            }
        }
        log.attempt {
            if let node = map.optional("winner") { rule.winner = try decodeWinner(node, reader: reader, path: map.child("winner")) }
        }
        log.attempt {
            if let node = map.optional("merge") {
                let mergeMap = try reader.mapping(node, map.child("merge"), allowed: [], what: "the merge section")
                rule.merge = try mergeMap.entries.map { entry in
                    let column = Located(entry.key, at: reader.location(entry.keyNode))
                    guard !entry.key.isEmpty else { throw reader.error(entry.keyNode, mergeMap.path, "expected a column name") }
                    if key.contains(where: { $0.value == entry.key }) || rule.hashColumn?.value == entry.key {
                        throw reader.error(
                            entry.keyNode, mergeMap.child(entry.key),
                            "a key column cannot be merged: every row of a group already shares its value")
                    }
                    return try decodeMerge(entry.value, column: column, reader: reader, path: mergeMap.child(entry.key))
                }
            }
        }
        log.attempt {
            if let node = map.optional("references") {
                rule.references = try reader.word(node, map.child("references"), as: ReferencePolicy.self, what: "reference policy")
            }
        }
        log.attempt {
            if let node = map.optional("referenced_by") {
                rule.referencedBy = try reader.list(node, map.child("referenced_by"), allowScalar: true)
                    .map { try decodeColumnReference($0.0, reader: reader, path: $0.1) }
                var seen = Set<ColumnReference>()
                for ref in rule.referencedBy where !seen.insert(ref).inserted {
                    throw WinnowError.invalidFile(
                        ref.location, "\(map.child("referenced_by")): '\(ref.table).\(ref.column)' is listed twice")
                }
            }
        }
        log.attempt {
            if let node = map.optional("archive") { rule.archive = try reader.bool(node, map.child("archive")) }
        }
        log.attempt {
            if let node = map.optional("incremental") { rule.incremental = try reader.bool(node, map.child("incremental")) }
        }
        log.attempt {
            if let node = map.optional("max_group_size") {
                rule.maxGroupSize = try reader.int(node, map.child("max_group_size"), range: 2...1_000_000)
            }
        }
        log.attempt {
            if let node = map.optional("max_delete_percent") {
                rule.maxDeletePercent = try reader.number(node, map.child("max_delete_percent"), range: 0...100)
            }
        }
    }

    /// One `merge:` entry's strategy: a word, `{latest: COLUMN}`, or
    /// `{prefer: {column: COLUMN, order: [A, B, ...]}}`.
    package static func decodeMerge(_ node: Node, column: Located<String>, reader: YAMLReader, path: String) throws -> MergeRule {
        guard case .mapping = node else {
            let strategy = try reader.word(node, path, as: MergeStrategy.self, what: "merge strategy")
            guard !strategy.ranksByColumn else {
                throw reader.error(
                    node, path,
                    strategy == .latest
                        ? "latest needs the column that says which row is latest: {latest: COLUMN}"
                        : "prefer needs a column and an order: {prefer: {column: COLUMN, order: [A, B, ...]}}")
            }
            return MergeRule(column: column, strategy: strategy)
        }
        let map = try reader.mapping(node, path, allowed: ["latest", "prefer"], what: "a merge strategy with a column")
        guard map.entries.count == 1, let entry = map.entries.first else {
            throw reader.error(node, path, "write one of {latest: COLUMN} or {prefer: {column: COLUMN, order: [A, B, ...]}}")
        }
        if entry.key == "latest" {
            let by = try reader.string(entry.value, map.child("latest"), what: "a column name")
            return MergeRule(column: column, strategy: .latest, by: by)
        }
        let prefer = try reader.mapping(entry.value, map.child("prefer"), allowed: ["column", "order"], what: "prefer's column and order")
        let by = try reader.string(
            try prefer.required("column", what: "the column whose value ranks the rows"), prefer.child("column"), what: "a column name")
        let order = try reader.list(
            try prefer.required("order", what: "the values in order of preference"), prefer.child("order"), allowScalar: true,
            allowEmpty: false
        )
        .map { item, itemPath -> Located<String> in
            // Any scalar: a source named 1 or true is compared as the text it is written as.
            guard case let .scalar(scalar) = item else {
                throw reader.error(item, itemPath, "expected a value, found \(YAMLReader.describe(item))")
            }
            return Located(scalar.string, at: reader.location(item))
        }
        try rejectDuplicates(order, reader: reader, path: prefer.child("order"), what: "value")
        return MergeRule(column: column, strategy: .prefer, by: by, order: order.map(\.value))
    }

    package static func decodeNormalize(
        _ node: Node, key: [Located<String>], reader: YAMLReader, path: String
    ) throws -> [String: [Normalizer]] {
        func chain(_ node: Node, _ path: String) throws -> [Normalizer] {
            try reader.list(node, path, allowScalar: true).map { try reader.word($0.0, $0.1, as: Normalizer.self, what: "normaliser") }
        }
        if case .mapping = node {
            let map = try reader.mapping(node, path, allowed: [], what: "normalisers per column")
            var result: [String: [Normalizer]] = [:]
            for entry in map.entries {
                guard key.contains(where: { $0.value == entry.key }) else {
                    throw reader.error(
                        entry.keyNode, path,
                        "'\(entry.key)' is not a key column; key columns are \(key.map(\.value).joined(separator: ", "))")
                }
                result[entry.key] = try chain(entry.value, map.child(entry.key))
            }
            return result
        }
        let all = try chain(node, path)
        return Dictionary(uniqueKeysWithValues: key.map { ($0.value, all) })
    }

    package static func decodeWinner(_ node: Node, reader: YAMLReader, path: String) throws -> WinnerRule {
        switch node {
        case let .scalar(scalar) where scalar.tagName == .str:
            guard scalar.string == "most_complete" else {
                throw reader.error(
                    node, path,
                    "unknown winner shorthand '\(scalar.string)'; expected most_complete, {earliest: COLUMN}, {latest: COLUMN} or a list of COLUMN: asc|desc"
                )
            }
            return .mostComplete
        case .mapping:
            let map = try reader.mapping(node, path, allowed: ["earliest", "latest"], what: "a winner shorthand")
            guard map.entries.count == 1, let entry = map.entries.first else {
                throw reader.error(node, path, "write exactly one of earliest: COLUMN or latest: COLUMN")
            }
            let column = try reader.string(entry.value, map.child(entry.key), what: "a column name")
            return .ordered([WinnerTerm(column: column, descending: entry.key == "latest", nullsLast: true)])
        case .sequence:
            var seen = Set<String>()
            let terms: [WinnerTerm] = try reader.list(node, path).map { item, itemPath in
                let map = try reader.mapping(item, itemPath, allowed: [], what: "a winner term COLUMN: asc|desc")
                guard map.entries.count == 1, let entry = map.entries.first else {
                    throw reader.error(item, itemPath, "each winner term is one COLUMN: asc|desc")
                }
                guard !entry.key.isEmpty else { throw reader.error(entry.keyNode, itemPath, "expected a column name") }
                guard seen.insert(entry.key).inserted else {
                    throw reader.error(entry.keyNode, itemPath, "column '\(entry.key)' is already in the winner order")
                }
                let direction = try reader.string(entry.value, map.child(entry.key), what: "asc or desc")
                guard direction.value == "asc" || direction.value == "desc" else {
                    throw reader.error(entry.value, map.child(entry.key), "expected asc or desc, found '\(direction.value)'")
                }
                return WinnerTerm(column: Located(entry.key, at: reader.location(entry.keyNode)), descending: direction.value == "desc")
            }
            return .ordered(terms)
        default:
            throw reader.error(
                node, path,
                "expected most_complete, {earliest: COLUMN}, {latest: COLUMN} or a list of COLUMN: asc|desc, found \(YAMLReader.describe(node))"
            )
        }
    }

    package static func decodeColumnReference(_ node: Node, reader: YAMLReader, path: String) throws -> ColumnReference {
        if case .mapping = node {
            let map = try reader.mapping(node, path, allowed: ["table", "column"], what: "a column reference")
            let table = try reader.string(
                try map.required("table", what: "the referencing table"), map.child("table"), what: "a table name")
            let column = try reader.string(
                try map.required("column", what: "the referencing column"), map.child("column"), what: "a column name")
            return ColumnReference(table: table.value, column: column.value, location: reader.location(node))
        }
        let text = try reader.string(node, path, what: "TABLE.COLUMN")
        guard let dot = text.value.lastIndex(of: "."), dot != text.value.startIndex,
            text.value.index(after: dot) != text.value.endIndex
        else {
            throw reader.error(node, path, "expected TABLE.COLUMN (or {table: T, column: C}), found '\(text.value)'")
        }
        return ColumnReference(
            table: String(text.value[..<dot]), column: String(text.value[text.value.index(after: dot)...]),
            location: text.location)
    }
}
