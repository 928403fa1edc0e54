import Glibc

/// The one thread that makes every libsecret and GLib call of a `LibsecretStore`.
///
/// libsecret's `_sync` calls block, for as long as the Secret Service takes (GDBus's default call
/// timeout is 25 s, a prompt waits forever), so they must stay off Swift's cooperative pool; one
/// thread also keeps jobs in the order they were enqueued. A plain pthread with a mutex and a
/// condition variable: the daemon side stays off full Foundation.
final class KeyringThread: @unchecked Sendable {  // all mutable state is touched only with `mutex` held
    /// One queued operation. A job waits in the queue as long as the jobs before it take: its
    /// deadline counts from when it starts, so a long queue behind a healthy keyring expires
    /// nothing.
    struct Job: Sendable {
        /// Runs the operation on the keyring thread; false if the Secret Service did not answer
        /// it by its deadline.
        let run: @Sendable () -> Bool
        /// Answers the caller without running the operation: it was queued behind one the Secret
        /// Service did not answer, and waiting one deadline more for each would keep every
        /// caller behind a frozen keyring waiting for all the others' deadlines.
        let abandon: @Sendable () -> Void
    }

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [Job] = []
    private var headIndex = 0
    private var stopping = false

    /// What the new thread runs; handed over through pthread_create's context pointer.
    private final class Start {
        let owner: KeyringThread
        let name: String
        let setUp: @Sendable () -> Void
        let tearDown: @Sendable () -> Void

        init(owner: KeyringThread, name: String, setUp: @escaping @Sendable () -> Void, tearDown: @escaping @Sendable () -> Void) {
            self.owner = owner
            self.name = name
            self.setUp = setUp
            self.tearDown = tearDown
        }
    }

    /// Starts the thread. `setUp` and `tearDown` run on it, first and last. `name` (at most 15
    /// bytes, the kernel's limit) shows in `top -H` and debuggers.
    init(name: String, setUp: @escaping @Sendable () -> Void = {}, tearDown: @escaping @Sendable () -> Void = {}) {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        // The thread keeps its owner alive until it has drained the queue after stop().
        let start = Unmanaged.passRetained(Start(owner: self, name: name, setUp: setUp, tearDown: tearDown))
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            KeyringThread.nameCurrentThread(start.name)
            start.setUp()
            start.owner.runJobs()
            start.tearDown()
            return nil
        }, start.toOpaque())
        precondition(created == 0, "cannot start the keyring thread: error \(created)")
        pthread_detach(thread)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Queues a job; returns at once.
    func enqueue(_ job: Job) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Lets the thread finish the jobs already queued, then end.
    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    private func runJobs() {
        while let job = nextJob() {
            if !job.run() {
                for queued in takeQueuedJobs() { queued.abandon() }
            }
        }
    }

    /// Empties the queue; the jobs are answered outside the mutex.
    private func takeQueuedJobs() -> ArraySlice<Job> {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let queued = jobs[headIndex...]
        jobs.removeAll(keepingCapacity: true)
        headIndex = 0
        return queued
    }

    /// Blocks until a job is queued; nil once stopped and drained.
    private func nextJob() -> Job? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while headIndex == jobs.count {
            if stopping { return nil }
            pthread_cond_wait(condition, mutex)
        }
        let job = jobs[headIndex]
        headIndex += 1
        // Reset once drained rather than removeFirst() each time (O(n) per job).
        if headIndex == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            headIndex = 0
        }
        return job
    }

    /// pthread_setname_np and prctl are out of reach from Swift's Glibc module (a _GNU_SOURCE
    /// declaration, a variadic function); the kernel's file for it is not.
    private static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        _ = Array(name.utf8.prefix(15)).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
}
