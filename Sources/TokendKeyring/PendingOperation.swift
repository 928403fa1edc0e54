import CLibsecret
import Synchronization

/// A GCancellable shared by the keyring thread, which hands it to libsecret, and the deadline
/// timer, which cancels it so that a stuck call (or a prompt nobody answers) gives the thread back.
final class CancellableHandle: @unchecked Sendable {  // GLib documents GCancellable's cancel and ref/unref as callable from any thread
    let pointer: UnsafeMutablePointer<GCancellable>

    init() { pointer = g_cancellable_new() }

    func cancel() { g_cancellable_cancel(pointer) }

    deinit { g_object_unref(pointer) }
}

/// One caller waiting for one keyring operation: answered exactly once, by whichever comes
/// first, the operation finishing on the keyring thread or its deadline.
final class PendingOperation<Success: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<Success, KeyringError>, Never>?
        var cancellable: CancellableHandle?
    }

    private let state: Mutex<State>

    init(_ continuation: CheckedContinuation<Result<Success, KeyringError>, Never>) {
        state = Mutex(State(continuation: continuation))
    }

    /// On the keyring thread, as the operation starts: registers what the deadline cancels.
    /// False if the caller has already been answered, in which case the operation must not run.
    func begin(_ cancellable: CancellableHandle) -> Bool {
        state.withLock { state in
            guard state.continuation != nil else { return false }
            state.cancellable = cancellable
            return true
        }
    }

    /// Answers the caller with `result`; false if the deadline already had.
    @discardableResult
    func finish(_ result: Result<Success, KeyringError>) -> Bool {
        let continuation = state.withLock { state in
            state.cancellable = nil
            return state.continuation.take()
        }
        continuation?.resume(returning: result)
        return continuation != nil
    }

    /// Answers the caller with `error` if the operation has not started (nor been answered).
    func expireIfWaiting(_ error: KeyringError) {
        let continuation = state.withLock { state in
            state.cancellable == nil ? state.continuation.take() : nil
        }
        continuation?.resume(returning: .failure(error))
    }

    /// Answers the caller with `error` if nothing has yet, and cancels the call in flight.
    func expire(_ error: KeyringError) {
        let (continuation, cancellable) = state.withLock { state in
            (state.continuation.take(), state.cancellable.take())
        }
        guard let continuation else { return }
        cancellable?.cancel()
        continuation.resume(returning: .failure(error))
    }
}
