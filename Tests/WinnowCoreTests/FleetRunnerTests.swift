import Foundation
import XCTest

@testable import WinnowCore

/// Scheduling of a fleet, with stand-in work (no database).
final class FleetRunnerTests: XCTestCase {
    func summary() -> RunSummary {
        RunSummary(
            command: .run, runID: 1, status: .completed, job: "j", database: "d", counts: Counts(), migrationSteps: 0, seconds: 0, rules: []
        )
    }

    func testEveryStoreRunsOnceWithinTheParallelBound() {
        let counter = Concurrency()
        let stores = (0..<40).map { "s\($0)" }
        let outcomes = FleetRunner.run(stores, options: FleetOptions(parallel: 3)) { _ in
            counter.enter()
            Thread.sleep(forTimeInterval: 0.005)
            counter.leave()
            return (self.summary(), 0)
        }
        XCTAssertEqual(outcomes.map(\.store), stores, "outcomes in the stores' order")
        XCTAssertTrue(outcomes.allSatisfy { $0.status == .done })
        XCTAssertLessThanOrEqual(counter.peak, 3)
        XCTAssertGreaterThan(counter.peak, 1, "stores ran concurrently")
    }

    func testFirstFailureStopsSchedulingUnlessToldToContinue() {
        let stores = (0..<10).map { "s\($0)" }
        let work: @Sendable (String) throws -> (RunSummary, Int32) = { store in
            if store == "s3" { throw WinnowError.io("disk full") }
            return (self.summary(), 0)
        }
        let signal = StopSignal()
        let stopped = FleetRunner.run(stores, options: FleetOptions(parallel: 1), stop: signal, work: work)
        XCTAssertEqual(stopped.map(\.status), [.done, .done, .done, .failed] + Array(repeating: .notRun, count: 6))
        XCTAssertEqual(FleetRunner.exitCode(stopped), 74)
        XCTAssertTrue(signal.isRaised, "the runs in flight are told to stop after their batch")
        XCTAssertTrue(RunDeadline(at: nil, stop: signal).passed(), "a run's deadline passes once its fleet stops")
        let goOn = StopSignal()
        let all = FleetRunner.run(stores, options: FleetOptions(parallel: 2, continueOnError: true), stop: goOn, work: work)
        XCTAssertFalse(goOn.isRaised)
        XCTAssertEqual(all.filter { $0.status == .done }.count, 9)
        XCTAssertEqual(all[3].status, .failed)
    }

    func testFailedCanaryStopsTheRollout() {
        let stores = (0..<10).map { "s\($0)" }
        let ran = Concurrency()
        let outcomes = FleetRunner.run(stores, options: FleetOptions(parallel: 4, canary: 2, continueOnError: true)) { store in
            ran.enter()
            ran.leave()
            if store == "s1" { throw WinnowError.refused("guard") }
            return (self.summary(), 0)
        }
        XCTAssertEqual(ran.total, 2, "only the canaries ran")
        XCTAssertEqual(outcomes.filter { $0.status == .notRun }.count, 8)
        XCTAssertEqual(FleetRunner.exitCode(outcomes), 65)
    }

    func testLockedStoreIsSkippedNotAFailure() {
        let outcomes = FleetRunner.run(["a", "b", "c"], options: FleetOptions(parallel: 1)) { store in
            if store == "a" { throw WinnowError.locked("held") }
            return (self.summary(), store == "c" ? 1 : 0)
        }
        XCTAssertEqual(outcomes.map(\.status), [.locked, .done, .done], "a locked store does not stop the rollout")
        XCTAssertEqual(FleetRunner.exitCode(outcomes), 75, "locked outranks findings")
    }

    /// The outcomes a fleet returns keep no sample groups (a list of more than a thousand holds
    /// a file open); `finished` hears of each store with them. `FleetPlans` keeps, of each live
    /// schema, the plan of the first store in the fleet's order, whatever order they end in.
    func testOutcomesLetSampleGroupsGoAndTheFirstPlanOfEachSchemaIsKept() {
        let stores = (0..<12).map { "s\($0)" }
        let heard = Concurrency()
        let plans = FleetPlans(stores: stores)
        let outcomes = FleetRunner.run(
            stores, options: FleetOptions(parallel: 4),
            work: { store in
                // The first stores end last.
                let index = Int(store.dropFirst())!
                Thread.sleep(forTimeInterval: 0.002 * Double(12 - index))
                var plan = RendererGoldenTests.plan
                plan.database = store
                plan.fingerprints = .init(job: "j", targetSchema: "t", liveSchema: "schema \(index % 3)", duplicates: "d")
                return (plan, 0)
            },
            finished: { outcome in
                if outcome.summary?.rules.first?.samples.isEmpty == false { heard.enter() }
                plans.heard(outcome)
            })
        XCTAssertEqual(heard.total, 12, "finished hears of every store with its groups")
        XCTAssertFalse(RendererGoldenTests.plan.rules[0].samples.isEmpty)
        XCTAssertTrue(outcomes.allSatisfy { $0.summary?.rules.allSatisfy(\.samples.isEmpty) == true })
        XCTAssertEqual(outcomes.map { $0.summary?.counts }, Array(repeating: RendererGoldenTests.plan.counts, count: 12), "counts kept")
        let kept = plans.plans
        XCTAssertEqual(kept.keys.sorted(), ["schema 0", "schema 1", "schema 2"])
        XCTAssertEqual(kept["schema 0"]?.database, "s0")
        XCTAssertEqual(kept["schema 1"]?.database, "s1")
        XCTAssertEqual(kept["schema 2"]?.database, "s2")
        XCTAssertEqual(kept["schema 2"]?.rules[0].samples, RendererGoldenTests.plan.rules[0].samples)
        // The text shows the kept plan's groups, though the outcomes have none.
        XCTAssertEqual(
            Renderer.fleetPlan(outcomes, plans: kept).components(separatedBy: "\n").filter { $0.hasPrefix("  group ") }.count,
            3 * RendererGoldenTests.plan.rules[0].samples.count)
    }

    func testSeverityOrder() {
        XCTAssertEqual(FleetRunner.worst([0, 1, 75, 65]), 65)
        XCTAssertEqual(FleetRunner.worst([66, 74]), 74)
        XCTAssertEqual(FleetRunner.worst([1, 0]), 1)
        XCTAssertEqual(FleetRunner.worst([70, 74]), 70)
        XCTAssertEqual(FleetRunner.worst([]), 0)
    }

    func testStoreListExpandsGlobsInNameOrder() throws {
        let dir = try FileManager.default.temporaryDirectory.appendingPathComponent("fleet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["b.sqlite", "a.sqlite", "c.txt"] {
            FileManager.default.createFile(atPath: dir.appendingPathComponent(name).path, contents: Data())
        }
        let expanded = try StoreList.expand([dir.path + "/*.sqlite", dir.path + "/a.sqlite", "postgresql://h/d"])
        XCTAssertEqual(expanded, [dir.path + "/a.sqlite", dir.path + "/b.sqlite", "postgresql://h/d"])
        XCTAssertThrowsError(try StoreList.expand([dir.path + "/*.db"])) { error in
            guard case WinnowError.usage = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(StoreList.parse(list: "# tenants\na.sqlite\n\n  b.sqlite  \n"), ["a.sqlite", "b.sqlite"])
    }
}

/// Counts concurrent entries.
final class Concurrency: @unchecked Sendable {
    private let lock = NSLock()
    private var current = 0
    private(set) var peak = 0
    private(set) var total = 0

    func enter() {
        lock.withLock {
            current += 1
            total += 1
            peak = max(peak, current)
        }
    }

    func leave() { lock.withLock { current -= 1 } }
}
