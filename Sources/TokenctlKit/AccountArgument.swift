import ArgumentParser

/// `ACCOUNT`, for the subcommands that act on one account's session: checked the same way and
/// completed from the configuration the same way everywhere.
struct AccountArgument: ParsableArguments {
    @Argument(help: "The account, as named in config.toml.", completion: .custom(AccountCompletion.names))
    var account: String

    func validate() throws { try validateAccount(account) }
}

/// `[ACCOUNT]`, for the subcommands that show all accounts or one (`status`, `watch`).
struct AccountFilter: ParsableArguments {
    @Argument(help: "Only this account.", completion: .custom(AccountCompletion.names))
    var account: String?

    func validate() throws {
        if let account { try validateAccount(account) }
    }
}
