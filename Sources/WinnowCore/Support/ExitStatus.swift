import Foundation

/// Exit codes of the contract that are not errors.
public enum ExitStatus {
    public static let ok: Int32 = 0
    public static let findings: Int32 = 1
}
