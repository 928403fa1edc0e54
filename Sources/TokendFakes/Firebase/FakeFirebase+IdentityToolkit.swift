import Foundation
import TokendCore

/// Sign-in through the Identity Toolkit API v1: enough of it for demos and the daemon's login
/// features. Bodies are JSON; answers use production's camelCase names and string `expiresIn`.
///
/// The reference table: every condition the fake answers, in the order it checks them, and
/// where it comes from. "emulator" is firebase-tools `src/emulator/auth/operations.ts`
/// (commit 01f8c7b5, the function named); "js-sdk" is firebase-js-sdk `packages/auth`; "prod"
/// is production behaviour the emulator lacks, with its source. Every error is HTTP 400 with
/// Google's envelope unless the row says otherwise.
///
/// | endpoint | condition | answer | source |
/// | --- | --- | --- | --- |
/// | any | key in `invalidAPIKeys` / no key | 400 `API key not valid` (reason `API_KEY_INVALID`) / 403 | prod: docs/architecture.md "Firebase: refreshing" |
/// | any (and Secure Token `token`) | key in `restrictedAPIKeys` | 403 `PERMISSION_DENIED`, `errors[0].reason` `forbidden`, `ErrorInfo.reason` `API_KEY_HTTP_REFERRER_BLOCKED` ("Requests from referer <empty> are blocked.") / `API_KEY_IP_ADDRESS_BLOCKED` ("The provided API key has an IP address restriction. …") / `API_KEY_SERVICE_BLOCKED` ("Requests to this API identitytoolkit method google.firebase.auth.v1.IdentityIdaasAuthenticationService.SignInWithIdp are blocked."; for methods whose RPC no answer records, "Requests to this API SERVICE are blocked.", a decision: the reason, not the text, is what clients read) / `API_KEY_ANDROID_APP_BLOCKED` ("Requests from this Android client application <empty> are blocked.") / `API_KEY_IOS_APP_BLOCKED` ("Requests from this ios client application <empty> are blocked.") / `SERVICE_DISABLED` ("Identity Toolkit API has not been used in project N before or it is disabled. Enable it by visiting … then retry. …"), metadata `service` and `consumer`. No `LocalizedMessage` or `Help` detail (decision: no client reads them) | prod only (Google's API front end, not the emulator): djerik/dagen-ha#14 quotes the whole referrer answer to `signInWithPassword` (the SDK now sends its page's referrer, js-sdk `api/index.ts` `referrerPolicy`; tokend sends none, so production answers `<empty>`); firebase/quickstart-android#1008 (IP); firebase-ios-sdk#1941 (API, with the RPC); firebase-android-sdk#5915, flutterfire#17591 (Android); GoogleCloudPlatform/ios-docs-samples#11 (iOS); hashicorp/terraform-provider-google#16520 (`SERVICE_DISABLED` for identitytoolkit, the text; "Token Service API" is securetoken's title in the console); reasons: googleapis `google/api/error_reason.proto`. `BILLING_DISABLED`, `CONSUMER_SUSPENDED`, `CONSUMER_INVALID` are not played: no recorded Firebase answer gives their text (tokend's classifier knows them from the proto) |
/// | any | `tenantId` in the body | the call works among that tenant's users only: sign-ins and sign-ups find and make users there, their ID tokens carry `firebase.tenant`, refreshes keep it. Any tenant id is taken, with the project's settings | emulator `TenantProjectState` (one per `tenantId`); js-sdk `_addTidIfNecessary`. Decision: like the emulator, which auto-creates a tenant with everything enabled and says production differs (its tenants start with providers off, `state.ts`); tests set what a tenant needs |
/// | any with an `idToken` | no `tenantId` in the body | the tenant is the token's `firebase.tenant` | emulator `server.ts` (`targetTenantId = targetTenantId \|\| decoded.payload.firebase.tenant`, 01f8c7b5 and HEAD L545–548) |
/// | lookup, delete, signUp/signInWithIdp + idToken | a tenant's ID token with another `tenantId` / a project user's token with a `tenantId` | `TENANT_ID_MISMATCH` / `USER_NOT_FOUND` | emulator `parseIdToken` |
/// | any | `productionRefusals[method]` | that message and status (quota, App Check 401) | prod: js-sdk error map (`QUOTA_EXCEEDED`, `RESET_PASSWORD_EXCEED_LIMIT`); App Check: apps' reports |
/// | any other method (`update`, …) | tokend never calls it (it links with `signUp`, docs/architecture.md) | 404, Google's envelope: the fake fakes only what tokend calls | prod: an unknown method of a Google API is 404 |
/// | signUp | nothing given, anonymous off or `adminOnlySignUp` | `ADMIN_ONLY_OPERATION` | emulator `signUp` (`enableAnonymousUser`) |
/// | signUp | `recaptchaEnforced` has `password` | `MISSING_RECAPTCHA_TOKEN` | prod: js-sdk `recaptcha_enterprise_verifier.ts` retries on it |
/// | signUp | no email / no password | `MISSING_EMAIL` / `MISSING_PASSWORD` | emulator `signUp` |
/// | signUp | password provider off | `OPERATION_NOT_ALLOWED` | emulator `signUp` (`allowPasswordSignup`) |
/// | signUp | no `idToken` and `adminOnlySignUp` | `ADMIN_ONLY_OPERATION` | prod: js-sdk map "User actions (sign-up or deletion) disabled" |
/// | signUp | address malformed / taken by any user | `INVALID_EMAIL` / `EMAIL_EXISTS` | emulator `signUp` |
/// | signUp | password < 6 / misses `passwordPolicy` | `WEAK_PASSWORD : …` / `PASSWORD_DOES_NOT_MEET_REQUIREMENTS : Missing password requirements: […]` | emulator `signUp` / prod: apps' logs, js-sdk map |
/// | signUp + idToken | ID token unreadable, user gone, issued before `validSince`, disabled | `INVALID_ID_TOKEN`, `USER_NOT_FOUND`, `TOKEN_EXPIRED`, `USER_DISABLED` | emulator `parseIdToken`, read after the fields |
/// | signUp + idToken | linked | same `localId`, new tokens (`password`); older ID and refresh tokens void | emulator `signUp` (`validSince = now`); prod revokes refresh tokens (Google's docs) |
/// | signInWithPassword | reCAPTCHA enforced / password provider off | `MISSING_RECAPTCHA_TOKEN` / `PASSWORD_LOGIN_DISABLED` | prod / emulator `signInWithPassword` |
/// | signInWithPassword | email missing, malformed; password missing | `MISSING_EMAIL`, `INVALID_EMAIL`, `MISSING_PASSWORD` | emulator `signInWithPassword` |
/// | signInWithPassword | `maximumFailedSignIns` reached | `TOO_MANY_ATTEMPTS_TRY_LATER : …` | prod: docs/architecture.md "Firebase: refreshing", js-sdk map |
/// | signInWithPassword | unknown email / disabled / wrong password | protection on: `INVALID_LOGIN_CREDENTIALS`, `USER_DISABLED`, `INVALID_LOGIN_CREDENTIALS`; off: `EMAIL_NOT_FOUND`, `USER_DISABLED`, `INVALID_PASSWORD` | emulator `signInWithPassword` (disabled before the password) |
/// | signInWithPassword, signInWithIdp | the user has second factors | 200 `mfaPendingCredential` (5 min), `mfaInfo` (`totpInfo` or masked `phoneInfo`), no tokens | emulator `signInWithPassword` (`mfaInfo` from the user's enrollments); js-sdk `api/authentication/mfa.ts` `IdTokenMfaResponse` |
/// | v2 any | TOTP at all | — | the emulator has no TOTP (firebase-tools auth emulator: phone factors only); every v2 shape follows js-sdk `api/account_management/mfa.ts`, `api/authentication/mfa.ts`, `mfa/assertions/totp.ts` (issue 33, item 5). Where no first-party source gives production's answer, a recording of production by another emulator (t-k/fireemu CHANGELOG, "measured against a real Identity Platform project", 2026-09) is followed and named "recording" |
/// | mfaSignIn:finalize | no pending credential | `MISSING_CREDENTIAL : Please set MFA Pending Credential.` | emulator `mfaSignInFinalize` ("matches production behavior") |
/// | mfaSignIn:finalize | credential unknown / of another tenant / older than `pendingCredentialLifetime` (300 s) | `INVALID_PENDING_TOKEN` / `INVALID_PROJECT_ID : Project ID does not match MFA pending credential.` / `TOTP_CHALLENGE_TIMEOUT : TOTP challenge timeout, provide first factor again.` | recording (unknown, expired at ~302 s); emulator `parsePendingCredential` (tenant). Decision: the js-sdk map's `INVALID_MFA_PENDING_CREDENTIAL` is not used, no source says finalize sends it for TOTP |
/// | mfaSignIn:finalize | enrollment not the user's / a phone factor or no `totpVerificationInfo` | `MFA_ENROLLMENT_NOT_FOUND` / `Request contains an invalid argument.` | emulator `mfaSignInStart` (decision: the recording's `INVALID_MFA_ENROLLMENT_ID` is not followed; tokend only sends ids Firebase listed); recording (a request missing a field: plain `INVALID_ARGUMENT`) |
/// | mfaSignIn:finalize | a TOTP code not the one of the current 30 s step or of `totpAdjacentIntervals` (5) steps each side | `INVALID_CODE : Invalid TOTP verification code.` (the credential stays usable) | RFC 6238 (HMAC-SHA1, 30 s, 6 digits); Identity Platform "Enable TOTP MFA" and the Firebase TOTP guide: `adjacentIntervals` 0 to 10, default 5; js-sdk map `INVALID_CODE` and its TOTP integration test against production |
/// | mfaSignIn:finalize | right code | `idToken`, `refreshToken` (no `expiresIn`); the ID token's `firebase.sign_in_second_factor` is `totp`, `firebase.second_factor_identifier` the enrollment id | js-sdk `FinalizeMfaResponse`; emulator `generateJwt` (both claims) |
/// | mfaEnrollment:start | ID token as `parseIdToken` / TOTP not enabled (`totpEnabled`, off by default) / session signed in anonymously, by phone, custom token or Game Center / no `totpEnrollmentInfo` / email not verified / a TOTP factor already, or 5 factors / sign-in older than `enrollmentRecentSignInWindow` (300 s) | as lookup / `OPERATION_NOT_ALLOWED : TOTP based MFA not enabled.` / `UNSUPPORTED_FIRST_FACTOR : MFA is not available for the given first factor.` / `Request contains an invalid argument.` / `UNVERIFIED_EMAIL : Need to verify email first before enrolling second factors.` / `SECOND_FACTOR_LIMIT_EXCEEDED` / `CREDENTIAL_TOO_OLD_LOGIN_AGAIN` | TOTP off in new projects: Firebase TOTP guide, Identity Platform "Enable TOTP MFA" (Admin SDK or REST only); the text: recording (the emulator's SMS analogue reads `SMS based MFA not enabled.`); emulator `mfaEnrollmentStart` (`MFA_INELIGIBLE_PROVIDER`, `UNVERIFIED_EMAIL`, its order); recording (missing info; the second TOTP and the sixth factor; 293 s accepted, 303 s refused: no first-party source speaks). The test helpers `enrollSecondFactor`/`enrollTOTP` ("enrolled elsewhere") are not held to the limit |
/// | mfaEnrollment:start | TOTP | `totpSessionInfo` {`sharedSecretKey` (base32, 160 bits), `verificationCodeLength` 6, `hashingAlgorithm` SHA1, `periodSec` 30, `sessionInfo`, `finalizeEnrollmentTime` +5 min} | js-sdk `StartTotpMfaEnrollmentResponse`; RFC 4226 §4 (160-bit secret). Decision: the recording's 900 s session life is not followed (unverified, and tokend's handle lasts 300 s) |
/// | mfaEnrollment:finalize | session unknown, expired or another user's / no `displayName` / wrong code | `INVALID_SESSION_INFO` / `MISSING_DISPLAY_NAME` / `INVALID_CODE : Invalid TOTP verification code.` | js-sdk error map (`invalid-verification-id`, `invalid-verification-code`); recording (the session, then the name, then the code). Decision: the recording's `SESSION_EXPIRED` and `TOO_MANY_ENROLLMENT_ATTEMPTS` are not modelled (tokend spends a session on its first code) |
/// | mfaEnrollment:finalize | done | `idToken`, `refreshToken` of the same uid, `second_factor_identifier` the new factor; the user's other sessions stay valid | schema `FinalizeMfaEnrollmentResponse`; emulator `mfaEnrollmentFinalize` (no `validSince`); recording ("a TOTP enrollment does not" end earlier sessions) |
/// | mfaEnrollment:withdraw | no such enrollment of the user | `MFA_ENROLLMENT_NOT_FOUND` | emulator `mfaEnrollmentWithdraw`; js-sdk error map (`multi-factor-info-not-found`) |
/// | mfaEnrollment:withdraw | the most recently enrolled factor | 200 `{}`: no tokens, and every session of the user ends (`validSince`) | js-sdk `mfa_user.ts` `unenroll` ("the tokenResponse may be empty"); firebase-js-sdk PR #6973 (withdrawing the most recently enrolled factor logs the user out); firebase-ios-sdk#14663 (nil tokens) |
/// | mfaEnrollment:withdraw | another factor | `idToken`, `refreshToken` of the same uid, keeping the asking session's `sign_in_second_factor` unless that factor was the one withdrawn; the user's older sessions end | recording ("a factor withdrawal ends every session before it"; the kept factor); the emulator ends none (decision: the recording, production's) |
/// | signInWithCustomToken | missing / not a uid or JWT with one / a JWT whose `tenant_id` is not the request's `tenantId` (either absent counts) / user disabled | `MISSING_CUSTOM_TOKEN` / `INVALID_CUSTOM_TOKEN` / `TENANT_ID_MISMATCH` / `USER_DISABLED` | emulator `signInWithCustomToken` (in a tenant); a tenant's token at the project: js-sdk `auth/tenant-id-mismatch` "does not match the Auth instance's tenant ID" (decision). A bare uid, the fake's shorthand, is taken in any tenant |
/// | signInWithIdp | `requestUri` missing / not absolute | `MISSING_REQUEST_URI` / `INVALID_REQUEST_URI` | emulator `getNormalizedUri` |
/// | signInWithIdp | no `providerId` / not a provider id (no `.`) / not enabled (`identityProviders`) or switched off | `INVALID_CREDENTIAL_OR_PROVIDER_ID` / `INVALID_PROVIDER_ID` / `OPERATION_NOT_ALLOWED` | emulator `signInWithIdp` for the first (it takes any other id, lower-cased); `INVALID_PROVIDER_ID` is js-sdk `ServerError.INVALID_PROVIDER_ID` (→ `auth/invalid-provider-id`), when production sends it unrecorded: a decision, so that a typo in `--idp` fails as a bad id; the last prod |
/// | signInWithIdp | a provider in `clientCredentialsRefused` (`microsoft.com`), `requestUri` not the hosted handler's | `INVALID_CREDENTIAL_OR_PROVIDER_ID : Invalid IdP response/credential: http://localhost?id_token=…&providerId=microsoft.com` | prod only: firebase-js-sdk#5802, #8913; react-native-firebase#4731; flutterfire#16598; flutterfire#10865 (the emulator accepts it) |
/// | signInWithIdp | ID token unreadable or without `sub`; issuer not the provider's (Microsoft's `{tenantid}` with `tid`), expired, audience not the project's | 400 `INVALID_IDP_RESPONSE : …` (never a 200); the audience text is production's for Google, "Invalid Idp Response: the Google id_token is not allowed to be used with this application. Its audience (OAuth 2.0 client ID) is AUD, which is not authorized to be used in the project with project_number: N." | emulator `parseClaims`; issuer, expiry and audience prod (the audience text as apps quote it, fidelity round 4; other providers' wording is not recorded and takes Google's form with their name) |
/// | signInWithIdp | ID token with a `nonce`: raw `nonce` missing / its SHA-256 hex not the claim | `MISSING_OR_INVALID_NONCE : Nonce is missing in the request.` / `MISSING_OR_INVALID_NONCE : The nonce in ID Token "HASH" does not match the SHA256 hash of the raw nonce "RAW" in the request.`; "Duplicate credential received…" is production's replay answer, which the fake plays only as `productionRefusals` | prod: js-sdk `OAuthCredentialOptions.rawNonce`, error map; texts: firebase-js-sdk#7957, flutterfire#6594 (missing), firebase-ios-sdk#10462 (mismatch) |
/// | signInWithIdp | `access_token` only: JSON or a JWT / opaque (GitHub) | claims read from it / the provider's user API (`userInfo`), refused: `INVALID_IDP_RESPONSE` | emulator `parseClaims` / prod (the emulator answers "not supported") |
/// | signInWithIdp | `answersAsAuthEmulator`, an access token that is neither JSON nor a JWT | 501 `The Auth Emulator does not support github.com sign-in with credentials.` | emulator `parseClaims` (NotImplementedError) |
/// | signInWithIdp | `email_verified` as the string `"true"` (Apple) | the address counts as verified | Sign in with Apple REST API, "Authenticating users" |
/// | signInWithIdp | `federatedId` | `https://accounts.google.com/SUB` for Google, the provider's id for the others | emulator `fakeFetchUserInfoFromIdp` |
/// | signInWithIdp + idToken | the provider's id linked anywhere / address owned by another user | `FEDERATED_USER_ID_ALREADY_LINKED` / `EMAIL_EXISTS`: 200 `errorMessage` with `returnIdpCredential`, else 400 | emulator `signInWithIdp`, `handleLinkIdp` |
/// | signInWithIdp | another user has the provider's address (`oneAccountPerEmail`): verified / not | that user, taken over (an unverified owner loses every provider, password and other IdPs alike, and its sessions) / 200 `needConfirmation`, no tokens, `verifiedProvider`: the owner's providers but password and phone (`[]` for a password-only owner) | emulator `handleIdpSigninEmailRequired` (`deleteProviders`: all of the owner's, `validSince`) |
/// | signInWithIdp | signed in | the answer echoes the request's `tenantId` | schema `SignInWithIdpResponse.tenantId`; emulator `signInWithIdp` (HEAD L1771–1772) |
/// | signInWithIdp | the user is disabled | `USER_DISABLED`, after the link is recorded | emulator `signInWithIdp` |
/// | sendOobCode | PASSWORD_RESET for an unknown address | protection on: 200, nothing sent; off: `EMAIL_NOT_FOUND` | emulator `sendOobCode` |
/// | lookup, delete | as `parseIdToken`; `adminOnlyDelete` | …; `ADMIN_ONLY_OPERATION` | emulator `lookup`, `deleteAccount`; the last prod |
/// | delete | sign-in older than `recentSignInWindow` | `CREDENTIAL_TOO_OLD_LOGIN_AGAIN` | prod: js-sdk map (`requires-recent-login`) |
extension FakeFirebase.Backend {
    static let identityToolkitService = "identitytoolkit.googleapis.com"
    /// The RPC an API restriction's text names, by method, where a production answer records it
    /// (firebase-ios-sdk#1941).
    static let recordedRPC = ["signInWithIdp": "google.firebase.auth.v1.IdentityIdaasAuthenticationService.SignInWithIdp"]
    /// Firebase refuses passwords shorter than 6 characters (`WEAK_PASSWORD`).
    static let minimumPasswordLength = 6
    /// Firebase uids are at most 128 characters; a custom token's uid longer than that is refused.
    static let maximumUIDLength = 128

    private struct Credentials: Decodable {
        var email: String?
        var password: String?
        /// `signUp` with the signed-in user's ID token links email and password to that user.
        var idToken: String?
    }

    private struct CustomToken: Decodable {
        var token: String?
    }

    /// Production's answer fields; `nil` ones are left out.
    struct SignInResponse: Encodable {
        var kind: String
        var localId: String
        var email: String?
        var idToken: String
        var refreshToken: String
        var expiresIn: String
        var registered: Bool?
        var isNewUser: Bool?
        // signInWithIdp
        var providerId: String?
        var federatedId: String?
        var emailVerified: Bool?
        /// signInWithIdp: the request's `tenantId`, echoed.
        var tenantId: String?
    }

    /// What one Identity Toolkit method answered: the reply, and what the log should record.
    struct ToolkitAnswer {
        var reply: Reply
        var uid: String?
        var minted: Ledger.Minted?
    }

    /// `POST /identitytoolkit.googleapis.com/v1/accounts:METHOD`.
    func identityToolkit(
        _ method: String, _ request: IncomingRequest, state: inout State, log: inout [FakeFirebase.Request]
    ) -> Decision {
        let now = state.options.clock.now()
        var entry = FakeFirebase.Request(at: now, method: request.method, path: request.path)
        // Identity Platform: the body's `tenantId` picks the user namespace the call works in;
        // without one, an ID token's `firebase.tenant` does (emulator server.ts, `targetTenantId`).
        struct TenantField: Decodable {
            var tenantId: String?
            var idToken: String?
        }
        struct TokenTenant: Decodable {
            struct Firebase: Decodable { var tenant: String? }
            var firebase: Firebase?
        }
        let fields = try? FakeJSON.decode(TenantField.self, from: request.body)
        entry.tenantID = fields?.tenantId ?? fields?.idToken.flatMap { JWTClaims.decode(TokenTenant.self, from: $0)?.firebase?.tenant }
        state.ledger.tenant = entry.tenantID
        defer { state.ledger.tenant = nil }
        let outcome: Result<ToolkitAnswer, FirebaseRejection>
        if request.method != "POST" {
            outcome = .failure(.http(404))
        } else if let rejection = state.options.rejectAPIKey(request.apiKey, service: Self.identityToolkitService, rpc: Self.recordedRPC[method]) {
            outcome = .failure(rejection)
        } else if let refusal = state.options.productionRefusals[method] {
            outcome = .failure(.firebase(refusal.message, status: refusal.status))
        } else {
            switch method {
            case "signUp": outcome = signUp(request.body, now: now, state: &state).map { signedIn($0, at: now) }
            case "signInWithPassword": outcome = signInWithPassword(request.body, now: now, state: &state)
            case "signInWithCustomToken": outcome = signInWithCustomToken(request.body, now: now, state: &state).map { signedIn($0, at: now) }
            case "signInWithIdp": outcome = signInWithIdp(request.body, now: now, state: &state)
            case "lookup": outcome = lookup(request.body, now: now, state: &state)
            case "sendOobCode": outcome = sendOobCode(request.body, now: now, state: &state)
            case "delete": outcome = delete(request.body, now: now, state: &state)
            case "v2/mfaSignIn:finalize": outcome = finalizeSecondFactorSignIn(request.body, now: now, state: &state)
            case "v2/mfaEnrollment:start": outcome = startEnrollment(request.body, now: now, state: &state)
            case "v2/mfaEnrollment:finalize": outcome = finalizeEnrollment(request.body, now: now, state: &state)
            case "v2/mfaEnrollment:withdraw": outcome = withdrawEnrollment(request.body, now: now, state: &state)
            default: outcome = .failure(.http(404))
            }
        }
        let reply: Reply
        switch outcome {
        case .success(let answer):
            entry.uid = answer.uid
            if let minted = answer.minted {
                entry.issuedRefreshToken = minted.refreshToken
                entry.issuedIDToken = minted.idToken
                entry.issuedExpiresAt = now.addingTimeInterval(Double(minted.lifetime))
            }
            reply = answer.reply
        case .failure(let rejection):
            entry.errorCode = rejection.code
            reply = .rejection(rejection)
        }
        entry.status = reply.status
        log.append(entry)
        let email = (try? FakeJSON.decode(Credentials.self, from: request.body))?.email
        let extra = email.flatMap { state.options.signInLatency[$0.lowercased()] } ?? 0
        return Decision(action: .reply(reply), delay: state.options.latency + extra)
    }

    private func signedIn(_ response: SignInResponse, at now: Date) -> ToolkitAnswer {
        ToolkitAnswer(
            reply: .json(200, response), uid: response.localId,
            minted: Ledger.Minted(
                uid: response.localId, email: response.email, refreshToken: response.refreshToken, idToken: response.idToken,
                expiresAt: now, lifetime: Int(response.expiresIn) ?? 0))  // conversion: a failable parse of a String
    }

    /// `accounts:signUp`, in the emulator's order (firebase-tools `src/emulator/auth/operations.ts`,
    /// `signUp`): nothing given makes an anonymous user; email and password a password user;
    /// with `idToken` as well, email and password are linked to that user, who keeps its uid
    /// and gets a new session, and whose older tokens stop working (`validSince`, see `User`).
    private func signUp(_ body: [UInt8], now: Date, state: inout State) -> Result<SignInResponse, FirebaseRejection> {
        guard let credentials = try? FakeJSON.decode(Credentials.self, from: body) else { return .failure(.invalidJSONPayload) }
        let options = state.options
        guard credentials.idToken != nil || credentials.email != nil || credentials.password != nil else {
            // emulator: ADMIN_ONLY_OPERATION when the project does not enable anonymous users.
            if options.disabledProviders.contains("anonymous") || options.adminOnlySignUp { return .failure(.firebase("ADMIN_ONLY_OPERATION")) }
            let user = state.ledger.addUser(email: nil, password: nil, now: now)
            let minted = state.ledger.signIn(uid: user.uid, provider: "anonymous", now: now, options: options)
            return .success(response("identitytoolkit#SignupNewUserResponse", minted))
        }
        if options.recaptchaEnforced.contains("password") { return .failure(Self.missingRecaptcha) }
        guard let email = credentials.email, !email.isEmpty else { return .failure(.firebase("MISSING_EMAIL")) }
        guard let password = credentials.password, !password.isEmpty else { return .failure(.firebase("MISSING_PASSWORD")) }
        if options.disabledProviders.contains("password") { return .failure(.firebase("OPERATION_NOT_ALLOWED")) }
        // production only: the console's user actions can switch self sign-up off.
        if credentials.idToken == nil, options.adminOnlySignUp { return .failure(.firebase("ADMIN_ONLY_OPERATION")) }
        guard email.contains("@") else { return .failure(.firebase("INVALID_EMAIL")) }
        // emulator: any user with the address, the linking user included.
        guard state.ledger.user(withEmail: email) == nil else { return .failure(.firebase("EMAIL_EXISTS")) }
        if let rejection = Self.refusePassword(password, options: options) { return .failure(rejection) }
        guard let idToken = credentials.idToken else {
            let user = state.ledger.addUser(email: email, password: password, now: now)
            let minted = state.ledger.signIn(uid: user.uid, provider: "password", now: now, options: options)
            return .success(response("identitytoolkit#SignupNewUserResponse", minted))
        }
        // emulator: the ID token is read only after the email and password passed.
        let found = self.user(of: idToken, now: now, state: state)
        guard case .success(let (user, _)) = found else { return .failure(found.rejection) }
        _ = state.ledger.change(user.uid) { linked in
            linked.email = email
            linked.emailVerified = false
            linked.password = password
        }
        // A password set voids the user's older sessions (emulator: `validSince = now`;
        // production revokes the refresh tokens too, docs/architecture.md "Firebase: refreshing").
        _ = state.ledger.revokeTokens(of: user.uid, now: now)
        let minted = state.ledger.signIn(uid: user.uid, provider: "password", now: now, options: options)
        return .success(response("identitytoolkit#SignupNewUserResponse", minted))
    }

    /// `WEAK_PASSWORD` below 6 characters (emulator), then the project's password policy
    /// (production only: `PASSWORD_DOES_NOT_MEET_REQUIREMENTS`, every missing requirement listed).
    static func refusePassword(_ password: String, options: FakeFirebase.Options) -> FirebaseRejection? {
        guard password.count >= minimumPasswordLength else {
            return .firebase("WEAK_PASSWORD : Password should be at least 6 characters")
        }
        guard let missing = options.passwordPolicy?.missing(in: password), !missing.isEmpty else { return nil }
        return .firebase("PASSWORD_DOES_NOT_MEET_REQUIREMENTS : Missing password requirements: [\(missing.joined(separator: ", "))]")
    }

    /// A password sign-in or sign-up without a reCAPTCHA token in a project that enforces one
    /// (production only; firebase-js-sdk's `recaptcha_enterprise_verifier.ts` retries with a
    /// token on exactly this code).
    static let missingRecaptcha = FirebaseRejection.firebase("MISSING_RECAPTCHA_TOKEN")

    /// The emulator's order (operations.ts `signInWithPassword`): the method switch
    /// (`PASSWORD_LOGIN_DISABLED`), the fields, then the user: unknown, disabled (before the
    /// password is checked), wrong password. With email-enumeration protection (on for projects
    /// created since September 2023) an unknown email and a wrong password both answer
    /// `INVALID_LOGIN_CREDENTIALS`. A user with a second factor gets `mfaPendingCredential`.
    private func signInWithPassword(_ body: [UInt8], now: Date, state: inout State) -> Result<ToolkitAnswer, FirebaseRejection> {
        guard let credentials = try? FakeJSON.decode(Credentials.self, from: body) else { return .failure(.invalidJSONPayload) }
        if state.options.recaptchaEnforced.contains("password") { return .failure(Self.missingRecaptcha) }
        if state.options.disabledProviders.contains("password") { return .failure(.firebase("PASSWORD_LOGIN_DISABLED")) }
        guard let email = credentials.email, !email.isEmpty else { return .failure(.firebase("MISSING_EMAIL")) }
        guard email.contains("@") else { return .failure(.firebase("INVALID_EMAIL")) }
        guard let password = credentials.password, !password.isEmpty else { return .failure(.firebase("MISSING_PASSWORD")) }
        // production only: a lock-out after repeated failures.
        if let limit = state.options.maximumFailedSignIns, state.failedSignIns >= limit {
            return .failure(.firebase("TOO_MANY_ATTEMPTS_TRY_LATER : Access to this account has been temporarily disabled due to many failed login attempts. You can immediately restore it by resetting your password or you can try again later."))
        }
        let protected = state.options.emailEnumerationProtection
        guard let user = state.ledger.user(withEmail: email) else {
            state.failedSignIns += 1
            return .failure(.firebase(protected ? "INVALID_LOGIN_CREDENTIALS" : "EMAIL_NOT_FOUND"))
        }
        if user.disabled { return .failure(.firebase("USER_DISABLED")) }
        guard user.password == password else {
            state.failedSignIns += 1
            return .failure(.firebase(protected ? "INVALID_LOGIN_CREDENTIALS" : "INVALID_PASSWORD"))
        }
        if let pending = secondFactorPending(user, provider: "password", kind: "identitytoolkit#VerifyPasswordResponse", now: now, state: &state) {
            return .success(pending)
        }
        let minted = state.ledger.signIn(uid: user.uid, provider: "password", now: now, options: state.options)
        var answer = response("identitytoolkit#VerifyPasswordResponse", minted)
        answer.registered = true
        return .success(signedIn(answer, at: now))
    }

    /// Signatures are not checked (like the emulator): a JWT's `uid` claim names the user, and a
    /// plain string that could be a uid is taken as one. Unknown uids become new users.
    private func signInWithCustomToken(_ body: [UInt8], now: Date, state: inout State) -> Result<SignInResponse, FirebaseRejection> {
        guard let request = try? FakeJSON.decode(CustomToken.self, from: body) else { return .failure(.invalidJSONPayload) }
        guard let token = request.token, !token.isEmpty else { return .failure(.firebase("MISSING_CUSTOM_TOKEN")) }
        guard let uid = Self.customTokenUID(token) else { return .failure(.firebase("INVALID_CUSTOM_TOKEN")) }
        // A JWT minted by a tenant's `TenantAwareAuth` names it in `tenant_id`: it signs in to
        // that tenant only (emulator `signInWithCustomToken`; js-sdk `auth/tenant-id-mismatch`,
        // "does not match the Auth instance's tenant ID"). A bare uid, the fake's shorthand, is
        // taken in any namespace.
        if let claims = Self.customTokenClaims(token), claims.tenant_id != state.ledger.tenant {
            return .failure(.firebase("TENANT_ID_MISMATCH"))
        }
        let isNewUser = state.ledger.users[uid] == nil
        if isNewUser {
            _ = state.ledger.addUser(email: nil, password: nil, uid: uid, now: now)
        } else if state.ledger.users[uid]?.disabled == true {
            return .failure(.firebase("USER_DISABLED"))
        }
        let minted = state.ledger.signIn(uid: uid, provider: "custom", now: now, options: state.options)
        var answer = response("identitytoolkit#VerifyCustomTokenResponse", minted)
        answer.isNewUser = isNewUser
        return .success(answer)
    }

    private struct CustomTokenClaims: Decodable {
        var uid: String?
        var tenant_id: String?
    }

    /// The claims of a custom token that is a JWT; nil for a bare uid.
    private static func customTokenClaims(_ token: String) -> CustomTokenClaims? {
        guard token.split(separator: ".", omittingEmptySubsequences: false).count == 3 else { return nil }
        return JWTClaims.decode(CustomTokenClaims.self, from: token)
    }

    static func customTokenUID(_ token: String) -> String? {
        if token.split(separator: ".", omittingEmptySubsequences: false).count == 3 {
            guard let uid = customTokenClaims(token)?.uid, !uid.isEmpty, uid.count <= maximumUIDLength else { return nil }
            return uid
        }
        let allowed = token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        return allowed && token.count <= maximumUIDLength ? token : nil
    }

    func response(_ kind: String, _ minted: Ledger.Minted) -> SignInResponse {
        SignInResponse(
            kind: kind, localId: minted.uid, email: minted.email, idToken: minted.idToken,
            refreshToken: minted.refreshToken, expiresIn: String(minted.lifetime))
    }
}
