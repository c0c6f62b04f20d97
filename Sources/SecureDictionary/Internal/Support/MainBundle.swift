#if canImport(FoundationEssentials)
    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Musl)
        import Musl
    #endif

    /// `Bundle.main.bundleIdentifier`, for ``SecureDictionary/defaultApplicationID``, without
    /// linking Foundation.
    ///
    /// ```swift
    /// let identifier = MainBundle.identifier   // nil for a plain executable
    /// ```
    ///
    /// Why: `Bundle` is in Foundation, not FoundationEssentials, and linking Foundation loads
    /// it and ICU into every process (about 4 ms and 6 MiB at start-up, `secure-dict` included),
    /// although `Bundle.main` is needed only when an application leaves out its ID. On Linux
    /// the main bundle is the executable's folder, and it has an identifier when that folder
    /// holds an `Info.plist` under rules of CoreFoundation's (`Contents/`, `Resources/`,
    /// `Support Files/` or the folder itself, whichever folder exists first, and more). So the
    /// answer is asked of the very same code: `libFoundation.so` is opened the first time (it
    /// is already loaded in a process that uses Foundation) and asked through CoreFoundation's
    /// C functions `CFBundleGetMainBundle`, `CFBundleGetIdentifier` and `CFStringGetCString`.
    /// Where it cannot be opened (a statically linked executable), there is no identifier.
    enum MainBundle {
        /// The identifier, read once (the main bundle does not change).
        static let identifier: String? = readIdentifier()

        private typealias GetMainBundle = @convention(c) () -> OpaquePointer?
        private typealias GetIdentifier = @convention(c) (OpaquePointer?) -> OpaquePointer?
        private typealias GetLength = @convention(c) (OpaquePointer?) -> Int
        private typealias GetMaximumSize = @convention(c) (Int, UInt32) -> Int
        private typealias GetCString = @convention(c) (OpaquePointer?, UnsafeMutablePointer<CChar>?, Int, UInt32) -> UInt8

        /// `kCFStringEncodingUTF8`.
        private static let utf8Encoding: UInt32 = 0x0800_0100

        private static func readIdentifier() -> String? {
            // Never closed: Foundation cannot be unloaded, and may be in use elsewhere.
            guard let library = dlopen("libFoundation.so", RTLD_LAZY),
                let getMainBundle = function("CFBundleGetMainBundle", in: library, as: GetMainBundle.self),
                let getIdentifier = function("CFBundleGetIdentifier", in: library, as: GetIdentifier.self),
                let getLength = function("CFStringGetLength", in: library, as: GetLength.self),
                let getMaximumSize = function("CFStringGetMaximumSizeForEncoding", in: library, as: GetMaximumSize.self),
                let getCString = function("CFStringGetCString", in: library, as: GetCString.self)
            else { return nil }
            // Both follow CoreFoundation's Get rule: owned by the bundle, not released here.
            guard let bundle = getMainBundle(), let identifier = getIdentifier(bundle) else { return nil }
            let capacity = getMaximumSize(getLength(identifier), utf8Encoding) + 1
            guard capacity > 0 else { return nil }
            var buffer = [CChar](repeating: 0, count: capacity)
            guard getCString(identifier, &buffer, capacity, utf8Encoding) != 0 else { return nil }
            return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        }

        private static func function<Function>(
            _ name: String, in library: UnsafeMutableRawPointer, as type: Function.Type
        ) -> Function? {
            dlsym(library, name).map { unsafeBitCast($0, to: type) }
        }
    }
#else
    import Foundation

    /// `Bundle.main.bundleIdentifier`, for ``SecureDictionary/defaultApplicationID``.
    enum MainBundle {
        static var identifier: String? { Bundle.main.bundleIdentifier }
    }
#endif
