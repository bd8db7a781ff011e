import Foundation
import WinnowBackends
import WinnowCore
import WinnowTestSupport
import XCTest

/// The job-file fuzzer (the corpus and mutator of `FuzzTests`, one definition) run on both
/// engines: mutated job files that still validate are planned and run through the executable
/// against a copy of the example database and against the test server loaded from the same
/// file. On each engine `plan` changes nothing, a refused `run` changes nothing (unless it says
/// that what it did before the refused rule stays committed), every exit is 0, 64, 65 or 66 and
/// no process hangs or crashes; across engines `plan` and `run` end with the same exit code, and
/// a successful `run`, or one refused after the same committed work, leaves the same tables
/// with the same rows.
///
/// The seed is fixed (`WINNOW_FUZZ_SEED` replays another, `WINNOW_CROSS_FUZZ_CASES` sets how
/// many valid cases run), so a difference it finds is a failure of the code, not of the draw.
final class CrossEngineFuzzTests: XCTestCase {
    static let environment = ProcessInfo.processInfo.environment
    static var seed: UInt64 { UInt64(environment["WINNOW_FUZZ_SEED"] ?? "") ?? 20_261_123 }
    static var caseCount: Int { Int(environment["WINNOW_CROSS_FUZZ_CASES"] ?? "") ?? 40 }
    /// `WINNOW_CROSS_FUZZ_CASE=N` replays one case (its number as a failure names it).
    static var onlyCase: Int? { Int(environment["WINNOW_CROSS_FUZZ_CASE"] ?? "") }
    static let timeout: TimeInterval = 60

    func testMutatedJobsEndAlikeOnBothEngines() throws {
        let engines = try CrossEngine.all()
        let dir = try TestSupport.scratchDirectory()
        let repository = TestSupport.repositoryRoot
        for folder in ["jobs", "schemas", "examples", "work"] {
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        for (from, to) in [
            ("examples/contacts.sqlite", "work/contacts.sqlite"), ("examples/crm-v1.sqlite", "work/crm.sqlite"),
            ("examples/crm-seed.sqlite", "examples/crm-seed.sqlite"),
        ] {
            try FileManager.default.copyItem(at: repository.appendingPathComponent(from), to: dir.appendingPathComponent(to))
        }
        let corpus = FuzzCorpus.documents(repository: repository)
        for document in corpus where document.kind == .schema {
            try document.text.write(to: dir.appendingPathComponent("schemas/\(document.name)"), atomically: true, encoding: .utf8)
        }
        let jobs = corpus.filter { $0.kind == .job && $0.plannable }
        XCTAssertFalse(jobs.isEmpty)

        let seed = Self.seed
        print("CrossEngineFuzzTests: seed \(seed); replay with WINNOW_FUZZ_SEED=\(seed)")
        var valid = 0
        var outcomes: [String: Int] = [:]
        var tried = 0
        let indexes = Self.onlyCase.map { $0...$0 } ?? 0...(Self.caseCount * 30 - 1)
        for index in indexes {
            guard valid < (Self.onlyCase == nil ? Self.caseCount : 1) else { break }
            tried += 1
            var rng = FuzzRandom(seed: seed, stream: 4, index: index)
            let document = rng.pick(jobs)
            let (bytes, steps) = FuzzMutator.mutate(document.text, rng: &rng)
            let path = dir.appendingPathComponent("jobs/case\(index)-\(document.name)").path
            try bytes.write(to: URL(fileURLWithPath: path))
            // Only files that validate reach a database: the others are the SQLite suite's.
            guard case .job? = try? Validator.validate(path: path) else { continue }
            valid += 1
            let label = "seed \(seed) case \(index) (\(document.name): \(steps.joined(separator: "; ")))"
            if Self.onlyCase != nil { print("CrossEngineFuzzTests: \(label): \(path)") }
            var ends: [String: (plan: Int32, run: Int32, kept: Bool, tables: [String: [String]])] = [:]
            for engine in engines {
                guard
                    let end = try exercise(
                        engine, template: dir.appendingPathComponent("work/\(document.database)").path, job: path, dir: dir, label: label)
                else {
                    continue
                }
                ends[engine.name] = end
            }
            guard let sqlite = ends["sqlite"], let postgres = ends["postgresql"] else { continue }
            outcomes["plan\(sqlite.plan)+run\(sqlite.run)", default: 0] += 1
            XCTAssertEqual(sqlite.plan, postgres.plan, "\(label): plan exits \(sqlite.plan) on SQLite, \(postgres.plan) on PostgreSQL")
            XCTAssertEqual(sqlite.run, postgres.run, "\(label): run exits \(sqlite.run) on SQLite, \(postgres.run) on PostgreSQL")
            // A run that ended, or one refused at a rule's turn after earlier steps committed:
            // the same work is done on both engines.
            if sqlite.run == postgres.run, sqlite.run == 0 || (sqlite.kept && postgres.kept) {
                XCTAssertEqual(
                    sqlite.tables.keys.sorted(), postgres.tables.keys.sorted(), "\(label): the engines end with different tables")
                for (table, rows) in sqlite.tables where postgres.tables[table] != rows {
                    let other = postgres.tables[table] ?? []
                    let differing = zip(rows, other).first { $0 != $1 }.map { "SQLite \($0) | PostgreSQL \($1)" } ?? ""
                    XCTFail("\(label): \(table) ends with different rows (SQLite \(rows.count), PostgreSQL \(other.count)): \(differing)")
                }
            }
        }
        print(
            "CrossEngineFuzzTests: \(valid) valid of \(tried) mutated files; outcomes: \(outcomes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))"
        )
        guard Self.onlyCase == nil else { return }
        XCTAssertGreaterThanOrEqual(valid, Self.caseCount / 2, "too few mutated files validate to compare the engines")
        XCTAssertGreaterThan(outcomes.filter { $0.key.hasSuffix("run0") }.values.reduce(0, +), 0, "no case ran to the end on both engines")
    }

    /// `plan` then `run` of `job` on a fresh copy of `template` on `engine`: the exit codes and
    /// the user tables after the run; nil (with a failure recorded) when a contract rule broke.
    func exercise(
        _ engine: CrossEngine, template: String, job: String, dir: URL, label: String
    ) throws -> (
        plan: Int32, run: Int32, kept: Bool, tables: [String: [String]]
    )? {
        let location = try engine.prepare(template, dir)
        let clock = try Self.clockColumns(template)
        let before = try Self.tables(location, clock: clock)
        var statuses: [Int32] = []
        var kept = false
        for command in ["plan", "run"] {
            let result = try FuzzProcess.run([command, "--database", location, "--quiet", job], timeout: Self.timeout)
            let what = "\(label): \(engine.name) \(command)"
            if result.timedOut || result.signaled {
                XCTFail("\(what) \(result.timedOut ? "hung" : "was ended by signal \(result.status)"): \(result.stderr.suffix(400))")
                return nil
            }
            guard [0, 64, 65, 66].contains(result.status) else {
                XCTFail("\(what) exited \(result.status) (expected 0, 64, 65 or 66): \(result.stderr.prefix(600))")
                return nil
            }
            if result.status != 0, !result.stderr.contains("winnow: error: ") {
                XCTFail("\(what) exited \(result.status) without a 'winnow: error:' line: \(result.stderr.prefix(300))")
            }
            statuses.append(result.status)
            // A rule refused at its turn, after the steps before it committed, says so (docs/reference.md
            // section 5: committed batches stay committed); any other refusal changes nothing.
            kept = command == "run" && result.status != 0 && result.stderr.contains("stays committed")
            if command == "plan" || (result.status != 0 && !kept) {
                let after = try Self.tables(location, clock: clock)
                if after != before {
                    XCTFail(
                        "\(what) (exit \(result.status)) changed user tables: \(after.keys.sorted().filter { after[$0] != before[$0] })")
                    return nil
                }
            }
        }
        return (statuses[0], statuses[1], kept, try Self.tables(location, clock: clock))
    }

    static func readsClock(_ column: LiveColumn) -> Bool {
        let value = (column.defaultSQL ?? "").lowercased()
        return ["current_timestamp", "current_date", "current_time", "now()", "localtimestamp"].contains { value.contains($0) }
    }

    /// `table.column` (lowercased) of the template's columns whose default reads the clock. The
    /// loader leaves SQLite's `CURRENT_TIMESTAMP` default of a text column out on PostgreSQL (its
    /// text would differ), so the template, not each engine, says which columns these are.
    static func clockColumns(_ template: String) throws -> Set<String> {
        try BackendRouter().withSession(template, mode: .readOnly) { session in
            Set(
                try session.inspect().tables.flatMap { table in
                    table.storedColumns.filter(readsClock).map { "\(table.name).\($0.name)".lowercased() }
                })
        }
    }

    /// Every user table (`winnow_*` bookkeeping left out) with its rows, as text, sorted. A
    /// column whose default reads the clock (`CURRENT_TIMESTAMP`, `now()`) on this engine or in
    /// the template (`clock`) is left out: its values differ between any two runs, on one
    /// engine as on two.
    static func tables(_ location: String, clock: Set<String>) throws -> [String: [String]] {
        let names = try BackendRouter().withSession(location, mode: .readOnly) { session in
            try session.inspect().tables.map(\.name).filter { !Bookkeeping.isWinnowTable($0) }
        }
        let rows = try PostgresServer.rows(location, tables: names) { table, column in
            !readsClock(column) && !clock.contains("\(table).\(column.name)".lowercased())
        }
        return Dictionary(rows.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
    }
}
