/// What the Secret Service can do for us right now, as `status` reports it.
///
/// `locked` means the items exist but their secrets cannot be read or written without an unlock
/// (which tokend never asks for: it must not pop a prompt). `unavailable` covers no session bus,
/// no Secret Service on it, and a service that did not answer in time.
public enum KeyringState: String, Sendable, Codable {
    case available, locked, unavailable
}
