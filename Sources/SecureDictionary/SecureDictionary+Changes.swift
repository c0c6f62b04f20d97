import FoundationEssentials
import Logging

extension SecureDictionary {
    /// One changed entry, as delivered by ``changes()``.
    public struct Change: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
        /// What happened to the entry.
        public enum Kind: String, Sendable {
            /// The key is new: ``Change/oldValue`` is `nil`.
            case inserted
            /// The key held another value (compared as stored: an integer and a real are
            /// different values).
            case updated
            /// The key is gone: ``Change/newValue`` is `nil`.
            case removed
        }

        /// The entry's key.
        public let key: String
        /// What happened to it.
        public let kind: Kind
        /// The value before the change (`nil` for an insertion).
        public let oldValue: Value?
        /// The value after the change (`nil` for a removal).
        public let newValue: Value?

        /// A change, as the library delivers it (and as your tests may make one to compare with).
        ///
        /// ```swift
        /// #expect(change == .init(key: "k", kind: .inserted, oldValue: nil, newValue: "v"))
        /// ```
        public init(key: String, kind: Kind, oldValue: Value?, newValue: Value?) {
            self.key = key
            self.kind = kind
            self.oldValue = oldValue
            self.newValue = newValue
        }

        /// The kind only, e.g. `Change(updated, redacted)`.
        public var description: String { "Change(\(kind.rawValue), redacted)" }
        /// The kind only: `dump()` and debuggers show no key or value.
        public var customMirror: Mirror { Mirror(self, children: ["kind": kind.rawValue], displayStyle: .struct) }
    }

    /// Every change to this dictionary's entries, whoever made it.
    ///
    /// ```swift
    /// for await change in settings.changes() {
    ///     if change.key == "apiToken" { reconnect() }
    /// }
    /// ```
    ///
    /// Changes come from writes through any instance in this process, from reloads that find
    /// the stored item changed, and from **other processes and tools** (`secret-tool`, scripts,
    /// `secure-dict`) without polling: the Secret Service's `ItemCreated`, `ItemChanged` and
    /// `ItemDeleted` signals (the file stores: inotify on their folder) make it read the item
    /// once, reporting only what changed. A reload that fails (e.g. locked) goes to
    /// ``Options/failureHandler`` and delivers nothing. The stream ends when its task is
    /// cancelled. Every changed entry is decoded for it; ``changes(forKey:)`` decodes one.
    public func changes() -> AsyncStream<Change> {
        state.observeChanges(options.context, failureHandler: options.failureHandler)
    }

    /// Every change to the entry `key`, whoever made it: ``changes()`` for one key.
    ///
    /// ```swift
    /// for await change in settings.changes(forKey: "apiToken") {
    ///     client.token = change.newValue?.stringValue   // nil: the entry was removed
    /// }
    /// ```
    ///
    /// Delivered as ``changes()`` delivers them, in the order they were loaded or written; the
    /// key matches by its Unicode scalars. Only this entry is compared (in place) and decoded:
    /// a change to another entry costs this stream nothing and hands it no copy of that entry.
    public func changes(forKey key: String) -> AsyncStream<Change> {
        changes(forKeys: [key])
    }

    /// Every change to the entries `keys` names, in one stream: ``changes(forKey:)`` for
    /// several keys (the configuration provider's watch of a key and of each leading part of
    /// its name). A change of several of them at once arrives in the order of `keys`.
    package func changes(forKeys keys: [String]) -> AsyncStream<Change> {
        state.observeChanges(options.context, failureHandler: options.failureHandler, keys: keys)
    }

    /// The value of `key` after each change to its entry (its default after a removal).
    ///
    /// ```swift
    /// for await retries in settings.updates(for: .retries) { client.maxRetries = retries }
    /// ```
    ///
    /// Follows ``changes(forKey:)``: no other entry is decoded for it. Entries of the wrong
    /// type are skipped, and reported as the typed subscript reports them (at `debug`).
    public func updates<V>(for key: Key<V>) -> AsyncStream<V> {
        let changes = changes(forKey: key.name)
        return AsyncStream { continuation in
            let task = Task {
                for await change in changes {
                    do throws(SecureDictionaryError) {
                        continuation.yield(try change.newValue.map(V.init(propertyListValue:)) ?? key.defaultValue)
                    } catch {
                        report(error, during: "typed update", level: .debug)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

extension PropertyListValue {
    /// Whether `other` is stored as the same bytes, which is what a change event reports:
    /// reals and dates by their bits (a NaN is its own value, `-0.0` is not `0.0`), strings and
    /// dictionary keys by their Unicode scalars (`é` is not `e` + U+0301, which `==` equates).
    package func isStoredIdentically(to other: PropertyListValue) -> Bool {
        switch (self, other) {
        case (.string(let left), .string(let right)): return left.unicodeScalars.elementsEqual(right.unicodeScalars)
        case (.integer(let left), .integer(let right)): return left == right
        case (.unsignedInteger(let left), .unsignedInteger(let right)): return left == right
        case (.real(let left), .real(let right)): return left.bitPattern == right.bitPattern
        case (.bool(let left), .bool(let right)): return left == right
        case (.date(let left), .date(let right)):
            return left.timeIntervalSinceReferenceDate.bitPattern == right.timeIntervalSinceReferenceDate.bitPattern
        case (.data(let left), .data(let right)): return left == right
        case (.array(let left), .array(let right)):
            return left.count == right.count && zip(left, right).allSatisfy { $0.isStoredIdentically(to: $1) }
        case (.dictionary(let left), .dictionary(let right)):
            return left.count == right.count
                && left.allSatisfy { key, value in
                    guard let index = right.index(forKey: key) else { return false }
                    let (otherKey, otherValue) = right[index]
                    return key.unicodeScalars.elementsEqual(otherKey.unicodeScalars) && value.isStoredIdentically(to: otherValue)
                }
        default: return false
        }
    }
}
