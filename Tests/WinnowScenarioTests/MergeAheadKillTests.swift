import Foundation
import GRDB
import XCTest
import WinnowTestSupport

/// A rule whose children and merges go ahead in stretches (docs/performance.md, "A stretch of
/// merges deletes the losers it took in its rowids"), killed with SIGKILL at seeded random
/// moments of its run: docs/reference.md section 5 holds there as it does for batches by group.
///
/// After each kill, before anything runs again:
/// - no `orders` row points at a customer that is gone (children move before their losers go);
/// - no visit is lost or counted twice: the customers' visits, less those of every loser still
///   there that a merge already took (`winnow_taken_losers`, its winner still there), plus those
///   kept for a winner whose merge had not come (`winnow_given_merges`), add up to the original
///   total.
///
/// Then `run` again finishes the job with the same rows as an uninterrupted run, and
/// `restore` of every run, newest first, gives back the original rows.
///
/// The crash harness (CrashHarnessTests) kills a rule whose link table has a unique key, which
/// takes its losers by group; this suite kills the stretches. `WINNOW_CRASH_SEED` moves its
/// seeds as it moves the harness's.
final class MergeAheadKillTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try TestSupport.scratchDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    static let customers = 30_000

    /// `customers` with keys drawn at random (groups of 1 to about 8 rows scattered over the
    /// table), NULLs in `phone`; `orders` (indexed, no unique key: its children go ahead)
    /// pointing at customers all over the table.
    func makeStore() throws -> String {
        let path = dir.appendingPathComponent("template.sqlite").path
        _ = try TestSupport.makeDatabase(
            at: path,
            sql: ScenarioKit.scatteredCustomersSQL(customers: Self.customers, orders: Self.customers * 2, seed: 26, createdAt: 0..<1000))
        return path
    }

    /// Groups far beyond one batch, and a limit that keeps each stretch short, so that a run
    /// takes several stretches of children, of merges and of the losers they leave.
    static let job = ScenarioKit.customersJob(size: 20, maxTransactionMilliseconds: 40)

    /// What a run's batch events say it did, transaction by transaction.
    enum Stage: String { case children, merges, deletions }

    static func stage(_ event: [String: Any]) -> Stage? {
        guard (event["event"] as? String) == "batch" else { return nil }
        let count = { (key: String) in (event[key] as? NSNumber)?.intValue ?? 0 }
        if count("updated") > 0 { return .merges }
        if count("repointed") > 0, count("deleted") == 0 { return .children }
        return .deletions
    }

    /// The JSON events in `text`, one per line (a line cut short by a kill is skipped).
    static func events(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// When a run is killed: after it has printed `count` batch events of `stage`, `extra`
    /// seconds later (so that a kill lands inside the next transaction as well as between two);
    /// or, with no stage, `extra` seconds after its launch.
    struct Trigger {
        var stage: Stage?
        var count: Int
        var extra: Double
    }

    /// Runs `winnow ARGS` and kills it with SIGKILL at `trigger` if it still runs; returns
    /// whether it was killed and its JSON events.
    ///
    /// A kill is aimed by what the run itself has printed, not by the times of another run:
    /// on a loaded machine a run's stages move by seconds from one run to the next.
    func runAndKill(_ arguments: [String], at trigger: Trigger?) throws -> (killed: Bool, status: Int32, events: [[String: Any]]) {
        let out = dir.appendingPathComponent("out-\(UUID().uuidString).jsonl")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let handle = try FileHandle(forWritingTo: out)
        let process = Process()
        process.executableURL = TestSupport.executable
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = FileHandle.nullDevice
        try process.run()
        if let trigger {
            // Only the lines appended since the last look are read (the run shares the cores
            // with this loop): `pending` holds a line not yet ended.
            let reader = try FileHandle(forReadingFrom: out)
            defer { try? reader.close() }
            var pending = Data()
            var seen = 0
            var reached: Date? = trigger.stage == nil ? Date() : nil
            while process.isRunning {
                if let reached {
                    if Date().timeIntervalSince(reached) >= trigger.extra { break }
                } else if let stage = trigger.stage {
                    pending.append(reader.availableData)
                    if let end = pending.lastIndex(of: UInt8(ascii: "\n")) {
                        let lines = String(decoding: pending[..<end], as: UTF8.self)
                        pending = Data(pending[pending.index(after: end)...])
                        seen += Self.events(lines).lazy.compactMap(Self.stage).filter { $0 == stage }.count
                        if seen >= trigger.count { reached = Date() }
                    }
                }
                Thread.sleep(forTimeInterval: 0.002)
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        try handle.close()
        let killed = process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
        return (killed, process.terminationStatus, Self.events((try? String(contentsOf: out, encoding: .utf8)) ?? ""))
    }

    /// The invariants of a store between two runs (see the type's documentation).
    func problemsBetweenRuns(_ path: String, totalVisits: Int) throws -> [String] {
        var problems: [String] = []
        let dangling = try ScenarioKit.int(
            path,
            "SELECT count(*) FROM orders AS o WHERE o.customer_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM customers AS c WHERE c.id = o.customer_id)"
        )
        if dangling > 0 { problems.append("\(dangling) order(s) point at a customer that is gone") }
        let hasRecord = try ScenarioKit.int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'winnow_taken_losers'") > 0
        let takenVisits =
            hasRecord
            ? try ScenarioKit.takenInt(
                path,
                """
                SELECT coalesce(sum(c.visits), 0) FROM customers AS c WHERE c.id IN (
                  SELECT m.loser FROM temp.taken AS m
                  WHERE m.tbl = 'customers' AND EXISTS (SELECT 1 FROM customers AS w WHERE w.id = m.winner))
                """) : 0
        let visits = try ScenarioKit.int(path, "SELECT coalesce(sum(visits), 0) FROM customers")
        let given = try ScenarioKit.givenIntegers(path, table: "customers", column: "visits")
        if visits - takenVisits + given != totalVisits {
            problems.append(
                "visits add up to \(visits - takenVisits + given) (\(visits) less \(takenVisits) of losers taken, plus \(given) kept for winners), not \(totalVisits)"
            )
        }
        return problems
    }

    func testRunsKilledAmidTheStretchesResumeToTheSameRowsAndRestoreExactly() throws {
        try runsKilledAmidTheStretches(job: Self.job, stages: [.children, .merges, .deletions])
    }

    /// The same with merges that give losers ahead (`sum` only: docs/reference.md, "Batches"):
    /// the stretches of merges delete every loser, and a killed run leaves the values of those
    /// whose winner's stretch had not come in `winnow_given_merges`, which the next run merges
    /// into their winners first. No stage of deletions follows the merges.
    func testRunsKilledAmidStretchesThatGiveLosersAheadResumeToTheSameRowsAndRestoreExactly() throws {
        try runsKilledAmidTheStretches(
            job: ScenarioKit.customersJob(size: 20, merge: "{visits: sum}", maxTransactionMilliseconds: 40), stages: [.children, .merges])
    }

    func runsKilledAmidTheStretches(job: String, stages aimedStages: [Stage]) throws {
        let template = try makeStore()
        let original = try ScenarioKit.userState(template)
        let totalVisits = try ScenarioKit.int(template, "SELECT sum(visits) FROM customers")
        let jobPath = dir.appendingPathComponent("job.yaml")
        try job.write(to: jobPath, atomically: true, encoding: .utf8)

        // An uninterrupted run: the end to reach, and how many transactions of each stage a
        // run takes and how long the longest lasts.
        let reference = dir.appendingPathComponent("reference.sqlite").path
        try FileManager.default.copyItem(atPath: template, toPath: reference)
        let launched = Date()
        let whole = try runAndKill(["run", jobPath.path, "--database", reference, "--format", "json", "--verbose"], at: nil)
        let wholeSeconds = Date().timeIntervalSince(launched)
        XCTAssertFalse(whole.killed)
        XCTAssertEqual(whole.status, 0)
        let stages = whole.events.compactMap(Self.stage)
        var counts: [Stage: Int] = [:]
        for stage in stages { counts[stage, default: 0] += 1 }
        for stage in aimedStages {
            XCTAssertGreaterThan(counts[stage] ?? 0, 1, "the uninterrupted run takes several transactions of \(stage)")
        }
        let longest = whole.events.compactMap { Self.stage($0) == nil ? nil : ($0["seconds"] as? NSNumber)?.doubleValue }.max() ?? 0.05
        let expected = try ScenarioKit.userState(reference)
        XCTAssertNotEqual(expected, original)

        let seeds: UInt64 = {
            guard let text = ProcessInfo.processInfo.environment["WINNOW_CRASH_SEED"] else { return 0xA4EA_D000 }
            return UInt64(text.lowercased().replacingOccurrences(of: "0x", with: ""), radix: 16) ?? 0xA4EA_D000
        }()
        var landed: [Stage: Int] = [:]
        for scenario in 0..<10 {
            var rng = SplitMix64(seed: seeds &+ UInt64(scenario))
            let tag = "scenario \(scenario) (seed 0x\(String(seeds &+ UInt64(scenario), radix: 16)))"
            let path = dir.appendingPathComponent("s\(scenario).sqlite").path
            try FileManager.default.copyItem(atPath: template, toPath: path)
            // The first kill after a random number of one stage's transactions (the stages in
            // turn), at a random moment before the next one ends; one scenario in three kills
            // the resumed run again, at a random moment of its span.
            // (Before the next one ends: within that transaction's time in the uninterrupted
            // run. Within the longest of all, a kill aimed after the first of two deletions
            // often came after the run had ended, and the deletions were seldom reached.)
            let aimed = aimedStages[scenario % aimedStages.count]
            guard let count = counts[aimed], count > 1 else { return XCTFail("no \(aimed)") }
            let kills = scenario % 3 == 2 ? 2 : 1
            for attempt in 0..<kills {
                let trigger: Trigger
                if attempt == 0 {
                    let after = Int.random(in: 1..<count, using: &rng)
                    let next = whole.events.filter { Self.stage($0) == aimed }.dropFirst(after).first
                    let seconds = (next?["seconds"] as? NSNumber)?.doubleValue ?? longest
                    trigger = Trigger(stage: aimed, count: after, extra: Double.random(in: 0..<max(seconds, 0.001), using: &rng))
                } else {
                    trigger = Trigger(stage: nil, count: 0, extra: Double.random(in: 0.2 * wholeSeconds..<wholeSeconds, using: &rng))
                }
                let result = try runAndKill(["run", jobPath.path, "--database", path, "--format", "json", "--verbose"], at: trigger)
                guard result.killed else {
                    XCTAssertEqual(result.status, 0, "\(tag): the run exited \(result.status)")
                    break
                }
                let last = result.events.compactMap(Self.stage).last
                if let last { landed[last, default: 0] += 1 }
                for problem in try problemsBetweenRuns(path, totalVisits: totalVisits) {
                    XCTFail(
                        "\(tag): after kill \(attempt + 1) (\(trigger)) (last: \(last?.rawValue ?? "none")): \(problem)"
                    )
                }
            }
            let resumed = try TestSupport.winnow(["run", jobPath.path, "--database", path, "--format", "json"])
            XCTAssertEqual(resumed.status, 0, "\(tag): \(resumed.stderr)")
            XCTAssertEqual(try ScenarioKit.userState(path), expected, "\(tag): the end differs from an uninterrupted run's")
            XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM pragma_foreign_key_check"), 0, "\(tag)")
            // Every run that changed rows, killed or not, restored newest first: the original
            // rows. (A run killed before its first commit changed none and has nothing to restore.)
            let runs = try ScenarioKit.column(
                path,
                "SELECT id FROM winnow_runs WHERE command = 'run' AND deleted + updated + repointed + children_deleted > 0 ORDER BY id DESC",
                as: Int64.self)
            XCTAssertGreaterThanOrEqual(runs.count, 1, "\(tag)")
            for case let run? in runs {
                let restored = try TestSupport.winnow(["restore", "--database", path, "--run", "\(run)", "--quiet"])
                XCTAssertEqual(restored.status, 0, "\(tag): restore of run \(run): \(restored.stderr)")
            }
            XCTAssertEqual(try ScenarioKit.userState(path), original, "\(tag): restore did not give back the original rows")
        }
        // The kills reach the stretches of every stage.
        XCTAssertGreaterThanOrEqual(landed.count, aimedStages.count, "kills by the stage of the last transaction before them: \(landed)")
        print("MergeAheadKillTests: kills by the last transaction before them: \(landed)")
    }

    /// The stretches of children go on after another connection's commit (each checks its moves
    /// as the rows are): killed amid them while a writer commits to another table every 2 ms, a
    /// run leaves no order pointing at a customer that is gone and no visit lost or counted
    /// twice, and the run after it (the writer stopped) ends with the customers and orders of an
    /// uninterrupted run without a writer.
    func testRunsKilledAmidStretchesBesideAWriterResumeToTheSameRows() throws {
        let template = try makeStore()
        try ScenarioKit.execute(template, "CREATE TABLE heartbeat (id INTEGER PRIMARY KEY, at REAL)")
        let totalVisits = try ScenarioKit.int(template, "SELECT sum(visits) FROM customers")
        let jobPath = dir.appendingPathComponent("job.yaml")
        try Self.job.write(to: jobPath, atomically: true, encoding: .utf8)
        let reference = dir.appendingPathComponent("reference.sqlite").path
        try FileManager.default.copyItem(atPath: template, toPath: reference)
        let whole = try runAndKill(["run", jobPath.path, "--database", reference, "--format", "json", "--verbose"], at: nil)
        XCTAssertEqual(whole.status, 0)
        func rows(_ path: String) throws -> [[[DatabaseValue]]] {
            try ["customers", "orders"].map { try ScenarioKit.rows(path, "SELECT * FROM \($0) ORDER BY id") }
        }
        let expected = try rows(reference)
        var killedAmidStretches = 0
        for scenario in 0..<4 {
            let tag = "scenario \(scenario)"
            let path = dir.appendingPathComponent("w\(scenario).sqlite").path
            try FileManager.default.copyItem(atPath: template, toPath: path)
            let writer = try LiveWriterTests.Heartbeat(path: path)
            writer.start()
            Thread.sleep(forTimeInterval: 0.05)
            // After 2 to 5 stretches of children, 0 to 30 ms later.
            let trigger = Trigger(stage: .children, count: 2 + scenario, extra: Double(scenario) * 0.01)
            let result = try runAndKill(["run", jobPath.path, "--database", path, "--format", "json", "--verbose"], at: trigger)
            writer.stop()
            XCTAssertEqual(writer.done.wait(timeout: .now() + 30), .success, "\(tag): the writer did not stop")
            try writer.queue.close()
            XCTAssertEqual(writer.failures, [], tag)
            if result.killed, result.events.compactMap(Self.stage).last == .children { killedAmidStretches += 1 }
            for problem in try problemsBetweenRuns(path, totalVisits: totalVisits) { XCTFail("\(tag): \(problem)") }
            let resumed = try TestSupport.winnow(["run", jobPath.path, "--database", path, "--format", "json"])
            XCTAssertEqual(resumed.status, 0, "\(tag): \(resumed.stderr)")
            XCTAssertTrue(try rows(path) == expected, "\(tag): the customers and orders differ from an uninterrupted run's")
            XCTAssertEqual(try ScenarioKit.int(path, "SELECT count(*) FROM pragma_foreign_key_check"), 0, tag)
        }
        XCTAssertGreaterThanOrEqual(killedAmidStretches, 2, "kills that came amid the stretches of children beside the writer")
    }
}
