import TokendCore
import TokendProviders

/// A fleet account's provider: refreshes go through the fleet (`FleetMember.refresh`), so only
/// the account's elected holder ever presents its refresh token; sign-in and revocation are the
/// provider's own (their sessions reach the fleet through `FleetStore`).
public struct FleetProvider: TokenProvider {
    let inner: any TokenProvider
    let member: FleetMember
    let account: String

    public init(_ inner: any TokenProvider, member: FleetMember, account: String) {
        self.inner = inner
        self.member = member
        self.account = account
    }

    public var kind: ProviderKind { inner.kind }

    public func refresh(refreshToken: String) async -> RefreshOutcome {
        await member.refresh(account, presented: refreshToken, with: inner)
    }

    /// A narrowed grant may rotate the refresh token like a refresh, outside the election: not
    /// offered for a fleet account in this version.
    public func refresh(refreshToken: String, narrowedTo scope: TokenScope) async -> RefreshOutcome {
        .misconfigured(RefreshFailure(code: "fleet_unsupported", message: "tokens narrowed to a scope or an audience are not minted for a fleet account in this version; ask for the account's own token"))
    }

    public func login(_ request: LoginRequest) -> AsyncThrowingStream<LoginStep, any Error> {
        inner.login(request)
    }

    public func revoke(refreshToken: String) async -> RevocationOutcome {
        await inner.revoke(refreshToken: refreshToken)
    }
}
