import CTokendShims
import Glibc

// The process-wide hardening `prepare` applies to a daemon that runs in its own process.
extension Daemon {
    /// No core files and no same-user ptrace or /proc/PID/mem: a crash or a debugger must not
    /// lift tokens out of memory (ssh-agent does the same). Done first, before any secret is read.
    func hardenProcess() {
        if tokend_set_not_dumpable() != 0 || tokend_is_dumpable() != 0 {
            logger.critical("cannot make the process non-dumpable; tokens could be read by a debugger of the same user", metadata: ["errno": "\(errno)"])
        }
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        if setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none) != 0 {
            logger.critical("cannot set the core file size limit to 0", metadata: ["errno": "\(errno)"])
        }
    }

    /// Raises the soft descriptor limit to the hard one (often 1024 → 524288 under systemd), so
    /// that the listener's connection cap, not the kernel, is what turns a flood away.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }
}
