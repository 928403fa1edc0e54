import Foundation
import Logging
import TokendCore
import TokendProtocol
import TokendProviders

/// A second factor (TOTP) for the account's Firebase user (`account` `mfa_enroll`,
/// `mfa_remove`). Firebase answers both with a new session of the same user, which replaces the
/// held one as a user action (`replaceSession`), announced as `user_changed`.
extension AccountCommands {
    public func startSecondFactorEnrollment(account name: String, timeout: Double) async -> Result<SecondFactorEnrollment, TokendError> {
        await managementCall(name, timeout: timeout, done: "second-factor enrollment started") { manager, idToken in
            await manager.startTOTPEnrollment(idToken: idToken)
        }
    }

    public func finishSecondFactorEnrollment(
        account name: String, handle: String, code: String, displayName: String?, timeout: Double
    ) async -> Result<LoginSummary, TokendError> {
        // Firebase lists the factor by this name (one recorded answer refuses a finalize without
        // one, `MISSING_DISPLAY_NAME`): the user's, else what enrolled it and where.
        let named = displayName ?? SecondFactor.defaultDisplayName(host: ProcessInfo.processInfo.hostName)
        return await changeSecondFactors(name, timeout: timeout, reason: "second_factor_enrolled") { manager, idToken in
            await manager.finishTOTPEnrollment(idToken: idToken, handle: handle, code: code, displayName: named)
        }
    }

    public func removeSecondFactor(account name: String, factor: String, timeout: Double) async -> Result<LoginSummary, TokendError> {
        await changeSecondFactors(name, timeout: timeout, reason: "second_factor_removed") { manager, idToken in
            await manager.withdrawSecondFactor(idToken: idToken, enrollmentID: factor)
        }
    }

    /// A change of the user's factors, made with a current ID token; the session Firebase issues
    /// for it replaces the held one.
    private func changeSecondFactors(
        _ name: String, timeout: Double, reason: String, _ change: @Sendable (any AccountManaging, String) async -> Result<SignedIn, LoginFailure>
    ) async -> Result<LoginSummary, TokendError> {
        let (manager, idToken): (any AccountManaging, String)
        switch await managedSession(name, timeout: timeout) {
        case .failure(let error): return .failure(error)
        case .success(let session): (manager, idToken) = session
        }
        return await replaceSession(name, reason: reason, next: "tokenctl login \(name)") { await change(manager, idToken) }
    }
}
