import TokendCore

/// `logout`: forget `account`'s session (and revoke it where the provider can).
public struct LogoutArgs: Sendable, Equatable {
    public var account: String

    public init(account: String) {
        self.account = account
    }
}

extension LogoutArgs: CommandArguments {
    public init(_ request: FieldReader) throws(TokendError) {
        account = try request.account()
    }

    public func write(to fields: inout RequestFields) {
        fields.set(.account, account)
    }
}
