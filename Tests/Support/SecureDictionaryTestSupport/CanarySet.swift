import Foundation

/// Canaries for core-dump scans, made at run time, and the dictionaries that hold
/// them, written by Python's `plistlib` (another program's layout, as a planted item has).
///
/// ```swift
/// let canaries = CanarySet(generation: 1, count: 8)
/// let files = try canaries.blobs(in: folder)           // scan-0 … scan-7, binary plists
/// let scan = try CoreScan.take(of: pid, secrets: canaries.secrets)
/// ```
///
/// One generation's canaries: per dictionary, a key (with a string value), `Data`, a string in
/// an array in a dictionary, one deeper, and a `Codable`-shaped dictionary's string and `Data`,
/// beside a hundred filler entries. The first `small` dictionaries are small items instead: one
/// entry, a 24-byte key holding a 24-byte string (a blob of about a hundred bytes, which a
/// transient copy on a stack can hold whole).
public struct CanarySet: Sendable {
    public let generation: Int
    /// Per dictionary, its canaries by kind.
    public let dictionaries: [[String: [UInt8]]]

    public init(generation: Int, count: Int, small: Int = 0) {
        self.generation = generation
        let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        func text(_ length: Int) -> [UInt8] { (0..<length).map { _ in letters.randomElement()! } }
        func bytes(_ length: Int) -> [UInt8] { (0..<length).map { _ in UInt8.random(in: 0x80...0xFF) } }
        dictionaries = (0..<count).map { index in
            guard index >= small else { return ["key": text(24), "string": text(24)] }
            return [
                "key": text(48), "string": text(96), "data": bytes(96), "nested": text(64), "deep": text(64),
                "name": text(64), "token": bytes(64),
            ]
        }
    }

    /// Every canary, named "g<generation>-<dictionary>-<kind>".
    public var secrets: [String: [UInt8]] {
        var secrets: [String: [UInt8]] = [:]
        for (index, canaries) in dictionaries.enumerated() {
            for (kind, bytes) in canaries { secrets["g\(generation)-\(index)-\(kind)"] = bytes }
        }
        return secrets
    }

    /// The dictionaries as Python's `plistlib` writes them, one file each, named scan-N.
    public func blobs(in folder: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let specification: [String: Any] = [
            "folder": folder,
            "dictionaries": dictionaries.map { $0.mapValues { Data($0).base64EncodedString() } },
        ]
        let script = """
            import base64, json, os, plistlib, sys
            spec = json.load(sys.stdin)
            for index, canaries in enumerate(spec["dictionaries"]):
                raw = {kind: base64.b64decode(value) for kind, value in canaries.items()}
                text = {kind: value.decode("ascii", "replace") for kind, value in raw.items()}
                if len(raw) == 2:
                    with open(os.path.join(spec["folder"], f"scan-{index}"), "wb") as file:
                        file.write(plistlib.dumps({text["key"]: text["string"]}, fmt=plistlib.FMT_BINARY))
                    continue
                entries = {f"filler-{i:03}": i for i in range(100)}
                entries[text["key"]] = text["string"]
                entries["data"] = raw["data"]
                entries["nested"] = {"list": [text["nested"], {"deep": text["deep"]}]}
                entries["profile"] = {"name": text["name"], "token": raw["token"]}
                with open(os.path.join(spec["folder"], f"scan-{index}"), "wb") as file:
                    file.write(plistlib.dumps(entries, fmt=plistlib.FMT_BINARY))
            """
        let output = try ChildProcess.run(
            "/usr/bin/python3", ["-c", script], input: try JSONSerialization.data(withJSONObject: specification))
        guard output.succeeded else { throw CoreScan.Failure(description: "plistlib: \(output)") }
        return dictionaries.indices.map { "\(folder)/scan-\($0)" }
    }
}
