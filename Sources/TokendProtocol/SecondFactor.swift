/// An enrolled second factor, as `account show` and a `second_factor` progress line list it.
/// Never a secret: a phone number comes masked, as Firebase gives it.
public struct SecondFactor: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case totp, phone
        /// A factor this version does not know (Firebase may add kinds).
        case other
    }
    /// The enrollment id (`mfaEnrollmentId`).
    public var id: String
    public var kind: Kind
    public var displayName: String?
    /// `phone`: the masked number (`+*******1234`).
    public var phone: String?
    /// RFC 3339, when Firebase said.
    public var enrolledAt: String?

    public init(id: String, kind: Kind) {
        self.id = id
        self.kind = kind
    }

    /// `ID (TOTP "name")`, `ID (SMS +*******1234 "name")`: how messages and tokenctl name a factor.
    public var summary: String {
        let what = switch kind {
        case .totp: "TOTP"
        case .phone: "SMS" + (phone.map { " \($0)" } ?? "")
        case .other: "unknown kind"
        }
        return "\(id) (\(what)\(displayName.map { " \"\($0)\"" } ?? ""))"
    }

    /// A TOTP code as an authenticator app shows it: 4 to 10 digits (Firebase's
    /// `verificationCodeLength` is 6 by default; RFC 4226 allows 6 to 8, a little slack each
    /// side costs nothing). Checked by tokenctl and the daemon before a single-use handle is spent.
    public static func isPlausibleCode(_ code: String) -> Bool {
        (4...10).contains(code.count) && code.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// Firebase documents no limit for `displayName`; 64 characters name a device or an app
    /// and keep `mfa list` and the factor summaries on one line.
    public static let maximumDisplayNameLength = 64

    /// Why `name` cannot be a factor's display name, nil when it can: 1 to 64 characters, no
    /// control characters (it is printed in listings and messages).
    public static func displayNameProblem(_ name: String) -> String? {
        guard !name.isEmpty, name.count <= maximumDisplayNameLength else { return "must be 1 to \(maximumDisplayNameLength) characters" }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return "must not contain control characters" }
        return nil
    }

    /// The display name an enrollment gets when the user names none: what enrolled it, and
    /// where, so that `mfa list` tells this factor from one added in an app.
    public static func defaultDisplayName(host: String) -> String {
        let name = "tokend on \(host.isEmpty ? "this host" : host)"
        return String(name.prefix(maximumDisplayNameLength))
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, phone
        case displayName = "display_name"
        case enrolledAt = "enrolled_at"
    }
}

/// The first step of a TOTP enrollment: what the authenticator app needs, and the handle that
/// finishes it with a code. The secret is the user's to keep; tokend never logs or stores it.
public struct SecondFactorEnrollment: Codable, Sendable, Equatable {
    public var handle: String
    /// Base32, as `otpauth://` carries it.
    public var secret: String
    /// `otpauth://totp/ISSUER:LABEL?secret=…&issuer=…&algorithm=…&digits=…&period=…`.
    public var uri: String
    public var digits: Int
    public var period: Int

    public init(handle: String, secret: String, uri: String, digits: Int, period: Int) {
        self.handle = handle
        self.secret = secret
        self.uri = uri
        self.digits = digits
        self.period = period
    }
}
