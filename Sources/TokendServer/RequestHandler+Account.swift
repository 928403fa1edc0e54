import TokendCore
import TokendProtocol

extension RequestHandler {
    /// The `account` op: Firebase account management.
    func accountAction(_ request: Request) async throws(TokendError) -> Reply {
        throw TokendError(.unsupportedOp, "account management is not available in this version")
    }
}
