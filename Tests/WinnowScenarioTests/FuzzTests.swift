import Foundation
import GRDB
import XCTest
import Yams
@testable import WinnowCore
@testable import WinnowSQLite
import WinnowTestSupport

/// A seeded mutation fuzzer over job and schema files (docs/reference.md sections 2, 3 and 5): whatever
/// the bytes of a file, `validate`, `plan`, `check` and `run` end in success or a clean exit
/// 64, 65 or 66 with a message (exit 65 from a file: `FILE:LINE:COLUMN: message`), never a
/// crash, a hang, an internal error (70) or another error type, and never change the database
/// (`validate`, `plan`, `check`: not one byte; a refused `run`: no user row or schema).
///
/// Every run prints its seed. Replay a failure with
/// `WINNOW_FUZZ_SEED=S WINNOW_FUZZ_CASE=N swift test --filter FuzzTests`; soak with
/// `WINNOW_FUZZ_CASES=N` (in-process cases) and `WINNOW_FUZZ_CLI_CASES=N` (executable cases).
/// The in-process cases run in a worker process (this test binary again), so a case that
/// crashes or hangs is reported as that case's failure and the next worker carries on; failing
/// inputs are kept in `$TMPDIR/winnow-fuzz-failures/`.
final class FuzzTests: XCTestCase {

    // MARK: Configuration

    static let environment = ProcessInfo.processInfo.environment
    /// In-process cases per run (jobs and schema files together).
    static var caseCount: Int { Int(environment["WINNOW_FUZZ_CASES"] ?? "") ?? 3000 }
    /// Cases run through the executable (each: validate, plan, run).
    static var cliCaseCount: Int { Int(environment["WINNOW_FUZZ_CLI_CASES"] ?? "") ?? 200 }
    /// Only this case (replay).
    static var onlyCase: Int? { Int(environment["WINNOW_FUZZ_CASE"] ?? "") }
    /// The seed: `WINNOW_FUZZ_SEED`, else a new one each run (printed).
    static let seed: UInt64 = {
        if let text = environment["WINNOW_FUZZ_SEED"], let value = UInt64(text) { return value }
        var generator = SystemRandomNumberGenerator()
        return generator.next() >> 1
    }()
    /// Per-process timeout of the executable cases; longer is a hang.
    static let processTimeout: TimeInterval = 10
    /// Per-process timeout of the targeted cases (each takes well under a second when it works).
    static let targetedTimeout: TimeInterval = 5
    /// An in-process case running longer than this is reported as a hang (and the run stopped).
    static let inProcessHangLimit: TimeInterval = 60

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    var dir: URL!

    override func setUpWithError() throws {
        dir = try TestSupport.scratchDirectory("Fuzz")
        for folder in ["jobs", "schemas", "examples", "work", "cases"] {
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        let repo = Self.repository
        for (from, to) in [
            ("examples/contacts.sqlite", "work/contacts.sqlite"), ("examples/crm-v1.sqlite", "work/crm.sqlite"),
            ("examples/crm-seed.sqlite", "examples/crm-seed.sqlite"),
        ] {
            try FileManager.default.copyItem(at: repo.appendingPathComponent(from), to: dir.appendingPathComponent(to))
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: dir.appendingPathComponent(to).path)
        }
        for document in FuzzCorpus.documents(repository: repo) where document.kind == .schema {
            try document.text.write(to: dir.appendingPathComponent("schemas/\(document.name)"), atomically: true, encoding: .utf8)
        }
    }

    override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    // MARK: Sanity: the unmutated corpus works

    func testCorpusIsValidAndPlannable() throws {
        let corpus = FuzzCorpus.documents(repository: Self.repository)
        XCTAssertGreaterThanOrEqual(corpus.filter { $0.kind == .job }.count, 9)
        XCTAssertGreaterThanOrEqual(corpus.filter { $0.kind == .schema }.count, 5)
        for document in corpus {
            let harness = FuzzHarness(dir: dir)
            let path = try harness.write(Data(document.text.utf8), for: document)
            let result = try Validator.validate(path: path)
            switch (document.kind, result) {
            case (.job, .job), (.schema, .schema): break
            default: XCTFail("\(document.name): validated as the wrong kind of file: \(result.summary)")
            }
            guard document.plannable else { continue }
            let job = try harness.job(for: document, at: path)
            let summary = try SQLiteBackend.plan(job, options: RunOptions(database: harness.database(for: document)))
            XCTAssertEqual(summary.status, "planned", document.name)
        }
    }

    // MARK: In-process fuzzing

    /// The in-process fuzz runs in a worker: this same test binary started again with
    /// `WINNOW_FUZZ_WORKER` set, calling `Validator` and `JobRunner` in its own process. A case
    /// that crashes the worker (or hangs it past the watchdog) is reported as a failure of that
    /// case, and a new worker carries on with the next case, so one crash neither hides the
    /// other cases nor ends the whole test run.
    func testMutatedFilesInProcess() throws {
        let environment = Self.environment
        if let progress = environment["WINNOW_FUZZ_WORKER"] {
            let from = Int(environment["WINNOW_FUZZ_FROM"] ?? "") ?? 0
            let to = Int(environment["WINNOW_FUZZ_TO"] ?? "") ?? Self.caseCount
            try runWorker(cases: Array(from..<to), progress: URL(fileURLWithPath: progress))
            return
        }
        let seed = Self.seed
        let cases = Self.onlyCase.map { [$0] } ?? Array(0..<Self.caseCount)
        print(
            "FuzzTests.testMutatedFilesInProcess: seed \(seed), \(cases.count) cases; replay one with WINNOW_FUZZ_SEED=\(seed) WINNOW_FUZZ_CASE=N"
        )
        guard let worker = Self.workerCommand() else {
            // No way to start the test binary again: run the cases here.
            let progress = dir.appendingPathComponent("progress.txt")
            try runWorker(cases: cases, progress: progress)
            let lines = ((try? String(contentsOf: progress, encoding: .utf8)) ?? "").split(separator: "\n")
            for line in lines where line.hasPrefix("FAIL\t") { XCTFail(String(line.dropFirst(5))) }
            return
        }
        let started = Date()
        var next = 0
        var failures: [String] = []
        var outcomes: [String: Int] = [:]
        var workers = 0
        while next < cases.count {
            workers += 1
            let progress = dir.appendingPathComponent("progress-\(workers).txt")
            _ = FileManager.default.createFile(atPath: progress.path, contents: nil)
            var env = environment
            env["WINNOW_FUZZ_WORKER"] = progress.path
            env["WINNOW_FUZZ_SEED"] = String(seed)
            env.removeValue(forKey: "WINNOW_FUZZ_CASE")
            if let only = Self.onlyCase {
                env["WINNOW_FUZZ_FROM"] = String(only)
                env["WINNOW_FUZZ_TO"] = String(only + 1)
            } else {
                env["WINNOW_FUZZ_FROM"] = String(cases[next])
                env["WINNOW_FUZZ_TO"] = String(cases.last! + 1)
            }
            let result = try FuzzProcess.run(
                worker.arguments, executable: worker.executable, environment: env,
                timeout: Double(cases.count - next) * 2 + 300)
            let lines = ((try? String(contentsOf: progress, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            var current: (index: Int, label: String)?
            var finished = false
            for line in lines {
                let parts = line.split(separator: "\t", maxSplits: 2).map(String.init)
                switch parts.first {
                case "CASE" where parts.count == 3: current = (Int(parts[1]) ?? -1, parts[2])
                case "DONE" where parts.count >= 2:
                    outcomes[parts[1], default: 0] += 1
                    current = nil
                case "FAIL" where parts.count >= 2:
                    failures.append(parts.dropFirst().joined(separator: "\t"))
                    current = nil
                case "END": finished = true
                default: break
                }
            }
            if finished { break }
            guard let crashed = current, let position = cases.firstIndex(of: crashed.index) else {
                XCTFail("the fuzz worker ended without a result (status \(result.status)): \(result.stderr.suffix(2000))")
                break
            }
            let how =
                result.timedOut
                ? "hung (worker killed)"
                : (result.signaled ? "crashed (signal \(result.status))" : "ended the process (status \(result.status))")
            let reason = result.stderr.components(separatedBy: "\n").first { $0.contains("Fatal error") || $0.contains("HANG") } ?? ""
            failures.append(
                "\(crashed.label): \(how) in process: \(reason)\n  input kept at \(FuzzHarness.failureFolder.path)/seed\(seed)-case\(crashed.index)-*"
            )
            outcomes["crash", default: 0] += 1
            next = position + 1
            if Self.onlyCase != nil { break }
        }
        for failure in failures.prefix(25) { XCTFail(failure) }
        if failures.count > 25 { XCTFail("seed \(seed): \(failures.count) failing cases in all (first 25 reported)") }
        print(
            "FuzzTests.testMutatedFilesInProcess: seed \(seed), \(cases.count) cases in \(String(format: "%.1f", Date().timeIntervalSince(started))) s (\(workers) worker\(workers == 1 ? "" : "s")), \(failures.count) failing; outcomes: \(outcomes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))"
        )
    }

    /// How to start this test binary again running only `testMutatedFilesInProcess`.
    static func workerCommand() -> (executable: URL, arguments: [String])? {
        let arguments = ProcessInfo.processInfo.arguments
        guard let first = arguments.first, FileManager.default.isExecutableFile(atPath: first) else { return nil }
        let test = "WinnowScenarioTests.FuzzTests/testMutatedFilesInProcess"
        #if os(Linux)
        return (URL(fileURLWithPath: first), [test])
        #else
        return (URL(fileURLWithPath: first), ["-XCTest", test, Bundle(for: FuzzTests.self).bundlePath])
        #endif
    }

    /// Runs cases in this process, writing `CASE`, then `DONE` or `FAIL`, per case to `progress`
    /// (flushed before the case runs, so a crash leaves the case's label behind), then `END`.
    func runWorker(cases: [Int], progress: URL) throws {
        let corpus = FuzzCorpus.documents(repository: Self.repository)
        let harness = FuzzHarness(dir: dir)
        let seed = Self.seed
        let log = try FileHandle(forWritingTo: progress)
        defer { try? log.close() }
        log.seekToEndOfFile()
        func write(_ line: String) {
            log.write(Data((line.replacingOccurrences(of: "\n", with: "\\n") + "\n").utf8))
            try? log.synchronize()
        }
        let watchdog = FuzzWatchdog(limit: Self.inProcessHangLimit)
        defer { watchdog.stop() }
        for index in cases {
            var rng = FuzzRandom(seed: seed, stream: 1, index: index)
            let document = rng.pick(corpus)
            let (bytes, steps) = FuzzMutator.mutate(document.text, rng: &rng)
            let label = "seed \(seed) case \(index) (\(document.name): \(steps.joined(separator: "; ")))"
            _ = FuzzHarness.keepFailure(bytes, seed: seed, index: index, document: document)  // removed again when the case passes
            write("CASE\t\(index)\t\(label)")
            watchdog.begin(label)
            let report = harness.runInProcess(bytes, document: document)
            watchdog.end()
            if let problem = report.problem {
                let kept = FuzzHarness.keepFailure(bytes, seed: seed, index: index, document: document)
                write("FAIL\t\(label): \(problem)\n  input kept at \(kept)\n  input: \(FuzzHarness.preview(bytes))")
            } else {
                FuzzHarness.forgetFailure(seed: seed, index: index, document: document)
                write("DONE\t\(report.outcome)")
            }
        }
        write("END")
    }

    // MARK: Through the executable

    func testMutatedFilesThroughTheExecutable() throws {
        let corpus = FuzzCorpus.documents(repository: Self.repository)
        let harness = FuzzHarness(dir: dir)
        let seed = Self.seed
        let cases = Self.onlyCase.map { [$0] } ?? Array(0..<Self.cliCaseCount)
        print(
            "FuzzTests.testMutatedFilesThroughTheExecutable: seed \(seed), \(cases.count) cases (validate, plan, run each); executable \(TestSupport.executable.path)"
        )
        let started = Date()
        let lock = NSLock()
        var problems: [(Int, String)] = []
        var outcomes: [String: Int] = [:]
        DispatchQueue.concurrentPerform(iterations: cases.count) { position in
            let index = cases[position]
            var rng = FuzzRandom(seed: seed, stream: 2, index: index)
            let document = rng.pick(corpus)
            let (bytes, steps) = FuzzMutator.mutate(document.text, rng: &rng)
            let label = "seed \(seed) CLI case \(index) (\(document.name): \(steps.joined(separator: "; ")))"
            let report = harness.runThroughExecutable(bytes, document: document, tag: "cli\(index)")
            lock.lock()
            outcomes[report.outcome, default: 0] += 1
            if let problem = report.problem {
                let kept = FuzzHarness.keepFailure(bytes, seed: seed, index: index, document: document, prefix: "cli")
                problems.append((index, "\(label): \(problem)\n  input kept at \(kept)\n  input: \(FuzzHarness.preview(bytes))"))
            }
            lock.unlock()
        }
        for (_, problem) in problems.sorted(by: { $0.0 < $1.0 }).prefix(25) { XCTFail(problem) }
        if problems.count > 25 { XCTFail("seed \(seed): \(problems.count) failing executable cases in all (first 25 reported)") }
        print(
            "FuzzTests.testMutatedFilesThroughTheExecutable: seed \(seed), \(cases.count) cases in \(String(format: "%.1f", Date().timeIntervalSince(started))) s, \(problems.count) failing; outcomes: \(outcomes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))"
        )
    }

    // MARK: Targeted hostile files

    /// Runs one hostile file: first through the executable (`validate`, `plan`, `run`, each
    /// with a timeout, so a crash or hang is reported rather than taking the test run down),
    /// then, when the executable survived, in process. Returns the in-process report.
    @discardableResult
    private func assertHostile(
        _ bytes: Data, as kind: FuzzDocument.Kind = .job, database: String = "contacts.sqlite",
        name: String, expectValid: Bool = false,
        file: StaticString = #filePath, line: UInt = #line
    ) -> FuzzHarness.Report? {
        let harness = FuzzHarness(dir: dir)
        let document = FuzzDocument(name: name, kind: kind, text: "", database: database, plannable: false)
        let cli = harness.runThroughExecutable(bytes, document: document, tag: "targeted-\(name)", timeout: FuzzTests.targetedTimeout)
        if let problem = cli.problem { XCTFail("\(name) (executable): \(problem)", file: file, line: line) }
        if expectValid, cli.validateStatus != 0 {
            XCTFail(
                "\(name): expected validate to succeed, got exit \(cli.validateStatus.map(String.init) ?? "none"): \(cli.detail)",
                file: file, line: line)
        }
        if !expectValid, cli.validateStatus == 0 {
            XCTFail("\(name): expected validate to refuse the file, it accepted it", file: file, line: line)
        }
        guard cli.survived else { return nil }
        // The executable survived; a hang in process is still reported (and ends the run) rather than waiting forever.
        let watchdog = FuzzWatchdog(limit: Self.inProcessHangLimit)
        watchdog.begin("targeted case \(name)")
        let report = harness.runInProcess(bytes, document: document)
        watchdog.stop()
        if let problem = report.problem { XCTFail("\(name) (in process): \(problem)", file: file, line: line) }
        if expectValid, report.validated != true {
            XCTFail("\(name): expected Validator to accept the file: \(report.outcome) \(report.detail)", file: file, line: line)
        }
        if !expectValid, report.validated == true {
            XCTFail("\(name): expected Validator to refuse the file, it accepted it", file: file, line: line)
        }
        return report
    }

    private func exampleJob() throws -> String {
        try String(contentsOf: Self.repository.appendingPathComponent("jobs/example.yaml"), encoding: .utf8)
    }

    func testEmptyFile() {
        let report = assertHostile(Data(), name: "empty")
        XCTAssertEqual(report?.validateError?.exitCode, 65)
        XCTAssertEqual(report.flatMap { FuzzHarness.location(of: $0.validateError) }.map { [$0.line, $0.column] }, [1, 1])
    }

    func testOnlyComments() {
        assertHostile(Data("# a job\n# that is only comments\n   # indented comment\n\n".utf8), name: "comments")
        assertHostile(Data("# a schema\n---\n# nothing\n...\n".utf8), as: .schema, name: "comments-schema")
    }

    func testBinaryGarbage() {
        var rng = FuzzRandom(seed: 42, stream: 3, index: 0)
        for round in 0..<6 {
            let count = [1, 17, 512, 4096, 65_536, 300_000][round]
            var bytes = Data((0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            if round == 2 { bytes = Data("version: 1\ndedupe:\n".utf8) + bytes }  // a valid start, then garbage
            assertHostile(bytes, name: "garbage-\(count)")
        }
        assertHostile(Data([0xFF, 0xFE, 0x00, 0x00]) + Data("version: 1\n".utf8), name: "utf32-bom")
        assertHostile(Data("version: 1\u{0}\ndedupe: []\n".utf8), name: "nul-byte")
        assertHostile(
            Data("version: 1\ndedupe: [{entity: contacts, key: \"".utf8) + Data([0xC0, 0x80, 0xED, 0xA0, 0x80]) + Data("\"}]\n".utf8),
            name: "invalid-utf8-in-name")
        // SQLite's own file: a database is not a job.
        if let sqlite = try? Data(contentsOf: Self.repository.appendingPathComponent("examples/crm-v1.sqlite")) {
            assertHostile(sqlite, name: "a-database-file")
        }
    }

    func testFileOverTheSizeLimit() throws {
        var text = try exampleJob() + "\n"
        let comment = "# " + String(repeating: "padding ", count: 12) + "\n"
        while text.utf8.count < 5 << 20 { text += comment }
        let started = Date()
        let report = assertHostile(Data(text.utf8), name: "five-megabytes")
        XCTAssertEqual(report?.validateError?.exitCode, 65)
        XCTAssertTrue(report?.detail.contains("bytes") ?? false, report?.detail ?? "")
        XCTAssertLessThan(Date().timeIntervalSince(started), 20)
    }

    func testDeeplyNestedList() {
        let depth = 100_000
        let nested = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        assertHostile(Data("version: 1\ndedupe: \(nested)\n".utf8), name: "nested-dedupe")
        assertHostile(Data("version: 1\nunknown: \(nested)\n".utf8), name: "nested-unknown")
        let mappings = String(repeating: "{a: ", count: depth) + "1" + String(repeating: "}", count: depth)
        assertHostile(Data("version: 1\ndedupe: [{entity: contacts, key: email, merge: \(mappings)}]\n".utf8), name: "nested-maps")
        let block = (0..<2_000).map { String(repeating: " ", count: $0) + "- " }.joined(separator: "\n") + "x\n"
        assertHostile(Data("version: 1\ndedupe:\n\(block)".utf8), name: "nested-block-list")
        assertHostile(Data("version: 3\ntables: \(nested)\n".utf8), as: .schema, database: "crm.sqlite", name: "nested-tables")
    }

    /// `&a` ten lols, `&b` ten `*a`, ... nine levels: 10^9 strings once expanded.
    private func laughs(indent: String = "  ") -> (anchors: String, top: String) {
        var lines = ["\(indent)- &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
        for level in 1...8 {
            lines.append("\(indent)- &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ") + "]")
        }
        return (lines.joined(separator: "\n"), "*l8")
    }

    func testBillionLaughs() {
        let bomb = laughs()
        func timed(_ name: String, _ text: String, as kind: FuzzDocument.Kind = .job, database: String = "contacts.sqlite") {
            let started = Date()
            assertHostile(Data(text.utf8), as: kind, database: database, name: name)
            XCTAssertLessThan(Date().timeIntervalSince(started), 35, "\(name) took too long")
        }
        // Under dedupe: the list of rules is the bomb.
        timed("laughs-dedupe", "version: 1\ndedupe:\n\(bomb.anchors)\n")
        timed("laughs-dedupe-alias", "version: 1\nx: &x\n\(bomb.anchors)\ndedupe: *l8\n")
        // Under key: of a rule.
        timed("laughs-key", "version: 1\ndedupe:\n  - entity: contacts\n    winner:\n\(laughs(indent: "      ").anchors)\n    key: *l8\n")
        timed("laughs-key-first", "version: 1\ndedupe:\n  - entity: contacts\n    key:\n\(laughs(indent: "      ").anchors)\n")
        // Under an unknown key, and under known keys of other types.
        timed("laughs-unknown", "version: 1\nbombs:\n\(bomb.anchors)\n")
        timed(
            "laughs-unknown-rule-key",
            "version: 1\ndedupe:\n  - entity: contacts\n    key: email\n    bombs:\n\(laughs(indent: "      ").anchors)\n")
        timed(
            "laughs-normalize",
            "version: 1\ndedupe:\n  - entity: contacts\n    key: email\n    normalize:\n\(laughs(indent: "      ").anchors)\n")
        timed(
            "laughs-referenced-by",
            "version: 1\ndedupe:\n  - entity: contacts\n    key: email\n    referenced_by:\n\(laughs(indent: "      ").anchors)\n")
        // As a mapping key (a composer that hashes keys would expand it).
        timed("laughs-as-key", "version: 1\nx:\n\(bomb.anchors)\n? *l8\n: 1\n")
        timed(
            "laughs-as-merge-key",
            "version: 1\nx:\n\(bomb.anchors)\ndedupe:\n  - entity: contacts\n    key: email\n    merge:\n      ? *l8\n      : sum\n")
        // In schema files.
        timed(
            "laughs-tables", "version: 3\ntables:\n  t:\n    columns:\n\(laughs(indent: "      ").anchors)\n", as: .schema,
            database: "crm.sqlite")
        timed(
            "laughs-indexes", "version: 3\ntables:\n  t:\n    columns: [{name: id}]\n    indexes:\n\(laughs(indent: "      ").anchors)\n",
            as: .schema, database: "crm.sqlite")
        timed(
            "laughs-renamed-from",
            "version: 3\ntables:\n  t:\n    renamed_from:\n\(laughs(indent: "      ").anchors)\n    columns: [{name: id}]\n", as: .schema,
            database: "crm.sqlite")
    }

    func testHugeSingleLine() {
        let long = String(repeating: "x", count: 1_500_000)
        // Valid files (a long name is a name): validate accepts them, plan refuses them (no such column).
        let report = assertHostile(
            Data("version: 1\ndedupe: [{entity: contacts, key: \(long)}]\n".utf8), name: "huge-key-line", expectValid: true)
        XCTAssertEqual(report?.outcome, "valid+plan65+check65")
        let columns = (0..<150_000).map { "c\($0)" }.joined(separator: ", ")
        assertHostile(
            Data("version: 1\ndedupe: [{entity: contacts, key: [\(columns)], winner: [{id: asc}]}]\n".utf8),
            name: "huge-list-line", expectValid: true)
        assertHostile(Data("version: 1\n\(long): 1\n".utf8), name: "huge-unknown-key")
        assertHostile(
            Data(
                "version: 1\ndedupe: [{entity: \"\(String(repeating: "\\\"; DROP TABLE contacts; --", count: 40_000))\", key: email}]\n"
                    .utf8),
            name: "huge-hostile-entity", expectValid: true)
        assertHostile(
            Data("version: 3\ntables: {t: {columns: [{name: id, default: \(long)}]}}\n".utf8), as: .schema, database: "crm.sqlite",
            name: "huge-schema-line", expectValid: true)
    }

    /// CRLF line endings and a UTF-8 byte order mark are ordinary: every corpus file still
    /// validates, and plans the same as the plain file.
    func testWindowsLineEndingsAndByteOrderMarkWork() throws {
        let harness = FuzzHarness(dir: dir)
        for document in FuzzCorpus.documents(repository: Self.repository) {
            let plain = try harness.write(Data(document.text.utf8), for: document, tag: "plain")
            let expected =
                document.plannable
                ? try SQLiteBackend.plan(
                    try harness.job(for: document, at: plain),
                    options: RunOptions(database: harness.database(for: document))) : nil
            let crlf = document.text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
            let variants: [(String, Data)] = [
                ("crlf", Data(crlf.utf8)),
                ("bom", Data([0xEF, 0xBB, 0xBF]) + Data(document.text.utf8)),
                ("bom-crlf", Data([0xEF, 0xBB, 0xBF]) + Data(crlf.utf8)),
            ]
            for (tag, bytes) in variants {
                let path = try harness.write(bytes, for: document, tag: tag)
                do {
                    let result = try Validator.validate(path: path)
                    XCTAssertEqual(result.summary, try Validator.validate(path: plain).summary, "\(document.name) \(tag)")
                    guard let expected else { continue }
                    let summary = try SQLiteBackend.plan(
                        try harness.job(for: document, at: path),
                        options: RunOptions(database: harness.database(for: document)))
                    XCTAssertEqual(summary.counts, expected.counts, "\(document.name) \(tag)")
                    XCTAssertEqual(summary.migration, expected.migration, "\(document.name) \(tag)")
                } catch {
                    XCTFail("\(document.name) with \(tag): \(error)")
                }
                let cli = try FuzzProcess.run(["validate", path], timeout: Self.processTimeout)
                XCTAssertEqual(cli.status, 0, "\(document.name) \(tag): \(cli.stderr)")
            }
        }
        // An error in a CRLF file still points at the right line and column.
        let text = "version: 1\r\ndedupe:\r\n  - entity: contacts\r\n    key: email\r\n    nulls: sometimes\r\n"
        let path = try harness.write(
            Data(text.utf8), for: FuzzDocument(name: "crlf-error.yaml", kind: .job, text: "", database: "contacts.sqlite", plannable: false)
        )
        XCTAssertThrowsError(try Validator.validate(path: path)) { error in
            XCTAssertEqual(FuzzHarness.location(of: error).map { [$0.line, $0.column] }, [5, 12], "\(error)")
        }
    }

    func testDuplicateKeys() throws {
        let cases: [(String, String, FuzzDocument.Kind, Int)] = [
            ("root", "version: 1\ndedupe: []\nversion: 1\n", .job, 3),
            ("rule", "version: 1\ndedupe:\n  - entity: contacts\n    key: email\n    key: phone\n", .job, 5),
            ("quoted", "version: 1\ndedupe:\n  - entity: contacts\n    key: email\n    \"key\": phone\n", .job, 5),
            ("flow", "version: 1\ndedupe: [{entity: contacts, key: email, entity: orders}]\n", .job, 2),
            ("batch", "version: 1\nbatch:\n  size: 1\n  pause_ms: 0\n  size: 2\n", .job, 5),
            (
                "merge", "version: 1\ndedupe:\n  - entity: contacts\n    key: email\n    merge:\n      visits: sum\n      visits: max\n",
                .job, 7
            ),
            ("crlf", "version: 1\r\ndedupe: []\r\nversion: 1\r\n", .job, 3),
            // A duplicate in a nested mapping of a CRLF or CR file (the mapping starts after line 1).
            ("rule-crlf", "version: 1\r\ndedupe:\r\n  - entity: contacts\r\n    key: email\r\n    key: phone\r\n", .job, 5),
            ("rule-cr", "version: 1\rdedupe:\r  - entity: contacts\r    key: email\r    key: phone\r", .job, 5),
            ("schema-table", "version: 3\ntables:\n  t:\n    columns: [{name: id}]\n  t:\n    columns: [{name: id}]\n", .schema, 5),
            ("schema-column-key", "version: 3\ntables:\n  t:\n    columns:\n      - {name: id, type: integer, type: text}\n", .schema, 5),
        ]
        for (name, text, kind, expectedLine) in cases {
            let report = assertHostile(
                Data(text.utf8), as: kind, database: kind == .schema ? "crm.sqlite" : "contacts.sqlite",
                name: "duplicate-\(name)")
            guard let error = report?.validateError else { continue }
            XCTAssertEqual(error.exitCode, 65, "\(name)")
            XCTAssertTrue(error.description.contains("'"), "\(name): the message should name the key: \(error)")
            XCTAssertEqual(FuzzHarness.location(of: error)?.line, expectedLine, "\(name): \(error)")
        }
    }

    /// A job whose rule names a column that exists neither before nor after its migration is
    /// an invalid job (exit 65): refused before it starts, so the migration must not have been
    /// applied either (docs/reference.md section 5).
    func testJobRefusedAfterItsMigrationChangesNoSchema() throws {
        let harness = FuzzHarness(dir: dir)
        let database = harness.database(for: FuzzDocument(name: "", kind: .job, text: "", database: "crm.sqlite", plannable: false))
        let cases: [(String, String)] = [
            ("missing-column", "version: 1\nschema: ../schemas/crm-v2.yaml\ndedupe:\n  - entity: contacts\n    key: no_such_column\n"),
            ("missing-table", "version: 1\nschema: ../schemas/crm-v2.yaml\ndedupe:\n  - entity: no_such_table\n    key: email\n"),
            ("renamed-away", "version: 1\nschema: ../schemas/crm-v2.yaml\ndedupe:\n  - entity: people\n    key: email\n"),
            (
                "bad-merge",
                "version: 1\nschema: ../schemas/crm-v3.yaml\ndedupe:\n  - entity: contacts\n    key: email\n    merge: {nothing: sum}\n"
            ),
            // The delete guard refuses "with nothing changed": the migration before it must not stay applied.
            (
                "delete-guard",
                "version: 1\nschema: ../schemas/crm-v2.yaml\ndedupe:\n  - entity: contacts\n    key: email\n    normalize: [trim, lowercase]\n    max_delete_percent: 0.5\n"
            ),
            // A unique index that the table's duplicates make impossible (no rule for them): known
            // from the data before any step runs, so the steps before it must not stay applied.
            ("unique-index-over-duplicates", "version: 1\nschema: ../schemas/fuzz-unique.yaml\n"),
        ]
        try """
        version: 2
        tables:
          people:
            columns:
              - {name: id, type: integer, primary_key: true}
              - {name: email, type: text}
              - {name: name, type: text}
              - {name: phone_number, type: text}
              - {name: created_at, type: text, nullable: false, default: {sql: CURRENT_TIMESTAMP}}
              - {name: extra, type: text}
            indexes:
              - {name: people_created, columns: [created_at]}
              - {name: people_email, columns: [email], unique: true}

        """.write(to: dir.appendingPathComponent("schemas/fuzz-unique.yaml"), atomically: true, encoding: .utf8)
        for (name, text) in cases {
            let copy = dir.appendingPathComponent("cases/\(name).sqlite").path
            try FileManager.default.copyItem(atPath: database, toPath: copy)
            let before = try FuzzState.user(copy)
            let path = try harness.write(
                Data(text.utf8),
                for: FuzzDocument(
                    name: "\(name).yaml", kind: .job, text: text,
                    database: "crm.sqlite", plannable: false))
            do {
                _ = try SQLiteBackend.run(try JobLoader.load(path: path), options: RunOptions(database: copy))
                XCTFail("\(name): run succeeded")
            } catch let error as WinnowError {
                XCTAssertEqual(error.exitCode, 65, "\(name): \(error)")
            }
            let after = try FuzzState.user(copy)
            XCTAssertEqual(after, before, "\(name): a refused run changed the user schema or rows: \(FuzzState.difference(before, after))")
        }
    }

    /// `pause_ms` lets other writers in between write batches. `plan` writes nothing (a
    /// read-only connection), so the largest allowed pause must not turn it into a hang, and no
    /// command sleeps after its last batch.
    func testLargestPauseDoesNotHangPlan() throws {
        let harness = FuzzHarness(dir: dir)
        let document = FuzzDocument(name: "pause.yaml", kind: .job, text: "", database: "contacts.sqlite", plannable: true)
        let text =
            "version: 1\ndedupe:\n  - entity: contacts\n    key: email\n    normalize: [trim, lowercase]\n    hash: true\n    hash_column: key_hash\nbatch:\n  size: 1000\n  pause_ms: 3600000\n"
        let path = try harness.write(Data(text.utf8), for: document)
        let started = Date()
        let plan = try FuzzProcess.run(["plan", "--database", harness.database(for: document), path], timeout: FuzzTests.targetedTimeout)
        XCTAssertFalse(plan.timedOut, "plan of a job with pause_ms: 3600000 (one batch) hung: it sleeps although it writes nothing")
        if !plan.timedOut { XCTAssertEqual(plan.status, 0, plan.stderr) }
        let copy = dir.appendingPathComponent("cases/pause.sqlite").path
        try FileManager.default.copyItem(atPath: harness.database(for: document), toPath: copy)
        let run = try FuzzProcess.run(["run", "--database", copy, path], timeout: FuzzTests.targetedTimeout)
        XCTAssertFalse(run.timedOut, "run of a job with pause_ms: 3600000 and a single batch hung: it sleeps after its last batch")
        print("testLargestPauseDoesNotHangPlan: \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
    }

    /// Tags, anchors and merge keys on an otherwise valid job: either it works or it is a clean
    /// exit 65, and a job that works plans like the plain one.
    func testTagsAnchorsAndMergeKeys() {
        let variants: [(String, String)] = [
            ("merge-key", "version: 1\nx-defaults: &d {entity: contacts, key: email}\ndedupe:\n  - <<: *d\n    nulls: equal\n"),
            ("merge-key-rule", "version: 1\ndedupe:\n  - &r {entity: contacts, key: email}\n  - <<: *r\n    key: phone\n"),
            ("merge-key-list", "version: 1\ndedupe:\n  - <<: [{entity: contacts}, {key: email}]\n"),
            ("alias-rule", "version: 1\ndedupe:\n  - &r {entity: contacts, key: email}\n  - *r\n"),
            ("alias-value", "version: 1\ndedupe:\n  - entity: &t contacts\n    key: email\n  - entity: *t\n    key: phone\n"),
            ("undefined-alias", "version: 1\ndedupe:\n  - entity: *nothing\n    key: email\n"),
            ("recursive-anchor", "version: 1\ndedupe: &a [*a]\n"),
            ("tag-str-version", "version: !!str 1\n"),
            ("tag-int-entity", "version: 1\ndedupe: [{entity: !!int contacts, key: email}]\n"),
            ("tag-binary", "version: 1\ndedupe: [{entity: !!binary Y29udGFjdHM=, key: email}]\n"),
            ("tag-custom", "version: 1\ndedupe: [{entity: !custom contacts, key: email}]\n"),
            ("tag-verbatim", "version: 1\ndedupe: [{entity: !<tag:yaml.org,2002:str> contacts, key: email}]\n"),
            ("tag-set", "version: 1\ndedupe: [{entity: contacts, key: !!set {email, phone}}]\n"),
            ("tag-omap", "version: 1\ndedupe: !!omap [{entity: contacts}]\n"),
            ("tag-float-percent", "version: 1\ndedupe: [{entity: contacts, key: email, max_delete_percent: !!float 40}]\n"),
            ("tag-null-key", "version: 1\n!!null : 1\n"),
            ("complex-key", "version: 1\n? [a, b]\n: 1\n"),
            ("directive", "%YAML 1.1\n%TAG !e! tag:example.com,2000:\n---\nversion: 1\ndedupe: [{entity: !e!x contacts, key: email}]\n"),
            ("two-documents", "version: 1\n---\nversion: 1\n"),
            ("document-end", "version: 1\n...\ndedupe: []\n"),
            ("block-scalar-entity", "version: 1\ndedupe:\n  - entity: |\n      contacts\n    key: email\n"),
            ("folded-key", "version: 1\ndedupe:\n  - entity: contacts\n    key: >-\n      email\n"),
        ]
        for (name, text) in variants {
            let harness = FuzzHarness(dir: dir)
            let document = FuzzDocument(name: "\(name).yaml", kind: .job, text: text, database: "contacts.sqlite", plannable: false)
            let report = harness.runInProcess(Data(text.utf8), document: document)
            if let problem = report.problem { XCTFail("\(name): \(problem)") }
            let cli = harness.runThroughExecutable(Data(text.utf8), document: document, tag: name)
            if let problem = cli.problem { XCTFail("\(name) (executable): \(problem)") }
        }
    }
}

struct FuzzHarness {
    let dir: URL

    struct Report {
        /// Short outcome class for the statistics (`valid+plan0`, `65`, ...).
        var outcome = ""
        /// Why the outcome breaks the contract; nil when it keeps it.
        var problem: String?
        var detail = ""
        var validated: Bool?
        var validateError: WinnowError?
        /// Executable cases: validate's status, and whether every process ended normally.
        var validateStatus: Int32?
        var survived = true
    }

    static let currentFolder = FileManager.default.temporaryDirectory.appendingPathComponent("winnow-fuzz-current")
    static let failureFolder = FileManager.default.temporaryDirectory.appendingPathComponent("winnow-fuzz-failures")

    static func recordCurrent(_ bytes: Data, label: String) {
        try? FileManager.default.createDirectory(at: currentFolder, withIntermediateDirectories: true)
        try? bytes.write(to: currentFolder.appendingPathComponent("input.yaml"))
        try? Data(label.utf8).write(to: currentFolder.appendingPathComponent("case.txt"))
    }

    static func keepFailure(_ bytes: Data, seed: UInt64, index: Int, document: FuzzDocument, prefix: String = "") -> String {
        try? FileManager.default.createDirectory(at: failureFolder, withIntermediateDirectories: true)
        let url = failureFolder.appendingPathComponent("\(prefix)seed\(seed)-case\(index)-\(document.name)")
        try? bytes.write(to: url)
        return url.path
    }

    static func forgetFailure(seed: UInt64, index: Int, document: FuzzDocument, prefix: String = "") {
        try? FileManager.default.removeItem(at: failureFolder.appendingPathComponent("\(prefix)seed\(seed)-case\(index)-\(document.name)"))
    }

    static func preview(_ bytes: Data) -> String {
        let text = String(decoding: bytes.prefix(600), as: UTF8.self)
        return text.debugDescription + (bytes.count > 600 ? " ... (\(bytes.count) bytes)" : "")
    }

    static func location(of error: Error?) -> SourceLocation? {
        if case let .invalidFile(location, _)? = error as? WinnowError { return location }
        return nil
    }

    /// The case file path: jobs under `jobs/` (their `../work`, `../schemas` paths resolve),
    /// schema files under `schemas/`.
    func path(for document: FuzzDocument, tag: String) -> String {
        let folder = document.kind == .job ? "jobs" : "schemas"
        return dir.appendingPathComponent("\(folder)/case-\(tag)-\(document.name)").path
    }

    @discardableResult
    func write(_ bytes: Data, for document: FuzzDocument, tag: String = "inprocess") throws -> String {
        let path = path(for: document, tag: tag)
        try bytes.write(to: URL(fileURLWithPath: path))
        return path
    }

    func database(for document: FuzzDocument) -> String { dir.appendingPathComponent("work/\(document.database)").path }

    /// The job a case plans: the file itself, or for a schema file a job that targets it.
    func job(for document: FuzzDocument, at path: String) throws -> Job {
        if document.kind == .job { return try JobLoader.load(path: path) }
        return try JobLoader.load(path: try schemaJob(for: path))
    }

    func schemaJob(for schemaPath: String) throws -> String {
        let jobPath = schemaPath.replacingOccurrences(of: "/schemas/", with: "/jobs/") + ".job.yaml"
        var text = "version: 1\nschema: \(("../schemas/" + URL(fileURLWithPath: schemaPath).lastPathComponent).debugDescription)\n"
        // A CRM model with contacts makes e-mail unique: like jobs/crm-migrate.yaml, the job
        // deduplicates them first (else `run`, and so `plan`, refuses the unique index).
        if let schema = try? String(contentsOfFile: schemaPath, encoding: .utf8), schema.contains("\n  contacts:") {
            text += "dedupe:\n  - entity: contacts\n    key: email\n    normalize: [trim, lowercase]\n"
        }
        try text.write(toFile: jobPath, atomically: false, encoding: .utf8)
        return jobPath
    }

    /// Lines as libyaml counts them (LF, CR, CRLF, NEL, LS, PS), for the sanity check of locations.
    static func lineCount(_ bytes: Data) -> Int {
        let text = String(decoding: bytes, as: UTF8.self)
        var count = 1
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": if previous != "\r" { count += 1 }
            case "\r", "\u{85}", "\u{2028}", "\u{2029}": count += 1
            default: break
            }
            previous = scalar
        }
        return count
    }

    /// Checks one error against the contract; nil when it keeps it.
    static func judge(_ error: Error, step: String, files: [String: Data]) -> String? {
        guard let error = error as? WinnowError else {
            return "\(step) threw \(type(of: error)), not a WinnowError: \(error)"
        }
        guard [64, 65, 66].contains(error.exitCode) else {
            return "\(step) failed with exit \(error.exitCode) (expected 0, 64, 65 or 66): \(error.description)"
        }
        let description = error.description
        guard !description.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            return "\(step): exit \(error.exitCode) with an empty message"
        }
        if case let .invalidFile(location, message) = error {
            guard let location else { return "\(step): exit 65 for a file error without FILE:LINE:COLUMN: \(description)" }
            // A location in another file the job names (its schema) is fine when it is inside that file.
            guard let bytes = files[location.file] ?? FileManager.default.contents(atPath: location.file) else {
                return
                    "\(step): the error points at \(location.file), which is not one of the files read (\(files.keys.sorted().joined(separator: ", "))): \(description)"
            }
            guard description.hasPrefix("\(location.file):\(location.line):\(location.column): ") else {
                return "\(step): message does not start with FILE:LINE:COLUMN: : \(description)"
            }
            guard !message.trimmingCharacters(in: .whitespaces).isEmpty else { return "\(step): empty message after the location" }
            let lines = lineCount(bytes)
            guard location.line >= 1, location.column >= 1, location.line <= lines + 1 else {
                return "\(step): location \(location.line):\(location.column) is outside the file (\(lines) lines): \(description)"
            }
        }
        return nil
    }

    /// validate, then (for a valid file) plan and check against a database that must keep every byte.
    func runInProcess(_ bytes: Data, document: FuzzDocument) -> Report {
        var report = Report()
        let path: String
        do { path = try write(bytes, for: document) } catch {
            report.problem = "cannot write the case: \(error)"
            return report
        }
        var files: [String: Data] = [path: bytes]
        let result: Validator.Result
        do {
            result = try Validator.validate(path: path)
            report.validated = true
        } catch {
            report.validated = false
            report.validateError = error as? WinnowError
            report.detail = "\(error)"
            report.outcome = "validate-\((error as? WinnowError)?.exitCode ?? -1)"
            // A job's schema file is read too: errors may point into it.
            addSchemaFile(of: bytes, document: document, path: path, to: &files)
            report.problem = Self.judge(error, step: "validate", files: files)
            return report
        }
        let jobPath: String
        switch result {
        case .job(let job, _):
            jobPath = path
            if let schema = job.schema?.value, let data = try? Data(contentsOf: URL(fileURLWithPath: schema)) { files[schema] = data }
        case .schema:
            guard let p = try? schemaJob(for: path) else {
                report.problem = "cannot write the schema's job"
                return report
            }
            jobPath = p
            files[p] = try? Data(contentsOf: URL(fileURLWithPath: p))
        }
        let database = self.database(for: document)
        guard let before = try? Data(contentsOf: URL(fileURLWithPath: database)) else {
            report.problem = "cannot read \(database)"
            return report
        }
        var outcome = "valid"
        for step in ["plan", "check"] {
            do {
                let job = try JobLoader.load(path: jobPath)
                let options = RunOptions(database: database)
                _ = step == "plan" ? try SQLiteBackend.plan(job, options: options) : try SQLiteBackend.check(job, options: options)
                outcome += "+\(step)0"
            } catch {
                outcome += "+\(step)\((error as? WinnowError)?.exitCode ?? -1)"
                report.detail += "\(step): \(error)\n"
                if let problem = Self.judge(error, step: step, files: files) {
                    report.problem = problem
                    break
                }
            }
            let after = try? Data(contentsOf: URL(fileURLWithPath: database))
            if after != before {
                report.problem = (report.problem.map { $0 + "; " } ?? "") + "\(step) changed the bytes of the database file"
                try? before.write(to: URL(fileURLWithPath: database))
                break
            }
        }
        report.outcome = outcome
        return report
    }

    private func addSchemaFile(of bytes: Data, document: FuzzDocument, path: String, to files: inout [String: Data]) {
        // Found by text, not by composing the YAML again (a hostile file can make composing slow).
        guard document.kind == .job, let text = String(data: bytes, encoding: .utf8),
            let line = text.components(separatedBy: .newlines).first(where: { $0.hasPrefix("schema:") })
        else { return }
        let schema = line.dropFirst("schema:".count).trimmingCharacters(in: CharacterSet(charactersIn: " \t\"'"))
        guard !schema.isEmpty else { return }
        let resolved = JobLoader.resolve(schema, against: URL(fileURLWithPath: path).deletingLastPathComponent())
        if let data = try? Data(contentsOf: URL(fileURLWithPath: resolved)) { files[resolved] = data }
    }

    /// `validate FILE`, `plan --database COPY JOB`, `run --database COPY JOB` through the
    /// executable, each with a timeout.
    func runThroughExecutable(
        _ bytes: Data, document: FuzzDocument, tag: String, timeout: TimeInterval = FuzzTests.processTimeout
    ) -> Report {
        var report = Report()
        let safeTag = tag.filter { $0.isLetter || $0.isNumber || $0 == "-" }
        let path: String
        do { path = try write(bytes, for: document, tag: safeTag) } catch {
            report.problem = "cannot write the case: \(error)"
            return report
        }
        let jobPath: String
        if document.kind == .schema {
            guard let p = try? schemaJob(for: path) else {
                report.problem = "cannot write the schema's job"
                return report
            }
            jobPath = p
        } else {
            jobPath = path
        }
        let fm = FileManager.default
        let source = database(for: document)
        let planCopy = dir.appendingPathComponent("cases/\(safeTag)-plan.sqlite").path
        let runCopy = dir.appendingPathComponent("cases/\(safeTag)-run.sqlite").path
        defer {
            for file in [planCopy, runCopy] {
                for suffix in ["", "-wal", "-shm", "-journal"] { try? fm.removeItem(atPath: file + suffix) }
            }
        }
        do {
            for copy in [planCopy, runCopy] {
                try? fm.removeItem(atPath: copy)
                try fm.copyItem(atPath: source, toPath: copy)
            }
        } catch {
            report.problem = "cannot copy the database: \(error)"
            return report
        }
        let planBefore = try? Data(contentsOf: URL(fileURLWithPath: planCopy))
        let runBefore = try? FuzzState.user(runCopy)
        var problems: [String] = []
        var outcome: [String] = []
        let commands: [(String, [String])] = [
            ("validate", ["validate", path]),
            ("plan", ["plan", "--database", planCopy, jobPath]),
            ("run", ["run", "--database", runCopy, jobPath]),
        ]
        var statuses: [String: Int32] = [:]
        for (name, arguments) in commands {
            let result: FuzzProcess.Result
            do {
                result = try FuzzProcess.run(arguments, timeout: timeout)
            } catch {
                problems.append("\(name): cannot start the executable: \(error)")
                continue
            }
            if result.timedOut {
                problems.append("\(name) hung (killed after \(Int(timeout)) s)")
                report.survived = false
                outcome.append("\(name)-hang")
                break  // the next commands read the same file: they would hang too
            }
            if result.signaled {
                problems.append(
                    "\(name) was ended by signal \(result.status)\(result.stderr.isEmpty ? "" : ": " + String(result.stderr.suffix(400)))")
                report.survived = false
                outcome.append("\(name)-signal\(result.status)")
                break
            }
            statuses[name] = result.status
            outcome.append("\(name)\(result.status)")
            if name == "validate" { report.validateStatus = result.status }
            report.detail += "\(name): \(result.status) \(result.stderr.prefix(300))\n"
            if ![0, 64, 65, 66].contains(result.status) {
                problems.append("\(name) exited \(result.status) (expected 0, 64, 65 or 66): \(String(result.stderr.prefix(600)))")
            } else if result.status != 0 {
                let message = result.stderr.components(separatedBy: "winnow: error: ").dropFirst().first ?? ""
                if message.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty && result.status != 64 {
                    problems.append(
                        "\(name) exited \(result.status) without a 'winnow: error: MESSAGE' line: \(result.stderr.prefix(300).debugDescription)"
                    )
                }
            }
        }
        if let validate = statuses["validate"], validate != 0 {
            for name in ["plan", "run"] where statuses[name] == 0 {
                problems.append("validate refused the file (exit \(validate)) but \(name) accepted it")
            }
        }
        if (try? Data(contentsOf: URL(fileURLWithPath: planCopy))) != planBefore {
            problems.append("plan changed the bytes of the database file")
        }
        // A rule refused at its turn, after the steps before it committed, says so (docs/reference.md
        // section 5: committed batches stay committed); any other refusal changes nothing.
        if let run = statuses["run"], run != 0, run != 1, !report.detail.contains("stays committed") {
            if let after = try? FuzzState.user(runCopy), after != runBefore {
                problems.append(
                    "run was refused (exit \(run)) but changed user tables or schema: \(FuzzState.difference(runBefore, after)); \(report.detail)"
                )
            }
        }
        report.outcome = outcome.joined(separator: "+")
        report.problem = problems.isEmpty ? nil : problems.joined(separator: "; ")
        return report
    }
}

/// The user-visible state of a database: schema objects and every row (winnow_* left out).
struct FuzzState: Equatable {
    var schema: [String]
    var rows: [String: [[DatabaseValue]]]

    static func user(_ path: String) throws -> FuzzState {
        var config = Configuration()
        config.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: config)
        defer { try? queue.close() }
        let schema = try queue.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT type, name, tbl_name, sql FROM sqlite_master
                    WHERE lower(substr(name, 1, 7)) NOT IN ('winnow_', 'sqlite_') AND lower(substr(tbl_name, 1, 7)) <> 'winnow_'
                    ORDER BY type, name
                    """
            ).map { "\($0[0] as String) \($0[1] as String): \(($0[3] as String?) ?? "")" }
        }
        return FuzzState(schema: schema, rows: try TestSupport.contentDump(path))
    }

    static func difference(_ a: FuzzState?, _ b: FuzzState) -> String {
        guard let a else { return "no state before" }
        if a.schema != b.schema {
            return "schema \(a.schema.filter { !b.schema.contains($0) }) -> \(b.schema.filter { !a.schema.contains($0) })"
        }
        let tables = Set(a.rows.keys).union(b.rows.keys).filter { a.rows[$0] != b.rows[$0] }.sorted()
        return "rows of \(tables.joined(separator: ", "))"
    }
}

/// Reports an in-process case that runs too long (a hang) and stops the run, naming the case.
final class FuzzWatchdog {
    private let lock = NSLock()
    private var label: String?
    private var started = Date()
    private var stopped = false

    init(limit: TimeInterval) {
        let thread = Thread { [weak self] in
            while true {
                Thread.sleep(forTimeInterval: 1)
                guard let self else { return }
                self.lock.lock()
                let label = self.label, started = self.started, stopped = self.stopped
                self.lock.unlock()
                if stopped { return }
                if let label, Date().timeIntervalSince(started) > limit {
                    FileHandle.standardError.write(Data("FuzzTests: HANG: \(label) has run for more than \(Int(limit)) s\n".utf8))
                    fatalError("FuzzTests: hang in \(label)")
                }
            }
        }
        thread.start()
    }

    func begin(_ label: String) {
        lock.lock()
        self.label = label
        started = Date()
        lock.unlock()
    }

    func end() {
        lock.lock()
        label = nil
        lock.unlock()
    }

    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }
}
