extension RefreshFailure {
    /// Most bytes of provider text kept in a message: enough for any real error description,
    /// little enough that a status of hundreds of accounts stays small (a provider's 1 MiB error
    /// page otherwise went into logs, status, events and every reply).
    public static let maximumMessageBytes = 512
    /// Codes are identifiers (`TOKEN_EXPIRED`, `invalid_grant`): anything longer is not one.
    public static let maximumCodeBytes = 64

    /// The failure with its code and message cut to their limits, on a character boundary.
    /// Applied after a provider has redacted its secrets from the text, never before: a cut
    /// could otherwise leave a piece of a secret that redaction no longer recognises.
    public var bounded: RefreshFailure {
        RefreshFailure(code: Self.cut(code, to: Self.maximumCodeBytes), message: Self.cut(message, to: Self.maximumMessageBytes))
    }

    static func cut(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        let marker = "…"
        var kept = ""
        var bytes = marker.utf8.count
        for character in text {
            bytes += character.utf8.count
            guard bytes <= limit else { break }
            kept.append(character)
        }
        return kept + marker
    }
}

extension RefreshOutcome {
    /// The outcome with any failure's text bounded (see `RefreshFailure.bounded`).
    public var bounded: RefreshOutcome {
        switch self {
        case .refreshed: self
        case .transient(let failure, let retryAfter): .transient(failure.bounded, retryAfter: retryAfter)
        case .needsLogin(let failure): .needsLogin(failure.bounded)
        case .misconfigured(let failure): .misconfigured(failure.bounded)
        }
    }
}
