import Foundation

/// The errors of one file, collected so that one pass reports all of them: every section, rule,
/// table, column and index is read even after another's error.
package final class ErrorLog {
    package private(set) var errors: [WinnowError] = []

    package init() {}

    package func record(_ error: WinnowError) { errors.append(error) }

    /// Runs `body`; an error it throws is recorded instead of ending the read.
    package func attempt(_ body: () throws -> Void) {
        do {
            try body()
        } catch let error as WinnowError {
            errors.append(error)
        } catch {
            errors.append(.internal("\(error)"))
        }
    }

    /// Throws every recorded error at once (``WinnowError/combined(_:)``), if there is any.
    package func throwIfAny() throws {
        if let error = WinnowError.combined(errors) { throw error }
    }
}
