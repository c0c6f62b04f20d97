import FoundationEssentials
import Glibc
import SecureDictionary

/// One line of `secure-dict doctor`'s report: what was checked, how it went, and for a
/// problem the exact fix.
struct DoctorFinding: Encodable, Equatable {
    enum Status: String, Encodable {
        /// Works.
        case ok
        /// Worth knowing; not a problem by itself.
        case note
        /// Stops SecureDictionary from working here.
        case problem
    }

    let check: String
    let status: Status
    let detail: String
    var fix: String? = nil
}

/// What the process's environment says about reaching a keyring, from plain values (so
/// tests can state any environment).
///
/// ```swift
/// let environment = DoctorEnvironment.current()
/// for finding in environment.findings() { print(finding.detail) }
/// ```
struct DoctorEnvironment {
    var variables: [String: String]
    var isRoot: Bool
    /// `/proc/sys/kernel/osrelease` (WSL's names Microsoft).
    var kernelRelease: String
    /// Whether `$XDG_RUNTIME_DIR/bus` exists (systemd's session bus socket).
    var runtimeBusExists: Bool
    var sandbox: Sandbox?

    static func current() -> DoctorEnvironment {
        let variables = ProcessInfo.processInfo.environment
        let runtimeBus = variables["XDG_RUNTIME_DIR"].map { FileManager.default.fileExists(atPath: $0 + "/bus") } ?? false
        return DoctorEnvironment(
            variables: variables, isRoot: geteuid() == 0,
            kernelRelease: (try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8)) ?? "",
            runtimeBusExists: runtimeBus, sandbox: Sandbox.current)
    }

    /// The session bus GLib connects to: `$DBUS_SESSION_BUS_ADDRESS`, else the runtime
    /// folder's socket; `nil` when there is neither.
    var busAddress: String? {
        if let address = variables["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        if runtimeBusExists, let runtime = variables["XDG_RUNTIME_DIR"] { return "unix:path=\(runtime)/bus" }
        return nil
    }

    /// As the library's errors tell it (`ErrorContext`): a variable set and not empty.
    var isSSH: Bool { [variables["SSH_CONNECTION"], variables["SSH_TTY"]].contains { $0?.isEmpty == false } }
    var hasDesktop: Bool {
        [variables["DISPLAY"], variables["WAYLAND_DISPLAY"]].contains { $0?.isEmpty == false }
    }
    var isWSL: Bool {
        variables["WSL_DISTRO_NAME"] != nil || kernelRelease.lowercased().contains("microsoft")
    }

    /// This project's answer where no keyring answers, for this environment: on
    /// a desktop its keyring; over SSH the passphrase store; in a container, a service or CI
    /// the encrypted-file stores, and for tests a private keyring. Never `dbus-run-session --
    /// bash`, a shell that ends the keyring with it.
    var noKeyringFix: String {
        if hasDesktop && !isSSH {
            return busAddress == nil
                ? "run the command from your desktop session"
                : "start your desktop's keyring (gnome-keyring, KWallet, or KeePassXC with Secret Service "
                    + "integration on; on Debian 13, KeePassXC's package keepassxc-full, as keepassxc-minimal has none); "
                    + "on GNOME it starts with the session"
        }
        if isSSH {
            return "over SSH, keep dictionaries in encrypted files under a passphrase: --store passphrase "
                + "(EncryptedFileStore in code); for tests: secure-dict keyring run -- COMMAND"
        }
        return "for tests and CI: secure-dict keyring run -- COMMAND (a private keyring); for a service or container: "
            + "--store credential (a systemd credential) or --store passphrase (EncryptedFileStore in code)"
    }

    /// The bus and the environment notes, in report order.
    func findings() -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        if let busAddress {
            findings.append(DoctorFinding(check: "bus", status: .ok, detail: busAddress))
        } else {
            findings.append(
                DoctorFinding(
                    check: "bus", status: .problem,
                    detail: "no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is not set and there is no $XDG_RUNTIME_DIR/bus",
                    fix: noKeyringFix))
        }
        if let sandbox {
            findings.append(
                DoctorFinding(
                    check: "environment", status: .note, detail: "inside a sandbox: \(sandbox.kind)",
                    fix: "if the keyring cannot be reached from it: \(sandbox.advice)"))
        }
        if isWSL {
            findings.append(
                DoctorFinding(
                    check: "environment", status: .note,
                    detail: "Windows Subsystem for Linux: no keyring runs unless one is started"))
        }
        if isSSH && !hasDesktop {
            findings.append(
                DoctorFinding(
                    check: "environment", status: .note,
                    detail: "SSH session without a desktop: a keyring here is one started for this login, "
                        + "or none; the desktop's keyring may be locked or on another bus"))
        }
        if isRoot {
            let sudoUser = variables["SUDO_USER"].map { " (sudo from \($0))" } ?? ""
            findings.append(
                DoctorFinding(
                    check: "environment", status: .note,
                    detail: "running as root\(sudoUser): this is root's keyring and bus, not a user's",
                    fix: variables["SUDO_USER"].map { "to reach \($0)'s keyring, run the command as \($0), without sudo" }))
        }
        return findings
    }
}

extension Sandbox {
    var kind: String {
        switch self {
        case .flatpak(let appID): "Flatpak" + (appID.map { " (\($0))" } ?? "")
        case .snap(let name): "snap (\(name))"
        }
    }
}
