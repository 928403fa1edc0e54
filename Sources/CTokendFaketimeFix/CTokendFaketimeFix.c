// Loaded before libfaketime (LD_PRELOAD="libTokendFaketimeFix.so libfaketimeMT.so.1") by the
// clock tests and scripts/chaos, so that a stepped wall clock behaves as a real clock step does.
//
// 1. libfaketime 0.9.10 shifts the absolute deadline of every timerfd by its wall-clock offset,
//    monotonic timers included, even with FAKETIME_DONT_FAKE_MONOTONIC=1: under an offset of -2h
//    a CLOCK_MONOTONIC timer armed for 1 s from now is 7,200 s away in the kernel. A real step of
//    the wall clock never moves a monotonic timer, so with FAKETIME_DONT_FAKE_MONOTONIC=1 every
//    timer on a clock other than CLOCK_REALTIME goes straight to the kernel.
// 2. A real step of the wall clock moves every armed absolute CLOCK_REALTIME timer with it: one
//    whose deadline the step passed fires at once (that is how tokend notices a suspend or a clock
//    set forward: it has no periodic recheck). libfaketime converts a deadline to the kernel's
//    clock once, when the timer is armed, so a change of FAKETIME_TIMESTAMP_FILE moves nothing. A
//    thread here watches that file and re-arms every wall-clock timer with the deadline it was
//    given, which libfaketime converts again with the new offset.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

// Which descriptors are timers on the wall clock; descriptors past it count as monotonic.
// 65,536 covers any descriptor limit a test raises to (the daemon's soft limit is 1,024).
#define CTOKEND_FAKETIME_FIX_MAX_FD 65536
static _Atomic unsigned char wall_clock_timer[CTOKEND_FAKETIME_FIX_MAX_FD];
// The absolute deadline each wall-clock timer was last armed with, in the faked clock's terms
// (zero: disarmed or relative), under `armed_lock`, for re-arming after a step.
static struct itimerspec armed[CTOKEND_FAKETIME_FIX_MAX_FD];
static pthread_mutex_t armed_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t watcher_once = PTHREAD_ONCE_INIT;

typedef int (*settime_function)(int, int, const struct itimerspec *, struct itimerspec *);

static settime_function faketime_settime(void) {
    return (settime_function)dlsym(RTLD_NEXT, "timerfd_settime");
}

static int is_wall_clock(int clockid) {
    return clockid == CLOCK_REALTIME || clockid == CLOCK_REALTIME_ALARM;
}

static int fakes_monotonic(void) {
    const char *dont = getenv("FAKETIME_DONT_FAKE_MONOTONIC");
    return dont == NULL || strcmp(dont, "1") != 0;
}

// Re-arms every armed wall-clock timer each time the offset file is written (or replaced).
static void *watch_offset_file(void *path_argument) {
    char *path = path_argument;
    char directory[PATH_MAX], name[PATH_MAX];
    strncpy(directory, path, PATH_MAX - 1);
    directory[PATH_MAX - 1] = 0;
    strncpy(name, path, PATH_MAX - 1);
    name[PATH_MAX - 1] = 0;
    const char *base = basename(name);
    int watch = inotify_init1(IN_CLOEXEC);
    if (watch < 0 || inotify_add_watch(watch, dirname(directory), IN_CLOSE_WRITE | IN_MOVED_TO) < 0) return NULL;
    char events[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t length = read(watch, events, sizeof events);
        if (length <= 0) continue;
        int ours = 0;
        for (char *at = events; at < events + length;) {
            struct inotify_event *event = (struct inotify_event *)at;
            if (event->len > 0 && strcmp(event->name, base) == 0) ours = 1;
            at += sizeof(struct inotify_event) + event->len;
        }
        settime_function next = faketime_settime();
        if (!ours || next == NULL) continue;
        pthread_mutex_lock(&armed_lock);
        for (int fd = 0; fd < CTOKEND_FAKETIME_FIX_MAX_FD; fd++) {
            if (atomic_load(&wall_clock_timer[fd]) && (armed[fd].it_value.tv_sec != 0 || armed[fd].it_value.tv_nsec != 0)) {
                next(fd, TFD_TIMER_ABSTIME, &armed[fd], NULL);
            }
        }
        pthread_mutex_unlock(&armed_lock);
    }
    return NULL;
}

static void start_watcher(void) {
    const char *path = getenv("FAKETIME_TIMESTAMP_FILE");
    if (path == NULL) return;
    pthread_t thread;
    if (pthread_create(&thread, NULL, watch_offset_file, strdup(path)) == 0) pthread_detach(thread);
}

int timerfd_create(int clockid, int flags) {
    int fd = (int)syscall(SYS_timerfd_create, clockid, flags);
    if (fd >= 0 && fd < CTOKEND_FAKETIME_FIX_MAX_FD) {
        pthread_mutex_lock(&armed_lock);
        memset(&armed[fd], 0, sizeof armed[fd]);
        atomic_store(&wall_clock_timer[fd], is_wall_clock(clockid));
        pthread_mutex_unlock(&armed_lock);
        if (is_wall_clock(clockid)) pthread_once(&watcher_once, start_watcher);
    }
    return fd;
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value) {
    settime_function next = faketime_settime();
    if (fd >= 0 && fd < CTOKEND_FAKETIME_FIX_MAX_FD && atomic_load(&wall_clock_timer[fd])) {
        // libfaketime's conversion from its faked wall clock to the real one is right here.
        if (next == NULL) return (int)syscall(SYS_timerfd_settime, fd, flags, new_value, old_value);
        pthread_mutex_lock(&armed_lock);
        int result = next(fd, flags, new_value, old_value);
        if (result == 0) {
            if ((flags & TFD_TIMER_ABSTIME) && new_value != NULL) {
                armed[fd] = *new_value;
            } else {
                memset(&armed[fd], 0, sizeof armed[fd]);
            }
        }
        pthread_mutex_unlock(&armed_lock);
        return result;
    }
    if (fakes_monotonic() && next != NULL) return next(fd, flags, new_value, old_value);
    return (int)syscall(SYS_timerfd_settime, fd, flags, new_value, old_value);
}
