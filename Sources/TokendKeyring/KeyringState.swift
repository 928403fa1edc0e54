/// What the Secret Service can do for us right now, as `status` reports it.
///
/// `locked` means the items exist but their secrets cannot be read or written without an unlock
/// (which tokend never asks for: it must not pop a prompt). `unavailable` covers no session bus,
/// no Secret Service on it. `needs_confirmation`: the service did not answer in time, which is
/// what a service waiting on a dialog (KeePassXC's access confirmation, an unlock prompt) or a
/// frozen one looks like; tokend never answers a dialog, the user has to, or change the setting
/// that raises it (README, "Secret Service").
public enum KeyringState: String, Sendable, Codable {
    case available, locked, unavailable
    case needsConfirmation = "needs_confirmation"
}
