import TokendProtocol

/// `hello`: the protocol version, the daemon's version and the ops it serves. Needs no engine.
struct HelloResponder: Sendable {
    let version: String
    let capabilities: [Op]

    func handle(id: RequestID?) -> Response {
        var response = Response(id: id)
        response.protocol = protocolVersion
        response.version = version
        response.capabilities = capabilities.map(\.rawValue)
        return response
    }
}
