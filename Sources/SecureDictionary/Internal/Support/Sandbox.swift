import FoundationEssentials

/// The application sandbox this process runs in, if any, and what to do when the Secret
/// Service cannot be reached from it.
///
/// Why: inside a Flatpak without `--talk-name=org.freedesktop.secrets` (the Adwaita for Swift
/// template grants none) the keyring is simply not on the bus, and "start a keyring such as
/// gnome-keyring" would be the wrong advice.
package enum Sandbox: Sendable, Equatable {
    case flatpak(appID: String?)
    case snap(name: String)

    /// This process's sandbox (read once).
    package static let current: Sandbox? = detect(
        flatpakInfo: (try? String(contentsOfFile: "/.flatpak-info", encoding: .utf8)),
        environment: ProcessInfo.processInfo.environment)

    /// Flatpak puts `/.flatpak-info`, whose `[Application]` group names the app, in every
    /// sandbox; snapd sets `SNAP_NAME`. Only a file Flatpak really writes counts: an empty one
    /// (a stray mount point, a tool's leftover) made every process on a machine "sandboxed".
    package static func detect(flatpakInfo: String?, environment: [String: String]) -> Sandbox? {
        if let flatpakInfo {
            // The `name=` line of the `[Application]` group.
            var inApplication = false
            for line in flatpakInfo.split(whereSeparator: \.isNewline) {
                let text = line.trimmingWhitespace()
                if text.hasPrefix("[") {
                    inApplication = text == "[Application]"
                    continue
                }
                if inApplication, text.hasPrefix("name=") {
                    let name = text.dropFirst(5).trimmingWhitespace()
                    if !name.isEmpty { return .flatpak(appID: String(name)) }
                }
            }
        }
        if let snap = environment["SNAP_NAME"], !snap.isEmpty { return .snap(name: snap) }
        return nil
    }

    /// What the user or the packager must do, in one clause. Application IDs are not secrets.
    package var advice: String {
        switch self {
        case .flatpak(let appID):
            "add '--talk-name=org.freedesktop.secrets' to its finish-args (try: 'flatpak override --user "
                + "--talk-name=org.freedesktop.secrets \(appID ?? "APP-ID")')"
        case .snap(let name):
            "connect its plug with 'snap connect \(name):password-manager-service'"
        }
    }
}

extension Substring {
    /// The text without the spaces around it: what `trimmingCharacters(in: .whitespaces)`
    /// removes (tab, Unicode's space separators and U+200B), which FoundationEssentials lacks.
    fileprivate func trimmingWhitespace() -> Substring {
        func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "\t" || scalar == "\u{200B}" || scalar.properties.generalCategory == .spaceSeparator
        }
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !isWhitespace($0) }),
            let last = scalars.lastIndex(where: { !isWhitespace($0) })
        else { return "" }
        return Substring(scalars[first...last])
    }
}
