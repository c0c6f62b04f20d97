import FoundationEssentials
import Glibc
import ProcessSpawning
import SecureDictionary

/// The process that owns `org.freedesktop.secrets`, as far as `/proc` tells (nothing inside
/// a sandbox, which hides the host's processes).
///
/// ```swift
/// let provider = ProviderProcess.inspect(pid: 4242)
/// print(provider.command ?? "?", provider.version ?? "version unknown")
/// ```
struct ProviderProcess: Encodable, Equatable {
    var pid: Int
    /// `/proc/PID/comm`.
    var command: String?
    /// Where `/proc/PID/exe` points.
    var executable: String?
    /// The provider's version, e.g. `42.1` or `KDE Frameworks 5.103.0`, where it can be told.
    var version: String?
    /// For gnome-keyring, where it keeps its keyring (not in the JSON report: it is for the fix).
    var folders: KeyringDaemonFolders?

    enum CodingKeys: String, CodingKey { case pid, command, executable, version }

    static func inspect(pid: Int) -> ProviderProcess {
        let command = procFile(pid, "comm")?.trimmingWhitespace(andNewlines: true)
        let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
        var process = ProviderProcess(pid: pid, command: command, executable: executable)
        process.version = process.findVersion()
        // A provider without an unlock fix of its own is unlocked with gnome-keyring-daemon's
        // command, from the folders its process keeps the keyring in.
        if let traits = process.traits, traits.tool.unlockFix == nil { process.folders = KeyringDaemonFolders.of(pid: pid) }
        return process
    }

    /// The executable's name, else `comm` (which stops at 15 characters).
    var name: String? { executable.map { URL(fileURLWithPath: $0).lastPathComponent } ?? command }

    /// The provider's row of the one table, when its executable is known.
    var traits: ProviderTraits? { name.flatMap(ProviderTraits.running(executable:)) }

    /// Read as the provider's row says: `--version` is run only for a provider known to print
    /// it and exit at once.
    private func findVersion() -> String? {
        switch traits?.tool.version ?? .unknown {
        case .versionOption:
            return executable.flatMap { Self.firstVersion(in: Self.output(of: $0, ["--version"])) }
        case .kdeFrameworksLibrary:
            guard let maps = Self.procFile(pid, "maps") else { return nil }
            return Self.frameworksVersion(inMaps: maps).map { "KDE Frameworks \($0)" }
        case .unknown:
            return nil
        }
    }

    /// A file of `/proc/PID/`, read to its end (they report a size of 0).
    private static func procFile(_ pid: Int, _ name: String) -> String? {
        guard let file = try? FileDescriptor.open("/proc/\(pid)/\(name)", O_RDONLY) else { return nil }
        defer { try? file.close() }
        return (try? file.readToEnd()).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The version in the name of a loaded KWallet library, e.g. `libKF5Wallet.so.5.103.0`.
    static func frameworksVersion(inMaps maps: String) -> String? {
        for library in ["libKF6Wallet.so.", "libKF5Wallet.so."] {
            guard let range = maps.firstRange(of: library) else { continue }
            let version = maps[range.upperBound...].prefix { $0.isNumber || $0 == "." }
            if version.contains(".") { return String(version) }
        }
        return nil
    }

    /// The first dotted number in `text`, e.g. `2.7.4` in "KeePassXC 2.7.4".
    static func firstVersion(in text: String?) -> String? {
        guard let text else { return nil }
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == ":" }) {
            let parts = word.split(separator: ".", omittingEmptySubsequences: false)
            if parts.count >= 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) { return String(word) }
        }
        return nil
    }

    /// Whether `version` (`major.minor…`) is before `fixed` (`major.minor`), e.g. KDE Frameworks
    /// 5.103.0 before 6.25; `false` when either is no such number.
    static func version(_ version: String, isBefore fixed: String) -> Bool {
        let (numbers, fixed) = (
            version.split(separator: ".").compactMap { Int($0) }, fixed.split(separator: ".").compactMap { Int($0) }
        )
        guard numbers.count >= 2, fixed.count >= 2 else { return false }
        return (numbers[0], numbers[1]) < (fixed[0], fixed[1])
    }

    /// Standard output of a short-lived program (its first 4 KiB), or `nil` when it cannot be
    /// started or did not finish within 2 s; it is then killed.
    private static func output(of program: String, _ arguments: [String]) -> String? {
        var environment = ProcessInfo.processInfo.environment
        environment["QT_QPA_PLATFORM"] = "offscreen"  // KeePassXC makes a Qt application first
        // Output that a child of the program holds open is not waited for long.
        guard
            let output = try? ChildProcess.run(
                program, arguments, environment: environment, timeout: .seconds(2), outputGrace: .milliseconds(500)),
            !output.timedOut
        else { return nil }
        return String(decoding: output.stdout.prefix(4096), as: UTF8.self)
    }
}
