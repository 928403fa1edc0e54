#ifndef CTOKEND_SHIMS_H
#define CTOKEND_SHIMS_H
// The timer thread's kernel interfaces (TokendSystem's TimerThread), which Glibc's module leaves out.
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/types.h>

/// The peer's credentials as the kernel reports them for a Unix socket (SO_PEERCRED).
typedef struct {
    pid_t pid;
    uid_t uid;
    gid_t gid;
} tokend_peer_credentials;

/// Reads SO_PEERCRED of a connected Unix socket. Returns 0, or -1 with errno set.
int tokend_peer_credentials_of(int fd, tokend_peer_credentials *out);

/// Makes the process non-dumpable: no core files and no ptrace by same-uid processes,
/// so a crash or a debugger cannot lift tokens out of memory (ssh-agent does the same).
int tokend_set_not_dumpable(void);

/// 1 while the process is dumpable, 0 once tokend_set_not_dumpable has worked (PR_GET_DUMPABLE).
int tokend_is_dumpable(void);

/// pipe2(O_CLOEXEC): a pipe no other child spawned meanwhile inherits (GNU, hence here).
int tokend_pipe_cloexec(int fds[2]);

/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC (GNU, hence here): the next waiting connection, or
/// -1 with errno set (EAGAIN: none).
int tokend_accept_connection(int listening_fd);

/// The one way tokend's programs start another (hooks, xdg-open, the tests' children):
/// posix_spawn of `file` (posix_spawnp when `search_path`) with `argv` and `envp`; descriptors
/// 0, 1 and 2 are `in_fd`, `out_fd` and `err_fd` (-1: /dev/null) and every other one is closed,
/// so no child inherits a socket or a pipe end; no blocked signals and default dispositions for
/// SIGPIPE, SIGHUP, SIGINT and SIGTERM (which a parent commonly ignores or blocks); a process
/// group of its own when `own_process_group`, so the whole group can be killed. Returns 0 or an
/// errno value; `*pid` is the child's.
int tokend_spawn(pid_t *pid, const char *file, int search_path, char *const argv[], char *const envp[],
                 int in_fd, int out_fd, int err_fd, int own_process_group);

/// The uid owning the IPv4 TCP socket whose local end is `local_address:local_port` and whose
/// remote end is `remote_address:remote_port` (addresses and ports in network byte order), asked
/// of the kernel by exact lookup over NETLINK_SOCK_DIAG (what `ss` uses): on loopback, the owner
/// of a connection's other end. Returns 0, or -1 with errno set (ENOENT: no such socket, or one
/// its process has closed, whose owner the kernel no longer knows).
int tokend_tcp4_socket_owner(uint32_t local_address, uint16_t local_port, uint32_t remote_address, uint16_t remote_port, uid_t *owner);

/// Makes every thread allocate from glibc's one main arena (mallopt M_ARENA_MAX = 1); call before
/// any thread but the first allocates (docs/architecture.md, "Memory at idle"). Returns mallopt's
/// answer: 1 when set.
int tokend_malloc_one_arena(void);

/// Gives back memory an idle daemon holds for nothing (docs/architecture.md, "Memory at idle"):
/// free heap pages (malloc_trim); every file mapping paged out (MADV_PAGEOUT: the page cache too,
/// for files the process owns); every read-only file mapping without private copies unmapped
/// (MADV_DONTNEED). Pages come back from the file when used. Returns how many mappings were paged
/// out, or -1 with errno set.
int tokend_release_idle_pages(void);

/// `tokend_release_idle_pages` on the pager, a thread that does nothing else: it waits 50 ms for
/// the caller to go back to sleep, releases, and sleeps. Returns at once: 0, or -1 with errno set.
/// Without a pager (no thread could be made) the release runs here and returns as it does.
int tokend_request_idle_release(void);

/// Starts the pager (once; later calls do nothing): 0, or -1 if it has no thread, and releases
/// then run on the thread that asks.
int tokend_idle_pager_start(void);

/// The read end of the process's signal pipe (created once): each signal passed to
/// `tokend_forward_signal` arrives there as one byte, its number. -1 if no pipe could be made.
int tokend_signal_pipe(void);

/// Installs `hook` as Swift Concurrency's global-executor hook (`swift_task_enqueueGlobal_hook`,
/// swift/Runtime/Concurrency.h), if none is installed yet. 0, or -1 (one is already, or this
/// process has no Swift Concurrency runtime).
int tokend_install_enqueue_global_hook(const void *hook);

/// Names the calling thread (the first 15 bytes show in `ps -L` and /proc/PID/task/TID/comm).
int tokend_name_this_thread(const char *name);

/// Replaces `signal_number`'s action by a write of its number to the signal pipe. 0, or -1.
int tokend_forward_signal(int signal_number);

#endif
