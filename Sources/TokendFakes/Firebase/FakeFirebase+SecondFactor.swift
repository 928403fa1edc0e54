import Crypto
import Foundation
import TokendCore
import TokendProviders

// Second factors (issue 33, item 5): the Identity Toolkit API v2's `mfaSignIn:finalize` and
// `mfaEnrollment:start|finalize|withdraw` for TOTP, and the `mfaPendingCredential` answer of a
// sign-in. The emulator has no TOTP (firebase-tools' auth emulator enrolls phone factors only),
// so every shape here follows firebase-js-sdk (`packages/auth/src/api/account_management/mfa.ts`,
// `api/authentication/mfa.ts`, `mfa/assertions/totp.ts`); the rows of the reference table in
// FakeFirebase+IdentityToolkit.swift say which behaviour comes from where.

/// RFC 6238 TOTP with HMAC-SHA1, what Firebase's `totpSessionInfo` announces (`SHA1`, 30 s,
/// 6 digits); public so that tests compute the code an authenticator app would show.
public enum TOTP {
    public static let period: Double = 30
    public static let digits = 6
    /// RFC 4226 §4: a shared secret of at least 128 bits, 160 recommended.
    static let secretLength = 20

    static func newSecret() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<secretLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// The code for `secret` at `time` (RFC 6238 §4: T = floor(unix time / period); RFC 4226
    /// §5.3: dynamic truncation).
    public static func code(secret: [UInt8], at time: Date, digits: Int = digits, period: Double = period) -> String {
        code(secret: secret, step: UInt64(saturating: (time.timeIntervalSince1970 / period).rounded(.down)), digits: digits)
    }

    /// The code of a base32 secret as `otpauth://` carries it; nil when it is not base32.
    public static func code(base32Secret: String, at time: Date) -> String? {
        unbase32(base32Secret).map { code(secret: $0, at: time) }
    }

    static func code(secret: [UInt8], step: UInt64, digits: Int) -> String {
        let counter = (0..<8).reversed().map { UInt8(truncatingIfNeeded: step >> ($0 * 8)) }
        let mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: counter, using: SymmetricKey(data: secret)))
        let offset = Int(mac[mac.count - 1] & 0x0F)  // conversion: a nibble
        let binary = (UInt32(mac[offset] & 0x7F) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8) | UInt32(mac[offset + 3])  // conversion: widening UInt8
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let text = String(binary % modulus)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// Whether `code` is the one of `time`'s step or of `adjacent` steps either side (RFC 6238
    /// §5.2: allow for drift and delay; Identity Platform's `adjacentIntervals`, 0 to 10).
    static func accepts(_ code: String, secret: [UInt8], at time: Date, adjacent: Int) -> Bool {
        let step = Int64(saturating: (time.timeIntervalSince1970 / period).rounded(.down))
        let drift = Int64(min(max(adjacent, 0), 10))  // conversion: clamped to 0...10
        return (step - drift...step + drift).contains { $0 >= 0 && Self.code(secret: secret, step: UInt64($0), digits: digits) == code }  // conversion: checked non-negative
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// RFC 4648 base32 without padding, as `otpauth://` secrets are written.
    public static func base32(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)  // conversion: widening UInt8; `<<` drops the bits already written
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])  // conversion: 5 bits
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }  // conversion: 5 bits
        return String(decoding: out, as: UTF8.self)
    }

    static func unbase32(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for character in text.uppercased().utf8 where character != UInt8(ascii: "=") {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = (buffer << 5) | UInt32(value)  // conversion: an index below 32
            bits += 5
            if bits >= 8 {
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8)))  // conversion: bits is 8 to 12 here
                bits -= 8
            }
        }
        return out
    }
}

extension FakeFirebase.Backend {
    /// The enrollment session's life (production: 5 minutes; the pending credential's is
    /// `Options.pendingCredentialLifetime`).
    static let secondFactorLifetime: Double = 300

    /// One `mfaInfo` entry (js-sdk `MfaEnrollment`; `enrolledAt` a Timestamp in RFC 3339).
    struct MFAInfo: Encodable {
        struct Empty: Encodable {}
        var mfaEnrollmentId: String
        var displayName: String?
        var enrolledAt: String
        var phoneInfo: String?
        var totpInfo: Empty?

        init(_ factor: Ledger.Factor) {
            mfaEnrollmentId = factor.id
            displayName = factor.displayName
            enrolledAt = factor.enrolledAt.formatted(.iso8601)
            switch factor.kind {
            case .totp: totpInfo = Empty()
            case .phone(let masked): phoneInfo = masked
            }
        }
    }

    /// A first factor of a user with second factors: no tokens, only what continues it.
    private struct Pending: Encodable {
        var kind: String
        var localId: String
        var email: String?
        var mfaPendingCredential: String
        var mfaInfo: [MFAInfo]
    }

    /// The `mfaPendingCredential` answer for `user`'s sign-in with `provider`, nil when the user
    /// has no second factor.
    func secondFactorPending(_ user: Ledger.User, provider: String, kind: String, now: Date, state: inout State) -> ToolkitAnswer? {
        guard !user.factors.isEmpty else { return nil }
        let credential = "mfa-pending-" + OIDCProvider.randomToken()
        state.ledger.pendingSignIns[credential] = Ledger.PendingSignIn(
            uid: user.uid, provider: provider, tenant: state.ledger.tenant, expiresAt: now.addingTimeInterval(state.options.pendingCredentialLifetime))
        let answer = Pending(kind: kind, localId: user.uid, email: user.email, mfaPendingCredential: credential, mfaInfo: user.factors.map(MFAInfo.init))
        return ToolkitAnswer(reply: .json(200, answer), uid: user.uid)
    }

    private struct Verification: Decodable {
        var sessionInfo: String?
        var verificationCode: String?
    }

    private struct SignInFinalize: Decodable {
        var mfaPendingCredential: String?
        var mfaEnrollmentId: String?
        var totpVerificationInfo: Verification?
    }

    /// js-sdk `FinalizeMfaResponse`.
    private struct Finalized: Encodable {
        var idToken: String
        var refreshToken: String
    }

    private static let invalidCode = FirebaseRejection.firebase("INVALID_CODE : Invalid TOTP verification code.")
    /// A request without a field the call needs, as a recording of production answers it (a
    /// plain `INVALID_ARGUMENT`, no Identity Toolkit code).
    private static let invalidArgument = FirebaseRejection.firebase("Request contains an invalid argument.")

    private func acceptsCode(_ code: String?, secret: [UInt8], now: Date, state: State) -> Bool {
        guard let code else { return false }
        return TOTP.accepts(code, secret: secret, at: now, adjacent: state.options.totpAdjacentIntervals)
    }

    private func finalized(_ minted: Ledger.Minted) -> ToolkitAnswer {
        ToolkitAnswer(reply: .json(200, Finalized(idToken: minted.idToken, refreshToken: minted.refreshToken)), uid: minted.uid, minted: minted)
    }

    /// `v2/accounts/mfaSignIn:finalize` with a TOTP code.
    func finalizeSecondFactorSignIn(_ body: [UInt8], now: Date, state: inout State) -> Result<ToolkitAnswer, FirebaseRejection> {
        guard let request = try? FakeJSON.decode(SignInFinalize.self, from: body) else { return .failure(.invalidJSONPayload) }
        guard let credential = request.mfaPendingCredential, !credential.isEmpty else {
            return .failure(.firebase("MISSING_CREDENTIAL : Please set MFA Pending Credential."))
        }
        guard let pending = state.ledger.pendingSignIns[credential], let user = state.ledger.users[pending.uid] else {
            return .failure(.firebase("INVALID_PENDING_TOKEN"))
        }
        guard pending.tenant == state.ledger.tenant else { return .failure(.firebase("INVALID_PROJECT_ID : Project ID does not match MFA pending credential.")) }
        guard pending.expiresAt > now else { return .failure(.firebase("TOTP_CHALLENGE_TIMEOUT : TOTP challenge timeout, provide first factor again.")) }
        guard let factor = user.factors.first(where: { $0.id == request.mfaEnrollmentId }) else { return .failure(.firebase("MFA_ENROLLMENT_NOT_FOUND")) }
        guard case .totp(let secret) = factor.kind, request.totpVerificationInfo != nil else { return .failure(Self.invalidArgument) }
        guard acceptsCode(request.totpVerificationInfo?.verificationCode, secret: secret, now: now, state: state) else {
            return .failure(Self.invalidCode)
        }
        state.ledger.pendingSignIns[credential] = nil
        if user.disabled { return .failure(.firebase("USER_DISABLED")) }
        let minted = state.ledger.signIn(uid: user.uid, provider: pending.provider, secondFactor: ("totp", factor.id), now: now, options: state.options)
        return .success(finalized(minted))
    }

    private struct EnrollStart: Decodable {
        struct Present: Decodable {}
        var idToken: String?
        var totpEnrollmentInfo: Present?
    }

    private struct SessionInfo: Encodable {
        var sharedSecretKey: String
        var verificationCodeLength: Int
        var hashingAlgorithm = "SHA1"
        var periodSec: Int
        var sessionInfo: String
        var finalizeEnrollmentTime: String
    }

    private struct EnrollStarted: Encodable {
        var totpSessionInfo: SessionInfo
    }

    /// `v2/accounts/mfaEnrollment:start` with `totpEnrollmentInfo`.
    func startEnrollment(_ body: [UInt8], now: Date, state: inout State) -> Result<ToolkitAnswer, FirebaseRejection> {
        guard let request = try? FakeJSON.decode(EnrollStart.self, from: body) else { return .failure(.invalidJSONPayload) }
        let found = self.user(of: request.idToken, now: now, state: state)
        guard case .success(let (user, claims)) = found else { return .failure(found.rejection) }
        if !state.options.totpEnabled { return .failure(.firebase("OPERATION_NOT_ALLOWED : TOTP based MFA not enabled.")) }
        // emulator `MFA_INELIGIBLE_PROVIDER`, read from the session's sign-in method.
        if let provider = Self.session(of: request.idToken)?.sign_in_provider, Self.ineligibleForSecondFactors.contains(provider) {
            return .failure(.firebase("UNSUPPORTED_FIRST_FACTOR : MFA is not available for the given first factor."))
        }
        guard request.totpEnrollmentInfo != nil else { return .failure(Self.invalidArgument) }
        guard user.emailVerified else { return .failure(.firebase("UNVERIFIED_EMAIL : Need to verify email first before enrolling second factors.")) }
        // A recording of production: a second TOTP factor, or a sixth factor, is refused.
        let hasTOTP = user.factors.contains { if case .totp = $0.kind { true } else { false } }
        if hasTOTP || user.factors.count >= Self.maximumFactors { return .failure(.firebase("SECOND_FACTOR_LIMIT_EXCEEDED")) }
        if let window = state.options.enrollmentRecentSignInWindow, let authTime = claims.auth_time, now.timeIntervalSince1970 - authTime > window {
            return .failure(.firebase("CREDENTIAL_TOO_OLD_LOGIN_AGAIN"))
        }
        let secret = TOTP.newSecret()
        let sessionInfo = "totp-session-" + OIDCProvider.randomToken()
        let expiresAt = now.addingTimeInterval(Self.secondFactorLifetime)
        state.ledger.enrollmentSessions[sessionInfo] = Ledger.EnrollmentSession(uid: user.uid, secret: secret, expiresAt: expiresAt)
        let answer = EnrollStarted(totpSessionInfo: SessionInfo(
            sharedSecretKey: TOTP.base32(secret), verificationCodeLength: TOTP.digits, periodSec: Int(TOTP.period),  // conversion: the constant 30
            sessionInfo: sessionInfo, finalizeEnrollmentTime: expiresAt.formatted(.iso8601)))
        return .success(ToolkitAnswer(reply: .json(200, answer), uid: user.uid))
    }

    /// Factors a user may have: a recording of production refuses the sixth (t-k/fireemu).
    static let maximumFactors = 5

    /// Sign-in methods whose sessions cannot enroll a second factor (emulator
    /// `MFA_INELIGIBLE_PROVIDER`: anonymous, phone, custom token, Game Center).
    static let ineligibleForSecondFactors: Set<String> = ["anonymous", "phone", "custom", "gc.apple.com"]

    private struct EnrollFinalize: Decodable {
        var idToken: String?
        var totpVerificationInfo: Verification?
        var displayName: String?
    }

    /// `v2/accounts/mfaEnrollment:finalize` with `totpVerificationInfo`.
    func finalizeEnrollment(_ body: [UInt8], now: Date, state: inout State) -> Result<ToolkitAnswer, FirebaseRejection> {
        guard let request = try? FakeJSON.decode(EnrollFinalize.self, from: body) else { return .failure(.invalidJSONPayload) }
        let found = self.user(of: request.idToken, now: now, state: state)
        guard case .success(let (user, _)) = found else { return .failure(found.rejection) }
        guard let sessionInfo = request.totpVerificationInfo?.sessionInfo, let session = state.ledger.enrollmentSessions[sessionInfo],
            session.uid == user.uid, session.expiresAt > now
        else { return .failure(.firebase("INVALID_SESSION_INFO")) }
        guard let displayName = request.displayName, !displayName.isEmpty else { return .failure(.firebase("MISSING_DISPLAY_NAME")) }
        guard acceptsCode(request.totpVerificationInfo?.verificationCode, secret: session.secret, now: now, state: state) else {
            return .failure(Self.invalidCode)
        }
        state.ledger.enrollmentSessions[sessionInfo] = nil
        let factor = Ledger.Factor(id: "totp-" + OIDCProvider.randomToken(), displayName: displayName, kind: .totp(secret: session.secret), enrolledAt: now)
        _ = state.ledger.change(user.uid) { $0.factors.append(factor) }
        // Older sessions stay valid (emulator `mfaEnrollmentFinalize` sets no `validSince`).
        return .success(renewed(user.uid, idToken: request.idToken ?? "", secondFactor: ("totp", factor.id), revoking: false, now: now, state: &state))
    }

    private struct Withdraw: Decodable {
        var idToken: String?
        var mfaEnrollmentId: String?
    }

    /// `v2/accounts/mfaEnrollment:withdraw`.
    func withdrawEnrollment(_ body: [UInt8], now: Date, state: inout State) -> Result<ToolkitAnswer, FirebaseRejection> {
        guard let request = try? FakeJSON.decode(Withdraw.self, from: body) else { return .failure(.invalidJSONPayload) }
        let found = self.user(of: request.idToken, now: now, state: state)
        guard case .success(let (user, _)) = found else { return .failure(found.rejection) }
        guard user.factors.contains(where: { $0.id == request.mfaEnrollmentId }) else { return .failure(.firebase("MFA_ENROLLMENT_NOT_FOUND")) }
        let newest = user.factors.last?.id == request.mfaEnrollmentId
        _ = state.ledger.change(user.uid) { changed in changed.factors.removeAll { $0.id == request.mfaEnrollmentId } }
        guard !newest else {
            // The most recently enrolled factor withdrawn: Firebase ends the session and answers
            // no tokens (js-sdk `mfa_user.ts` `unenroll`; PR #6973; firebase-ios-sdk#14663).
            _ = state.ledger.revokeTokens(of: user.uid, now: now)
            return .success(ToolkitAnswer(reply: .json(200, WithdrawnSignedOut()), uid: user.uid))
        }
        // The new session keeps the asking session's second factor, that one still enrolled
        // (a recording of production).
        var kept: (kind: String, id: String)?
        if let asked = Self.session(of: request.idToken), let kind = asked.sign_in_second_factor, let id = asked.second_factor_identifier,
            id != request.mfaEnrollmentId {
            kept = (kind, id)
        }
        return .success(renewed(user.uid, idToken: request.idToken ?? "", secondFactor: kept, revoking: true, now: now, state: &state))
    }

    struct SessionClaims: Decodable {
        var sign_in_provider: String?
        var sign_in_second_factor: String?
        var second_factor_identifier: String?
    }

    /// The ID token's `firebase` claim: how the session signed in, with which second factor.
    static func session(of idToken: String?) -> SessionClaims? {
        struct Claims: Decodable { var firebase: SessionClaims? }
        return idToken.flatMap { JWTClaims.decode(Claims.self, from: $0)?.firebase }
    }

    /// `WithdrawMfaResponse` with neither of its (optional) tokens.
    private struct WithdrawnSignedOut: Encodable {}

    /// A changed user's new session, the same sign-in method; `revoking`: its older tokens void
    /// (a withdrawal, as a recording of production has it; not an enrollment).
    private func renewed(_ uid: String, idToken: String, secondFactor: (kind: String, id: String)?, revoking: Bool, now: Date, state: inout State) -> ToolkitAnswer {
        if revoking { _ = state.ledger.revokeTokens(of: uid, now: now) }
        let provider = Self.session(of: idToken)?.sign_in_provider ?? "password"
        return finalized(state.ledger.signIn(uid: uid, provider: provider, secondFactor: secondFactor, now: now, options: state.options))
    }
}
