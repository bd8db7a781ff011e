import Foundation

/// Finds the groups of a `key: {any: ...}` rule: rows that share any one alternative (or, for an
/// alternative with `similar:`, are close enough inside its block) are linked, and a group is a
/// connected component of those links (docs/reference.md, "Several keys in one rule").
///
/// The same on every engine: each alternative is read as a sorted stream of the rows whose values
/// it shares (the engine decides equality, as it does for a one-key rule's groups), the links are
/// joined by a union-find over row numbers here, and similarity is computed here
/// (``SimilarityMeasure/matches(_:_:)``), never by an engine's own functions. Every row of a group
/// of two or more lands in the rule's scratch table with its group and the key values it was
/// linked by; ``CompiledRule/componentExpression(alias:)`` reads it back as the rule's group, so
/// discovery, batches and their re-checks run as for any other rule.
package enum ComponentFinder {
    /// What the links of one rule came to.
    package struct Outcome: Sendable, Equatable {
        /// Rows read.
        package var rows = 0
        /// Groups of two or more rows.
        package var groups = 0
        /// Rows in those groups.
        package var members = 0
        /// The largest group's size.
        package var largest = 0
        /// The sizes of the largest groups, largest first (at most five).
        package var largestSizes: [Int] = []
        /// Per alternative, in the rule's order: the rows it joined to a group that the
        /// alternatives before it had not (the losers it adds).
        package var added: [Int] = []
    }

    /// Rows written to the scratch tables per statement.
    static let insertChunk = 4_000

    /// Finds the groups of `rule` and writes them to its scratch table. Refuses (exit 65,
    /// nothing written to the user's tables) a group larger than the rule's `max_group_size`.
    @discardableResult
    package static func build(_ rule: CompiledRule, session: any DatabaseSession, enforcingLimit: Bool = true) throws -> Outcome {
        guard let key = rule.components else { return Outcome() }
        let dialect = rule.dialect
        let rowsTable = key.table + "_rows"
        let linksTable = key.table + "_links"
        let ids = rule.identityExpressions(alias: "t")
        let idNames = ids.indices.map { "winnow_i\($0)" }
        let valueNames = rule.keyColumns.indices.map { "winnow_a\($0)" }
        // The scratch columns take the types of the columns they copy (SQLite's rowid: INTEGER).
        let idTypes: [String?]
        switch rule.identity {
        case .rowid: idTypes = ["INTEGER"]
        case let .primaryKey(columns): idTypes = columns.map { rule.columnTypes[$0] }
        }
        let idColumns = Array(zip(idNames, idTypes)).map { (name: $0, type: $1) }
        let valueColumns = Array(zip(valueNames, rule.keyColumns.map { rule.columnTypes[$0] })).map { (name: $0, type: $1) }
        let number: [(name: String, type: String?)] = [("winnow_n", "INTEGER")]
        let position = Dictionary(uniqueKeysWithValues: rule.keyColumns.enumerated().map { ($1, $0) })
        var outcome = Outcome()
        var links = UnionFind(count: 0)
        try session.scratch {
            // Every row once, numbered, with its identity and the values of every key column.
            let copied =
                (ids.enumerated().map { "\($1) AS winnow_i\($0)" }
                + rule.keyColumns.enumerated().map { "t.\($1.sqlIdentifier) AS winnow_a\($0)" })
                .joined(separator: ", ")
            for sql in dialect.createNumberedScratchTable(
                rowsTable, columns: idColumns + valueColumns, from: "SELECT \(copied) FROM \(rule.qualifiedTable) AS t")
            {
                try session.execute(sql, [])
            }
            let rows = try session.value("SELECT count(*) FROM \(dialect.scratchTable(rowsTable))").int64 ?? 0
            outcome.rows = Int(rows)
            links = UnionFind(count: outcome.rows)
            for alternative in key.alternatives {
                let joined = links.joins
                try link(alternative, in: rowsTable, rule: rule, position: position, session: session, links: &links)
                outcome.added.append(links.joins - joined)
            }
            // The groups: every row of two or more, under its smallest row number (sizes by root,
            // one integer per row: bounded memory whatever the number of groups).
            var sizes = [Int32](repeating: 0, count: outcome.rows + 1)
            for row in stride(from: 1, through: outcome.rows, by: 1) { sizes[Int(links.root(Int32(row)))] += 1 }
            var largest: [Int] = []
            var biggest: (root: Int32, size: Int32) = (0, 0)
            for (root, size) in sizes.enumerated() where size > 1 {
                outcome.groups += 1
                outcome.members += Int(size)
                if size > biggest.size { biggest = (Int32(root), size) }
                if largest.count < 5 || Int(size) > largest[largest.count - 1] {
                    largest.append(Int(size))
                    largest.sort(by: >)
                    if largest.count > 5 { largest.removeLast() }
                }
            }
            outcome.largestSizes = largest
            outcome.largest = Int(biggest.size)
            if enforcingLimit, let limit = key.maxGroupSize, outcome.largest > limit {
                throw try refusal(
                    rule, root: biggest.root, size: outcome.largest, limit: limit, links: &links, rowsTable: rowsTable, session: session)
            }
            for sql in dialect.createScratchTable(
                linksTable, columns: number + [("winnow_c", "INTEGER")], key: ["winnow_n"],
                from: "SELECT winnow_n, winnow_n FROM \(dialect.scratchTable(rowsTable)) WHERE 1 = 0")
            {
                try session.execute(sql, [])
            }
            var pairs: [SQLValue] = []
            func flush() throws {
                guard !pairs.isEmpty else { return }
                let tuples = Array(repeating: "(?, ?)", count: pairs.count / 2).joined(separator: ", ")
                try session.execute("INSERT INTO \(dialect.scratchTable(linksTable)) (winnow_n, winnow_c) VALUES \(tuples)", pairs)
                pairs.removeAll(keepingCapacity: true)
            }
            for row in stride(from: 1, through: outcome.rows, by: 1) {
                let root = links.root(Int32(row))
                guard sizes[Int(root)] > 1 else { continue }
                pairs += [.integer(Int64(row)), .integer(Int64(root))]
                if pairs.count >= 2 * insertChunk { try flush() }
            }
            try flush()
            let selected = (idNames + valueNames).map { "r.\($0)" }.joined(separator: ", ")
            for sql in dialect.createScratchTable(
                key.table, columns: idColumns + valueColumns + [("winnow_c", "INTEGER")], key: idNames,
                from: """
                    SELECT \(selected), k.winnow_c FROM \(dialect.scratchTable(rowsTable)) AS r \
                    JOIN \(dialect.scratchTable(linksTable)) AS k ON k.winnow_n = r.winnow_n
                    """)
            {
                try session.execute(sql, [])
            }
            try session.execute("DROP TABLE IF EXISTS \(dialect.scratchTable(linksTable))", [])
            try session.execute("DROP TABLE IF EXISTS \(dialect.scratchTable(rowsTable))", [])
        }
        return outcome
    }

    /// Links the rows that share `alternative`: for an exact key, each row to the first row of
    /// its partition (one window; rows alone in theirs never leave the engine); for a similarity
    /// condition, every pair of a block whose compared text is close enough.
    static func link(
        _ alternative: ComponentKey.Alternative, in rowsTable: String, rule: CompiledRule, position: [String: Int],
        session: any DatabaseSession, links: inout UnionFind
    ) throws {
        let dialect = rule.dialect
        func value(_ column: String) -> String { "c.winnow_a\(position[column] ?? 0)" }
        func normalized(_ column: String) -> String {
            dialect.normalized(value(column), by: alternative.normalizers[column, default: []])
        }
        func term(_ column: String) -> String {
            let plain = alternative.normalizers[column, default: []].isEmpty
            return dialect.groupTerm(normalized(column), type: plain ? rule.columnTypes[column] : "text")
        }
        let compared = alternative.similar?.columns ?? []
        // A NULL in any column of the alternative links nothing for that row.
        let present = (alternative.columns + compared).map { "\(value($0)) IS NOT NULL" }.joined(separator: " AND ")
        let partition = alternative.columns.map(term).joined(separator: ", ")
        let table = dialect.scratchTable(rowsTable)
        let pairs = rowsTable + "_pairs"
        defer { _ = try? session.execute("DROP TABLE IF EXISTS \(dialect.scratchTable(pairs))", []) }
        guard let similar = alternative.similar else {
            // Each row that shares the alternative with a smaller row, beside the smallest, into a
            // scratch table read a page at a time: memory stays bounded whatever the rows.
            for sql in dialect.createScratchTable(
                pairs, columns: [("winnow_a", "INTEGER"), ("winnow_b", "INTEGER")], key: ["winnow_a", "winnow_b"],
                from: """
                    SELECT s.a, s.b FROM (
                        SELECT min(c.winnow_n) OVER (PARTITION BY \(partition)) AS a, c.winnow_n AS b FROM \(table) AS c WHERE \(present)
                    ) AS s WHERE s.a <> s.b ORDER BY s.a, s.b
                    """)
            {
                try session.execute(sql, [])
            }
            try forEachPair(pairs, session: session) { a, b, _ in links.union(Int32(a), Int32(b)) }
            return
        }
        let texts = similar.columns.enumerated().map { "\(normalized($1)) AS t\($0)" }
        let textColumns = similar.columns.indices.map { (name: "winnow_t\($0)", type: String?.none) }
        // The rows of every block of two or more, by block, into a scratch table read a page at
        // a time; a block may span pages.
        for sql in dialect.createScratchTable(
            pairs, columns: [("winnow_a", "INTEGER"), ("winnow_b", "INTEGER")] + textColumns, key: ["winnow_a", "winnow_b"],
            from: """
                SELECT s.a, s.b, \(similar.columns.indices.map { "s.t\($0)" }.joined(separator: ", ")) FROM (
                    SELECT min(c.winnow_n) OVER w AS a, count(*) OVER w AS k, c.winnow_n AS b, \(texts.joined(separator: ", "))
                    FROM \(table) AS c WHERE \(present) WINDOW w AS (PARTITION BY \(partition))
                ) AS s WHERE s.k > 1 ORDER BY s.a, s.b
                """)
        {
            try session.execute(sql, [])
        }
        var block: Int64?
        var members: [(row: Int32, text: [Unicode.Scalar])] = []
        func compareBlock() {
            for i in members.indices {
                for j in members.indices where j > i && links.root(members[i].row) != links.root(members[j].row) {
                    if similar.measure.matches(members[i].text, members[j].text) { links.union(members[i].row, members[j].row) }
                }
            }
            members.removeAll(keepingCapacity: true)
        }
        try forEachPair(pairs, session: session) { a, b, row in
            if a != block {
                compareBlock()
                block = a
            }
            // The compared columns' values, joined by one space (docs/reference.md).
            let text = row.values.dropFirst(2).compactMap(\.string).joined(separator: " ")
            members.append((Int32(b), Array(text.unicodeScalars)))
        }
        compareBlock()
    }

    /// Every row of the scratch table `pairs` (keyed by `winnow_a`, `winnow_b`) in key order,
    /// read ``pageRows`` at a time (memory stays bounded whatever the rows): `body` gets each
    /// row's two numbers and the whole row.
    static func forEachPair(
        _ pairs: String, session: any DatabaseSession, _ body: (Int64, Int64, SQLRow) throws -> Void
    ) throws {
        let table = session.dialect.scratchTable(pairs)
        var after: (Int64, Int64) = (0, 0)
        while true {
            let page = try session.rows(
                """
                SELECT * FROM \(table) WHERE winnow_a > ? OR (winnow_a = ? AND winnow_b > ?)
                ORDER BY winnow_a, winnow_b LIMIT \(pageRows)
                """, [.integer(after.0), .integer(after.0), .integer(after.1)])
            for row in page {
                guard let a = row[0].int64, let b = row[1].int64 else { continue }
                try body(a, b, row)
                after = (a, b)
            }
            if page.count < pageRows { return }
        }
    }

    /// Rows of a scratch table read per statement.
    nonisolated(unsafe) package static var pageRows = 50_000

    /// The refusal of a group larger than `max_group_size`, naming a few of its rows' key values.
    static func refusal(
        _ rule: CompiledRule, root: Int32, size: Int, limit: Int, links: inout UnionFind, rowsTable: String,
        session: any DatabaseSession
    ) throws -> WinnowError {
        var sample: [Int64] = []
        for row in 1...links.count where links.root(Int32(row)) == root {
            sample.append(Int64(row))
            if sample.count == 3 { break }
        }
        let values = rule.keyColumns.indices.map { "winnow_a\($0)" }.joined(separator: ", ")
        let rows = try session.rows(
            "SELECT \(values) FROM \(rule.dialect.scratchTable(rowsTable)) WHERE winnow_n IN (\(sample.map(String.init).joined(separator: ", "))) ORDER BY winnow_n",
            [])
        let described = rows.map { row in
            "(" + zip(rule.keyColumns, row.values).map { "\($0) = \($1.quotedLiteral)" }.joined(separator: ", ") + ")"
        }
        return .guardRefused(
            GuardRefusal(
                .groupSize,
                """
                \(rule.rule.keyPath) (\(rule.table)): the keys link \(size) rows into one group, more than max_group_size \(limit); \
                rows of it: \(described.joined(separator: "; ")); a key that many rows share by accident (a placeholder value, \
                a shared phone number) chains unrelated records: tighten the keys, or raise max_group_size if the group is real
                """))
    }
}

/// A union-find over row numbers 1...count: each set's root is its smallest row number, so the
/// groups are named the same whatever order the links arrive in.
struct UnionFind {
    private var parent: [Int32]
    /// Unions that joined two different sets.
    private(set) var joins = 0
    var count: Int { parent.count - 1 }

    init(count: Int) { parent = Array(0...Int32(count)) }

    mutating func root(_ row: Int32) -> Int32 {
        var node = row
        while parent[Int(node)] != node {
            let up = parent[Int(node)]
            parent[Int(node)] = parent[Int(up)]
            node = up
        }
        return node
    }

    mutating func union(_ a: Int32, _ b: Int32) {
        let x = root(a)
        let y = root(b)
        guard x != y else { return }
        joins += 1
        if x < y { parent[Int(y)] = x } else { parent[Int(x)] = y }
    }
}
