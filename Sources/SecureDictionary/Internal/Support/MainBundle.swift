import Glibc

/// `Bundle.main.bundleIdentifier`, for ``SecureDictionary/defaultApplicationID``, worked out
/// from the files themselves: neither Foundation nor CoreFoundation is loaded or asked.
///
/// ```swift
/// let identifier = MainBundle.identifier   // nil for a plain executable
/// ```
///
/// Why not CoreFoundation (`CFBundleGetMainBundle` through `dlopen("libFoundation.so")`, as
/// once): in a program without Foundation whose async `main` parks in `dispatch_main`, loading
/// `libFoundation.so` from another thread left the main queue undrained for good (measured: a
/// 10-line program opening a dictionary under the default ID hung; `dlopen` alone did it).
/// Linking Foundation would load it and ICU into every process (about 4 ms and 6 MiB at
/// start-up, `secure-dict` included).
///
/// CoreFoundation's rules on Linux, as kept here: the main bundle is the executable's folder,
/// or, for an executable in `…/Contents/Linux/` (or `…/Contents/Executables/Linux/`),
/// the folder above `Contents`. Its `Info.plist` is in the first of `Contents/`, `Resources/`,
/// `Support Files/` that exists (`Resources/` first for a `*.framework`), else in the folder
/// itself (unless its name ends in one of those three). Binary (hardened reader) and UTF-8 XML
/// (``InfoPlistXML``) property lists up to 1 MiB are read. No identifier for old-style
/// (OpenStep) or UTF-16 plists, wrapped bundles (`Wrapper/`, `WrappedBundle`), or folder names
/// in another case (CoreFoundation ignores case there).
enum MainBundle {
    /// The identifier, read once (the main bundle does not change).
    static let identifier: String? = executablePath().flatMap(identifier(ofExecutableAt:))

    /// The largest `Info.plist` read.
    static let maximumInfoPlistSize = 1 << 20

    /// The main bundle's identifier for the executable at `path` (absolute, links resolved).
    static func identifier(ofExecutableAt path: String) -> String? {
        guard let plist = infoPlistPath(inBundle: bundleFolder(ofExecutableAt: path)),
            let bytes = contents(of: plist, upTo: maximumInfoPlistSize)
        else { return nil }
        if bytes.starts(with: Array("bplist00".utf8)) {
            let entries = try? BinaryPropertyList.decode(bytes, limits: PropertyListLimits(maximumSize: maximumInfoPlistSize))
            return entries?["CFBundleIdentifier"]?.stringValue
        }
        return InfoPlistXML.bundleIdentifier(in: bytes)
    }

    /// The bundle folder of the executable at `path`.
    static func bundleFolder(ofExecutableAt path: String) -> String {
        var parts = path.split(separator: "/").map(String.init)
        if !parts.isEmpty { parts.removeLast() }  // the executable
        if parts.count > 1, parts.last == "Linux" {
            parts.removeLast()
            if parts.last == "Executables" { parts.removeLast() }
            if !parts.isEmpty { parts.removeLast() }  // Contents, Support Files…
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Where the bundle at `folder` keeps its `Info.plist`, or nil where it has none to read.
    static func infoPlistPath(inBundle folder: String) -> String? {
        let base = folder == "/" ? "" : folder
        let present = ["Contents", "Resources", "Support Files"].filter { isFolderOrLink("\(base)/\($0)") }
        let order = folder.hasSuffix(".framework") ? ["Resources", "Contents", "Support Files"] : present
        if let inner = order.first(where: present.contains) { return "\(base)/\(inner)/Info.plist" }
        guard !["Contents", "Resources", "Support Files"].contains(where: folder.hasSuffix) else { return nil }
        return "\(base)/Info.plist"
    }

    /// `/proc/self/exe`, read with `readlink(2)`.
    private static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A folder, or a symbolic link (as `readdir` reports them, which CoreFoundation uses).
    private static func isFolderOrLink(_ path: String) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0 else { return false }
        return status.st_mode & S_IFMT == S_IFDIR || status.st_mode & S_IFMT == S_IFLNK
    }

    /// The bytes of the regular file at `path` (links followed), or nil when it is missing,
    /// not a regular file, unreadable or larger than `limit`.
    private static func contents(of path: String, upTo limit: Int) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, Int(status.st_size) <= limit else {
            return nil
        }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count < bytes.count {
            let done = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if done < 0 && errno == EINTR { continue }
            guard done >= 0 else { return nil }
            if done == 0 { break }
            count += done
        }
        guard count <= limit else { return nil }
        return Array(bytes[0..<count])
    }
}
