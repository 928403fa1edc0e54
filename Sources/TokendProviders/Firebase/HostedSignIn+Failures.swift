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
        default:
            return nil
        }
    }

    /// Every code with advice of its own, for the page's script.
    static let adviceCodes = [
        "auth/unauthorized-domain", "auth/operation-not-allowed", "auth/web-storage-unsupported", "auth/popup-blocked",
        "auth/popup-closed-by-user", "auth/cancelled-popup-request", "auth/user-cancelled", "auth/account-exists-with-different-credential",
        "auth/multi-factor-auth-required",
    ]
}
