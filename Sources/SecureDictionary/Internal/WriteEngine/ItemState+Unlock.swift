import Logging

extension ItemState {
    /// Runs `operation`; when it finds the keyring locked or awaiting the user's confirmation
    /// (KeePassXC) and `context` allows dialogs (``SecureDictionary/Options/unlock``), shows
    /// the dialog that answers it (``askTheUser(after:_:)``) and runs `operation` once more.
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

    /// Shows the Secret Service's dialog `error` calls for (unlock, or access confirmation) and
    /// waits for the user up to the policy's timeout; else, or for another store, throws `error`.
    func askTheUser(after error: SecureDictionaryError, _ context: OperationContext) throws(SecureDictionaryError) {
        guard case .prompt(let timeout) = context.unlock, store is SecretServiceStore else {
            throw error
        }
        switch error {
        case .locked:
            context.logger.info("the keyring is locked: showing its unlock dialog", metadata: ["item": "\(item.name)"])
            try LibSecretClient.forDialogs().unlockInteractively(item.collection, timeout: timeout)
        case .confirmationRequired:
            context.logger.info("the keyring asks to confirm this access: showing its dialog", metadata: ["item": "\(item.name)"])
            try LibSecretClient.forDialogs().confirmAccessInteractively(to: item, timeout: timeout)
        default:
            throw error
        }
    }
}

extension SecureDictionaryError {
    /// Whether a dialog of the keyring may answer it: the unlock dialog, or the access confirmation.
    var asksTheUser: Bool { self == .locked || self == .confirmationRequired }
}
