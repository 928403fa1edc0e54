import CTokendShims
import Glibc

/// A thread of its own for work that blocks (a timer wait, a signal read, a child's exit): not
/// Swift's cooperative pool, which must never block, and not libdispatch (`TimerThread` says why).
public enum DedicatedThread {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Runs `body` on a new detached thread named `name` (its first 15 bytes show in `ps -L`). A
    /// process that cannot start a thread is out of memory or of its thread limit: it stops.
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let argument = Unmanaged.passRetained(Body {
            _ = tokend_name_this_thread(name)
            body()
        }).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { argument in
            Unmanaged<Body>.fromOpaque(argument!).takeRetainedValue().run()
            return nil
        }, argument)
        precondition(created == 0, "cannot start the \(name) thread (error \(created))")
        pthread_detach(thread)
    }
}
