import FoundationEssentials
import Glibc
import ProcessSpawning
import SecureDictionary

/// The Secret Service providers installed here, for `doctor --find`: a provider that does not
/// own the bus name now holds copies that cannot be asked for, and the user should know it is
/// there. From the files only (executables on `PATH`, D-Bus service files, the provider's data
/// folder), since a provider that does not run answers nothing.
///
/// ```swift
/// for provider in ProviderInventory.installed(environment: ProcessInfo.processInfo.environment) {
///     print(provider.name, provider.executable ?? "-", provider.activationFile ?? "not activatable")
/// }
/// ```
struct ProviderInventory: Encodable, Equatable {
    /// "gnome-keyring", "KWallet" or "KeePassXC".
    var name: String
    /// The first of the provider's executables found on `PATH`.
    var executable: String?
    /// A D-Bus service file that starts it for `org.freedesktop.secrets`.
    var activationFile: String?
    /// Where it keeps its items, when that folder exists.
    var dataFolder: String?
    /// When that folder last changed.
    var dataModified: Date?

    /// The providers with an executable or an activation file here.
    static func installed(environment: [String: String]) -> [ProviderInventory] {
        let activation = activationFiles(environment: environment)
        return ProviderTraits.providers.compactMap { traits in
            guard let name = traits.name else { return nil }
            let executable = traits.tool.executables.lazy.compactMap { onPath($0, environment) }.first
            let file = activation.first { traits.tool.executables.contains($0.executable) }?.path
            guard executable != nil || file != nil else { return nil }
            var found = ProviderInventory(name: name, executable: executable, activationFile: file)
            if let folder = traits.tool.dataFolder.map({ "\(dataHome(environment))/\($0)" }),
                let attributes = try? FileManager.default.attributesOfItem(atPath: folder)
            {
                found.dataFolder = folder
                found.dataModified = attributes[.modificationDate] as? Date
            }
            return found
        }
    }

    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    static func dataHome(_ environment: [String: String]) -> String {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data }
        return "\(environment["HOME"] ?? "")/.local/share"
    }

    private static func onPath(_ name: String, _ environment: [String: String]) -> String? {
        Spawn.candidates(for: name, path: environment["PATH"]).first { $0.hasPrefix("/") && access($0, X_OK) == 0 }
    }

    /// The session bus's service files that name `org.freedesktop.secrets`, with the executable
    /// their `Exec=` line starts (its last path component), in the folders dbus-daemon reads.
    static func activationFiles(environment: [String: String]) -> [(path: String, executable: String)] {
        let dataDirectories = (environment["XDG_DATA_DIRS"] ?? "/usr/local/share:/usr/share").split(separator: ":")
        let folders = ["\(dataHome(environment))/dbus-1/services"] + dataDirectories.map { "\($0)/dbus-1/services" }
        var found: [(path: String, executable: String)] = []
        for folder in folders {
            for file in ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
            where file.hasSuffix(".service") {
                let path = "\(folder)/\(file)"
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
                let lines = text.split(separator: "\n").map { String($0).trimmingWhitespace() }
                guard lines.contains("Name=org.freedesktop.secrets"),
                    let exec = lines.first(where: { $0.hasPrefix("Exec=") })?.dropFirst(5).split(separator: " ").first
                else { continue }
                found.append((path, String(exec.split(separator: "/").last ?? exec)))
            }
        }
        return found
    }
}
