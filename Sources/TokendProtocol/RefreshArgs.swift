import TokendCore

/// `refresh`: a refresh of `account` now, waited for at most `timeout` seconds.
public struct RefreshArgs: Sendable, Equatable {
    public var account: String
    public var timeout: Double

    public init(account: String, timeout: Double = Command.defaultTimeout) {
        self.account = account
        self.timeout = timeout
    }
}

extension RefreshArgs: CommandArguments {
    public init(_ request: FieldReader) throws(TokendError) {
        account = try request.account()
        timeout = try request.timeout()
    }

    public func write(to fields: inout RequestFields) {
        fields.set(.account, account)
        fields.set(.timeout, timeout)
    }
}
