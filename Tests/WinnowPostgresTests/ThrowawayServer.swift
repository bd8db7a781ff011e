import Foundation
import WinnowCore
import WinnowTestSupport
import XCTest

/// A PostgreSQL cluster of one test's own (`scripts/postgres-up`), which the test may kill,
/// freeze and start again without disturbing the shared test server. Needs PostgreSQL's
/// programs (as the shared server does); removed by ``remove()``.
final class ThrowawayServer {
    let url: String
    let dir: String
    let port: Int
    private let bin: String
    /// How the server's programs run: as the `postgres` user when the tests run as root.
    private let runAs: [String]
    /// The processes ``freeze()`` stopped.
    private var frozen: [pid_t] = []

    init() throws {
        let up = try Self.run(["bash", TestSupport.repositoryRoot.appendingPathComponent("scripts/postgres-up").path])
        guard up.status == 0, let line = up.stdout.split(separator: "\n").last(where: { $0.hasPrefix("export ") }) else {
            throw WinnowError.io("scripts/postgres-up failed: \(up.stderr)")
        }
        var values: [String: String] = [:]
        for pair in line.dropFirst("export ".count).split(separator: " ") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { values[parts[0]] = parts[1] }
        }
        guard let url = values["WINNOW_TEST_POSTGRES"], let dir = values["WINNOW_PG_DIR"],
            let port = url.split(separator: ":").last.flatMap({ Int($0.prefix { $0.isNumber }) })
        else { throw WinnowError.io("scripts/postgres-up printed no URL: \(up.stdout)") }
        self.url = url
        self.dir = dir
        self.port = port
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        let newest = versions.compactMap(Int.init).max().map(String.init) ?? ""
        bin = "/usr/lib/postgresql/\(newest)/bin"
        runAs = getuid() == 0 ? ["runuser", "-u", "postgres", "--"] : []
    }

    private init(url: String, dir: String, port: Int, bin: String, runAs: [String]) {
        self.url = url
        self.dir = dir
        self.port = port
        self.bin = bin
        self.runAs = runAs
    }

    /// A hot standby of this server (`pg_basebackup -R`, streaming from it), started on a free
    /// port in a folder of its own; ``remove()`` stops it.
    func standby() throws -> ThrowawayServer {
        let folder = try TestSupport.scratchDirectory("standby").path
        if !runAs.isEmpty { _ = try Self.run(["chown", "postgres", folder]) }
        let backup = try Self.run(
            runAs + ["\(bin)/pg_basebackup", "-D", "\(folder)/data", "-R", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres"])
        guard backup.status == 0 else { throw WinnowError.io("pg_basebackup failed: \(backup.stderr)") }
        for candidate in (port + 100)..<(port + 140) {
            let start = try Self.run(
                runAs + [
                    "\(bin)/pg_ctl", "-D", "\(folder)/data", "-o", "-h 127.0.0.1 -p \(candidate) -k \(folder) -c fsync=off", "-l",
                    "\(folder)/log.\(candidate)", "-w", "start",
                ])
            if start.status == 0 {
                return ThrowawayServer(
                    url: "postgresql://postgres@127.0.0.1:\(candidate)/postgres", dir: folder, port: candidate, bin: bin, runAs: runAs)
            }
        }
        throw WinnowError.io("the standby did not start")
    }

    /// Makes a standby the primary (`pg_ctl promote`).
    func promote() throws {
        let result = try Self.run(runAs + ["\(bin)/pg_ctl", "-D", "\(dir)/data", "-w", "promote"])
        guard result.status == 0 else { throw WinnowError.io("pg_ctl promote failed: \(result.stderr)") }
    }

    /// Stops the server the hard way (`pg_ctl stop -m immediate`: every server process quits at
    /// once, as in a crash; the next start recovers).
    func killImmediately() throws {
        let result = try Self.run(runAs + ["\(bin)/pg_ctl", "-D", "\(dir)/data", "-m", "immediate", "stop"])
        guard result.status == 0 else { throw WinnowError.io("pg_ctl stop failed: \(result.stderr)") }
    }

    /// Puts `lines` at the top of the server's `pg_hba.conf` (the first matching line decides)
    /// and has the server read its configuration again.
    func authenticate(_ lines: [String]) throws {
        let path = "\(dir)/data/pg_hba.conf"
        let current = try String(contentsOfFile: path, encoding: .utf8)
        try (lines.joined(separator: "\n") + "\n" + current).write(toFile: path, atomically: false, encoding: .utf8)
        try reload()
    }

    /// Copies `path` into the server's data folder as `name`, owned by the server's user and
    /// readable by it only (as a private key must be).
    func install(_ path: String, as name: String) throws {
        let target = "\(dir)/data/\(name)"
        try? FileManager.default.removeItem(atPath: target)
        try FileManager.default.copyItem(atPath: path, toPath: target)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target)
        if !runAs.isEmpty {
            let result = try Self.run(["chown", "postgres", target])
            guard result.status == 0 else { throw WinnowError.io("chown failed: \(result.stderr)") }
        }
    }

    /// Has the server read its configuration files again (`pg_ctl reload`).
    func reload() throws {
        let result = try Self.run(runAs + ["\(bin)/pg_ctl", "-D", "\(dir)/data", "reload"])
        guard result.status == 0 else { throw WinnowError.io("pg_ctl reload failed: \(result.stderr)") }
        Thread.sleep(forTimeInterval: 0.3)
    }

    /// Starts the server again on the same port.
    func start() throws {
        let result = try Self.run(
            runAs + [
                "\(bin)/pg_ctl", "-D", "\(dir)/data", "-o", "-h 127.0.0.1 -p \(port) -k \(dir) -c fsync=off", "-l", "\(dir)/log.\(port)",
                "-w",
                "start",
            ])
        guard result.status == 0 else { throw WinnowError.io("pg_ctl start failed: \(result.stderr)") }
    }

    /// Stops (SIGSTOP) the postmaster and every server process: a server that keeps its
    /// connections open and answers nothing, like a frozen machine.
    func freeze() throws {
        let text = try String(contentsOfFile: "\(dir)/data/postmaster.pid", encoding: .utf8)
        guard let postmaster = text.split(separator: "\n").first.flatMap({ pid_t($0.trimmingCharacters(in: .whitespaces)) }) else {
            throw WinnowError.io("no postmaster.pid")
        }
        frozen = [postmaster] + Self.children(of: postmaster)
        for pid in frozen { kill(pid, SIGSTOP) }
    }

    /// Lets the frozen processes run again.
    func thaw() {
        for pid in frozen { kill(pid, SIGCONT) }
        frozen = []
    }

    /// Stops the server and removes its folder.
    func remove() {
        thaw()
        _ = try? Self.run(["bash", TestSupport.repositoryRoot.appendingPathComponent("scripts/postgres-up").path, "stop", dir])
    }

    /// The processes whose parent is `parent` (from /proc).
    static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // After "pid (name) ": state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent ? pid : nil
        }
    }

    /// Runs a program and waits for it, its output through files. The program runs with no
    /// open file beyond the standard three: a server it starts outlives it, and Foundation's
    /// `Process` sees its child end only when every copy of a descriptor it passes down is
    /// closed.
    @discardableResult
    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let folder = try TestSupport.scratchDirectory("run")
        defer { try? FileManager.default.removeItem(at: folder) }
        let outPath = folder.appendingPathComponent("out").path
        let errPath = folder.appendingPathComponent("err").path
        FileManager.default.createFile(atPath: outPath, contents: nil)
        FileManager.default.createFile(atPath: errPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["python3", "-c", "import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])"] + arguments
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        try process.run()
        process.waitUntilExit()
        let read = { (path: String) in (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        return (process.terminationStatus, read(outPath), read(errPath))
    }
}
