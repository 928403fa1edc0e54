import Glibc

/// The kill -9 that the move tests inject between two steps of `tokenctl store move`
/// (StoreMoveTests): with `TOKEND_TEST_KILL_AFTER_MOVE_STEP=N` in its environment, a debug build
/// of tokend kills itself with SIGKILL right after step N. A release build (the package, `scripts/
/// install`) compiles it out: the variable does nothing there.
public enum MoveCrashPoint {
    public static let variable = "TOKEND_TEST_KILL_AFTER_MOVE_STEP"

    public static func reached(_ step: Int) {
        #if DEBUG
        guard let value = getenv(variable), Int(String(cString: value)) == step else { return }  // conversion: a failable parse of a String
        kill(getpid(), SIGKILL)
        #endif
    }
}
