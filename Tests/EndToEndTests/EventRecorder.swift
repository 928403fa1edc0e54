import Foundation
import Synchronization
import TokendCore
import TokendProtocol

/// A `watch` connection to the daemon under test, recording every event line as it arrives (on
/// a thread of its own: the read blocks). Tests wait on it with a deadline, never a sleep.
final class EventRecorder: Sendable {
    let lines = Mutex<[String]>([])

    /// `BlockingClient` is a plain class: this box hands it to the reading thread, which is the
    /// only user of it after `init` returns.
    private final class ClientBox: @unchecked Sendable {
        let client: BlockingClient
        init(_ client: BlockingClient) { self.client = client }
    }

    init(socketPath: String, account: String? = nil, profile: Bool = false) throws {
        let client = try BlockingClient(path: socketPath)
        client.setReadTimeout(seconds: 30)
        try client.send(.watch(WatchArgs(account: account, profile: profile)), id: nil)
        _ = try client.receiveLine()  // the acknowledgement: from here on, events
        client.setReadTimeout(seconds: 0)
        let box = ClientBox(client)
        Thread { [self] in
            while let line = try? box.client.receiveLine() {
                self.lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) }
            }
        }.start()
    }

    var events: [Event] {
        lines.withLock { $0 }.compactMap { try? JSONDecoder().decode(Event.self, from: Data($0.utf8)) }
    }

    /// The first recorded event matching `predicate`, waiting up to `timeout` seconds for it.
    func first(timeout: Double = 20, _ what: String, where predicate: @escaping (Event) -> Bool) async throws -> Event {
        var found: Event?
        try await poll(timeout: timeout, "event \(what); saw: \(lines.withLock { $0 })") {
            found = self.events.first(where: predicate)
            return found != nil
        }
        return found!
    }
}

/// The claims of a Firebase ID token the tests look at (signatures unchecked: a test double's).
struct IDTokenClaims {
    var uid: String?
    var email: String?
    var emailVerified: Bool?
    var signInProvider: String?

    private struct Payload: Decodable {
        struct Firebase: Decodable { var sign_in_provider: String? }
        var user_id: String?
        var email: String?
        var email_verified: Bool?
        var firebase: Firebase?
    }

    init?(token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = JWTClaims.base64URLDecode(parts[1]),
            let payload = try? JSONDecoder().decode(Payload.self, from: bytes)
        else { return nil }
        uid = payload.user_id
        email = payload.email
        emailVerified = payload.email_verified
        signInProvider = payload.firebase?.sign_in_provider
    }
}
