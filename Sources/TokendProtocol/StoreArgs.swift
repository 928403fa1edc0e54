import TokendCore

/// `store`: where an account's session is kept (README, "Stores"). `move` moves the session of
/// `account` to the store `to`, nothing lost on the way; one account a request (`tokenctl store
/// move --all` sends one for each), so each account's answer is its own.
public struct StoreArgs: Sendable, Equatable {
    public enum Action: String, Sendable, CaseIterable {
        case move
    }

    public var action: Action
    public var account: String
    public var to: StoreKind

    public init(move account: String, to: StoreKind) {
        action = .move
        self.account = account
        self.to = to
    }
}

extension StoreArgs: CommandArguments {
    public init(_ request: FieldReader) throws(TokendError) {
        guard let action = request.string(.action).flatMap(Action.init(rawValue:)) else {
            throw request.failure(.action, "must be one of \(Action.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))")
        }
        self.action = action
        account = try request.account()
        guard let to = request.string(.to).flatMap(StoreKind.init(rawValue:)) else {
            throw request.failure(.to, "must name a store: one of \(StoreKind.quotedNames)")
        }
        self.to = to
    }

    public func write(to fields: inout RequestFields) {
        fields.set(.action, action.rawValue)
        fields.set(.account, account)
        fields.set(.to, to.rawValue)
    }
}
