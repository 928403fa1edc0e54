import Synchronization
import TokendCore
import TokendProtocol

/// A consumer socket's policy as its connections apply it (issue 49 item 1; README,
/// "Consumers"): what the consumer may send, and which accounts exist for it. One per consumer,
/// shared by its listener and every connection on it, so a reload's new policy applies to
/// connections already open from their next line on. The main socket has none, and pays nothing.
///
/// The order of the checks is what keeps other accounts invisible: an op the policy refuses is
/// refused whatever account it names; then an account outside the policy gets exactly the reply
/// an unknown name gets; only then are the kind, audience, scopes and `min_valid` of one of its
/// own accounts checked (`forbidden`).
public final class ConsumerGate: Sendable {
    struct Snapshot: Sendable {
        var policy: ConsumerPolicy
        /// The kind each of its accounts serves when a request names none.
        var defaultKinds: [String: TokenKind]
    }

    public let name: String
    private let current: Mutex<Snapshot>

    public init(policy: ConsumerPolicy, defaultKinds: [String: TokenKind]) {
        name = policy.name
        current = Mutex(Snapshot(policy: policy, defaultKinds: defaultKinds))
    }

    /// A reload's policy, for every connection from its next line on.
    public func update(policy: ConsumerPolicy, defaultKinds: [String: TokenKind]) {
        current.withLock { $0 = Snapshot(policy: policy, defaultKinds: defaultKinds) }
    }

    public var policy: ConsumerPolicy { current.withLock { $0.policy } }

    public enum Verdict: Sendable, Equatable {
        case allowed
        /// Answered as a failure at once: `forbidden`, or the unknown-account reply for an
        /// account outside the policy.
        case refused(TokendError)
    }

    /// Whether this consumer may send `command`, and if not, the one reply it gets.
    public func check(_ command: Command) -> Verdict {
        let snapshot = current.withLock { $0 }
        let policy = snapshot.policy
        guard policy.allows(command.op) else {
            return .refused(TokendError(.forbidden, "consumer \"\(name)\" may not use \(command.op.rawValue); its policy allows: \(Self.list(policy.operationNames)) (operations in [consumer.\(name)])"))
        }
        if let account = command.account, !policy.accounts.contains(account) {
            return .refused(Self.unknown(account))
        }
        guard case .token(let args) = command else { return .allowed }
        if let kinds = policy.kinds {
            let kind = args.kind ?? snapshot.defaultKinds[args.account] ?? .id
            guard kinds.contains(kind) else {
                return .refused(TokendError(.forbidden, "consumer \"\(name)\" may ask only for \(Self.list(kinds.map(\.rawValue).sorted())) tokens, not \(kind.rawValue) (kinds in [consumer.\(name)]); ask with --kind \(kinds.map(\.rawValue).sorted()[0])"))
            }
        }
        if let audiences = policy.audiences {
            guard let audience = args.audience, !audience.isEmpty, audiences.contains(audience) else {
                return .refused(TokendError(.forbidden, "consumer \"\(name)\" may ask only for a token with one of these audiences: \(Self.list(audiences)) (audiences in [consumer.\(name)]); ask with --audience"))
            }
        }
        if let scopes = policy.scopes {
            let asked = (args.scope ?? "").split(separator: " ").map(String.init)
            guard !asked.isEmpty, asked.allSatisfy(scopes.contains) else {
                return .refused(TokendError(.forbidden, "consumer \"\(name)\" may ask only for tokens narrowed to some of these scopes: \(Self.list(scopes)) (scopes in [consumer.\(name)]); ask with --scope"))
            }
        }
        if let ceiling = policy.maxMinValid, args.minValid > ceiling {
            return .refused(TokendError(.forbidden, "consumer \"\(name)\" may ask for at most \(Int(ceiling)) s of validity (max_min_valid in [consumer.\(name)]); ask with --min-valid \(Int(ceiling)) or less"))  // conversion: 60...86,400, the config's bound
        }
        return .allowed
    }

    /// Whether `account` exists for this consumer.
    public func sees(_ account: String) -> Bool {
        current.withLock { $0.policy.accounts.contains(account) }
    }

    /// `response` with only this consumer's accounts (`status`/`list` of every account, `watch`'s
    /// first line).
    func visible(_ response: Response) -> Response {
        var response = response
        let accounts = current.withLock { $0.policy.accounts }
        response.accounts = response.accounts?.filter { accounts.contains($0.name) }
        response.watching = response.watching?.filter { accounts.contains($0) }
        return response
    }

    /// The reply an unknown name gets on the main socket, word for word: the engine's own sentence.
    static func unknown(_ account: String) -> TokendError {
        Advice.missingAccount(account, configurationProblem: nil)
    }

    static func list(_ names: [String]) -> String {
        names.isEmpty ? "nothing" : names.joined(separator: ", ")
    }
}
