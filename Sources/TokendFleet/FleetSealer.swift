import Crypto
import FoundationEssentials
import TokendCore

/// What tokend writes to etcd: a session sealed with AES-256-GCM under the fleet's key, the
/// account and the endpoint in the associated data, so that a value moved to another account's
/// key or written for another endpoint does not open (docs/security.md, "A fleet").
public struct FleetSealer: Sendable {
    /// The first bytes of every sealed value: its format, should it ever change.
    static let magic = "tokend-fleet 1:"
    let key: SymmetricKey

    public init(keyBytes: [UInt8]) {
        key = SymmetricKey(data: keyBytes)
    }

    /// The key from `sealing_key`: a file of exactly 32 bytes, base64 (`head -c 32 /dev/urandom | base64`).
    public static func load(_ path: String, environment: [String: String]) throws(FleetError) -> FleetSealer {
        let text = try FleetSecretFile.read(path, what: "sealing_key", environment: environment)
        guard let decoded = Data(base64Encoded: Data(text)), decoded.count == 32 else {
            throw FleetError(.badFile, "sealing_key \(path) must hold 32 bytes in base64 (make one with: head -c 32 /dev/urandom | base64 > \(path); chmod 600 \(path)), the same on every member")
        }
        return FleetSealer(keyBytes: Array(decoded))
    }

    /// "tokend-fleet 1", the account, the endpoint, NUL-separated (neither holds a NUL).
    static func associatedData(account: String, endpoint: String) -> Data {
        Data(magic.utf8) + Data([0]) + Data(account.utf8) + Data([0]) + Data(endpoint.utf8)
    }

    /// The session as etcd keeps it. Its boot anchor stays behind: it means something on this
    /// machine's boot only.
    public func seal(_ tokens: TokenSet, account: String, endpoint: String) throws(FleetError) -> [UInt8] {
        var shared = tokens
        shared.boot = nil
        do {
            let plain = try shared.keyringJSON(account: account)
            let sealed = try AES.GCM.seal(Data(plain.utf8), using: key, authenticating: Self.associatedData(account: account, endpoint: endpoint))
            guard let combined = sealed.combined else { throw FleetError(.badFile, "AES-GCM gave no sealed box") }
            return Array((Self.magic + combined.base64EncodedString()).utf8)
        } catch let error as FleetError {
            throw error
        } catch {
            throw FleetError(.badFile, "the session could not be sealed")
        }
    }

    /// The session a sealed value holds; `.wrongKey` when it does not open for this account and
    /// endpoint with this key.
    public func open(_ value: [UInt8], account: String, endpoint: String) throws(FleetError) -> TokenSet {
        let text = String(decoding: value, as: UTF8.self)
        guard text.hasPrefix(Self.magic), let combined = Data(base64Encoded: String(text.dropFirst(Self.magic.count))) else {
            throw FleetError(.wrongKey, "the fleet's value for account \"\(account)\" is not a session tokend sealed (written by hand?); \(FleetError.wrongKeySteps)")
        }
        do {
            let box = try AES.GCM.SealedBox(combined: combined)
            let plain = try AES.GCM.open(box, using: key, authenticating: Self.associatedData(account: account, endpoint: endpoint))
            return try TokenSet(keyringJSON: String(decoding: plain, as: UTF8.self))
        } catch {
            throw FleetError(.wrongKey, "the fleet's session for account \"\(account)\" does not open with this member's sealing_key (another key, or another endpoint); \(FleetError.wrongKeySteps)")
        }
    }
}
