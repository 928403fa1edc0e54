import TokendCore

extension AccountConfiguration {
    /// Who issued the account's session (`ProviderSettings.endpoint`). A stored session carries
    /// it, and is only ever sent back to the same endpoint: a production refresh token must never
    /// reach an emulator (in clear, and its "invalid token" answer would get the production item
    /// deleted).
    public var endpoint: String { provider.base.endpoint }
}
