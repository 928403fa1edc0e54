import TokendCore

/// `watch`: the accounts' events as they happen.
public struct WatchArgs: Sendable, Equatable {
    /// One account's events, or every account's when nil.
    public var account: String?
    /// Include profile fields (email) in events.
    public var profile: Bool

    public init(account: String? = nil, profile: Bool = false) {
        self.account = account
        self.profile = profile
    }
}

extension WatchArgs: CommandArguments {
    public init(_ request: FieldReader) throws(TokendError) {
        account = request.string(.account)
        profile = request.boolean(.profile) == true
    }

    public func write(to fields: inout RequestFields) {
        fields.set(.account, account)
        fields.set(.profile, profile ? true : nil)
    }
}
