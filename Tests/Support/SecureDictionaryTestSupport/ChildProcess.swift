import Foundation

// The child-process helper is the tool's own (ProcessSpawning, a package-internal target):
// the tests and the reliability suite use it through this module.
@_exported public import ProcessSpawning

extension ChildProcess.Output {
    /// Standard output as text, without surrounding white space and line breaks.
    public var trimmedText: String { text.trimmingCharacters(in: .whitespacesAndNewlines) }
}
