import Foundation

/// Output formats of the command line.
public enum OutputFormat: String, Sendable, CaseIterable {
    case text, json, junit, github
}
