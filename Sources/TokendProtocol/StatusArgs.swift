import TokendCore

/// `list`, `status`: one account, or all when nil.
public struct StatusArgs: Sendable, Equatable {
    public var account: String?

    public init(account: String? = nil) {
        self.account = account
    }
}

extension StatusArgs: CommandArguments {
    public init(_ request: FieldReader) throws(TokendError) {
        account = request.string(.account)
    }

    public func write(to fields: inout RequestFields) {
        fields.set(.account, account)
    }
}
