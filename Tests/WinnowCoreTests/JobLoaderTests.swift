import Foundation
import XCTest
@testable import WinnowCore
import WinnowTestFiles

/// Job files (docs/reference.md section 2): every key decodes to the right value, defaults are the
/// documented ones, and every mistake is an exit-65 `FILE:LINE:COLUMN: key.path: message`
/// pointing at the node that caused it.
final class JobLoaderTests: XCTestCase {

    // MARK: Helpers

    /// Line and column (both 1-based, columns counted in Unicode scalars as libyaml does) of
    /// the `occurrence`-th appearance of `needle` in `text`.
    private func position(
        of needle: String, in text: String, occurrence: Int = 1,
        file: StaticString = #filePath, line: UInt = #line
    ) -> (line: Int, column: Int) {
        var searchStart = text.startIndex
        var found: Range<String.Index>?
        for _ in 0..<occurrence {
            guard let range = text.range(of: needle, range: searchStart..<text.endIndex) else {
                XCTFail("test bug: '\(needle)' occurs fewer than \(occurrence) times", file: file, line: line)
                return (0, 0)
            }
            found = range
            searchStart = range.upperBound
        }
        let before = text[..<found!.lowerBound]
        let lineNumber = before.filter { $0 == "\n" }.count + 1
        let lineStart = before.lastIndex(of: "\n").map { text.index(after: $0) } ?? text.startIndex
        let column = text[lineStart..<found!.lowerBound].unicodeScalars.count + 1
        return (lineNumber, column)
    }

    /// Decodes `yaml`, expects `WinnowError.invalidFile` at the given line and column, with a
    /// message that starts with `path: ` (when path is not empty) and mentions every fragment.
    private func assertInvalid(
        _ yaml: String, line expectedLine: Int, column expectedColumn: Int,
        path: String, mentions fragments: [String] = [],
        file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            let job = try JobLoader.decode(yaml: yaml, file: "job.yaml", baseDirectory: URL(fileURLWithPath: "/srv/jobs"))
            XCTFail("expected an invalid-file error, decoded a job with \(job.dedupe.count) rules", file: file, line: line)
        } catch let error as WinnowError {
            XCTAssertEqual(error.exitCode, 65, "\(error)", file: file, line: line)
            guard case let .invalidFile(location, message) = error else {
                return XCTFail("expected .invalidFile, got \(error)", file: file, line: line)
            }
            guard let location else { return XCTFail("no location in \(error)", file: file, line: line) }
            XCTAssertEqual(location.file, "job.yaml", file: file, line: line)
            XCTAssertEqual(location.line, expectedLine, "line of: \(message)", file: file, line: line)
            XCTAssertEqual(location.column, expectedColumn, "column of: \(message)", file: file, line: line)
            if !path.isEmpty {
                XCTAssertTrue(message.hasPrefix("\(path): "), "message should name \(path): \(message)", file: file, line: line)
            }
            for fragment in fragments {
                XCTAssertTrue(message.contains(fragment), "message should mention '\(fragment)': \(message)", file: file, line: line)
            }
        } catch {
            XCTFail("expected WinnowError, got \(error)", file: file, line: line)
        }
    }

    /// Like `assertInvalid(_:line:column:...)`, with the location given as the place of `needle`.
    private func assertInvalid(
        _ yaml: String, at needle: String, occurrence: Int = 1, path: String,
        mentions fragments: [String] = [], file: StaticString = #filePath, line: UInt = #line
    ) {
        let place = position(of: needle, in: yaml, occurrence: occurrence, file: file, line: line)
        assertInvalid(yaml, line: place.line, column: place.column, path: path, mentions: fragments, file: file, line: line)
    }

    private func decode(_ yaml: String, file: StaticString = #filePath, line: UInt = #line) throws -> Job {
        try JobLoader.decode(yaml: yaml, file: "job.yaml", baseDirectory: URL(fileURLWithPath: "/srv/jobs"))
    }

    private func terms(_ winner: WinnerRule) -> [WinnerTerm]? {
        if case let .ordered(terms) = winner { return terms }
        return nil
    }

    // MARK: A full job

    private let fullJob = """
        version: 1
        database: ../data/contacts.sqlite
        schema: ../schemas/contacts.yaml
        allow_data_loss: true
        seed:
          name: initial-contacts
          from: ../seeds/contacts.sqlite
          tables: [contacts, companies]
        dedupe:
          - entity: contacts
            key: [email, phone]
            hash: true
            hash_column: key_hash
            normalize: {email: [trim, lowercase], phone: digits_only}
            nulls: equal
            winner:
              - created_at: asc
              - id: desc
            merge:
              nickname: fill_null
              visits: sum
              first_seen: min
              last_seen: max
              bio: longest
              tags: concat
            references: restrict
            referenced_by:
              - orders.customer_id
              - {table: notes, column: contact_id}
            archive: false
            max_delete_percent: 12.5
          - entity: companies
            key: name
            normalize: [trim, collapse_whitespace, nfkc]
            winner: {earliest: founded}
          - entity: tags
            key: label
            winner: {latest: updated_at}
            referenced_by: post_tags.tag_id
          - entity: people
            key: [first_name, last_name]
            normalize: lowercase
            winner: most_complete
            max_delete_percent: 40
        batch:
          size: 100
          max_transaction_ms: 50
          pause_ms: 10

        """

    func testFullJobDecodesEveryKey() throws {
        let job = try decode(fullJob)
        XCTAssertEqual(job.file, "job.yaml")
        XCTAssertEqual(job.version, 1)
        // Paths are relative to the job file's folder (/srv/jobs here).
        XCTAssertEqual(job.database?.value, "/srv/data/contacts.sqlite")
        XCTAssertEqual(job.schema?.value, "/srv/schemas/contacts.yaml")
        XCTAssertTrue(job.allowDataLoss)

        let seed = try XCTUnwrap(job.seed)
        XCTAssertEqual(seed.name.value, "initial-contacts")
        XCTAssertEqual(seed.from.value, "/srv/seeds/contacts.sqlite")
        XCTAssertEqual(seed.tables.map(\.value), ["contacts", "companies"])

        XCTAssertEqual(job.batch, BatchSettings(size: 100, maxTransactionMilliseconds: 50, pauseMilliseconds: 10))
        XCTAssertEqual(job.dedupe.count, 4)
        XCTAssertEqual(job.dedupe.map(\.index), [0, 1, 2, 3])
        XCTAssertEqual(job.dedupe.map(\.keyPath), ["dedupe[0]", "dedupe[1]", "dedupe[2]", "dedupe[3]"])
    }

    func testFullJobFirstRule() throws {
        let rule = try decode(fullJob).dedupe[0]
        XCTAssertEqual(rule.entity.value, "contacts")
        XCTAssertEqual(rule.entity.location, SourceLocation(file: "job.yaml", line: 10, column: 13))
        XCTAssertEqual(rule.key.map(\.value), ["email", "phone"])
        XCTAssertEqual(rule.key[1].location, SourceLocation(file: "job.yaml", line: 11, column: 18))
        XCTAssertTrue(rule.hash)
        XCTAssertEqual(rule.hashColumn?.value, "key_hash")
        // Per-column map: each column keeps its own chain, in the order written.
        XCTAssertEqual(rule.normalize, ["email": [.trim, .lowercase], "phone": [.digitsOnly]])
        XCTAssertEqual(rule.normalizers(for: "email"), [.trim, .lowercase])
        XCTAssertEqual(rule.nulls, .equal)

        let winner = try XCTUnwrap(terms(rule.winner), "a list of COLUMN: asc|desc is an ordered winner")
        XCTAssertEqual(winner.map(\.column.value), ["created_at", "id"])
        XCTAssertEqual(winner.map(\.descending), [false, true])
        XCTAssertEqual(winner.map(\.nullsLast), [false, false], "plain asc/desc keeps SQLite's NULLs-first order")

        XCTAssertEqual(rule.merge.map(\.column.value), ["nickname", "visits", "first_seen", "last_seen", "bio", "tags"])
        XCTAssertEqual(rule.merge.map(\.strategy), [.fillNull, .sum, .min, .max, .longest, .concat])
        XCTAssertEqual(rule.merge[0].column.location, SourceLocation(file: "job.yaml", line: 20, column: 7))

        XCTAssertEqual(rule.references, .restrict)
        XCTAssertEqual(
            rule.referencedBy,
            [
                ColumnReference(table: "orders", column: "customer_id"),
                ColumnReference(table: "notes", column: "contact_id"),
            ])
        XCTAssertEqual(rule.referencedBy.map(\.table), ["orders", "notes"])
        XCTAssertEqual(rule.referencedBy.map(\.column), ["customer_id", "contact_id"])
        XCTAssertFalse(rule.archive)
        XCTAssertEqual(rule.maxDeletePercent, 12.5)
    }

    func testFullJobShorthandRules() throws {
        let job = try decode(fullJob)

        let companies = job.dedupe[1]
        XCTAssertEqual(companies.key.map(\.value), ["name"], "a single column may be written without brackets")
        XCTAssertEqual(companies.normalize, ["name": [.trim, .collapseWhitespace, .nfkc]])
        let earliest = try XCTUnwrap(terms(companies.winner))
        XCTAssertEqual(earliest.count, 1)
        XCTAssertEqual(earliest[0].column.value, "founded")
        XCTAssertFalse(earliest[0].descending, "earliest is ascending")
        XCTAssertTrue(earliest[0].nullsLast, "a row without a date is not the earliest")

        let tags = job.dedupe[2]
        let latest = try XCTUnwrap(terms(tags.winner))
        XCTAssertEqual(latest.count, 1)
        XCTAssertEqual(latest[0].column.value, "updated_at")
        XCTAssertTrue(latest[0].descending, "latest is descending")
        XCTAssertTrue(latest[0].nullsLast)
        XCTAssertEqual(
            tags.referencedBy, [ColumnReference(table: "post_tags", column: "tag_id")],
            "one TABLE.COLUMN may be written without brackets")

        let people = job.dedupe[3]
        XCTAssertEqual(people.key.map(\.value), ["first_name", "last_name"])
        // A list (or a single normaliser) applies to every key column.
        XCTAssertEqual(people.normalize, ["first_name": [.lowercase], "last_name": [.lowercase]])
        guard case .mostComplete = people.winner else { return XCTFail("expected most_complete, got \(people.winner)") }
        XCTAssertEqual(people.maxDeletePercent, 40)
    }

    func testDefaults() throws {
        let job = try decode(
            """
            version: 1
            dedupe:
              - entity: contacts
                key: email
            """)
        XCTAssertNil(job.database)
        XCTAssertNil(job.schema)
        XCTAssertFalse(job.allowDataLoss, "dropping data needs an explicit allow_data_loss: true")
        XCTAssertNil(job.seed)
        XCTAssertEqual(job.batch.size, 500)
        XCTAssertEqual(job.batch.maxTransactionMilliseconds, 250)
        XCTAssertEqual(job.batch.pauseMilliseconds, 0)

        let rule = try XCTUnwrap(job.dedupe.first)
        XCTAssertFalse(rule.hash)
        XCTAssertNil(rule.hashColumn)
        XCTAssertEqual(rule.normalize.values.flatMap { $0 }, [], "no normalisers unless asked")
        XCTAssertEqual(rule.nulls, .distinct)
        XCTAssertEqual(terms(rule.winner)?.count, 0, "without winner only the content tie-break decides")
        XCTAssertTrue(rule.merge.isEmpty)
        XCTAssertEqual(rule.references, .repoint)
        XCTAssertTrue(rule.referencedBy.isEmpty)
        XCTAssertTrue(rule.archive, "archive defaults to true so every run can be restored")
        XCTAssertNil(rule.maxDeletePercent)
    }

    func testPartialBatchKeepsOtherDefaults() throws {
        let job = try decode(
            """
            version: 1
            batch:
              pause_ms: 25
            """)
        XCTAssertEqual(job.batch, BatchSettings(size: 500, maxTransactionMilliseconds: 250, pauseMilliseconds: 25))
        XCTAssertTrue(job.dedupe.isEmpty)
    }

    func testExplicitNullMeansAbsent() throws {
        // The contract's own example writes `hash_column: null`.
        let job = try decode(
            """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                hash: false
                hash_column: null
            """)
        XCTAssertNil(job.dedupe[0].hashColumn)
    }

    func testAbsolutePathsAreKept() throws {
        let job = try decode(
            """
            version: 1
            database: /var/db/app.sqlite
            """)
        XCTAssertEqual(job.database?.value, "/var/db/app.sqlite")
    }

    // MARK: Unknown keys

    func testUnknownRootKey() {
        assertInvalid(
            """
            version: 1
            dedupe: []
            colour: blue
            """, line: 3, column: 1, path: "", mentions: ["unknown key 'colour'"])
    }

    func testUnknownRuleKeyInSecondRule() {
        let yaml = """
            version: 1
            dedupe:
              - entity: a
                key: x
              - entity: contacts
                key: email
                archiv: true
            """
        assertInvalid(yaml, line: 7, column: 5, path: "dedupe[1]", mentions: ["unknown key 'archiv'"])
    }

    func testUnknownBatchKey() {
        assertInvalid(
            """
            version: 1
            batch:
              size: 10
              pause: 5
            """, line: 4, column: 3, path: "batch", mentions: ["unknown key 'pause'"])
    }

    func testUnknownSeedKey() {
        let yaml = """
            version: 1
            seed: {name: s, from: x.sqlite, tables: [t], table: [u]}
            """
        assertInvalid(yaml, at: "table: [u]", path: "seed", mentions: ["unknown key 'table'"])
        XCTAssertEqual(position(of: "table: [u]", in: yaml).column, 46)  // the helper agrees with counting by hand
    }

    func testUnknownWinnerShorthandKey() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                winner: {first: created_at}
            """
        assertInvalid(yaml, at: "first", path: "dedupe[0].winner", mentions: ["first"])
    }

    func testUnknownReferenceKey() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                referenced_by:
                  - {table: orders, col: customer_id}
            """
        assertInvalid(yaml, at: "col:", path: "dedupe[0].referenced_by[0]", mentions: ["unknown key 'col'"])
    }

    // MARK: Wrong types

    func testStringWhereIntegerVersion() {
        assertInvalid(
            """
            version: "1"
            dedupe: []
            """, line: 1, column: 10, path: "version", mentions: ["integer"])
    }

    func testStringWhereIntegerBatchSize() {
        let yaml = """
            version: 1
            batch:
              size: lots
            """
        assertInvalid(yaml, line: 3, column: 9, path: "batch.size", mentions: ["integer", "lots"])
    }

    func testBatchSizeOutOfRange() {
        let yaml = """
            version: 1
            batch:
              size: 0
            """
        assertInvalid(yaml, line: 3, column: 9, path: "batch.size")
    }

    func testListWhereBool() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                archive: [true]
            """
        assertInvalid(yaml, at: "[true]", path: "dedupe[0].archive", mentions: ["list"])
    }

    func testQuotedStringWhereBool() {
        assertInvalid(
            """
            version: 1
            allow_data_loss: "true"
            """, line: 2, column: 18, path: "allow_data_loss")
    }

    func testIntegerWhereTableName() {
        let yaml = """
            version: 1
            dedupe:
              - entity: 42
                key: email
            """
        assertInvalid(yaml, line: 3, column: 13, path: "dedupe[0].entity", mentions: ["42"])
    }

    func testMappingWhereKeyList() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: {email: 1}
            """
        assertInvalid(yaml, at: "{email", path: "dedupe[0].key", mentions: ["mapping"])
    }

    func testEmptyKeyList() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: []
            """
        assertInvalid(yaml, at: "[]", path: "dedupe[0].key")
    }

    func testMappingWhereDedupeList() {
        let yaml = """
            version: 1
            dedupe:
              entity: contacts
              key: email
            """
        assertInvalid(yaml, line: 3, column: 3, path: "dedupe", mentions: ["list"])
    }

    func testRootThatIsNotAMapping() {
        assertInvalid("- version: 1\n", line: 1, column: 1, path: "", mentions: ["mapping"])
    }

    func testMaxDeletePercentNotANumber() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                max_delete_percent: forty
            """
        assertInvalid(yaml, at: "forty", path: "dedupe[0].max_delete_percent", mentions: ["number"])
    }

    func testMaxDeletePercentAboveHundred() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                max_delete_percent: 150
            """
        assertInvalid(yaml, at: "150", path: "dedupe[0].max_delete_percent", mentions: ["150"])
    }

    // MARK: Missing required keys

    func testMissingVersion() {
        // The error points at the mapping that lacks the key: the root, after the comment line.
        assertInvalid(
            """
            # contacts job
            database: contacts.sqlite
            """, line: 2, column: 1, path: "", mentions: ["missing required key 'version'"])
    }

    func testMissingEntity() {
        let yaml = """
            version: 1
            dedupe:
              - entity: a
                key: x
              - key: email
                nulls: equal
            """
        assertInvalid(yaml, line: 5, column: 5, path: "dedupe[1]", mentions: ["missing required key 'entity'"])
    }

    func testMissingKey() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                winner: most_complete
            """
        assertInvalid(yaml, line: 3, column: 5, path: "dedupe[0]", mentions: ["missing required key 'key'"])
    }

    func testNullKeyCountsAsMissing() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: null
            """
        assertInvalid(yaml, line: 3, column: 5, path: "dedupe[0]", mentions: ["'key'"])
    }

    func testMissingSeedTables() {
        let yaml = """
            version: 1
            seed:
              name: first
              from: seed.sqlite
            """
        assertInvalid(yaml, line: 3, column: 3, path: "seed", mentions: ["missing required key 'tables'"])
    }

    // MARK: Bad words

    func testBadNormaliserInList() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                normalize: [trim, uppercase]
            """
        assertInvalid(yaml, at: "uppercase", path: "dedupe[0].normalize[1]", mentions: ["uppercase", "lowercase"])
    }

    func testBadNormaliserInPerColumnMap() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: [email, phone]
                normalize:
                  email: [trim]
                  phone: [digits]
            """
        assertInvalid(yaml, at: "digits]", path: "dedupe[0].normalize.phone[0]", mentions: ["digits"])
    }

    func testNormaliseMapNamesANonKeyColumn() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                normalize: {phone: trim}
            """
        assertInvalid(yaml, at: "phone", path: "dedupe[0].normalize", mentions: ["phone"])
    }

    func testBadMergeStrategy() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                merge:
                  phone: fill_null
                  visits: average
            """
        assertInvalid(yaml, at: "average", path: "dedupe[0].merge.visits", mentions: ["average", "sum"])
    }

    func testBadWinnerDirection() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                winner:
                  - created_at: asc
                  - id: ascending
            """
        assertInvalid(yaml, at: "ascending", path: "dedupe[0].winner[1].id", mentions: ["asc", "desc"])
    }

    func testBadWinnerShorthand() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                winner: newest
            """
        assertInvalid(yaml, at: "newest", path: "dedupe[0].winner", mentions: ["newest"])
    }

    func testWinnerShorthandWithTwoEntries() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                winner: {earliest: a, latest: b}
            """
        assertInvalid(yaml, at: "{earliest", path: "dedupe[0].winner")
    }

    func testBadNullsValue() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                nulls: same
            """
        assertInvalid(yaml, at: "same", path: "dedupe[0].nulls", mentions: ["same", "distinct", "equal"])
    }

    func testBooleanNullsValue() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                nulls: true
            """
        assertInvalid(yaml, at: "true", path: "dedupe[0].nulls")
    }

    func testBadReferencePolicy() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                references: cascade
            """
        assertInvalid(yaml, at: "cascade", path: "dedupe[0].references", mentions: ["cascade"])
    }

    func testReferencedByWithoutColumn() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                referenced_by: [orders.customer_id, notes]
            """
        assertInvalid(yaml, at: "notes", path: "dedupe[0].referenced_by[1]", mentions: ["notes"])
    }

    // MARK: Rule consistency

    func testDuplicateKeyColumn() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: [email, phone, email]
            """
        // The second 'email' is the offending node.
        assertInvalid(yaml, at: "email]", path: "dedupe[0].key", mentions: ["email"])
    }

    func testHashColumnWithoutHash() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                hash_column: key_hash
            """
        assertInvalid(yaml, at: "key_hash", path: "dedupe[0].hash_column", mentions: ["hash: true"])
    }

    func testHashColumnWithHashFalse() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                hash: false
                hash_column: key_hash
            """
        assertInvalid(yaml, at: "key_hash", path: "dedupe[0].hash_column")
    }

    func testMergingAKeyColumn() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: [email, phone]
                merge:
                  visits: sum
                  phone: fill_null
            """
        assertInvalid(yaml, at: "phone: fill_null", path: "dedupe[0].merge.phone", mentions: ["key column"])
    }

    func testUnsupportedVersion() {
        assertInvalid(
            """
            version: 2
            dedupe: []
            """, line: 1, column: 10, path: "version", mentions: ["2"])
    }

    func testDuplicateSeedTable() {
        let yaml = """
            version: 1
            seed:
              name: s
              from: seed.sqlite
              tables: [contacts, orders, contacts]
            """
        assertInvalid(yaml, at: "contacts]", path: "seed.tables", mentions: ["contacts"])
    }

    // MARK: Not YAML at all

    func testEmptyFile() {
        assertInvalid("", line: 1, column: 1, path: "", mentions: ["empty"])
    }

    func testCommentsOnlyFileIsEmpty() {
        assertInvalid("# nothing here yet\n", line: 1, column: 1, path: "", mentions: ["empty"])
    }

    func testInvalidYAMLSyntax() {
        // '@' is reserved in YAML and cannot start a plain scalar.
        let yaml = """
            version: 1
            schema: @schemas/contacts.yaml
            """
        assertInvalid(yaml, line: 2, column: 9, path: "", mentions: ["invalid YAML"])
    }

    func testDuplicatedMappingKey() {
        let yaml = """
            version: 1
            dedupe:
              - entity: contacts
                key: email
                entity: people
            """
        // The repeated key is the offending node (the first 'entity' was fine on its own).
        assertInvalid(yaml, line: 5, column: 5, path: "", mentions: ["entity"])
    }

    func testErrorDescriptionIsFileLineColumnMessage() {
        do {
            _ = try JobLoader.decode(yaml: "version: 1\nbatch: {size: -1}\n", file: "jobs/nightly.yaml")
            XCTFail("a negative batch size must be refused")
        } catch let error as WinnowError {
            XCTAssertTrue(error.description.hasPrefix("jobs/nightly.yaml:2:15: batch.size: "), error.description)
        } catch {
            XCTFail("unexpected \(error)")
        }
    }

    // MARK: Files

    func testLoadResolvesPathsAgainstTheJobFolder() throws {
        let folder = try TestSupport.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let jobs = folder.appendingPathComponent("jobs")
        try FileManager.default.createDirectory(at: jobs, withIntermediateDirectories: true)
        let path = jobs.appendingPathComponent("contacts.yaml").path
        try TestSupport.writeFile(
            """
            version: 1
            database: ../data/contacts.sqlite
            dedupe:
              - entity: contacts
                key: email
            """, to: path)
        let job = try JobLoader.load(path: path)
        XCTAssertEqual(
            job.database?.value,
            folder.appendingPathComponent("data/contacts.sqlite").standardizedFileURL.path)
        XCTAssertEqual(job.dedupe[0].entity.location?.file, path, "locations name the file as given")
        XCTAssertEqual(job.dedupe[0].entity.location?.line, 4)
    }

    func testLoadReportsLocationsWithTheGivenPath() throws {
        let folder = try TestSupport.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("bad.yaml").path
        try TestSupport.writeFile("version: 1\nbogus: 1\n", to: path)
        XCTAssertThrowsError(try JobLoader.load(path: path)) { error in
            guard case let .invalidFile(location, _)? = error as? WinnowError else { return XCTFail("\(error)") }
            XCTAssertEqual(location, SourceLocation(file: path, line: 2, column: 1))
        }
    }

    func testMissingFileIsExit66() {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("winnow-no-such-\(UUID().uuidString).yaml").path
        XCTAssertThrowsError(try JobLoader.load(path: path)) { error in
            guard let error = error as? WinnowError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.exitCode, 66)
            guard case .notFound = error else { return XCTFail("expected .notFound, got \(error)") }
        }
    }

    /// A device is not a job file: 66 like a missing file or a directory, never an I/O error.
    func testDeviceIsNotAJobFile() {
        XCTAssertThrowsError(try JobLoader.load(path: "/dev/null")) { error in
            guard case let WinnowError.notFound(message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("not a regular file"), message)
        }
    }
}
