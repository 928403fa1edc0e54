import CTokendShims
import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

/// `docker-credential-tokend`: the docker credential-helper protocol, which docker, podman,
/// skopeo and buildah speak to a program named `docker-credential-NAME` on PATH
/// (github.com/docker/docker-credential-helpers, `client/client.go`; containers/image,
/// `pkg/docker/config`): `get` reads a server URL on stdin and prints
/// `{"ServerURL","Username","Secret"}`; `list` prints `{serverURL: username}`; `store` and
/// `erase` read their input and do nothing (tokend owns the session). The account whose
/// `registry_hosts` claims the registry answers.
public enum DockerCredentialHelper {
    /// The helper protocol's "no credentials for this registry": tools match this text on stdout
    /// (`credentials.IsErrCredentialsNotFoundMessage`) and go on without credentials.
    static let notFound = "credentials not found in native keychain"
    /// Google's registries and most OAuth-fronted ones take an access token as the password of
    /// this user; never `<token>`, which marks the secret as an identity token to exchange.
    static let defaultUsername = "oauth2accesstoken"
    /// A server URL or a `store` payload is a few hundred bytes; 64 KiB matches the socket's cap.
    static let inputLimit = 64 * 1024

    enum Operation: String, CaseIterable { case get, store, erase, list, version }

    /// The executable's entry: the process's environment and console.
    public static func runAsProcess(_ arguments: [String]) -> Int32 {
        run(arguments, environment: .process(), console: SystemConsole())
    }

    /// Runs one operation and returns the exit status. Failures go to stdout, one line: that is
    /// where the protocol's callers read them (they show them to the user as the error).
    static func run(_ arguments: [String], environment: Environment, console: any Console) -> Int32 {
        _ = signal(SIGPIPE, SIG_IGN)
        guard arguments.count == 1, let operation = Operation(rawValue: arguments[0]) else {
            let failure = TokenctlError(
                .usage, "expected one of \(Operation.allCases.map(\.rawValue).joined(separator: ", "))",
                next: "container tools run this helper themselves: set \"credHelpers\" in their auth.json (see tokend's README)")
            console.writeError(failure.line + "\n")
            return failure.code.exitCode
        }
        let context = CommandContext(console: console, environment: environment)
        do {
            try execute(operation, context)
            return 0
        } catch {
            // "Not found" is the protocol's own sentence, matched as written; the rest say what to do.
            try? console.write((error.message == notFound ? notFound : error.line) + "\n")
            return error.code.exitCode
        }
    }

    static func execute(_ operation: Operation, _ context: CommandContext) throws(TokenctlError) {
        switch operation {
        case .version:
            try context.console.write("docker-credential-tokend \(tokendVersion)\n")
        case .store, .erase:
            _ = try context.console.readInput(limit: inputLimit)  // the caller writes it before it waits
        case .list:
            var listing: [String: String] = [:]
            for status in try DaemonConnection.accounts(settings, context) {
                for host in status.registryHosts ?? [] { listing[host] = status.registryUsername ?? defaultUsername }
            }
            try context.console.write(Text.jsonObject(listing) + "\n")
        case .get:
            let input = try context.console.readInput(limit: inputLimit)
            let serverURL = String(decoding: input, as: UTF8.self).trimmed
            _ = tokend_set_not_dumpable()
            let statuses = try DaemonConnection.accounts(settings, context)
            let claims = statuses.map { (account: $0.name, hosts: $0.registryHosts ?? []) }
            guard let account = RegistryHostClaim.account(for: serverURL, claims: claims) else {
                throw TokenctlError(.failure, notFound, next: "")
            }
            let grant = try DaemonConnection.token(of: account, settings, context)
            let username = statuses.first { $0.name == account }?.registryUsername ?? defaultUsername
            try context.console.write(Text.jsonObject(["ServerURL": serverURL, "Username": username, "Secret": grant.token]) + "\n")
        }
    }

    /// The container tools give a helper no flags: the socket comes from the environment, and
    /// the wait is tokenctl's default.
    static let settings = ConnectionSettings(socket: nil, timeout: ConnectionOptions.defaultTimeout)
}
