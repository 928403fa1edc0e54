import Foundation

/// A `poll` that ran out of time.
public struct PollTimeout: Error, CustomStringConvertible {
    public var description: String
}

/// Polls `condition` until it holds or the deadline passes: how tests wait for events they
/// cannot subscribe to, instead of sleeping a guessed amount.
public func poll(timeout: Double = Patience.seconds, interval: Double = 0.05, _ message: @autoclosure () -> String, _ condition: () async throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .seconds(interval))  // conversion: a test's own small constant
    }
    if try await condition() { return }
    throw PollTimeout(description: "timed out after \(timeout) s: \(message())")
}
