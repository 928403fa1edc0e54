// A load generator for token daemons on a Unix socket: N client threads ask for a token as fast
// as the daemon answers, for a fixed time, and the merged latency histogram gives req/s and
// percentiles. C, so that the client's own cost stays far below the daemon's.
//
//   loadgen --socket PATH --protocol tokend|oidc-agent --account NAME
//           --clients N --mode per-request|persistent --seconds S
//
// Prints one tab-separated line: protocol mode clients requests errors seconds req/s p50 p99 p999
// (latencies in microseconds). tokend speaks JSON Lines (docs/protocol.md) and keeps a connection
// open; oidc-agent reads one JSON message per connection and closes it after its answer, so it
// has no persistent mode.
//
//   loadgen --serve PATH --reply-bytes N
//
// The loopback ceiling: a bare single-threaded epoll server on PATH that answers every line with
// a canned N-byte `{"ok":true,...}` line, keeping the connection until the client closes it.
// What any daemon on this socket can do at best; `--protocol ceiling` measures it with tokend's
// request (same lines, same framing).
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

// Log-linear histogram (HdrHistogram's layout, simplified): 2^SUB_BITS buckets per power of two
// keep every recorded latency within 1/64 (1.6 %) of its true value, from 1 ns to 2^40 ns (18 min).
#define SUB_BITS 6
#define SUB_COUNT (1 << SUB_BITS)
#define MAGNITUDES 40
#define BUCKETS (MAGNITUDES * SUB_COUNT)

typedef struct {
    uint64_t counts[BUCKETS];
    uint64_t requests, errors;
} histogram;

static int bucket_of(uint64_t ns) {
    if (ns < SUB_COUNT) return (int)ns;
    int magnitude = 63 - __builtin_clzll(ns) - SUB_BITS + 1;
    if (magnitude >= MAGNITUDES) return BUCKETS - 1;
    return magnitude * SUB_COUNT + (int)((ns >> (magnitude - 1)) & (SUB_COUNT - 1));
}

static uint64_t value_of(int bucket) {
    int magnitude = bucket / SUB_COUNT, sub = bucket % SUB_COUNT;
    if (magnitude == 0) return (uint64_t)sub;
    return ((uint64_t)(SUB_COUNT + sub)) << (magnitude - 1);
}

static uint64_t percentile(const histogram *h, double p) {
    uint64_t total = 0;
    for (int i = 0; i < BUCKETS; i++) total += h->counts[i];
    if (total == 0) return 0;
    uint64_t rank = (uint64_t)(p / 100.0 * (double)total + 0.5), seen = 0;
    if (rank == 0) rank = 1;
    for (int i = 0; i < BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) return value_of(i);
    }
    return value_of(BUCKETS - 1);
}

static const char *socket_path, *account = "bench", *protocol = "tokend", *mode = "per-request";
static int clients = 1;
static double seconds = 5;
static int oidc_agent, persistent;
static char request[512];
static size_t request_length;
static atomic_int started;
static uint64_t deadline_ns;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int connect_daemon(void) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, socket_path, sizeof address.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int write_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, data, length);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        data += n;
        length -= (size_t)n;
    }
    return 0;
}

// Reads one answer: up to a newline (tokend) or to the end of the connection (oidc-agent).
// Returns 0 when it says success, 1 when it is a failure answer, -1 on a broken connection.
static int read_answer(int fd, char *buffer, size_t capacity) {
    size_t used = 0;
    for (;;) {
        if (used + 1 >= capacity) return -1;
        ssize_t n = read(fd, buffer + used, capacity - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) {
            if (!oidc_agent || used == 0) return -1;
            break;
        }
        used += (size_t)n;
        if (!oidc_agent && buffer[used - 1] == '\n') break;
    }
    buffer[used] = 0;
    const char *success = oidc_agent ? "\"status\":\"success\"" : "\"ok\":true";
    return strstr(buffer, success) ? 0 : 1;
}

static void *client(void *argument) {
    histogram *h = argument;
    // Tokens can be tens of KiB; a fixed buffer per thread keeps the hot loop allocation-free.
    static __thread char buffer[1 << 17];
    atomic_fetch_add(&started, 1);
    int fd = -1;
    while (now_ns() < deadline_ns) {
        uint64_t start = now_ns();
        if (fd < 0 && (fd = connect_daemon()) < 0) {
            h->errors++;
            continue;
        }
        int result = write_all(fd, request, request_length) < 0 ? -1 : read_answer(fd, buffer, sizeof buffer);
        uint64_t elapsed = now_ns() - start;
        if (result == 0) {
            h->counts[bucket_of(elapsed)]++;
            h->requests++;
        } else {
            h->errors++;
        }
        if (!persistent || result < 0) {
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0) close(fd);
    return NULL;
}

// The ceiling server: one thread, epoll, no allocation per request. A request line is small and
// arrives whole on loopback; a read that ends without a newline is simply read again later.
static int serve(const char *path, size_t reply_bytes) {
    static char reply[1 << 16], input[1 << 12];
    if (reply_bytes < 16 || reply_bytes > sizeof reply) return 64;
    int prefix = snprintf(reply, sizeof reply, "{\"ok\":true,\"token\":\"");
    memset(reply + prefix, 'x', reply_bytes - (size_t)prefix - 3);
    memcpy(reply + reply_bytes - 3, "\"}\n", 3);
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, path, sizeof address.sun_path - 1);
    unlink(path);
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 256) < 0) {
        perror("loadgen: serve");
        return 71;
    }
    int poller = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = listener}, events[64];
    epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
    for (;;) {
        int ready = epoll_wait(poller, events, 64, -1);
        for (int i = 0; i < ready; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                int client;
                while ((client = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
                    struct epoll_event added = {.events = EPOLLIN, .data.fd = client};
                    epoll_ctl(poller, EPOLL_CTL_ADD, client, &added);
                }
                continue;
            }
            ssize_t n = read(fd, input, sizeof input);
            if (n <= 0) {
                close(fd);  // also leaves the epoll set
                continue;
            }
            for (ssize_t j = 0; j < n; j++) {
                if (input[j] == '\n' && write_all(fd, reply, reply_bytes) < 0) break;
            }
        }
    }
}

static void usage(void) {
    fprintf(stderr, "usage: loadgen --socket PATH [--protocol tokend|oidc-agent|ceiling] [--account NAME] "
                    "[--clients N] [--mode per-request|persistent] [--seconds S]\n"
                    "       loadgen --serve PATH [--reply-bytes N]\n");
    exit(64);
}

int main(int argc, char **argv) {
    const char *serve_path = NULL;
    size_t reply_bytes = 1024;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage();
        const char *name = argv[i], *value = argv[++i];
        if (!strcmp(name, "--socket")) socket_path = value;
        else if (!strcmp(name, "--protocol")) protocol = value;
        else if (!strcmp(name, "--account")) account = value;
        else if (!strcmp(name, "--clients")) clients = atoi(value);
        else if (!strcmp(name, "--mode")) mode = value;
        else if (!strcmp(name, "--seconds")) seconds = atof(value);
        else if (!strcmp(name, "--serve")) serve_path = value;
        else if (!strcmp(name, "--reply-bytes")) reply_bytes = (size_t)atol(value);
        else usage();
    }
    if (serve_path) return serve(serve_path, reply_bytes);
    if (!socket_path || clients < 1 || seconds <= 0) usage();
    oidc_agent = !strcmp(protocol, "oidc-agent");
    persistent = !strcmp(mode, "persistent");
    // The ceiling server speaks tokend's framing: the same request line, one line back.
    if (!oidc_agent && strcmp(protocol, "tokend") && strcmp(protocol, "ceiling")) usage();
    if (!persistent && strcmp(mode, "per-request")) usage();
    if (oidc_agent && persistent) {
        fprintf(stderr, "loadgen: oidc-agent closes every connection after one answer: no persistent mode\n");
        return 64;
    }
    // Both ask for a token valid at least 60 s: each daemon's default, and a cached token does.
    request_length = (size_t)snprintf(request, sizeof request,
        oidc_agent ? "{\"request\":\"access_token\",\"account\":\"%s\",\"min_valid_period\":60}"
                   : "{\"op\":\"token\",\"account\":\"%s\",\"min_valid\":60}\n",
        account);

    histogram *histograms = calloc((size_t)clients, sizeof *histograms);
    pthread_t *threads = calloc((size_t)clients, sizeof *threads);
    if (!histograms || !threads) return 71;
    uint64_t begin = now_ns();
    deadline_ns = begin + (uint64_t)(seconds * 1e9);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    // 256 threads with the default 8 MiB stacks would reserve 2 GiB; 256 KiB is plenty here.
    pthread_attr_setstacksize(&attributes, 1 << 18);
    for (int i = 0; i < clients; i++) {
        if (pthread_create(&threads[i], &attributes, client, &histograms[i]) != 0) {
            perror("loadgen: pthread_create");
            return 71;
        }
    }
    for (int i = 0; i < clients; i++) pthread_join(threads[i], NULL);
    double elapsed = (double)(now_ns() - begin) / 1e9;

    histogram *total = calloc(1, sizeof *total);
    for (int i = 0; i < clients; i++) {
        for (int b = 0; b < BUCKETS; b++) total->counts[b] += histograms[i].counts[b];
        total->requests += histograms[i].requests;
        total->errors += histograms[i].errors;
    }
    printf("%s\t%s\t%d\t%llu\t%llu\t%.2f\t%.0f\t%.1f\t%.1f\t%.1f\n", protocol, mode, clients,
        (unsigned long long)total->requests, (unsigned long long)total->errors, elapsed,
        (double)total->requests / elapsed, percentile(total, 50) / 1e3, percentile(total, 99) / 1e3,
        percentile(total, 99.9) / 1e3);
    return total->requests > 0 ? 0 : 1;
}
