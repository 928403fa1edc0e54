import Foundation

extension FakeFirebase {
    /// One Firebase API request as the fake saw and answered it. A request reset by `refuse` has
    /// only its method and path: its body was never read.
    ///
    /// Holds the refresh and ID tokens it received and issued, in clear: the fake is a test
    /// double, and tests need them to check rotation and what the daemon presented.
    public struct Request: Sendable, Equatable, Encodable {
        /// When it arrived, by `Options.clock`.
        public var at: Date
        public var method: String
        /// Path only, without the query string (which carries nothing but the API key).
        public var path: String
        /// `grant_type` / `grantType` from a token request's body.
        public var grantType: String?
        /// The refresh token the client presented to the token endpoint.
        public var presentedRefreshToken: String?
        /// HTTP status sent; nil when no complete answer went out (refused, dropped, dropped
        /// mid-response, hanging).
        public var status: Int?
        /// The Firebase or OAuth error code answered (`TOKEN_EXPIRED`, `API_KEY_INVALID`,
        /// `invalid_grant`, …), for failures only.
        public var errorCode: String?
        public var issuedRefreshToken: String?
        public var issuedIDToken: String?
        public var issuedExpiresAt: Date?
        /// The injected fault that answered instead of the fake's normal handling.
        public var fault: Fault?
        /// The user the request concerned, where the fake could tell.
        public var uid: String?
        /// The Identity Toolkit request's `tenantId`, when it named one.
        public var tenantID: String?

        /// A successful refresh that handed back a different refresh token than it was given.
        public var rotated: Bool {
            guard let issuedRefreshToken, let presentedRefreshToken else { return false }
            return issuedRefreshToken != presentedRefreshToken
        }

        init(at: Date, method: String, path: String) {
            self.at = at
            self.method = method
            self.path = path
        }
    }
}
