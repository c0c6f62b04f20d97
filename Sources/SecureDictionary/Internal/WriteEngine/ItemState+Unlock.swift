import Logging

// When a call finds the keyring locked: the unlock dialog, where the options allow it
// (``SecureDictionary/Options/unlock``), then the call once more.

extension ItemState {
    /// Runs `operation`; when it finds the keyring locked and `context` allows the unlock
    /// dialog, has the store show it (waiting for the user up to the policy's timeout) and
    /// runs `operation` once more.
    func unlockingIfAllowed<T>(
        _ context: OperationContext, _ operation: () throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        do {
            return try operation()
        } catch .locked {
            try unlockInteractively(context)
            return try operation()
        }
    }

    /// Has the store show the keyring's unlock dialog and waits for the user, as `context`
    /// allows; else, or when the store cannot, throws ``SecureDictionaryError/locked``.
    func unlockInteractively(_ context: OperationContext) throws(SecureDictionaryError) {
        guard case .prompt(let timeout) = context.unlock, let store = store as? any InteractivelyUnlockingStore else {
            throw .locked
        }
        context.logger.info("the keyring is locked: showing its unlock dialog", metadata: ["item": "\(item.name)"])
        try store.unlockInteractively(item.collection, timeout: timeout)
    }
}
