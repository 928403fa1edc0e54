import ArgumentParser
import CTokendShims
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl exec-credential ACCOUNT`: a client-go credential plugin for kubectl. kubectl
    /// says which ExecCredential version it wants in KUBERNETES_EXEC_INFO; the answer uses it.
    /// With `--format google`, Google's executable-sourced credential instead (google-auth's
    /// `credential_source.executable`, `GoogleExecutableResponse`).
    struct ExecCredential: TokenctlCommand {
        static let configuration = CommandConfiguration(
            commandName: "exec-credential",
            abstract: "Print a kubectl ExecCredential, or Google's executable-sourced credential, for an account.",
            discussion: "Use it as a kubeconfig user's exec plugin, or as the command of a Google external account's credential_source.executable; see the README for both snippets.")

        /// Whose credential-plugin format to print.
        enum Format: String, ExpressibleByArgument, CaseIterable {
            /// client-go's ExecCredential (kubectl, client.authentication.k8s.io).
            case kubectl
            /// Google's executable-sourced credential response, version 1 (google-auth).
            case google
        }

        @OptionGroup var token: TokenOptions

        @Option(help: "kubectl (an ExecCredential) or google (an executable-sourced credential for google-auth).")
        var format: Format = .kubectl

        static let group = "client.authentication.k8s.io"
        /// The versions this plugin can answer; kubectl sends one of them in KUBERNETES_EXEC_INFO.
        static let versions = ["\(group)/v1", "\(group)/v1beta1"]

        func execute(_ context: CommandContext) throws(TokenctlError) {
            _ = tokend_set_not_dumpable()
            switch format {
            case .kubectl:
                let apiVersion = try Self.requestedVersion(context.environment["KUBERNETES_EXEC_INFO"])
                let grant = try token.fetch(context)
                try context.console.write(Self.render(apiVersion: apiVersion, grant: grant) + "\n")
            case .google:
                try GoogleExecutableResponse.answer(token, context)
            }
        }

        /// The `apiVersion` kubectl asked for; v1 when it said nothing (kubectl before 1.22, or a
        /// manual run).
        static func requestedVersion(_ execInfo: String?) throws(TokenctlError) -> String {
            guard let execInfo, !execInfo.trimmed.isEmpty else { return versions[0] }
            struct ExecInfo: Decodable { var apiVersion: String? }
            guard let info = try? JSONDecoder().decode(ExecInfo.self, from: Data(execInfo.utf8)) else {
                throw TokenctlError(.usage, "KUBERNETES_EXEC_INFO is not an ExecCredential JSON object", next: "run tokenctl exec-credential from kubectl, or unset it")
            }
            guard let version = info.apiVersion, versions.contains(version) else {
                throw TokenctlError(
                    .usage, "kubectl asked for ExecCredential \(Text.singleLine(info.apiVersion ?? "without an apiVersion"))",
                    next: "set apiVersion: \(versions[0]) (or v1beta1) in the kubeconfig's exec section")
            }
            return version
        }

        static func render(apiVersion: String, grant: TokenGrant) -> String {
            struct Status: Encodable {
                var token: String
                /// Optional in the schema: without it kubectl asks again on every call.
                var expirationTimestamp: String?
            }
            struct Credential: Encodable {
                var apiVersion: String
                var kind = "ExecCredential"
                var status: Status
            }
            return Text.jsonObject(Credential(apiVersion: apiVersion, status: Status(token: grant.token, expirationTimestamp: grant.expiresAt)))
        }
    }
}
