import Logging

// When a call finds the keyring locked, or the keyring wants its user to confirm this
// process's access (KeePassXC): the keyring's dialog, where the options allow it
// (``SecureDictionary/Options/unlock``), then the call once more.

extension ItemState {
    /// Runs `operation`; when it finds the keyring locked or awaiting the user's confirmation
    /// and `context` allows dialogs, has the store show the one that answers it (waiting for
    /// the user up to the policy's timeout) and runs `operation` once more.
    func unlockingIfAllowed<T>(
        _ context: OperationContext, _ operation: () throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        do {
            return try operation()
        } catch let error where error.asksTheUser {
            try askTheUser(after: error, context)
            return try operation()
        }
    }

    /// Has the store show the dialog that `error` calls for (the unlock dialog after
    /// ``SecureDictionaryError/locked``, the access confirmation after
    /// ``SecureDictionaryError/confirmationRequired``) and waits for the user, as `context`
    /// allows; else, or when the store cannot, throws `error`.
    func askTheUser(after error: SecureDictionaryError, _ context: OperationContext) throws(SecureDictionaryError) {
        guard case .prompt(let timeout) = context.unlock, let store = store as? SecretServiceStore else {
            throw error
        }
        switch error {
        case .locked:
            context.logger.info("the keyring is locked: showing its unlock dialog", metadata: ["item": "\(item.name)"])
            try store.unlockInteractively(item.collection, timeout: timeout)
        case .confirmationRequired:
            context.logger.info("the keyring asks to confirm this access: showing its dialog", metadata: ["item": "\(item.name)"])
            try store.confirmAccessInteractively(to: item, timeout: timeout)
        default:
            throw error
        }
    }
}

extension SecureDictionaryError {
    /// Whether a dialog of the keyring may answer it: the unlock dialog, or the access confirmation.
    var asksTheUser: Bool { self == .locked || self == .confirmationRequired }
}
