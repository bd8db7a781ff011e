import WinnowCore
import XCTest

@testable import WinnowPostgres

/// URL and environment parsing (libpq's conventions) and secrets kept out of messages. No server.
final class PostgresLocationTests: XCTestCase {
    let env = ["USER": "ann"]

    func testFullURL() throws {
        let l = try PostgresLocation.parse("postgresql://bob:s3cret@db.example.com:6543/shop?sslmode=require", environment: env)
        XCTAssertEqual(l.host, "db.example.com")
        XCTAssertEqual(l.port, 6543)
        XCTAssertEqual(l.user, "bob")
        XCTAssertEqual(l.password, "s3cret")
        XCTAssertEqual(l.database, "shop")
        XCTAssertEqual(l.sslMode, .require)
        XCTAssertFalse(l.redacted.contains("s3cret"))
    }

    func testEnvironmentFillsWhatTheURLLeavesOut() throws {
        let l = try PostgresLocation.parse(
            "postgres://",
            environment: ["PGHOST": "pg", "PGPORT": "5544", "PGUSER": "u", "PGDATABASE": "d", "PGPASSWORD": "pw", "PGSSLMODE": "disable"])
        XCTAssertEqual(
            [l.host, "\(l.port)", l.user, l.database, l.password ?? "", l.sslMode.rawValue], ["pg", "5544", "u", "d", "pw", "disable"])
    }

    func testLibpqDefaults() throws {
        let l = try PostgresLocation.parse("postgresql:///", environment: env)
        XCTAssertEqual(l.host, "/var/run/postgresql")
        XCTAssertTrue(l.isUnixSocket)
        XCTAssertEqual(l.socketPath, "/var/run/postgresql/.s.PGSQL.5432")
        XCTAssertEqual(l.user, "ann")
        XCTAssertEqual(l.database, "ann")
        XCTAssertEqual(l.sslMode, .prefer)
    }

    /// How long a connection attempt and a silent server are waited for: libpq's
    /// `connect_timeout` (URL first, then `PGCONNECT_TIMEOUT`; 0 is no limit, less than 2 is 2)
    /// and winnow's `winnow_liveness_check` (0 turns it off).
    func testWaitLimits() throws {
        let defaults = try PostgresLocation.parse("postgresql://h/d", environment: env)
        XCTAssertEqual(defaults.connectTimeout, 10)
        XCTAssertEqual(defaults.livenessCheck, 30)
        let set = try PostgresLocation.parse(
            "postgresql://h/d?connect_timeout=4&winnow_liveness_check=7", environment: ["PGCONNECT_TIMEOUT": "9"])
        XCTAssertEqual(set.connectTimeout, 4)
        XCTAssertEqual(set.livenessCheck, 7)
        XCTAssertEqual(try PostgresLocation.parse("postgresql://h/d", environment: ["PGCONNECT_TIMEOUT": "9"]).connectTimeout, 9)
        XCTAssertEqual(try PostgresLocation.parse("postgresql://h/d?connect_timeout=1", environment: env).connectTimeout, 2)
        XCTAssertNil(try PostgresLocation.parse("postgresql://h/d?connect_timeout=0", environment: env).connectTimeout)
        XCTAssertNil(try PostgresLocation.parse("postgresql://h/d?winnow_liveness_check=0", environment: env).livenessCheck)
        for bad in ["connect_timeout=soon", "winnow_liveness_check=-1", "winnow_liveness_check=1.5"] {
            XCTAssertThrowsError(try PostgresLocation.parse("postgresql://h/d?\(bad)", environment: env)) { error in
                XCTAssertEqual((error as? WinnowError)?.exitCode, 64, "\(bad)")
            }
        }
    }

    func testUnixSocketAsQueryParameter() throws {
        let l = try PostgresLocation.parse("postgresql://me@/app?host=/tmp/pg&port=55432", environment: env)
        XCTAssertEqual(l.socketPath, "/tmp/pg/.s.PGSQL.55432")
        XCTAssertEqual(l.database, "app")
    }

    func testPercentEncodedPasswordAndIPv6() throws {
        let l = try PostgresLocation.parse("postgresql://u:p%40ss@[::1]:5433/x", environment: env)
        XCTAssertEqual(l.password, "p@ss")
        XCTAssertEqual(l.host, "::1")
        XCTAssertEqual(l.port, 5433)
    }

    func testBadInputIsAUsageErrorThatHidesThePassword() {
        for url in [
            "postgresql://u:secret@h:notaport/d", "postgresql://u:secret@h/d?sslmode=sometimes", "postgresql://u:secret@h/d?bogus=1",
        ] {
            XCTAssertThrowsError(try PostgresLocation.parse(url, environment: env)) { error in
                guard case let WinnowError.usage(message) = error else { return XCTFail("\(error)") }
                XCTAssertFalse(message.contains("secret"), message)
            }
        }
    }

    func testRedaction() {
        XCTAssertEqual(DatabaseURL.redacted("postgresql://u:secret@h:5432/d"), "postgresql://u:***@h:5432/d")
        XCTAssertEqual(DatabaseURL.redacted("postgresql://u@h/d"), "postgresql://u@h/d")
        XCTAssertEqual(DatabaseURL.redacted("/tmp/a:b@c.sqlite"), "/tmp/a:b@c.sqlite")
        XCTAssertTrue(DatabaseURL.isPostgres("POSTGRES://h/d"))
        XCTAssertFalse(DatabaseURL.isPostgres("postgresql.sqlite"))
    }

    func testNumberedPlaceholdersSkipQuotedText() {
        XCTAssertEqual(
            PostgresSession.numbered("SELECT '?', \"a?\" FROM t WHERE a = ? AND b = ? -- ?\n AND c = ?"),
            "SELECT '?', \"a?\" FROM t WHERE a = $1 AND b = $2 -- ?\n AND c = $3")
    }

    /// The SQL character tables come from Swift's Unicode data: every white-space scalar is in
    /// the trim set, and the lowercase table maps exactly what `Normalize.lowercase` maps.
    func testUnicodeTablesFollowSwift() {
        XCTAssertEqual(
            PostgresUnicode.whitespace.count, (0...0x10FFFF).compactMap(Unicode.Scalar.init).filter(\.properties.isWhitespace).count)
        XCTAssertTrue(PostgresUnicode.whitespace.contains("\u{3000}"))
        XCTAssertTrue(PostgresUnicode.digitClass.contains("\\u0660-\\u0669"))
        XCTAssertEqual(PostgresUnicode.lowercaseSpecials.count, 1)
    }
}
