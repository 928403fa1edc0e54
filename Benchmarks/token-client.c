// The floor of `tokenctl token ACCOUNT`: a static C client that sends the same request line over
// the same socket, reads the one reply line and prints its token. What any client process can do
// at best (process start, one connect, one round trip, one write to stdout); scripts/bench builds
// it with `gcc -static -O2` and times it beside tokenctl with hyperfine.
//
//   token-client ACCOUNT     # socket: $TOKEND_SOCKET, else $XDG_RUNTIME_DIR/tokend/tokend.sock
//
// The request is the line tokenctl writes for `tokenctl token ACCOUNT` (its keys sorted, `id` 1,
// the default 30 s timeout; docs/protocol.md). Exit 0 with the token on stdout, 1 otherwise.
// The token is copied as it stands between its quotes: a JWT or opaque token has no escapes.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

// Tokens can be tens of KiB (docs/protocol.md caps a line at 64 KiB).
static char reply[1 << 17];

static int fail(const char *what) {
    fprintf(stderr, "token-client: %s\n", what);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) return fail("usage: token-client ACCOUNT");
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    const char *socket_path = getenv("TOKEND_SOCKET"), *runtime = getenv("XDG_RUNTIME_DIR");
    int length;
    if (socket_path && *socket_path)
        length = snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path);
    else if (runtime && *runtime)
        length = snprintf(address.sun_path, sizeof address.sun_path, "%s/tokend/tokend.sock", runtime);
    else
        return fail("set TOKEND_SOCKET or XDG_RUNTIME_DIR");
    if (length < 0 || (size_t)length >= sizeof address.sun_path) return fail("socket path too long");

    char request[512];
    int request_length = snprintf(request, sizeof request,
        "{\"account\":\"%s\",\"id\":1,\"op\":\"token\",\"timeout\":30}\n", argv[1]);
    if (request_length < 0 || (size_t)request_length >= sizeof request) return fail("account name too long");

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) < 0) return fail("cannot connect");
    if (write(fd, request, (size_t)request_length) != request_length) return fail("cannot send");
    size_t used = 0;
    for (;;) {
        if (used + 1 >= sizeof reply) return fail("reply too long");
        ssize_t n = read(fd, reply + used, sizeof reply - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return fail("no reply");
        used += (size_t)n;
        if (reply[used - 1] == '\n') break;
    }
    reply[used] = 0;
    close(fd);
    static const char key[] = "\"token\":\"";
    char *token = strstr(reply, key);
    if (!strstr(reply, "\"ok\":true") || !token) return fail("no token in the reply");
    token += sizeof key - 1;
    char *end = strchr(token, '"');
    if (!end) return fail("malformed reply");
    *end = '\n';
    size_t token_length = (size_t)(end - token) + 1;
    return fwrite(token, 1, token_length, stdout) == token_length && fflush(stdout) == 0 ? 0 : 1;
}
