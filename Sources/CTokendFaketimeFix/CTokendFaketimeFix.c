// Loaded before libfaketime (LD_PRELOAD="libTokendFaketimeFix.so libfaketimeMT.so.1") by the
// clock tests and scripts/chaos, so that a stepped wall clock behaves as a real clock step does.
//
// libfaketime 0.9.10 shifts the absolute deadline of every timerfd by its wall-clock offset,
// monotonic timers included, even with FAKETIME_DONT_FAKE_MONOTONIC=1: under an offset of -2h a
// CLOCK_MONOTONIC timer armed for 1 s from now is 7,200 s away in the kernel. A real step of the
// wall clock never moves a monotonic timer, so this file hands every timer on a clock other than
// CLOCK_REALTIME straight to the kernel, and leaves wall-clock timers to libfaketime.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

// Which descriptors are timers on the wall clock; descriptors past it count as monotonic.
// 65,536 covers any descriptor limit a test raises to (the daemon's soft limit is 1,024).
#define CTOKEND_FAKETIME_FIX_MAX_FD 65536
static _Atomic unsigned char wall_clock_timer[CTOKEND_FAKETIME_FIX_MAX_FD];

static int is_wall_clock(int clockid) {
    return clockid == CLOCK_REALTIME || clockid == CLOCK_REALTIME_ALARM;
}

int timerfd_create(int clockid, int flags) {
    int fd = (int)syscall(SYS_timerfd_create, clockid, flags);
    if (fd >= 0 && fd < CTOKEND_FAKETIME_FIX_MAX_FD) {
        atomic_store(&wall_clock_timer[fd], is_wall_clock(clockid));
    }
    return fd;
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value) {
    if (fd >= 0 && fd < CTOKEND_FAKETIME_FIX_MAX_FD && atomic_load(&wall_clock_timer[fd])) {
        // libfaketime's conversion from its faked wall clock to the real one is right here.
        int (*next)(int, int, const struct itimerspec *, struct itimerspec *) =
            (int (*)(int, int, const struct itimerspec *, struct itimerspec *))dlsym(RTLD_NEXT, "timerfd_settime");
        if (next != NULL) return next(fd, flags, new_value, old_value);
    }
    return (int)syscall(SYS_timerfd_settime, fd, flags, new_value, old_value);
}
