import Synchronization
import TokendCore
import TokendProtocol
import TokendSystem

// A second factor (TOTP) for Firebase / Identity Platform users (issue 33, item 5): the sign-in
// that stopped at `mfaPendingCredential` finished with a code at `v2/accounts/mfaSignIn:finalize`,
// and enrollment and withdrawal at `v2/accounts/mfaEnrollment:*`. Shapes follow firebase-js-sdk
// `packages/auth/src/api/account_management/mfa.ts`, `api/authentication/mfa.ts` and
// `mfa/assertions/totp.ts`; SMS factors need reCAPTCHA, which a command-line client cannot give.

/// What continues a sign-in that Firebase answered with `mfaPendingCredential`.
struct PendingSecondFactor: Sendable, Equatable {
    var credential: String
    var factors: [SecondFactor]
    /// How the first factor signed in (`password`, `google.com`), for events.
    var provider: String
}

/// The daemon's side of the two-step flows: the pending credential or enrollment session behind
/// a random handle, so that the secret never reaches the client. A handle is taken once (a
/// wrong code spends it: one handle is one guess at a code), lives 5
/// minutes (the pending credential's and the enrollment session's life at Firebase), and an
/// account holds at most 8: a client cannot grow the daemon's memory by asking again and again.
final class SecondFactorHandles: Sendable {
    enum Entry: Sendable, Equatable {
        case signIn(PendingSecondFactor, enrollmentID: String)
        /// `totpSessionInfo.sessionInfo` of `mfaEnrollment:start`.
        case enrollment(sessionInfo: String)
    }

    static let lifetime: Double = 300
    static let limit = 8

    private struct Held: Sendable {
        var handle: String
        var entry: Entry
        var expiresAt: Date
    }

    private let held = Mutex<[Held]>([])
    private let clock: any WallClock

    init(clock: any WallClock = SystemWallClock()) {
        self.clock = clock
    }

    /// Keeps `entry` and returns its handle; the oldest goes when the account holds too many.
    func put(_ entry: Entry) -> String {
        let handle = OIDCProvider.randomToken()
        let now = clock.now()
        held.withLock { held in
            held.removeAll { $0.expiresAt <= now }
            if held.count >= Self.limit { held.removeFirst(held.count - Self.limit + 1) }
            held.append(Held(handle: handle, entry: entry, expiresAt: now.addingTimeInterval(Self.lifetime)))
        }
        return handle
    }

    /// The entry behind `handle`, removed; nil when unknown, spent or expired.
    func take(_ handle: String) -> Entry? {
        let now = clock.now()
        return held.withLock { held in
            guard let index = held.firstIndex(where: { $0.handle == handle }) else { return nil }
            let found = held.remove(at: index)
            return found.expiresAt > now ? found.entry : nil
        }
    }
}

extension FirebaseProvider {
    /// `mfaInfo` as Identity Toolkit answers it (sign-in and `accounts:lookup`).
    struct MFAEnrollmentInfo: Decodable, Equatable {
        struct Present: Decodable, Equatable {}
        var mfaEnrollmentId: String?
        var displayName: String?
        var phoneInfo: String?
        var totpInfo: Present?
        /// RFC 3339 in production's JSON (a Timestamp).
        var enrolledAt: String?

        var factor: SecondFactor? {
            guard let id = mfaEnrollmentId, !id.isEmpty else { return nil }
            var factor = SecondFactor(id: id, kind: totpInfo != nil ? .totp : phoneInfo != nil ? .phone : .other)
            factor.displayName = displayName
            factor.phone = phoneInfo
            factor.enrolledAt = enrolledAt
            return factor
        }
    }

    /// The sign-in stopped at a second factor: the factor to answer chosen (`request.factor`, or
    /// the only one a terminal can answer, TOTP), its pending credential kept behind a handle,
    /// the `second_factor` step relayed; the failure that ends the first step.
    func challenge(_ pending: PendingSecondFactor, request: LoginRequest, relay: (LoginStep) -> Void) -> LoginFailure {
        let listed = pending.factors.map(\.summary).joined(separator: ", ")
        // An SMS factor beside a TOTP one is common (SMS first, an authenticator app later):
        // only TOTP can be answered here, so `--factor` chooses among TOTP factors alone.
        let usable = pending.factors.filter { $0.kind == .totp }
        let chosen: SecondFactor
        if let wanted = request.factor {
            guard let found = pending.factors.first(where: { $0.id == wanted }) else {
                return LoginFailure(
                    .badRequest, code: "SECOND_FACTOR_UNKNOWN",
                    message: "the user has no second factor \(wanted); choose one of theirs with --factor ID: \(listed)")
            }
            chosen = found
        } else if usable.count == 1, let only = usable.first {
            chosen = only
        } else if usable.isEmpty, let first = pending.factors.first {
            // None can be answered here: the first one's refusal says why and what to do.
            chosen = first
        } else {
            return LoginFailure(
                .badRequest, code: "SECOND_FACTOR_CHOICE",
                message: "the user has \(usable.count) TOTP second factors; choose one with --factor ID: \(usable.map(\.summary).joined(separator: ", "))")
        }
        switch chosen.kind {
        case .phone:
            let instead = usable.isEmpty ? "" : "choose a TOTP factor with --factor ID, "
            return LoginFailure(
                .misconfigured, code: "SECOND_FACTOR_SMS",
                message: "the second factor \(chosen.id) is a text message (SMS), which Firebase sends only after a reCAPTCHA that a command-line client cannot give; \(instead)add a TOTP factor from an app that can answer the SMS (one using the Firebase SDK), or sign in with --custom-token (Firebase asks custom-token sign-ins for no second factor, but they cannot enroll one)")
        case .other:
            return LoginFailure(
                .misconfigured, code: "SECOND_FACTOR_UNSUPPORTED",
                message: "the user's second factor \(chosen.id) is of a kind tokend cannot answer; enroll a TOTP factor or choose one with --factor ID")
        case .totp:
            let handle = secondFactors.put(.signIn(pending, enrollmentID: chosen.id))
            relay(.secondFactor(SecondFactorChallenge(handle: handle, factors: pending.factors, chosen: chosen.id)))
            return LoginFailure(
                .denied, code: "SECOND_FACTOR_REQUIRED",
                message: "the user has a second factor (\(chosen.summary)); finish with its code: login method second_factor with the handle")
        }
    }

    private struct TOTPVerification: Encodable {
        var sessionInfo: String?
        var verificationCode: String
    }

    private struct SignInFinalizeBody: Encodable {
        var mfaPendingCredential: String
        var mfaEnrollmentId: String
        var totpVerificationInfo: TOTPVerification
    }

    /// `login` method `second_factor`: the code for the pending sign-in behind the handle.
    func finishSecondFactorSignIn(_ request: LoginRequest) async -> Result<SignedIn, LoginFailure> {
        guard let handle = request.handle, let code = request.secret else {
            return .failure(LoginFailure(.badRequest, code: "bad_request", message: "a second-factor sign-in needs the handle and the code"))
        }
        guard case .signIn(let pending, let enrollmentID)? = secondFactors.take(handle) else {
            return .failure(LoginFailure(
                .denied, code: "SECOND_FACTOR_EXPIRED",
                message: "this second-factor step is unknown, already used or older than 5 minutes (each takes one code); sign in again"))
        }
        let body = SignInFinalizeBody(
            mfaPendingCredential: pending.credential, mfaEnrollmentId: enrollmentID,
            totpVerificationInfo: TOTPVerification(verificationCode: code))
        return await identityToolkit(.secondFactorSignIn, body, secrets: [pending.credential, code])
            .flatMap { Self.signedIn($0, provider: pending.provider, call: .secondFactorSignIn, secrets: [pending.credential]) }
    }
}

/// TOTP enrollment and withdrawal (`AccountManaging`).
extension FirebaseProvider {
    private struct EnrollStartBody: Encodable {
        struct Empty: Encodable {}
        var idToken: String
        var totpEnrollmentInfo = Empty()
    }

    private struct EnrollStartAnswer: Decodable {
        struct Session: Decodable {
            var sharedSecretKey: String?
            var verificationCodeLength: FlexibleNumber?
            var hashingAlgorithm: String?
            var periodSec: FlexibleNumber?
            var sessionInfo: String?
        }
        var totpSessionInfo: Session?
    }

    private struct EnrollFinalizeBody: Encodable {
        var idToken: String
        var totpVerificationInfo: TOTPVerification
        /// How Firebase lists the factor (the SDK sends the app's; a recorded production answer
        /// refuses a finalize without one, `MISSING_DISPLAY_NAME`).
        var displayName: String
    }

    private struct WithdrawBody: Encodable {
        var idToken: String
        var mfaEnrollmentId: String
    }

    public func startTOTPEnrollment(idToken: String) async -> Result<SecondFactorEnrollment, LoginFailure> {
        await identityToolkit(.secondFactorEnrollStart, EnrollStartBody(idToken: idToken), secrets: [idToken]).flatMap { body in
            guard let session = (try? JSONDecoder().decode(EnrollStartAnswer.self, from: Data(body)))?.totpSessionInfo,
                let secret = session.sharedSecretKey, !secret.isEmpty, let sessionInfo = session.sessionInfo, !sessionInfo.isEmpty
            else {
                return .failure(LoginFailure(.transient, code: "malformed_response", message: "Firebase answered 200 without a TOTP secret; try again"))
            }
            // RFC 6238's defaults when Firebase leaves them out (it sends 6, SHA1, 30).
            let digits = session.verificationCodeLength?.seconds.flatMap { (4...10).contains($0) ? Int(saturating: $0) : nil } ?? 6
            let period = session.periodSec?.seconds.flatMap { (1...3600).contains($0) ? Int(saturating: $0) : nil } ?? 30
            let algorithm = session.hashingAlgorithm.flatMap { $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } ? $0 : nil } ?? "SHA1"
            let claims = FirebaseClaims(token: idToken)
            // The SDK's `generateQrCodeUrl(accountName, issuer)`: tokend names the project and
            // the user's address (its uid when there is none).
            let issuer = JWTClaims(token: idToken)?.audience.first ?? "Firebase"
            let label = claims?.email ?? claims?.uid ?? "user"
            let uri = "otpauth://totp/\(FormEncoding.escaped(issuer)):\(FormEncoding.escaped(label))?secret=\(FormEncoding.escaped(secret))&issuer=\(FormEncoding.escaped(issuer))"
                + "&algorithm=\(algorithm)&digits=\(digits)&period=\(period)"
            let handle = secondFactors.put(.enrollment(sessionInfo: sessionInfo))
            return .success(SecondFactorEnrollment(handle: handle, secret: secret, uri: uri, digits: digits, period: period))
        }
    }

    public func finishTOTPEnrollment(idToken: String, handle: String, code: String, displayName: String) async -> Result<SignedIn, LoginFailure> {
        guard case .enrollment(let sessionInfo)? = secondFactors.take(handle) else {
            return .failure(LoginFailure(
                .badRequest, code: "SECOND_FACTOR_EXPIRED",
                message: "this enrollment is unknown, already answered or older than 5 minutes (each takes one code); start it again: tokenctl account mfa enroll ACCOUNT --totp"))
        }
        let body = EnrollFinalizeBody(
            idToken: idToken, totpVerificationInfo: TOTPVerification(sessionInfo: sessionInfo, verificationCode: code), displayName: displayName)
        return await identityToolkit(.secondFactorEnrollFinish, body, secrets: [idToken, sessionInfo, code])
            .flatMap { Self.signedIn($0, provider: Self.firstFactor(of: idToken), call: .secondFactorEnrollFinish) }
    }

    /// A 200 without tokens means the factor is gone and Firebase ended the session (withdrawing
    /// the most recently enrolled factor signs the user out: firebase-js-sdk `mfa_user.ts`
    /// `unenroll`, PR #6973; firebase-ios-sdk#14663).
    public func withdrawSecondFactor(idToken: String, enrollmentID: String) async -> Result<SignedIn, LoginFailure> {
        await identityToolkit(.secondFactorWithdraw, WithdrawBody(idToken: idToken, mfaEnrollmentId: enrollmentID), secrets: [idToken]).flatMap { body in
            if let answer = try? JSONDecoder().decode(SignInAnswer.self, from: Data(body)),
                answer.idToken == nil, answer.refreshToken == nil, answer.errorMessage == nil, answer.mfaPendingCredential == nil {
                var ended = LoginFailure(
                    .denied, code: "SECOND_FACTOR_WITHDRAWN_SIGNED_OUT",
                    message: "the factor was withdrawn and Firebase ended the session; sign in again: tokenctl login ACCOUNT")
                ended.sessionEnded = true
                return .failure(ended)
            }
            return Self.signedIn(body, provider: Self.firstFactor(of: idToken), call: .secondFactorWithdraw)
        }
    }

    /// How the user of `idToken` signed in: the session a second-factor change issues keeps it.
    private static func firstFactor(of idToken: String) -> String {
        FirebaseClaims(token: idToken)?.signInProvider ?? "password"
    }
}
