import Foundation
import WinnowTestSupport
import XCTest

/// A PostgreSQL server that cannot be reached: exit 66 with the host, the port and the reason
/// in words (no library internals), through the executable. No server is needed.
final class PostgresUnreachableTests: CLITestCase {
    func job() throws -> String { try write("job.yaml", "version: 1\ndedupe:\n  - entity: people\n    key: email\n") }

    /// The words a connection failure must not show: the driver's and the event loop's types.
    func assertInWords(_ message: String, file: StaticString = #filePath, line: UInt = #line) {
        for word in ["SingleConnectionFailure", "NIOConnectionError", "SocketAddressError", "errno", "IOError", "PSQLError", "[IPv4]"] {
            XCTAssertFalse(message.contains(word), "'\(word)' in: \(message)", file: file, line: line)
        }
        XCTAssertEqual(message.split(separator: "\n").count, 1, "one line: \(message)", file: file, line: line)
    }

    /// Nothing listens on port 1.
    func testRefusedConnectionSaysSo() throws {
        let result = try winnow(["plan", try job(), "--database", "postgresql://postgres@127.0.0.1:1/postgres"], expect: 66)
        XCTAssertTrue(result.stderr.contains("PostgreSQL at 127.0.0.1:1"), result.stderr)
        XCTAssertTrue(result.stderr.contains("connection refused"), result.stderr)
        assertInWords(result.stderr)
    }

    /// A host name that no resolver knows (`.invalid` is reserved for that).
    func testUnknownHostSaysSo() throws {
        let result = try winnow(["check", try job(), "--database", "postgresql://postgres@no-such-host.invalid:5432/postgres"], expect: 66)
        XCTAssertTrue(result.stderr.contains("PostgreSQL at no-such-host.invalid:5432"), result.stderr)
        XCTAssertTrue(result.stderr.contains("the host name 'no-such-host.invalid' was not found"), result.stderr)
        assertInWords(result.stderr)
    }

    /// A socket folder where no server runs.
    func testMissingSocketSaysSo() throws {
        let result = try winnow(
            ["run", try job(), "--database", "postgresql://postgres@/postgres?host=\(dir.path)&port=5999"], expect: 66)
        XCTAssertTrue(result.stderr.contains("socket \(dir.path)/.s.PGSQL.5999"), result.stderr)
        XCTAssertTrue(result.stderr.contains("no socket file there"), result.stderr)
        assertInWords(result.stderr)
    }

    /// A port that accepts connections and never answers the login: `connect_timeout` ends the
    /// attempt, and the message says how long it waited.
    func testSilentServerTimesOut() throws {
        #if canImport(Glibc)
        let stream = Int32(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        let listener = socket(AF_INET, stream, 0)
        XCTAssertGreaterThanOrEqual(listener, 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        XCTAssertTrue(bound)
        XCTAssertEqual(listen(listener, 8), 0)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let started = Date()
        let result = try winnow(
            ["plan", try job(), "--database", "postgresql://postgres@127.0.0.1:\(port)/postgres?connect_timeout=2&sslmode=disable"],
            expect: 66)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        XCTAssertTrue(result.stderr.contains("PostgreSQL at 127.0.0.1:\(port)"), result.stderr)
        XCTAssertTrue(result.stderr.contains("timed out after 2 s"), result.stderr)
        assertInWords(result.stderr)
    }
}
