import Foundation

/// Who holds (or held) the run lock: enough to tell whether that process is still alive.
public struct ProcessIdentity: Sendable, Equatable {
    public var pid: Int32
    /// The process's start time in clock ticks since boot (Linux `/proc/PID/stat` field 22), so
    /// that a reused pid is not mistaken for the original holder.
    public var start: String?
    public var host: String

    public static var current: ProcessIdentity {
        let pid = getpid()
        return ProcessIdentity(pid: pid, start: startTime(of: pid), host: hostName)
    }

    package static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
        return String(cString: buffer)
    }

    package static func startTime(of pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name (which may hold spaces): field 3 is first.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? String(fields[19]) : nil
    }

    /// Whether this process still runs. A holder on another host is assumed alive.
    public var isAlive: Bool {
        guard host == ProcessIdentity.hostName else { return true }
        if kill(pid, 0) != 0 && errno != EPERM { return false }
        if let start, let now = ProcessIdentity.startTime(of: pid), now != start { return false }
        return true
    }
}
