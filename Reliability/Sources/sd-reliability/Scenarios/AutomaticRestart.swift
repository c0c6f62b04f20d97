import Foundation
import SecureDictionary
import SecureDictionaryFileStore
import SecureDictionaryTestSupport

/// Scenario 15: `AutomaticStore` (with a file store under a credential) while
/// the keyring is stopped and started again: the writes that went to the files, which must
/// be none (they split the dictionary in two). Before the fix a process started during a 2 s
/// stop wrote 109 and 114 times to the files after the keyring came back, and 1 of 20 writers
/// started while it started wrote there.
enum AutomaticRestart {
    static func run(_ harness: Harness, _ report: Report) {
        guard harness.hasKeyring(report, check: "automatic store, keyring away", target: "0 writes to the files") else {
            return
        }
        let credentials = harness.scratchFile("automatic-credentials")
        do {
            try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
            try Data((0..<32).map { _ in UInt8.random(in: 0...255) })
                .write(to: credentials.appendingPathComponent("securedictionary"))
        } catch {
            report.cannotRun("automatic store, keyring away", target: "0 writes to the files", reason: "\(error)")
            return
        }
        processStartedDuringAStop(harness, report, credentials: credentials.path)
        writersWhileTheKeyringStarts(harness, report, credentials: credentials.path)
    }

    /// The item files in `folder`.
    static func itemFiles(_ folder: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".sdict") }.count
    }

    /// The case as reported: a store that used the keyring, a process started during a 2 s stop,
    /// writing back to back for 5 s after.
    static func processStartedDuringAStop(_ harness: Harness, _ report: Report, credentials: String) {
        let rounds = harness.sizes.restartRounds
        let check = "\(rounds) × a process started during a 2 s keyring stop, writing 5 s after it is back"
        let target = "0 writes to the files"
        var toFiles = 0
        var toKeyring = 0
        var failures: [String] = []
        for round in 0..<rounds {
            let app = harness.appID("autostop")
            let folder = harness.scratchFile("automatic-stop-\(round)").path
            let environment: [String: String?] = ["CREDENTIALS_DIRECTORY": credentials]
            let first = harness.worker(["auto-writes", app, "d", folder, "0", "3000"], environment: environment)
            guard WorkerReply.parse(first)?.detail?.hasPrefix("secretService") == true else {
                failures.append("the first write: \(first.how) \(first.lastLine)")
                continue
            }
            guard harness.daemon("stop").succeeded else {
                failures.append("keyring-daemon stop failed")
                break
            }
            let writer = try? harness.liveWorker(["auto-writes", app, "d", folder, "7", "6000"], environment: environment)
            Thread.sleep(forTimeInterval: 2)
            let started = harness.daemon("start").succeeded
            guard let writer, started else {
                failures.append("cannot start the writer or the keyring")
                if !started { harness.daemon("start") }
                break
            }
            let reply = WorkerReply.parse(writer.finish(timeout: .seconds(60)))
            switch reply?.detail?.split(separator: ";").first {
            case "secretService": toKeyring += reply?.count ?? 0
            case "encryptedFiles": toFiles += reply?.count ?? 0
            default: failures.append("the writer: \(reply?.error ?? "no reply") \(reply?.detail ?? "")")
            }
            if itemFiles(folder) > 0 && toFiles == 0 { failures.append("item files appeared in \(folder)") }
        }
        report.add(
            check, target: target, measured: "\(toFiles) to the files, \(toKeyring) to the keyring",
            pass: toFiles == 0 && failures.isEmpty && toKeyring > 0, note: failures.first)
    }

    /// Twenty writers with no recorded choice, started 50 ms apart, the keyring started after
    /// the tenth (as 20 `secure-dict write --store auto` would be).
    static func writersWhileTheKeyringStarts(_ harness: Harness, _ report: Report, credentials: String) {
        let rounds = harness.sizes.restartRounds
        let check = "\(rounds) × 20 writers started 50 ms apart, the keyring started after the tenth"
        let target = "0 writes to the files, \(20 * rounds) to the keyring"
        var toFiles = 0
        var toKeyring = 0
        var failures: [String] = []
        /// Counts a writer's writes where its store was chosen.
        func tally(_ reply: WorkerReply?) {
            switch reply?.detail?.split(separator: ";").first {
            case "secretService": toKeyring += reply?.count ?? 0
            case "encryptedFiles": toFiles += reply?.count ?? 0
            default: failures.append("a writer: \(reply?.error ?? "no reply")")
            }
        }
        for round in 0..<rounds {
            let app = harness.appID("autostart")
            let folder = harness.scratchFile("automatic-start-\(round)").path
            let environment: [String: String?] = ["CREDENTIALS_DIRECTORY": credentials]
            guard harness.daemon("stop").succeeded else {
                failures.append("keyring-daemon stop failed")
                break
            }
            var writers: [LiveChild] = []
            var started = false
            for index in 0..<20 {
                if let writer = try? harness.liveWorker(
                    ["auto-writes", app, "d", folder, "0", "10000"], environment: environment)
                {
                    writers.append(writer)
                }
                if index == 9 { started = harness.daemon("start").succeeded }
                usleep(50_000)
            }
            if !started { harness.daemon("start") }
            for writer in writers { tally(WorkerReply.parse(writer.finish(timeout: .seconds(60)))) }
            if writers.count < 20 { failures.append("\(20 - writers.count) writers did not start") }
            if itemFiles(folder) > 0 && toFiles == 0 { failures.append("item files appeared in \(folder)") }
        }

        report.add(
            check, target: target, measured: "\(toFiles) to the files, \(toKeyring) to the keyring",
            pass: toFiles == 0 && toKeyring == 20 * rounds && failures.isEmpty, note: failures.first)
    }
}

extension Worker {
    /// `auto-writes APP NAME FOLDER SECONDS TIMEOUT_MS`: an `AutomaticStore` whose file store
    /// keeps its files in FOLDER under the credential in `$CREDENTIALS_DIRECTORY`; opens the
    /// dictionary and writes back to back for SECONDS (at least once). Reports the writes done
    /// and, as its detail, the store chosen and the errors met.
    static func autoWrites(_ arguments: [String]) {
        guard arguments.count == 5, let seconds = Int(arguments[3]), let timeout = Int(arguments[4]) else { usage() }
        let store = AutomaticStore(fileStore: EncryptedFileStore(folderPath: arguments[2], keySource: .systemdCredential()))
        let options = SecureDictionary.Options(timeout: .milliseconds(timeout), store: store)
        var written = 0
        var errors: [String] = []
        do {
            let dictionary = try SecureDictionary(name: arguments[1], applicationID: arguments[0], options: options)
            let end = ContinuousClock.now + .seconds(seconds)
            repeat {
                do {
                    try dictionary.setValue(.integer(written), forKey: "w\(getpid())")
                    written += 1
                } catch {
                    errors.append(caseName(error))
                }
            } while ContinuousClock.now < end
        } catch {
            errors.append("open \(caseName(error))")
        }
        let chosen = store.choice.map { "\($0.chosen)" } ?? "nothing"
        WorkerReply(
            outcome: written > 0 ? "ok" : "error", error: errors.first, count: written,
            detail: "\(chosen);\(errors.joined(separator: ","))"
        ).print()
    }
}
