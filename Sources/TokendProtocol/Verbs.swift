// The verbs of the `login` and `account` ops, named once for tokenctl and the daemon
// (docs/protocol.md, "login" and "account"): the raw values are the wire's strings.

/// How a `login` signs in. Which methods an account offers is its provider's descriptor's
/// `loginMethods`; a new method is a case here (with what its request must carry), the
/// provider's flow, and one tokenctl flag.
public enum LoginMethod: String, Sendable, CaseIterable, Codable {
    /// OpenID Connect: authorization code with PKCE S256, redirected to a loopback listener.
    case browser
    /// OpenID Connect: the device authorization grant (RFC 8628), for boxes with no browser.
    case device
    /// Firebase: email and password (`create` signs up instead of signing in).
    case email
    /// Firebase: a new anonymous user.
    case anonymous
    /// Firebase: a custom token minted by the project's backend, read from stdin.
    case customToken = "custom_token"
    /// Firebase: a Google sign-in (the browser flow against Google) exchanged at signInWithIdp;
    /// the short form of `idp` with `idp` = `google.com`.
    case google
    /// Firebase: a sign-in at the identity provider the request's `idp` names (`microsoft.com`,
    /// `github.com`, `oidc.NAME`, …), exchanged at signInWithIdp.
    case idp
    /// Firebase: the second step of a sign-in that asked for a second factor: the `handle` the
    /// first step's `second_factor` progress line gave, and the code in `secret`.
    case secondFactor = "second_factor"

    /// Flows that wait for the user in a browser or on another device: one at a time per
    /// account, since a second would open a second browser tab for the same session.
    public var isInteractive: Bool {
        switch self {
        case .browser, .device, .google, .idp: true
        case .email, .anonymous, .customToken, .secondFactor: false
        }
    }

    /// The request must carry `email` (the daemon refuses it before any provider is asked).
    public var needsEmail: Bool {
        switch self {
        case .email: true
        case .browser, .device, .anonymous, .customToken, .google, .idp, .secondFactor: false
        }
    }

    /// What the request's `secret` must hold, in words for the refusal; nil: none is needed.
    public var neededSecret: String? {
        switch self {
        case .email: "the password"
        case .customToken: "the custom token"
        case .secondFactor: "the second factor's code"
        case .browser, .device, .anonymous, .google, .idp: nil
        }
    }

    /// The secret is a token pasted or piped (surrounding whitespace dropped), not a password
    /// (taken as it is).
    public var secretIsToken: Bool { self == .customToken || self == .secondFactor }
}

/// What an `account` op does to the account's Firebase user.
public enum AccountAction: String, Sendable, CaseIterable, Codable {
    case show
    case verifyEmail = "verify_email"
    case resetPassword = "reset_password"
    case upgrade, delete
    /// Enrolls a TOTP second factor: without `handle` it starts (the answer's `enrollment`
    /// holds the secret), with `handle` and the code in `secret` it finishes.
    case mfaEnroll = "mfa_enroll"
    /// Withdraws the second factor whose enrollment id is `factor`.
    case mfaRemove = "mfa_remove"
}

/// A Firebase identity provider's id as a request names it (`login` and `account upgrade` with
/// method `idp`): checked before any provider is asked, since it goes into a URL form and into
/// messages.
public enum IdentityProviderID {
    /// Firebase's provider ids are lowercase DNS-like names; 128 is far beyond any (`oidc.` ids
    /// are at most 30 characters in the console).
    public static let maximumLength = 128

    /// Ids that are not identity providers at all.
    static let refused: [String: String] = [
        "password": "is not an identity provider; use tokenctl login ACCOUNT --email",
        "phone": "phone sign-in needs reCAPTCHA or an app; tokend cannot do it",
        "anonymous": "is not an identity provider; use tokenctl login ACCOUNT --anonymous",
    ]

    /// Nil when `id` can name a provider; else why not.
    public static func problem(with id: String) -> String? {
        guard !id.isEmpty, id.count <= maximumLength,
            id.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") }),
            id.contains("."), id.first != ".", id.last != "."
        else {
            return "must be a Firebase provider id such as google.com, microsoft.com, github.com or oidc.NAME (lowercase)"
        }
        return refused[id]
    }
}
