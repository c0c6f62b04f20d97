extension EncryptedFileStore {
    /// Where an ``EncryptedFileStore``'s master secret comes from: a real secret, never a
    /// constant.
    ///
    /// ```swift
    /// let service = EncryptedFileStore(keySource: .systemdCredential())              // a systemd service
    /// let person = EncryptedFileStore(keySource: .passphrase(.terminal()))           // over SSH
    /// let script = EncryptedFileStore(keySource: .passphrase(.fileDescriptor(3)))    // 3< passphrase-file
    /// let app = EncryptedFileStore(keySource: .secretPortal)                        // a Flatpak
    /// ```
    public struct KeySource: Sendable, Equatable, CustomStringConvertible {
        enum Kind: Sendable, Equatable {
            case systemdCredential(name: String)
            case passphrase(input: PassphraseInput, cache: PassphraseCache, cost: PassphraseCost)
            case secretPortal
        }

        let kind: Kind

        /// The systemd credential `name`: the file `$CREDENTIALS_DIRECTORY/name` that systemd
        /// decrypts for the service from `LoadCredentialEncrypted=name:PATH`. It must hold
        /// 32 to 4,096 random bytes (the README shows the `systemd-creds encrypt` command).
        public static func systemdCredential(named name: String = "securedictionary") -> KeySource {
            KeySource(kind: .systemdCredential(name: name))
        }

        /// A passphrase, asked when the store first needs it (``PassphraseInput``), stretched
        /// with scrypt at `cost`, and kept for the login session (``PassphraseCache``).
        public static func passphrase(
            _ input: PassphraseInput = .terminal(), cache: PassphraseCache = .kernelKeyring(),
            cost: PassphraseCost = .standard
        ) -> KeySource {
            KeySource(kind: .passphrase(input: input, cache: cache, cost: cost))
        }

        /// The master secret the desktop's Secret portal gives this sandboxed app (Flatpak,
        /// snap), for apps that may not talk to the Secret Service (<doc:SandboxedApps>). Outside
        /// a sandbox every call throws ``FileStoreError/portalUnavailable(reason:)`` first.
        public static let secretPortal = KeySource(kind: .secretPortal)

        /// E.g. `systemd credential 'securedictionary'`, `passphrase from the terminal,
        /// kept 900 s in the kernel keyring`, `the Secret portal`.
        public var description: String {
            switch kind {
            case .secretPortal:
                return "the Secret portal"
            case .systemdCredential(let name):
                return "systemd credential '\(name)'"
            case .passphrase(let input, let cache, _):
                let from =
                    switch input {
                    case .terminal: "from the terminal"
                    case .fileDescriptor(let descriptor): "from descriptor \(descriptor)"
                    }
                let kept =
                    switch cache {
                    case .none: "kept in this process only"
                    case .kernelKeyring(let timeout?): "kept \(timeout.components.seconds) s in the kernel keyring"
                    case .kernelKeyring(nil): "kept in the kernel keyring until the session ends"
                    }
                return "passphrase \(from), \(kept)"
            }
        }
    }

    /// Where a passphrase is read.
    public enum PassphraseInput: Sendable, Equatable {
        /// Asked on the controlling terminal (`/dev/tty`) with echo off, as `ssh` asks; a new
        /// passphrase is asked twice. Gives up after `timeout` without an answer.
        case terminal(timeout: Duration = .seconds(120))
        /// One line read from the open file descriptor (for scripts:
        /// `program 3< passphrase-file`); a new passphrase is read once. The descriptor is
        /// not closed; each passphrase needed reads the next line.
        case fileDescriptor(Int32)
    }

    /// Where a passphrase's stretched key is kept between processes.
    public enum PassphraseCache: Sendable, Equatable {
        /// Nowhere: every process asks.
        case none
        /// In the kernel keyring of the login session (`keyctl show @s` lists it as
        /// `securedictionary:passphrase:…`), readable only by processes of that session, for
        /// `timeout` after it was typed (`nil`: until the session ends).
        /// ``EncryptedFileStore/forgetKey()`` revokes it.
        case kernelKeyring(timeout: Duration? = .seconds(900))
    }

    /// The cost of scrypt for a new passphrase (each file's header keeps the cost it was
    /// written with).
    public struct PassphraseCost: Sendable, Equatable {
        /// log2 of scrypt's N: memory is 128 × blockSize × 2^log2N bytes.
        public var log2N: Int
        /// scrypt's r.
        public var blockSize: Int
        /// scrypt's p.
        public var parallelism: Int

        /// N = 2^17, r = 8, p = 1: 128 MiB, and 0.5 to 0.75 s per derivation in a release build
        /// on 2 shared cores (the README); debug builds take about 5 s.
        public static let standard = PassphraseCost(log2N: 17)

        /// A cost of your own: a higher one makes guessing slower, and each session's first use.
        ///
        /// ```swift
        /// let store = EncryptedFileStore(keySource: .passphrase(cost: .init(log2N: 18)))   // 256 MiB
        /// ```
        public init(log2N: Int, blockSize: Int = 8, parallelism: Int = 1) {
            self.log2N = log2N
            self.blockSize = blockSize
            self.parallelism = parallelism
        }
    }
}
