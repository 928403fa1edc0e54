/// Which part of the fake a path belongs to. The emulator convention puts the production host
/// first: `/securetoken.googleapis.com/v1/token`, `/identitytoolkit.googleapis.com/v1/accounts:…`.
enum Route: Sendable, Equatable {
    case secureToken
    /// `accounts:METHOD`, holding METHOD (`signUp`, `signInWithPassword`, …).
    case identityToolkit(String)
    /// `v2/accounts/RESOURCE:VERB` (second factors), holding `v2/RESOURCE:VERB`.
    case identityToolkitV2(String)
    /// `/_fake/…`, holding the segments after `_fake`.
    case control([String])
    case unknown

    static let secureTokenPath = "/securetoken.googleapis.com/v1/token"
    static let identityToolkitPrefix = "/identitytoolkit.googleapis.com/v1/accounts:"
    static let identityToolkitV2Prefix = "/identitytoolkit.googleapis.com/v2/accounts/"
    static let controlPrefix = "/_fake"

    init(path: String) {
        if path == Self.secureTokenPath {
            self = .secureToken
        } else if path.hasPrefix(Self.identityToolkitPrefix) {
            self = .identityToolkit(String(path.dropFirst(Self.identityToolkitPrefix.count)))
        } else if path.hasPrefix(Self.identityToolkitV2Prefix) {
            self = .identityToolkitV2("v2/" + path.dropFirst(Self.identityToolkitV2Prefix.count))
        } else if path == Self.controlPrefix || path.hasPrefix(Self.controlPrefix + "/") {
            self = .control(path.dropFirst(Self.controlPrefix.count).split(separator: "/").map(String.init))
        } else {
            self = .unknown
        }
    }
}
