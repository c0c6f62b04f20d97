import Logging
import Synchronization

/// Hands out one ``ItemState`` per (store, item) in the process, so that every
/// ``SecureDictionary`` instance of the same item shares one cache and one lock.
/// It holds states weakly: when the last instance goes, the state goes (and wipes itself).
enum ItemRegistry {
    private struct Key: Hashable {
        let store: ObjectIdentifier
        let item: KeyringItem
    }

    private struct WeakState {
        weak var state: ItemState?
    }

    private static let states = Mutex<[Key: WeakState]>([:])

    /// The live state of `item` in `store`, or a new one.
    /// `logger` is the first instance's: it gets the state's own warnings.
    static func state(for item: KeyringItem, store: any KeyringStore, logger: Logger) -> ItemState {
        let key = Key(store: ObjectIdentifier(store), item: item)
        return states.withLock { states -> ItemState in
            if let existing = states[key]?.state { return existing }
            let created = ItemState(item: item, store: store, logger: logger)
            if states.count > 64 { states = states.filter { $0.value.state != nil } }
            states[key] = WeakState(state: created)
            return created
        }
    }
}
