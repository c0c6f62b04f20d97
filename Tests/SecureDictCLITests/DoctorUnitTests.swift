import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Testing

@testable import secure_dict

/// `secure-dict doctor`'s rules about the environment and the provider process, from plain
/// values: environments this machine is not (WSL, a Flatpak, SSH, sudo).
@Suite struct DoctorUnits {
    private func environment(
        _ variables: [String: String], root: Bool = false, kernel: String = "6.1.0-amd64", runtimeBus: Bool = false,
        sandbox: Sandbox? = nil
    ) -> DoctorEnvironment {
        DoctorEnvironment(
            variables: variables, isRoot: root, kernelRelease: kernel, runtimeBusExists: runtimeBus, sandbox: sandbox)
    }

    @Test func aDesktopSessionIsHealthyWithoutNotes() {
        let findings = environment(["DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus", "WAYLAND_DISPLAY": "wayland-0"])
            .findings()
        #expect(findings == [DoctorFinding(check: "bus", status: .ok, detail: "unix:path=/run/user/1000/bus")])
    }

    @Test func theRuntimeFoldersBusCountsWhenTheVariableIsUnset() {
        let found = environment(["XDG_RUNTIME_DIR": "/run/user/1000"], runtimeBus: true)
        #expect(found.busAddress == "unix:path=/run/user/1000/bus")
        let missing = environment(["XDG_RUNTIME_DIR": "/run/user/1000"])
        #expect(missing.busAddress == nil)
        let bus = missing.findings().first
        #expect(bus?.status == .problem && bus?.fix?.contains("secure-dict keyring run -- COMMAND") == true)
    }

    @Test func sshWithoutADesktopIsNotedButNotWithOne() {
        let bus = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus"]
        let ssh = bus.merging(["SSH_CONNECTION": "10.0.0.2 5000 10.0.0.1 22"]) { $1 }
        #expect(environment(ssh).findings().contains { $0.detail.hasPrefix("SSH session without a desktop") })
        let forwarded = ssh.merging(["DISPLAY": "localhost:10.0"]) { $1 }
        #expect(!environment(forwarded).findings().contains { $0.detail.hasPrefix("SSH") })
    }

    @Test func wslIsToldByTheKernelOrTheVariable() {
        #expect(environment([:], kernel: "5.15.153.1-microsoft-standard-WSL2").isWSL)
        #expect(environment(["WSL_DISTRO_NAME": "Debian"]).isWSL)
        #expect(!environment([:]).isWSL)
        #expect(environment(["WSL_DISTRO_NAME": "Debian"]).findings().contains { $0.detail.hasPrefix("Windows Subsystem") })
    }

    @Test func rootUnderSudoIsToldWhoseKeyringItIs() {
        let finding = environment(["SUDO_USER": "ada"], root: true).findings().last
        #expect(finding?.detail == "running as root (sudo from ada): this is root's keyring and bus, not a user's")
        #expect(finding?.fix == "to reach ada's keyring, run the command as ada, without sudo")
    }

    @Test func aFlatpakIsNamedWithThePermissionItNeeds() {
        let finding = environment([:], sandbox: .flatpak(appID: "org.example.App")).findings().last
        #expect(finding?.detail == "inside a sandbox: Flatpak (org.example.App)")
        #expect(finding?.fix?.contains("--talk-name=org.freedesktop.secrets") == true)
    }

    @Test func theUnlockFixNamesTheProvidersWay() {
        let headless = environment([:])
        #expect(DoctorReport.unlockFix(providerName: "KeePassXC", environment: headless).contains("KeePassXC's window"))
        #expect(DoctorReport.unlockFix(providerName: "KWallet", environment: headless).contains("KWalletManager"))
        #expect(DoctorReport.unlockFix(providerName: nil, environment: headless).contains("--replace --unlock"))
        let desktop = environment(["DISPLAY": ":0"])
        #expect(DoctorReport.unlockFix(providerName: nil, environment: desktop).contains("keyring manager"))
    }

    /// Debian 13 splits KeePassXC: `keepassxc-minimal` has no Secret Service (PROVIDERS.md).
    @Test func aDesktopWithoutAServiceNamesTheKeePassXCPackageThatHasOne() {
        let desktop = environment(["DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus", "DISPLAY": ":0"])
        let fix = DoctorReport.fixForUnreachableService(.serviceUnavailable(reason: "no Secret Service"), desktop)
        #expect(fix?.contains("keepassxc-full") == true, "\(fix ?? "no fix")")
    }

    /// The fix for a bus without a Secret Service is this project's
    /// answer for the environment, the same whether the bus or the service is missing, and
    /// never `dbus-run-session -- bash`.
    @Test func theFixWithoutAKeyringIsThisProjectsAnswerForTheEnvironment() {
        let bus = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus"]
        let ssh = environment(bus.merging(["SSH_CONNECTION": "10.0.0.2 5000 10.0.0.1 22"]) { $1 })
        let headless = environment(bus)
        let wsl = environment(bus, kernel: "5.15.153.1-microsoft-standard-WSL2")
        let unavailable = SecureDictionaryError.serviceUnavailable(reason: "no Secret Service")
        let overSSH = DoctorReport.fixForUnreachableService(unavailable, ssh) ?? ""
        #expect(overSSH.contains("--store passphrase") && !overSSH.contains("dbus-run-session"), "\(overSSH)")
        let inContainer = DoctorReport.fixForUnreachableService(unavailable, headless) ?? ""
        #expect(inContainer.contains("secure-dict keyring run -- COMMAND") && inContainer.contains("--store credential"))
        #expect(!inContainer.contains("dbus-run-session"), "\(inContainer)")
        for finding in wsl.findings() + ssh.findings() {
            #expect(!(finding.fix ?? "").contains("dbus-run-session"), "\(finding)")
        }
    }

    @Test func versionsAreReadFromWhatProvidersPrint() {
        #expect(ProviderProcess.firstVersion(in: "gnome-keyring-daemon: 42.1\ntesting: disabled\n") == "42.1")
        #expect(ProviderProcess.firstVersion(in: "KeePassXC 2.7.4\n") == "2.7.4")
        #expect(ProviderProcess.firstVersion(in: "no version here 3.\n") == nil)
        let maps = "7f3a000-7f3b000 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libKF5Wallet.so.5.103.0\n"
        #expect(ProviderProcess.frameworksVersion(inMaps: maps) == "5.103.0")
        #expect(ProviderProcess.frameworksVersion(inMaps: "/usr/lib/libc.so.6\n") == nil)
        #expect(ProviderProcess.version("5.103.0", isBefore: "6.25"))
        #expect(ProviderProcess.version("6.24.1", isBefore: "6.25"))
        #expect(!ProviderProcess.version("6.25.0", isBefore: "6.25"))
        #expect(ProviderTraits.running(executable: "ksecretd")?.tool.sessionFix?.version == "6.25")
        #expect(ProviderTraits.running(executable: "keepassxc")?.tool.version == .versionOption)
        #expect(ProviderTraits.running(executable: "bash") == nil)
    }
}

/// `doctor` says when the memory holding secrets cannot be locked (a too-small
/// `RLIMIT_MEMLOCK`: the library goes on, unlocked) and when core dumps are on, with the fix
/// for each; it reports what a program started from the same shell would get. No bus: no
/// keyring is asked.
extension DoctorUnits {
    @Test func aTooSmallMemoryLockLimitAndCoreDumpsAreNotedWithTheirFixes() throws {
        let environment = ["PATH": "/usr/bin:/bin", "HOME": FileManager.default.temporaryDirectory.path]
        func doctor(_ limits: String) throws -> [String: Any] {
            // Root without CAP_IPC_LOCK, which lets it lock memory past any limit.
            let shell = ["/bin/bash", "-c", "\(limits); exec \"$0\" doctor --json", CLIHarness.binary]
            let command = getuid() == 0 ? ["/usr/bin/setpriv", "--bounding-set=-ipc_lock", "--"] + shell : shell
            let run = try CLIHarness.run(command[0], Array(command.dropFirst()), environment: environment)
            let report = try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any]
            return (report?["findings"] as? [[String: Any]] ?? []).reduce(into: [:]) { found, finding in
                if let check = finding["check"] as? String { found[check] = finding }
            }
        }
        let small = try doctor("ulimit -l 0; ulimit -c unlimited")
        let memory = small["memory"] as? [String: Any]
        #expect(memory?["status"] as? String == "note", "\(small)")
        #expect((memory?["fix"] as? String)?.contains("ulimit -l") == true, "\(small)")
        let core = small["core dumps"] as? [String: Any]
        #expect(core?["status"] as? String == "note" && (core?["fix"] as? String)?.contains("hardenProcess()") == true)

        let enough = try doctor("ulimit -l 1024; ulimit -c 0")
        #expect((enough["memory"] as? [String: Any])?["status"] as? String == "ok", "\(enough)")
        #expect((enough["core dumps"] as? [String: Any])?["status"] as? String == "ok", "\(enough)")
    }

    /// `doctor --find`'s advice for a file kept over a keyring copy names `--from credential`
    /// only for a file that decoded under the credential at hand: a passphrase's or the
    /// portal's file would fail that move with a wrong key.
    @Test func findNamesTheCredentialOnlyForAFileItDecoded() {
        func report(fileKeys: Int?) -> String {
            let file = DoctorFind.Copy(
                name: "tokens", place: "/f/x.sdict", kind: "file", folder: "/f", modified: Date(timeIntervalSince1970: 2),
                keys: fileKeys, problem: fileKeys == nil ? "not read" : nil)
            let keyring = DoctorFind.Copy(
                name: "tokens", place: "keyring", kind: "keyring", collectionAlias: "default",
                modified: Date(timeIntervalSince1970: 1), keys: 1)
            return DoctorFind(
                application: "com.example.app", installed: [], collections: [], folders: [], copies: [file, keyring]
            ).text
        }
        let decoded = report(fileKeys: 3)
        #expect(decoded.contains("--from credential --from-folder /f --to keyring"), "\(decoded)")
        let unread = report(fileKeys: nil)
        #expect(!unread.contains("--from credential"), "\(unread)")
        #expect(unread.contains("--from STORE --from-folder /f --to keyring"), "\(unread)")
        #expect(unread.contains("inside the app's sandbox with --from portal"), "\(unread)")
    }
}
