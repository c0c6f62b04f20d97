import FoundationEssentials
import SecureDictionary

extension DictionaryCopies {
    /// The encrypted files' part of `find`: the copies in each folder (`find`'s list, each once),
    /// read from their headers (no key needed) and counted where the key is at hand without a prompt.
    static func fileCopies(
        applicationID: String, dictionaryName: String?, extra: [String], credential: String, environment: [String: String]
    ) -> (copies: [Copy], folders: [Folder]) {
        var folders: [(path: String, reason: String)] = []
        func add(_ path: String, _ reason: String) {
            let path = ItemFileFolder(path: path).path
            if !folders.contains(where: { $0.path == path }) { folders.append((path, reason)) }
        }
        for (source, kind) in [
            (EncryptedFileStore.KeySource.systemdCredential(), "systemd credential"), (.passphrase(), "passphrase"),
        ] {
            let (path, origin) = EncryptedFileStore.defaultFolder(for: source, environment: environment)
            add(path, "\(origin.description), EncryptedFileStore's default under a \(kind)")
        }
        // The Secret portal's store shares the passphrase's default folder (so it is searched
        // above); inside a Flatpak that is the app's own data folder, from the host under ~/.var/app.
        if let home = environment["HOME"], home.hasPrefix("/") {
            add("\(home)/.var/app/\(applicationID)/data/securedictionary", "the Flatpak app \(applicationID)'s portal files")
        }
        for path in extra { add(EncryptedFileStore.absolute(path), "given") }  // as a store given it resolves it
        var result: (copies: [Copy], folders: [Folder]) = ([], [])
        // A credential's key decodes files of a master secret written under it; a passphrase is
        // never asked, and the portal's secret is the sandboxed app's only.
        let atHand = (try? SystemdCredential.read(named: credential, environment: environment)) != nil ? credential : nil
        for folder in folders {
            let files = ItemFileFolder(path: folder.path)
            var problem: SecureDictionaryError?
            var exists = false
            var items: [(item: KeyringItem, header: EncryptedItemFile.Header)] = []
            do {
                exists = try files.withFolder(create: false) { _, _ in true } ?? false
                items = exists ? try files.items() : []
            } catch {
                problem = error
            }
            let choice = exists ? (try? AutomaticStoreRecord(folderPath: folder.path).read()).flatMap { $0 } : nil
            result.folders.append(
                Folder(
                    path: files.path, reason: folder.reason, exists: exists,
                    automaticChoice: choice.map { $0 == .secretService ? "keyring" : "files" }, problem: problem))
            for (item, header) in items
            where item.applicationID == applicationID && (dictionaryName == nil || item.dictionaryName == dictionaryName) {
                result.copies.append(copy(of: item, header: header, in: files, credential: atHand))
            }
        }
        return result
    }

    private static func copy(
        of item: KeyringItem, header: EncryptedItemFile.Header, in folder: ItemFileFolder, credential: String?
    ) -> Copy {
        let path = folder.filePath(of: item)
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        var keyCount: Int?
        var problem: SecureDictionaryError?
        switch (header.key?.kind, credential) {
        case (.secret?, let credential?):
            do throws(SecureDictionaryError) {
                let store = EncryptedFileStore(folderPath: folder.path, keySource: .systemdCredential(named: credential))
                if let secret = try store.load(item, timeout: .seconds(5)) {
                    keyCount = try PropertyListBlob.entryCount(of: secret)
                } else {
                    problem = .sourceChanged(name: item.name)  // removed since the listing
                }
            } catch {
                problem = error
            }
        case (.passphrase?, _):
            problem = .passphraseUnavailable(reason: "written under a passphrase, which is not asked here")
        default:
            problem = .credentialUnavailable(
                name: credential ?? "securedictionary",
                reason: "its key is a systemd credential's or the Secret portal's, and no credential is at hand")
        }
        return Copy(
            applicationID: item.applicationID, dictionaryName: item.dictionaryName, place: .file(path: path),
            modified: attributes?[.modificationDate] as? Date, generation: header.generation,
            size: (attributes?[.size] as? any BinaryInteger).map { Int($0) }, keyCount: keyCount,
            problem: problem)
    }
}
