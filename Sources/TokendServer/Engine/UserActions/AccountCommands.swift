import Logging
import TokendCore
import TokendProtocol
import TokendProviders

/// The engine as the responders see it (`EngineServices`). Serving and status go straight to the
/// actor; the user's commands (login, import, logout, Firebase account management) run here,
/// outside it, as a few atomic steps on the account (AccountEngine+UserActions.swift) around the
/// provider's calls — so the actor holds the account's state and nothing of a command's flow.
public struct AccountCommands: Sendable {
    let engine: AccountEngine

    public var clock: any WallClock { engine.clock }
    var narrator: AccountNarrator { engine.narrator }
    var logger: Logger { engine.logger }
}

/// A user action just issued (`AccountEngine.issueUserAction`): its ticket, the provider it
/// calls and the session held when it was issued.
struct IssuedUserAction: Sendable {
    var ticket: AccountTicket
    var provider: any TokenProvider
    var held: TokenSet?
}

/// How a session the user gave fared (`AccountEngine.commitSession`).
enum SessionCommit: Sendable {
    /// In place; `stored`: the keyring took it; `backoff`: the provider's rate limit it waits out.
    case installed(previous: TokenSet?, tokens: TokenSet, stored: Bool, backoff: Date?)
    /// A reload removed the account or pointed it elsewhere since the action was issued.
    case configurationChanged
    /// A user action issued later has committed: the user's newest choice wins.
    case overtaken
    /// No account by that name.
    case missing
}

extension AccountEngine {
    public nonisolated var commands: AccountCommands { AccountCommands(engine: self) }
}

extension AccountCommands: EngineServices {
    public func heldToken(account: String, kind: TokenKind?, minValid: Double) -> TokenGrant? {
        engine.heldTokens.grant(account: account, kind: kind, minValid: minValid, at: clock.now())
    }

    public func statuses(account: String?) async -> Result<[AccountReport], TokendError> {
        await engine.statuses(account: account)
    }

    public var accountNames: [String] {
        get async { await engine.accountNames }
    }

    /// A user's `login`: announced as a sign-in (an upgrade announces a changed user instead).
    public func login(account: String, request: LoginRequest, progress: @escaping @Sendable (LoginStep) -> Void) async -> Result<LoginSummary, TokendError> {
        await login(account: account, request, progress: progress)
    }
}
