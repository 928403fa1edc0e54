#include "CTokendShims.h"
#include <sys/socket.h>
#include <sys/prctl.h>

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
