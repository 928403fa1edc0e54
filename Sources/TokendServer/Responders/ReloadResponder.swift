import TokendCore
import TokendProtocol

/// `reload`: answers only once the file is applied (`config`, `configured`) or refused
/// (`config_error` naming file, line and key), so that a client's next request meets the result.
struct ReloadResponder: Sendable {
    /// Nil: a router with no file behind it, whose `hello` does not list the op either.
    let configuration: (any ConfigurationService)?

    func handle(id: RequestID?) async throws(TokendError) -> Response {
        guard let configuration else { throw TokendError(.unsupportedOp, "reload: this server reads no configuration file") }
        let summary = try await configuration.reload().get()
        var response = Response(id: id)
        response.config = summary.path
        response.configured = summary.accounts
        return response
    }
}
