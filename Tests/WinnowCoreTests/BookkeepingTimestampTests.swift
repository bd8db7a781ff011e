import Foundation
import XCTest

@testable import WinnowCore

/// The timestamps winnow stores (`started_at`, `pruned_at`, the lock's `acquired_at`): the
/// form Foundation's ISO 8601 formatter gave them before they were formatted by hand, so that
/// old and new rows compare as text in time order.
final class BookkeepingTimestampTests: XCTestCase {
    func testTheFormIsFoundationsISO8601WithMilliseconds() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var generator = SystemRandomNumberGenerator()
        // Whole seconds plus a fraction that binary floating point holds exactly, from 1970 to 2200.
        let fractions = [0, 0.5, 0.25, 0.125, 0.875]
        var dates = [0, 951_782_400, 1_795_000_000, 4_102_444_799, 7_258_118_400].map { Date(timeIntervalSince1970: Double($0)) }
        for _ in 0..<500 {
            let seconds = Double(Int.random(in: 0...7_258_118_400, using: &generator))
            dates.append(Date(timeIntervalSince1970: seconds + fractions.randomElement(using: &generator)!))
        }
        for date in dates {
            XCTAssertEqual(Bookkeeping.timestamp(date), formatter.string(from: date), "\(date.timeIntervalSince1970)")
        }
    }

    func testLaterTimesSortLaterAsText() {
        let start = Date(timeIntervalSince1970: 1_795_000_000.999)
        let stamps = [0, 0.0005, 0.001, 0.5, 1, 59, 3_600, 86_400 * 400].map { Bookkeeping.timestamp(start.addingTimeInterval($0)) }
        XCTAssertEqual(stamps, stamps.sorted())
        XCTAssertEqual(Bookkeeping.timestamp(start), "2026-11-18T11:06:40.999Z")
    }
}
