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

    // MARK: libpq's connection settings

    /// Files in memory: path -> (text, permission bits).
    func files(_ entries: [String: (String, Int)]) -> PostgresLocation.Files {
        PostgresLocation.Files(read: { entries[$0]?.0 }, permissions: { entries[$0]?.1 })
    }

    /// A key-word connection string is a PostgreSQL location like a URL: quoted values, escapes,
    /// spaces around `=`; its password never shows; a file path that contains `=` stays a file.
    func testKeywordStrings() throws {
        let text = "host=db.example.com port = 6543 dbname='my shop' user=bob password='p w\\'x' sslmode=require"
        XCTAssertTrue(DatabaseURL.isPostgres(text))
        let l = try PostgresLocation.parse(text, environment: env)
        XCTAssertEqual(
            [l.host, "\(l.port)", l.database, l.user, l.password ?? "", l.sslMode.rawValue],
            ["db.example.com", "6543", "my shop", "bob", "p w'x", "require"])
        XCTAssertEqual(DatabaseURL.redacted(text), "host=db.example.com port = 6543 dbname='my shop' user=bob password=*** sslmode=require")
        XCTAssertEqual(DatabaseURL.withoutPassword(text), "host=db.example.com port=6543 dbname='my shop' user=bob sslmode=require")
        XCTAssertTrue(DatabaseURL.hasPassword(text))
        XCTAssertEqual(DatabaseURL.shortName("host=h dbname=shop"), "shop")
        for path in ["/tmp/a=b.sqlite", "x=1.sqlite", "data/host=1.db", "hosts=2"] { XCTAssertFalse(DatabaseURL.isPostgres(path), path) }
        XCTAssertEqual(DatabaseURL.redacted("postgresql://h/d?user=u&password=s3cret"), "postgresql://h/d?user=u&password=***")
        XCTAssertThrowsError(try PostgresLocation.parse("host=h port=x password=s3cret", environment: env)) { error in
            XCTAssertEqual((error as? WinnowError)?.exitCode, 64)
            XCTAssertFalse("\(error)".contains("s3cret"), "\(error)")
        }
    }

    /// Several hosts, tried in order, each with its port (or one port for all), and which one a
    /// run takes.
    func testSeveralHostsAndTargetSessionAttrs() throws {
        let l = try PostgresLocation.parse("postgres://u@h1:5433,h2,[::1]:6000/app?target_session_attrs=read-write", environment: env)
        XCTAssertEqual(l.endpoints.map { "\($0.host):\($0.port)" }, ["h1:5433", "h2:5432", "::1:6000"])
        XCTAssertEqual(l.targetSessionAttrs, .readWrite)
        XCTAssertEqual([l.host, "\(l.port)"], ["h1", "5433"])
        let k = try PostgresLocation.parse("host=a,b port=7000 dbname=d", environment: ["PGTARGETSESSIONATTRS": "standby"])
        XCTAssertEqual(k.endpoints.map { "\($0.host):\($0.port)" }, ["a:7000", "b:7000"])
        XCTAssertEqual(k.targetSessionAttrs, .standby)
        XCTAssertThrowsError(try PostgresLocation.parse("host=a,b,c port=1,2", environment: env)) { error in
            XCTAssertTrue("\(error)".contains("could not match 2 port numbers to 3 hosts"), "\(error)")
        }
        XCTAssertThrowsError(try PostgresLocation.parse("host=a target_session_attrs=writable", environment: env))
    }

    /// A service's settings fill what the string leaves out and win over the environment; a
    /// missing service, or a line of its file that is not `key=value`, is a usage error.
    func testServiceFile() throws {
        let service = "# comment\n[other]\nhost=nope\n[shop]\nhost=svc.example.com\nport=7000\ndbname=shop\nuser=svcuser\n"
        let env = ["USER": "ann", "HOME": "/home/ann", "PGHOST": "envhost", "PGUSER": "envuser"]
        let l = try PostgresLocation.parse(
            "service=shop user=me", environment: env, files: files(["/home/ann/.pg_service.conf": (service, 0o600)]))
        XCTAssertEqual([l.host, "\(l.port)", l.database, l.user], ["svc.example.com", "7000", "shop", "me"])
        let byEnvironment = try PostgresLocation.parse(
            "postgresql:///", environment: env.merging(["PGSERVICE": "shop", "PGSERVICEFILE": "/etc/svc.conf"]) { $1 },
            files: files(["/etc/svc.conf": (service, 0o644)]))
        XCTAssertEqual(byEnvironment.host, "svc.example.com")
        let system = try PostgresLocation.parse(
            "service=shop", environment: ["USER": "ann", "PGSYSCONFDIR": "/opt/pg"],
            files: files(["/opt/pg/pg_service.conf": (service, 0o644)]))
        XCTAssertEqual(system.user, "svcuser")
        XCTAssertThrowsError(try PostgresLocation.parse("service=none", environment: env, files: files([:]))) { error in
            XCTAssertTrue("\(error)".contains("definition of service \"none\" not found"), "\(error)")
        }
        XCTAssertThrowsError(
            try PostgresLocation.parse(
                "service=shop", environment: env, files: files(["/home/ann/.pg_service.conf": ("[shop]\nhost svc\n", 0o600)]))
        ) { error in XCTAssertTrue("\(error)".contains("line 2"), "\(error)") }
    }

    /// The password file: first matching line, `*` for any field, escapes, a unix socket
    /// matching `localhost`; consulted only without another password, ignored (with libpq's
    /// warning) when others may read it.
    func testPasswordFile() throws {
        let pgpass = "# comment\ndb:5432:shop:bob:first\nlocalhost:5432:*:*:socket\n*:*:*:bob:any\\:th\\\\ing\n"
        let env = ["USER": "bob", "HOME": "/home/bob"]
        let private_ = files(["/home/bob/.pgpass": (pgpass, 0o600)])
        XCTAssertEqual(try PostgresLocation.parse("postgresql://db/shop", environment: env, files: private_).password, "first")
        XCTAssertEqual(try PostgresLocation.parse("postgresql://other/shop", environment: env, files: private_).password, "any:th\\ing")
        XCTAssertEqual(try PostgresLocation.parse("host=/tmp/sock dbname=x user=ann", environment: env, files: private_).password, "socket")
        XCTAssertEqual(
            try PostgresLocation.parse("postgresql://db/shop", environment: env.merging(["PGPASSWORD": "given"]) { $1 }, files: private_)
                .password, "given")
        let several = try PostgresLocation.parse("postgresql://db,other/shop", environment: env, files: private_)
        XCTAssertEqual(several.endpoints.map { several.at($0).password }, ["first", "any:th\\ing"])
        let elsewhere = try PostgresLocation.parse(
            "postgresql://db/shop", environment: env.merging(["PGPASSFILE": "/secrets/pass"]) { $1 },
            files: files(["/secrets/pass": ("*:*:*:*:fromfile\n", 0o400)]))
        XCTAssertEqual(elsewhere.password, "fromfile")
        let open = try PostgresLocation.parse(
            "postgresql://db/shop", environment: env, files: files(["/home/bob/.pgpass": (pgpass, 0o644)]))
        XCTAssertNil(open.password)
        XCTAssertEqual(open.warnings.count, 1)
        XCTAssertTrue(open.warnings[0].contains("has group or world access"), open.warnings[0])
    }

    /// Certificates: those named (a missing one is an error), else libpq's files under
    /// ~/.postgresql/; `require` with a root certificate verifies as `verify-ca`; a private key
    /// others may read is refused.
    func testCertificates() throws {
        let env = ["USER": "ann", "HOME": "/home/ann"]
        let defaults = files([
            "/home/ann/.postgresql/root.crt": ("", 0o644), "/home/ann/.postgresql/postgresql.crt": ("", 0o644),
            "/home/ann/.postgresql/postgresql.key": ("", 0o600),
        ])
        let l = try PostgresLocation.parse("postgresql://h/d?sslmode=require", environment: env, files: defaults)
        XCTAssertEqual(l.sslMode, .verifyCA)
        XCTAssertEqual(
            [l.sslRootCert, l.sslCert, l.sslKey],
            ["/home/ann/.postgresql/root.crt", "/home/ann/.postgresql/postgresql.crt", "/home/ann/.postgresql/postgresql.key"])
        let none = try PostgresLocation.parse("postgresql://h/d?sslmode=require", environment: env, files: files([:]))
        XCTAssertEqual(none.sslMode, .require)
        XCTAssertNil(none.sslRootCert)
        let named = try PostgresLocation.parse(
            "host=h sslmode=verify-full sslrootcert=/ca.pem",
            environment: env.merging(["PGSSLCERT": "/c.pem", "PGSSLKEY": "/c.key"]) { $1 },
            files: files(["/ca.pem": ("", 0o644), "/c.pem": ("", 0o644), "/c.key": ("", 0o600)]))
        XCTAssertEqual([named.sslRootCert, named.sslCert, named.sslKey], ["/ca.pem", "/c.pem", "/c.key"])
        XCTAssertEqual(try PostgresLocation.parse("host=h sslrootcert=system", environment: env, files: files([:])).sslRootCert, "system")
        XCTAssertThrowsError(try PostgresLocation.parse("host=h sslrootcert=/missing.pem", environment: env, files: files([:]))) { error in
            XCTAssertTrue("\(error)".contains("/missing.pem does not exist"), "\(error)")
        }
        XCTAssertThrowsError(
            try PostgresLocation.parse(
                "host=h sslcert=/c.pem sslkey=/c.key", environment: env, files: files(["/c.pem": ("", 0o644), "/c.key": ("", 0o644)]))
        ) { error in XCTAssertTrue("\(error)".contains("has group or world access"), "\(error)") }
    }

    /// `application_name`: the string's, else `PGAPPNAME`, else winnow.
    func testApplicationName() throws {
        XCTAssertEqual(try PostgresLocation.parse("postgresql://h/d", environment: env).applicationName, "winnow")
        XCTAssertEqual(try PostgresLocation.parse("postgresql://h/d", environment: ["PGAPPNAME": "nightly"]).applicationName, "nightly")
        XCTAssertEqual(
            try PostgresLocation.parse("host=h application_name=cron", environment: ["PGAPPNAME": "nightly"]).applicationName, "cron")
    }
}
