import ArgumentParser
import Foundation
import Glibc
import TokendFakes
import TokendServer

/// Runs FakeFirebase as its own process for shell scripts and the demo. A TEST DOUBLE: it mints
/// worthless tokens, hands them out over its control plane, and must never face a network.
struct FakeFirebaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokend-fake-firebase",
        abstract: "A Firebase Auth look-alike (Auth emulator convention) with fault injection, for tests and demos.",
        discussion: """
            Prints FIREBASE_AUTH_EMULATOR_HOST=HOST:PORT on stdout once listening (and, with \
            --create-user, REFRESH_TOKEN=… and UID=… lines), logs one line per Firebase request on \
            stderr (never a token), and exits 0 on SIGINT or SIGTERM. Control it over HTTP under \
            /_fake/: users, options, faults, requests. The control plane hands out live tokens; \
            it is a test double.
            """)

    @Option(help: "Interface to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port = 0

    @Option(help: "ID token lifetime in seconds.")
    var lifetime = 3600

    @Flag(help: "Issue a new refresh token on every refresh.")
    var rotate = false

    @Flag(help: "With --rotate, the replaced refresh token stops working.")
    var revokePrevious = false

    @Flag(help: "With --revoke-previous, presenting a replaced refresh token revokes all of its user's refresh tokens (reuse detection, RFC 9700 §4.14.2).")
    var revokeFamilyOnReuse = false

    @Option(help: "Seconds to hold back every Firebase answer.")
    var latency: Double = 0

    @Flag(help: "Enable TOTP second factors for the project (off by default, as in every new Firebase project).")
    var totpEnabled = false

    @Flag(help: "Create a user at start and print its REFRESH_TOKEN and UID.")
    var createUser = false

    @Option(help: "With --create-user, make a password user with this email (else anonymous).")
    var email: String?

    @Option(help: "With --create-user and --email, the user's password.")
    var password: String?

    func validate() throws {
        guard lifetime > 0 else { throw ValidationError("--lifetime must be positive") }
        guard latency >= 0 else { throw ValidationError("--latency must not be negative") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
    }

    func run() async throws {
        try await serve()
    }

    /// The command's work, under a name of its own: in top-level code `run()` would resolve to
    /// the synchronous requirement of `ParsableCommand`.
    func serve() async throws {
        // Listen for the signals before anything else, so a script that kills us right after
        // reading our first line still gets a clean exit: the daemon's own signal reader.
        let termination = ProcessSignals.shared.stream(of: [SIGINT, SIGTERM])

        var options = FakeFirebase.Options()
        options.lifetime = lifetime
        options.rotate = rotate
        options.revokePrevious = revokePrevious
        options.revokeFamilyOnReuse = revokeFamilyOnReuse
        options.latency = latency
        options.totpEnabled = totpEnabled
        let fake = try await FakeFirebase.start(host: host, port: port, options: options)
        fake.onRequest { request in
            FileHandle.standardError.write(Data((RequestLogLine(request).text + "\n").utf8))
        }

        var lines = ["FIREBASE_AUTH_EMULATOR_HOST=\(fake.emulatorHost)"]
        if createUser {
            let session = fake.createUser(email: email, password: password)
            lines.append("REFRESH_TOKEN=\(session.refreshToken)")
            lines.append("UID=\(session.uid)")
        }
        // One unbuffered write: a script reading our stdout through a pipe must see every line
        // at once, not whenever a block buffer fills.
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))

        for await _ in termination { break }
        FileHandle.standardError.write(Data("tokend-fake-firebase: SIGINT or SIGTERM, shutting down\n".utf8))
        try await fake.shutdown()
    }
}

/// One short stderr line per request: time, method, path, status, what happened. Never a token.
struct RequestLogLine {
    let text: String

    init(_ request: FakeFirebase.Request) {
        let time = request.at.formatted(.iso8601)
        let status = request.status.map(String.init) ?? "-"
        var outcome: String
        if let fault = request.fault {
            outcome = "fault \(fault)"
        } else if let code = request.errorCode {
            outcome = code
        } else if request.presentedRefreshToken != nil, request.issuedRefreshToken != nil {
            outcome = request.rotated ? "rotated" : "kept"
        } else if request.issuedRefreshToken != nil {
            outcome = "signed in"
        } else {
            outcome = ""
        }
        text = [time, request.method, request.path, status, outcome].filter { !$0.isEmpty }.joined(separator: " ")
    }
}

// Spelled out instead of `await FakeFirebaseCommand.main()`: in top-level code the synchronous
// `ParsableCommand.main()` wins overload resolution, and it refuses to run an async command.
do {
    var command = try FakeFirebaseCommand.parseAsRoot()
    if let fake = command as? FakeFirebaseCommand {
        try await fake.serve()
    } else {
        try command.run()
    }
} catch {
    FakeFirebaseCommand.exit(withError: error)
}
