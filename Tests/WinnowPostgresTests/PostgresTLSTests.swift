import Foundation
import WinnowCore
import WinnowPostgres
import WinnowTestSupport
import XCTest

/// TLS against a real server with `ssl = on` and certificates made here: a CA, a server
/// certificate for `localhost`, another CA, an expired server certificate, a client certificate.
/// `verify-full` connects with the right root certificate and refuses, naming the reason, with
/// the wrong one, the wrong host name, an expired certificate; `require` encrypts without
/// verifying; a client certificate passes `clientcert=verify-full`.
final class PostgresTLSTests: XCTestCase {
    nonisolated(unsafe) static var server: ThrowawayServer?
    nonisolated(unsafe) static var certificates: URL?

    /// Makes the certificates with openssl (`expired.crt` by a small CA whose dates are given).
    static func makeCertificates(in dir: URL) throws {
        let script = """
            set -e
            cd "$1"
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj "/CN=winnow test CA"
            openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days 30 -subj "/CN=another CA"
            printf 'subjectAltName=DNS:localhost\\nbasicConstraints=CA:FALSE\\n' > server.ext
            openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost"
            openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 30 -extfile server.ext
            openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj "/CN=certuser"
            openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 30
            mkdir -p ca/newcerts; : > ca/index.txt; echo 1000 > ca/serial
            printf '[ca]\\ndefault_ca=d\\n[d]\\ndir=%s/ca\\ndatabase=$dir/index.txt\\nnew_certs_dir=$dir/newcerts\\nserial=$dir/serial\\ndefault_md=sha256\\npolicy=p\\n[p]\\ncommonName=supplied\\n' "$PWD" > ca.cnf
            openssl ca -batch -config ca.cnf -cert ca.crt -keyfile ca.key -in server.csr -out expired.crt \\
                -startdate 20200101000000Z -enddate 20200102000000Z -extfile server.ext -notext
            chmod 600 *.key
            """
        let result = try ThrowawayServer.run(["bash", "-c", script, "make-certificates", dir.path])
        guard result.status == 0 else { throw WinnowError.io("openssl failed: \(result.stderr)") }
    }

    override class func setUp() {
        guard ProcessInfo.processInfo.environment["WINNOW_TEST_POSTGRES"] != nil else { return }
        do {
            let dir = try TestSupport.scratchDirectory("TLS")
            try makeCertificates(in: dir)
            let server = try ThrowawayServer()
            try server.install(dir.appendingPathComponent("server.crt").path, as: "server.crt")
            try server.install(dir.appendingPathComponent("server.key").path, as: "server.key")
            try server.install(dir.appendingPathComponent("ca.crt").path, as: "ca.crt")
            try PostgresBackend().withSession(server.url, mode: .readWrite(create: false)) { session in
                try session.execute("ALTER SYSTEM SET ssl = on")
                try session.execute("ALTER SYSTEM SET ssl_ca_file = 'ca.crt'")
                try session.execute("CREATE ROLE certuser LOGIN")
                try session.execute("CREATE TABLE people (id integer PRIMARY KEY, email text)")
                try session.execute("INSERT INTO people VALUES (1, 'a@x'), (2, 'a@x')")
                try session.execute("GRANT SELECT ON people TO certuser")
            }
            try server.authenticate([
                "hostssl all certuser 127.0.0.1/32 trust clientcert=verify-full", "host all certuser 127.0.0.1/32 reject",
            ])
            Self.server = server
            Self.certificates = dir
        } catch {
            XCTFail("the TLS server did not start: \(error)")
        }
    }

    /// Without a server to test against, every test is skipped (its certificates are never made).
    override func setUpWithError() throws {
        _ = try PostgresServer.require()
    }

    override class func tearDown() {
        server?.remove()
        if let certificates { try? FileManager.default.removeItem(at: certificates) }
    }

    func file(_ name: String) throws -> String { try XCTUnwrap(Self.certificates).appendingPathComponent(name).path }

    /// `winnow plan` of a job over `people` on the TLS server, as `user` at `host`, with `settings`.
    func plan(
        _ settings: String, host: String = "localhost", user: String = "postgres", environment: [String: String] = [:]
    ) throws
        -> TestSupport.Result
    {
        _ = try PostgresServer.require()
        let server = try XCTUnwrap(Self.server)
        let dir = try XCTUnwrap(Self.certificates)
        let job = try TestSupport.writeFile(
            "version: 1\ndedupe:\n  - {entity: people, key: email}\n", to: dir.appendingPathComponent("job.yaml").path)
        return try TestSupport.winnow(
            ["plan", job, "--database", "host=\(host) port=\(server.port) user=\(user) dbname=postgres \(settings)"],
            environment: ["HOME": dir.appendingPathComponent("home").path].merging(environment) { $1 })
    }

    func assertRefused(_ result: TestSupport.Result, saying reason: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 66, result.stderr, file: file, line: line)
        XCTAssertTrue(result.stderr.contains(reason), "should say \(reason): \(result.stderr)", file: file, line: line)
    }

    func testVerifyFullWithTheRightRootCertificate() throws {
        let result = try plan("sslmode=verify-full sslrootcert=\(try file("ca.crt"))")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("1 duplicate group"), result.stdout)
        XCTAssertEqual(try plan("sslmode=verify-full", environment: ["PGSSLROOTCERT": try file("ca.crt")]).status, 0)
    }

    func testAnotherCertificateAuthorityIsRefused() throws {
        assertRefused(
            try plan("sslmode=verify-full sslrootcert=\(try file("other-ca.crt"))"),
            saying: "the server's certificate is not signed by a certificate authority in \(try file("other-ca.crt")) (unknown CA)")
    }

    func testTheWrongHostNameIsRefusedByVerifyFullOnly() throws {
        let root = try file("ca.crt")
        assertRefused(
            try plan("sslmode=verify-full sslrootcert=\(root)", host: "127.0.0.1"),
            saying: "the server's certificate is not for the host name '127.0.0.1' (sslmode=verify-full)")
        XCTAssertEqual(try plan("sslmode=verify-ca sslrootcert=\(root)", host: "127.0.0.1").status, 0)
    }

    /// `require` encrypts without verifying; with a root certificate in `~/.postgresql/` it
    /// verifies as `verify-ca` does (libpq's rule).
    func testRequireEncryptsAndVerifiesWithADefaultRootCertificate() throws {
        XCTAssertEqual(try plan("sslmode=require sslrootcert=\(try file("other-ca.crt"))").status, 66)
        XCTAssertEqual(try plan("sslmode=require").status, 0)
        let server = try XCTUnwrap(Self.server)
        let encrypted = try PostgresBackend(environment: ["USER": "postgres"]).withSession(
            "host=127.0.0.1 port=\(server.port) user=postgres dbname=postgres sslmode=require", mode: .readOnly
        ) { session in try session.value("SELECT ssl FROM pg_catalog.pg_stat_ssl WHERE pid = pg_backend_pid()") }
        XCTAssertEqual(encrypted, .integer(1))
        let home = try XCTUnwrap(Self.certificates).appendingPathComponent("home/.postgresql")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        try FileManager.default.copyItem(atPath: try file("other-ca.crt"), toPath: home.appendingPathComponent("root.crt").path)
        assertRefused(try plan("sslmode=require"), saying: "(unknown CA)")
    }

    /// A client certificate passes `clientcert=verify-full` (its common name is the user); without
    /// one the server refuses; a key others may read is refused before connecting.
    func testClientCertificate() throws {
        let (certificate, key) = (try file("client.crt"), try file("client.key"))
        let passed = try plan(
            "sslmode=verify-full sslrootcert=\(try file("ca.crt")) sslcert=\(certificate) sslkey=\(key)", user: "certuser")
        XCTAssertEqual(passed.status, 0, passed.stderr)
        XCTAssertEqual(try plan("sslmode=require", user: "certuser").status, 66)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key) }
        let open = try plan("sslmode=require sslcert=\(certificate) sslkey=\(key)", user: "certuser")
        XCTAssertEqual(open.status, 64, open.stderr)
        XCTAssertTrue(open.stderr.contains("has group or world access"), open.stderr)
    }

    /// Last: the server's certificate swapped for an expired one.
    func testZExpiredCertificateIsRefused() throws {
        let server = try XCTUnwrap(Self.server)
        try server.install(try file("expired.crt"), as: "server.crt")
        try server.reload()
        defer {
            try? server.install(try file("server.crt"), as: "server.crt")
            try? server.reload()
        }
        assertRefused(
            try plan("sslmode=verify-full sslrootcert=\(try file("ca.crt"))"), saying: "the server's certificate expired on 2020-01-02")
    }
}
