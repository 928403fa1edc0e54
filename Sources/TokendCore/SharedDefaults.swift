/// What the client and the daemon must agree on, defined once (docs/architecture.md, "Names and
/// places"): tokenctl waits as long as tokend may take, and names the file tokend reads.
public enum SharedDefaults {
    /// Seconds a sign-in waits for the user (browser or device code) unless told otherwise:
    /// long enough to find a password, short enough that a forgotten login ends.
    public static let loginTimeout: Double = 300
    /// Seconds past a login's timeout after which the daemon gives up on a provider that has
    /// neither finished nor failed; the client waits that much longer for the answer.
    public static let loginGrace: Double = 15

    /// `--config`, else `TOKEND_CONFIG`, else `$XDG_CONFIG_HOME/tokend/config.toml`, else
    /// `$HOME/.config/tokend/config.toml` (`~/…` when HOME is unset, as a message would say it).
    public static func configPath(explicit: String? = nil, environment: Environment) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let path = environment["TOKEND_CONFIG"], !path.isEmpty { return path }
        if let base = environment["XDG_CONFIG_HOME"], !base.isEmpty { return base + "/tokend/config.toml" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "~"
        return home + "/.config/tokend/config.toml"
    }
}
