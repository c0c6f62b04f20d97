import SecureDictionary

/// What `--store auto` says when the keyring it chose before does not answer: the whole
/// reason, and the keyring's fix. (It cut the library's reason at 32 characters, "this
/// store's dictio", and advised `--store credential`, a store that does not hold these
/// dictionaries.)
///
/// ```swift
/// if let text = RecordedKeyringMessage.text(for: error, ErrorContext.current) { printError(text) }
/// ```
///
/// The automatic store keeps its choice in `automatic-store-choice` in its file store's folder
/// (the `SecureDictionaryFileStore` article "Machines without a desktop"); its error names that
/// file, which is how this message tells the case apart.
enum RecordedKeyringMessage {
    /// The record's file name, as the automatic store writes it.
    static let recordName = "automatic-store-choice"

    /// The message for `error` when it is the automatic store's "the keyring was chosen and
    /// does not answer", else `nil`.
    static func text(for error: SecureDictionaryError, _ context: ErrorContext) -> String? {
        guard case .serviceUnavailable(let reason) = error, let record = recordPath(in: reason) else { return nil }
        let start =
            context.surroundings == .desktop
            ? "start your desktop's keyring again (on GNOME it starts with the session)"
            : "start the keyring that holds them again (a private one of 'secure-dict keyring run --keep DIR': that "
                + "command again; gnome-keyring from a shell: gnome-keyring-daemon --replace --unlock --components=secrets, "
                + "which reads the keyring's password on standard input)"
        return """
            No keyring answers on the session bus, and --store auto keeps these dictionaries in the keyring: \
            \(record) records that it chose the keyring, so it does not turn to the encrypted files instead (the \
            dictionaries would be split in two). Fix: \(start); or, to use the encrypted files from now on, remove \
            \(record) (what the keyring holds stays there).
            """
    }

    /// The record's path in the library's reason ("… (PATH records that: …)").
    static func recordPath(in reason: String) -> String? {
        reason.split(separator: " ").map { $0.trimmingPrefix("(") }.first { $0.hasSuffix("/\(recordName)") }.map(String.init)
    }
}
