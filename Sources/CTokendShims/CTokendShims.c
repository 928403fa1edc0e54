#include "CTokendShims.h"
#include <sys/socket.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <unistd.h>
#include <signal.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>

int tokend_peer_credentials_of(int fd, tokend_peer_credentials *out) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    out->pid = cred.pid;
    out->uid = cred.uid;
    out->gid = cred.gid;
    return 0;
}


int tokend_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

int tokend_is_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

int tokend_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int tokend_accept_connection(int listening_fd) {
    return accept4(listening_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

/* Spawn attributes for a child that starts clean: no blocked signals, default dispositions for
 * the signals a parent commonly ignores, and optionally a process group of its own. */
static int tokend_spawnattr_clean(posix_spawnattr_t *attributes, int own_process_group) {
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGHUP);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    int result = posix_spawnattr_setsigmask(attributes, &empty);
    if (result == 0) result = posix_spawnattr_setsigdefault(attributes, &defaults);
    if (result == 0 && own_process_group) {
        flags |= POSIX_SPAWN_SETPGROUP;
        result = posix_spawnattr_setpgroup(attributes, 0);
    }
    if (result == 0) result = posix_spawnattr_setflags(attributes, flags);
    return result;
}

int tokend_spawn(pid_t *pid, const char *file, int search_path, char *const argv[], char *const envp[],
                 int in_fd, int out_fd, int err_fd, int own_process_group) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int result = posix_spawn_file_actions_init(&actions);
    if (result != 0) return result;
    result = posix_spawnattr_init(&attributes);
    if (result != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return result;
    }
    const int sources[3] = { in_fd, out_fd, err_fd };
    for (int target = 0; target < 3 && result == 0; target++) {
        if (sources[target] < 0) {
            result = posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0);
        } else {
            result = posix_spawn_file_actions_adddup2(&actions, sources[target], target);
        }
    }
    /* Every descriptor from 3 on is closed in the child, including ones other threads open
     * while we spawn (a GNU extension, glibc 2.34+). */
    if (result == 0) result = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (result == 0) result = tokend_spawnattr_clean(&attributes, own_process_group);
    if (result == 0) {
        result = search_path ? posix_spawnp(pid, file, &actions, &attributes, argv, envp)
                             : posix_spawn(pid, file, &actions, &attributes, argv, envp);
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return result;
}

int tokend_tcp4_socket_owner(uint32_t local_address, uint16_t local_port, uint32_t remote_address, uint16_t remote_port, uid_t *owner) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -1;
    struct {
        struct nlmsghdr header;
        struct inet_diag_req_v2 request;
    } message;
    memset(&message, 0, sizeof(message));
    message.header.nlmsg_len = sizeof(message);
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST;  /* no NLM_F_DUMP: one socket, looked up exactly */
    message.request.sdiag_family = AF_INET;
    message.request.sdiag_protocol = IPPROTO_TCP;
    message.request.idiag_states = ~0U;
    message.request.id.idiag_sport = local_port;
    message.request.id.idiag_dport = remote_port;
    message.request.id.idiag_src[0] = local_address;
    message.request.id.idiag_dst[0] = remote_address;
    message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    if (sendto(fd, &message, sizeof(message), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
        int saved = errno; close(fd); errno = saved; return -1;
    }
    /* One answer: an inet_diag_msg, or an NLMSG_ERROR (ENOENT when there is no such socket). */
    union { char bytes[8192]; struct nlmsghdr align; } buffer;
    ssize_t length;
    do { length = recv(fd, buffer.bytes, sizeof(buffer.bytes), 0); } while (length < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    if (length < 0) { errno = saved; return -1; }
    for (struct nlmsghdr *header = &buffer.align; NLMSG_OK(header, (size_t)length); header = NLMSG_NEXT(header, length)) {
        if (header->nlmsg_type == NLMSG_ERROR) {
            struct nlmsgerr *error = NLMSG_DATA(header);
            errno = error->error ? -error->error : ENOENT;
            return -1;
        }
        if (header->nlmsg_type == SOCK_DIAG_BY_FAMILY && header->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
            struct inet_diag_msg *diag = NLMSG_DATA(header);
            /* No inode: a socket no process holds any more (closed by its owner, in FIN_WAIT2 or
               TIME_WAIT), which the kernel reports as uid 0 whoever owned it: unknown, not root's. */
            if (diag->idiag_inode == 0) { errno = ENOENT; return -1; }
            *owner = diag->idiag_uid;
            return 0;
        }
    }
    errno = ENOENT;
    return -1;
}

#include <malloc.h>
#include <stdio.h>
#include <time.h>
#include <sys/mman.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21  // Linux 5.4; older kernels answer EINVAL and the mapping is skipped
#endif

// Holds several lines of /proc/self/smaps; the longest is a mapping's path (PATH_MAX) and ~100
// bytes. A line longer than this ends the walk: it cannot be parsed, and nothing is lost.
#define TOKEND_SMAPS_BUFFER 16384

// The walk of /proc/self/smaps, one line at a time.
struct tokend_smaps_walk {
    unsigned long from, to;
    int file_mapping, read_only, released;
};

static void tokend_smaps_line(struct tokend_smaps_walk *walk, const char *line) {
    unsigned long start, end;
    char permissions[5];
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &start, &end, permissions, &path_at) == 3 && path_at > 0) {
        walk->from = start;
        walk->to = end;
        // Only mappings of a file (the path starts with '/'): pages the kernel can read again.
        walk->file_mapping = line[path_at] == '/';
        walk->read_only = permissions[1] != 'w';
        // MADV_PAGEOUT never loses data (a page copied on write is anonymous memory: kept,
        // or swapped), and drops the page cache too, but only for files this process owns
        // or may write (mm/madvise.c, can_do_file_pageout): tokend's own binary, installed
        // by the user. Shared pages stay.
        if (walk->file_mapping && madvise((void *)walk->from, walk->to - walk->from, MADV_PAGEOUT) == 0) walk->released++;
        return;
    }
    // A read-only mapping with no page copied on write holds nothing but the file's pages:
    // MADV_DONTNEED unmaps them whoever owns the file (a packaged /usr/bin/tokend, or a
    // binary systemd's PrivateUsers= shows as nobody's). Never a writable one: a write between
    // this line and the madvise would be thrown away.
    if (walk->file_mapping && walk->read_only && strncmp(line, "Anonymous:", 10) == 0) {
        unsigned long anonymous = 1;
        walk->file_mapping = 0;
        if (sscanf(line + 10, "%lu", &anonymous) == 1 && anonymous == 0) madvise((void *)walk->from, walk->to - walk->from, MADV_DONTNEED);
    }
}

// malloc_trim shortens only the main arena's top (glibc malloc.c, mtrim: systrim for
// main_arena alone), so a thread arena kept the high-water mark of its thread's busiest moment
// dirty for good: a build farm's 1,000 `tokenctl` processes left the audit writer's ~90 KB.
int tokend_malloc_one_arena(void) {
    return mallopt(M_ARENA_MAX, 1);
}

// read(2) into a stack buffer, not stdio: the pager thread never calls malloc, which under a
// MALLOC_ARENA_MAX an operator set would give it an arena of its own (~100 KB kept for good).
int tokend_release_idle_pages(void) {
    malloc_trim(0);
    int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buffer[TOKEND_SMAPS_BUFFER];
    size_t held = 0;
    struct tokend_smaps_walk walk = {0};
    for (;;) {
        ssize_t length = read(fd, buffer + held, sizeof buffer - 1 - held);
        if (length < 0 && errno == EINTR) continue;
        if (length <= 0) break;
        held += (size_t)length;
        buffer[held] = '\0';
        char *line = buffer, *newline;
        while ((newline = memchr(line, '\n', held - (size_t)(line - buffer))) != NULL) {
            *newline = '\0';
            tokend_smaps_line(&walk, line);
            line = newline + 1;
        }
        held -= (size_t)(line - buffer);
        if (held == sizeof buffer - 1) break;
        memmove(buffer, line, held);
    }
    close(fd);
    return walk.released;
}

/* The pager: a thread that does the release and then sleeps. The thread that asks goes on
 * (its log line, its timer loop): done there, that faulted back ~620 KB of tokend's code the
 * release had just paged out, and kept it until the next release (issue 47). */
static int tokend_pager_ends[2] = {-1, -1};
static pthread_once_t tokend_pager_once = PTHREAD_ONCE_INIT;

// Time for the asking thread to reach its sleep; a release that waits this long loses nothing.
#define TOKEND_PAGER_SETTLE_NS (50 * 1000 * 1000)
// The pager's stack: its smaps buffer and libc's calls, with room; not glibc's 8 MB default.
#define TOKEND_PAGER_STACK (128 * 1024)

static void *tokend_pager_main(void *unused) {
    (void)unused;
    tokend_name_this_thread("tokend-pager");
    for (;;) {
        unsigned char byte;
        ssize_t length = read(tokend_pager_ends[0], &byte, 1);
        if (length < 0 && errno == EINTR) continue;
        if (length <= 0) return NULL;
        struct timespec settle = { .tv_sec = 0, .tv_nsec = TOKEND_PAGER_SETTLE_NS };
        while (nanosleep(&settle, &settle) != 0 && errno == EINTR) {}
        tokend_release_idle_pages();
    }
}

static void tokend_pager_start(void) {
    if (pipe2(tokend_pager_ends, O_CLOEXEC) != 0) return;
    /* A full pipe means releases are pending already: the asker never blocks. */
    fcntl(tokend_pager_ends[1], F_SETFL, O_NONBLOCK);
    pthread_attr_t attributes;
    pthread_t thread;
    sigset_t all, previous;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, TOKEND_PAGER_STACK);
    /* Signals are for the signal pipe's thread: the pager blocks them all. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int created = pthread_create(&thread, &attributes, tokend_pager_main, NULL);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    pthread_attr_destroy(&attributes);
    if (created != 0) {
        close(tokend_pager_ends[0]);
        close(tokend_pager_ends[1]);
        tokend_pager_ends[0] = tokend_pager_ends[1] = -1;
    }
}

int tokend_idle_pager_start(void) {
    pthread_once(&tokend_pager_once, tokend_pager_start);
    return tokend_pager_ends[1] < 0 ? -1 : 0;
}

int tokend_request_idle_release(void) {
    if (tokend_idle_pager_start() != 0) return tokend_release_idle_pages();  // no pager: here, then
    unsigned char byte = 1;
    ssize_t written;
    do { written = write(tokend_pager_ends[1], &byte, 1); } while (written < 0 && errno == EINTR);
    return written == 1 || errno == EAGAIN ? 0 : -1;
}

/* The signals the daemon handles arrive as bytes on one pipe: the handler writes the signal's
 * number (async-signal-safe), a thread reads them. Not a libdispatch signal source: that runs on
 * a Dispatch worker, and once one has run libdispatch wakes every second (SystemTimerSource). */
static int tokend_signal_pipe_ends[2] = {-1, -1};
static pthread_once_t tokend_signal_pipe_once = PTHREAD_ONCE_INIT;

static void tokend_signal_pipe_create(void) {
    if (pipe2(tokend_signal_pipe_ends, O_CLOEXEC) != 0) return;
    /* A full pipe (64 KiB of unread signals) drops the newest: never block in a handler. */
    fcntl(tokend_signal_pipe_ends[1], F_SETFL, O_NONBLOCK);
}

static void tokend_signal_to_pipe(int signal_number) {
    int saved = errno;
    unsigned char byte = (unsigned char)signal_number;
    ssize_t ignored = write(tokend_signal_pipe_ends[1], &byte, 1);
    (void)ignored;
    errno = saved;
}

int tokend_signal_pipe(void) {
    pthread_once(&tokend_signal_pipe_once, tokend_signal_pipe_create);
    return tokend_signal_pipe_ends[0];
}

int tokend_forward_signal(int signal_number) {
    if (tokend_signal_pipe() < 0) return -1;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = tokend_signal_to_pipe;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    return sigaction(signal_number, &action, NULL);
}

int tokend_name_this_thread(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = 0;
    return pthread_setname_np(pthread_self(), truncated);
}

/* Referenced by name, so that the linker binds it: the runtime tokend ships links in statically
 * (--static-swift-stdlib), which hides its symbols from dlsym, where NIO looks for the hook. Weak,
 * for the binaries that link these shims without Swift Concurrency. */
extern const void *swift_task_enqueueGlobal_hook __attribute__((weak));

int tokend_install_enqueue_global_hook(const void *hook) {
    if (&swift_task_enqueueGlobal_hook == NULL) return -1;
    const void *none = NULL;
    return __atomic_compare_exchange_n(&swift_task_enqueueGlobal_hook, &none, hook, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) ? 0 : -1;
}
