import TokendCore

/// What each failure of the hosted sign-in page means and what to do next: the page shows these
/// words, and tokenctl prints them with the exit status of `kind` (README.md, "When the hosted
/// page fails"). The codes are the JavaScript SDK's `AuthError.code`s the page posts back.
extension HostedSignIn {
    struct PageFailure: Sendable, Equatable {
        var kind: LoginFailure.Kind
        var advice: String
    }

    /// The advice for `code`, for the provider `name` through `authDomain`; nil for a code
    /// without advice of its own (the page then says "try again").
    static func failure(code: String, name: String, authDomain: String) -> PageFailure? {
        switch code {
        case "auth/unauthorized-domain":
            // The page runs on http://localhost: the project must list localhost.
            return PageFailure(kind: .misconfigured, advice: "localhost is not an authorized domain of the project; add it in the Firebase console (Authentication, Settings, Authorized domains)")
        case "auth/operation-not-allowed":
            return PageFailure(kind: .misconfigured, advice: "\(name) sign-in is disabled for the project; enable \(name) in the Firebase console (Authentication, Sign-in method)")
        case "auth/web-storage-unsupported":
            // firebase-js-sdk#934: the popup needs storage on the auth domain, a third party here.
            return PageFailure(kind: .misconfigured, advice: "the browser blocks third-party cookies and site data, which the sign-in popup needs; allow them for \(authDomain) in the browser's settings (Privacy, Cookies and site data)")
        case "auth/popup-blocked":
            return PageFailure(kind: .denied, advice: "the browser blocked the sign-in popup; allow popups for localhost and sign in again")
        case "auth/popup-closed-by-user", "auth/cancelled-popup-request", "auth/user-cancelled":
            return PageFailure(kind: .denied, advice: "the sign-in popup was closed before the sign-in finished; sign in again and finish it")
        case "auth/account-exists-with-different-credential":
            return PageFailure(kind: .denied, advice: "the project allows one account per email address, and this address already has an account that signs in another way; sign in that way instead of with \(name)")
        case "auth/multi-factor-auth-required":
            return PageFailure(kind: .misconfigured, advice: "this user has a second factor, which the hosted sign-in cannot finish for tokend; use a user without one, or a custom token")
        // Server INVALID_IDP_RESPONSE (js-sdk api/errors.ts): the handler could not use the
        // provider's answer, e.g. Microsoft's "AADSTS7000222: The provided client secret keys
        // ... are expired" (FlutterFlow/flutterflow-issues#2995): every user meets it.
        case "auth/invalid-credential":
            return PageFailure(kind: .misconfigured, advice: "the project's \(name) sign-in is misconfigured (the provider's message follows); an administrator of the Firebase project must fix it, e.g. renew the \(name) app's expired client secret and enter it under Authentication, Sign-in method, \(name)")
        case "auth/user-disabled":
            return PageFailure(kind: .denied, advice: "the user is disabled in the Firebase project; ask the project's administrator")
        case "auth/admin-restricted-operation":
            return PageFailure(kind: .misconfigured, advice: "the project lets only administrators create users; enable \"Enable create (sign-up)\" (Authentication, Settings, User actions), or have an administrator create the user")
        // The SDK's own check of a missing key, and the server's "API key not valid" hyphenated
        // by the SDK (js-sdk api/index.ts: an unknown server message becomes the code).
        case "auth/invalid-api-key", "auth/api-key-not-valid.-please-pass-a-valid-api-key.":
            return PageFailure(kind: .misconfigured, advice: "Firebase rejects the account's api_key; copy the Web API key from the project settings into config.toml")
        case "auth/tenant-id-mismatch":
            return PageFailure(kind: .misconfigured, advice: "the sign-in belongs to another tenant than the account's tenant_id; check tenant_id against the tenant the provider is enabled in (Authentication, Tenants)")
        case "auth/network-request-failed":
            return PageFailure(kind: .transient, advice: "the browser could not reach Firebase or \(name); check the browser's network (a proxy, a blocker) and try again later")
        case "auth/too-many-requests":
            return PageFailure(kind: .transient, advice: "Firebase blocks sign-ins from this device for a while after too many attempts; try again later")
        case _ where code.hasPrefix(refererBlocked):
            // firebase-js-sdk#5657: `auth/requests-from-referer-<empty>-are-blocked.`, the key's
            // website restriction's refusal hyphenated; the page's own address is the referrer.
            return PageFailure(kind: .misconfigured, advice: "the project's API key is restricted to websites that do not include the sign-in page's http://localhost; add localhost to the key's website restrictions, or use a key with no application restriction (Google Cloud console, APIs & Services, Credentials)")
        default:
            return nil
        }
    }

    /// The prefix of a referrer-restricted key's code; the rest names the referrer.
    static let refererBlocked = "auth/requests-from-referer-"

    /// The page's error message as tokenctl shows it: nil when it says no more than the code
    /// (the SDK's "Firebase: Error (auth/CODE)."); else its words, the SDK's frame taken off.
    static func detail(_ message: String?, code: String) -> String? {
        guard var text = message, !text.isEmpty else { return nil }
        if text.hasPrefix("Firebase: ") { text.removeFirst("Firebase: ".count) }
        for suffix in [" (\(code)).", " (\(code))"] where text.hasSuffix(suffix) {
            text.removeLast(suffix.count)
        }
        return text.isEmpty || text == "Error" ? nil : text
    }

    /// Every code with advice of its own, for the page's script.
    static let adviceCodes = [
        "auth/unauthorized-domain", "auth/operation-not-allowed", "auth/web-storage-unsupported", "auth/popup-blocked",
        "auth/popup-closed-by-user", "auth/cancelled-popup-request", "auth/user-cancelled", "auth/account-exists-with-different-credential",
        "auth/multi-factor-auth-required", "auth/invalid-credential", "auth/user-disabled", "auth/admin-restricted-operation",
        "auth/invalid-api-key", "auth/api-key-not-valid.-please-pass-a-valid-api-key.", "auth/tenant-id-mismatch",
        "auth/network-request-failed", "auth/too-many-requests", refererBlocked,
    ]
}
