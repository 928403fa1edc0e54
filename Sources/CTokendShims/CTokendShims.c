#include "CTokendShims.h"
#include <sys/socket.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <unistd.h>
#include <signal.h>

int tokend_peer_credentials_of(int fd, tokend_peer_credentials *out) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    out->pid = cred.pid;
    out->uid = cred.uid;
    out->gid = cred.gid;
    return 0;
}

int tokend_so_peercred(void) { return SO_PEERCRED; }

int tokend_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

int tokend_is_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

int tokend_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int tokend_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int tokend_spawnattr_clean(posix_spawnattr_t *attributes, int own_process_group) {
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
