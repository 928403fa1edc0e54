// Sinks/ — token files (Vault Agent's file sink): an account's current token kept in a file for
// clients that read one (AWS_WEB_IDENTITY_TOKEN_FILE, Google's credential_source.file). Every
// file lives in one directory of ours under $XDG_RUNTIME_DIR, the one place the hardened unit
// may write (docs/architecture.md, "Token files").

import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// One configured token file: `sink = { path = "…", kind = "id", min_valid = "5m" }`.
public struct TokenFile: Sendable, Hashable {
    /// Five minutes, as in the design's example: long enough for a client that reads the file
    /// and then calls its STS, short enough to cost one early refresh an hour.
    public static let defaultMinValid: Double = 300
    /// `min_valid` bounds: at least a second (a token is removed before it dies, not at the
    /// instant), at most 12 hours (past any token lifetime a provider issues).
    public static let minValidRange: ClosedRange<Double> = 1...43_200
    /// The file name's limit on Linux file systems (NAME_MAX).
    public static let maximumNameLength = 255

    /// Absolute: the directory's path and the file's name.
    public var path: String
    /// Nil: the account's default kind.
    public var kind: TokenKind?
    /// The file holds a token only while it has at least this long left.
    public var minValid: Double

    public init(path: String, kind: TokenKind?, minValid: Double) {
        self.path = path
        self.kind = kind
        self.minValid = minValid
    }

    /// An absolute path's directory and file name.
    static func split(_ path: String) -> (directory: String, name: String) {
        let slash = path.lastIndex(of: "/") ?? path.startIndex
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }

    /// What the file should hold at `now`: the token and when it must be gone (`min_valid`
    /// before its expiry), or nil when no token of the kind is valid that long.
    func content(of tokens: TokenSet?, defaultKind: TokenKind, at now: Date) -> (token: String, removeAt: Date)? {
        // Strictly more than `min_valid` left: at the removal instant itself the file goes.
        guard let held = tokens?.token(kind ?? defaultKind), held.expiresAt.timeIntervalSince(now) > minValid else { return nil }
        return (held.value, held.expiresAt.addingTimeInterval(-minValid))
    }

    /// How long the file's token lived when it was issued, when the tokens say (nil otherwise).
    func lifetime(of tokens: TokenSet?, defaultKind: TokenKind) -> Double? {
        guard let tokens, let issuedAt = tokens.issuedAt, let held = tokens.token(kind ?? defaultKind) else { return nil }
        let lifetime = held.expiresAt.timeIntervalSince(issuedAt)
        return lifetime > 0 ? lifetime : nil
    }

    /// The `path` a configuration gives, checked and made absolute: a bare file name is one in
    /// `directory`; an absolute path must name a file directly in it. Else why not.
    static func resolve(_ text: String, in directory: String) -> Result<String, PathProblem> {
        var name = text
        if text.hasPrefix("/") {
            let prefix = directory + "/"
            guard text.hasPrefix(prefix) else { return .failure(.outsideDirectory) }
            name = String(text.dropFirst(prefix.count))
        }
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix("."), name.utf8.count <= maximumNameLength,
            !name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F })
        else { return .failure(.badName) }
        return .success(directory + "/" + name)
    }

    enum PathProblem: Error {
        case outsideDirectory
        case badName
    }
}

/// The one directory token files live in: `$XDG_RUNTIME_DIR/tokend/sinks` (tmpfs, this user's,
/// cleared at logout); the unit opens exactly it (`RuntimeDirectory=tokend/sinks`).
public enum TokenFileDirectory {
    public static func path(environment: [String: String]) -> String? {
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        return runtime + "/tokend/sinks"
    }
}
