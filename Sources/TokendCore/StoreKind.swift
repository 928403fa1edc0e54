/// Where sessions are kept (README, "Stores"): the Secret Service (the default, as before stores
/// were configurable), files sealed to this machine's TPM 2.0, or the `pass` password manager.
public enum StoreKind: String, Sendable, CaseIterable, Codable {
    case secretService = "secret-service"
    case tpm2
    case pass

    /// The names the configuration accepts, quoted, for its error messages.
    public static var quotedNames: String { allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ") }
}
