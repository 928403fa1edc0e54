import CTokendShims
import NIOCore
import NIOPosix

/// Swift Concurrency's jobs on NIO's event loops instead of libdispatch's global queues: once a
/// worker of those has run, libdispatch wakes every second for the life of the process (its
/// workqueue monitor; docs/architecture.md, "No libdispatch in the daemon"). A job enqueued from
/// a loop stays on it, so a request's engine task runs where the request was read.
///
/// NIO offers the same (`NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor`),
/// but finds the runtime's hook with dlsym, which fails in the statically linked runtime tokend
/// ships with; here the hook is bound by the linker (`tokend_install_enqueue_global_hook`).
public enum TasksOnEventLoops {
    /// The runtime's hook type (swift/Runtime/Concurrency.h, `swift_task_enqueueGlobal_hook`).
    typealias EnqueueHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Installs the hook; call from `main` before any task exists. False if a hook was already
    /// installed or the runtime has none: tasks then stay on libdispatch.
    public static func install() -> Bool {
        withUnsafeTemporaryAllocation(of: EnqueueHook.self, capacity: 1) { slot in
            slot.baseAddress!.initialize(to: { job, _ in
                MultiThreadedEventLoopGroup.singleton.any().executor.enqueue(ExecutorJob(job))
            })
            // The thin function value is the function's address: what the runtime calls.
            return slot.baseAddress!.withMemoryRebound(to: UnsafeRawPointer.self, capacity: 1) { hook in
                tokend_install_enqueue_global_hook(hook.pointee) == 0
            }
        }
    }
}
