import TokendCore

extension TokendError {
    /// The error a client sees for a keyring failure: `keyring_locked` or `keyring_unavailable`
    /// with what to do about it. `account` names the item when there is one.
    public init(_ keyring: KeyringError, account: String? = nil) {
        let item = account.map { "the keyring item of account \"\($0)\"" } ?? "the keyring"
        if let steps = keyring.steps, keyring.code != .corrupt {
            // A store other than the Secret Service (`pass`, `tpm2`): its own steps.
            self.init(
                keyring.code == .locked || keyring.code == .needsConfirmation ? .keyringLocked : .keyringUnavailable,
                "\(keyring.message): \(steps); tokend keeps the tokens it holds in memory and writes them back once the store takes writes")
            return
        }
        switch keyring.code {
        case .locked:
            self.init(
                .keyringLocked,
                "\(item) is locked and nothing here has unlocked it: \(SecretServiceProvider.current.unlockAdvice ?? KeyringError.unlockAdvice); tokend "
                    + "keeps the tokens it holds in memory and writes them back once the keyring is unlocked")
        case .unavailable:
            self.init(
                .keyringUnavailable,
                "no Secret Service on the session bus: start gnome-keyring-daemon (e.g. "
                    + "`gnome-keyring-daemon --start --components=secrets`) in this login session and check "
                    + "DBUS_SESSION_BUS_ADDRESS; on a machine without a desktop, see README, \"A headless server\" "
                    + "(\(keyring.message))")
        case .timedOut:
            self.init(
                .keyringUnavailable,
                "the Secret Service (\(SecretServiceProvider.current)) did not answer in time, as when it waits on a dialog: "
                    + "\(SecretServiceProvider.current.confirmationAdvice); tokend keeps the tokens it holds in memory "
                    + "and writes them back once it answers (\(keyring.message))")
        case .failed:
            self.init(
                .keyringUnavailable,
                "the Secret Service refused the operation on \(item): \(keyring.message)")
        case .needsConfirmation:
            self.init(
                .keyringLocked,
                "the Secret Service (\(SecretServiceProvider.current)) wants tokend's access to \(item) confirmed, and tokend never "
                    + "asks for dialogs: \(SecretServiceProvider.current.confirmationAdvice); tokend keeps the tokens it holds in "
                    + "memory and writes them back once the store answers (\(keyring.message))")
        case .queued:
            self.init(
                .keyringUnavailable,
                "the keyring is busy (the operation on \(item) waited behind others): tokend keeps the tokens it "
                    + "holds in memory; try again in a few seconds (\(keyring.message))")
        case .corrupt:
            // The item is kept (it might be something the user wants back); only a new sign-in or
            // import replaces it, which is what needs_login tells the caller to do.
            let name = account ?? "ACCOUNT"
            self.init(
                .needsLogin,
                "\(item) does not hold a token set tokend can read and was left untouched: inspect it with "
                    + "`secret-tool search --all application tokend account \(name)`, then run "
                    + "`tokenctl login \(name)` or `tokenctl import \(name)` to replace it")
        }
    }
}

extension KeyringError {
    /// What unlocks the login keyring, on a desktop, on a machine without one (README, "A
    /// headless server"), and without a user manager (no systemctl --user: a container, su):
    /// said wherever tokend reports a locked keyring.
    public static let unlockAdvice =
        "log in to the desktop session, or, on a machine without one, keep the keyring's password in "
        + "~/.config/tokend/keyring-password and run `systemctl --user enable --now tokend-keyring` "
        + "(see README, \"A headless server\"); without a user manager (a container, su), start tokend as "
        + "`dbus-run-session -- sh -c 'gnome-keyring-daemon --unlock --components=secrets --daemonize "
        + "<~/.config/tokend/keyring-password >/dev/null && tokend'`"

    /// Shorthand for `TokendError(self, account:)`.
    public func tokendError(account: String? = nil) -> TokendError { TokendError(self, account: account) }
}
