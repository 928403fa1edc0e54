import Testing
import TokendKeyring
@testable import TokendServer

/// What one keyring answer says about the keyring as a whole (the engine's write-back and its
/// events follow from it).
@Suite struct KeyringStateTransitionTests {
    @Test(arguments: [KeyringState.available, .locked, .unavailable, .needsConfirmation])
    func anAnswerSetsTheMood(from before: KeyringState) {
        #expect(before.after(.success(())) == .available)
        #expect(before.after(.failure(KeyringError(.locked, "locked"))) == .locked)
        #expect(before.after(.failure(KeyringError(.unavailable, "no service"))) == .unavailable)
        // Issue 31: no answer in time (a dialog waiting, or a frozen service) is not "unavailable".
        #expect(before.after(.failure(KeyringError(.timedOut, "frozen"))) == .needsConfirmation)
        #expect(before.after(.failure(KeyringError(.needsConfirmation, "confirm access"))) == .needsConfirmation)
    }

    /// One unreadable or refused item is that item's problem, not the keyring's.
    @Test(arguments: [KeyringState.available, .locked, .unavailable])
    func anItemsFailureKeepsTheMood(from before: KeyringState) {
        #expect(before.after(.failure(KeyringError(.corrupt, "bad json"))) == before)
        #expect(before.after(.failure(KeyringError(.failed, "refused"))) == before)
    }
}
