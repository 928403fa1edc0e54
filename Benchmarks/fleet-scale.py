#!/usr/bin/env python3
"""The fleet at scale (issue 50, item 6), measured: run through Benchmarks/fleet-scale.

  followers  N members (20) follow one shared account; the holder is made to rotate it ROUNDS
             times, one rotation at a time. Per rotation: from the holder's write reaching etcd
             (an `etcdctl watch` of the session key, timestamped on arrival) to each member
             serving the new token, seen from outside (a poller per member asking its socket for
             the token until it changes) and from inside (each follower's "session taken from
             the fleet" log line, timestamped as it arrives through a FIFO; it is logged after
             the local store's write, so it is an upper bound).
  accounts   1,000 shared accounts across 3 members, each imported on one member (round robin,
             or all on m1): which member holds how many elections and sends how many refreshes,
             etcd writes (revision delta) and requests (etcd's /metrics) per refresh, and each
             tokend's RSS/PSS (/proc/PID/smaps_rollup) idle and while the natural refreshes run.

The cluster, the fake Firebase and the daemons are scripts/lib/fleet.py's (imported, not copied).
Figures go to stdout and, with --out FILE, are appended to FILE as markdown.
"""
import argparse
import importlib.util
import json
import math
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "lib"))
import fleet as F  # noqa: E402  (needs TOKEND_BIN_DIR, which Benchmarks/fleet-scale sets)

# A bound on every wait, generous for two shared cores: past it the run stops as broken.
BOUND = 120


class Client:
    """One persistent connection to a member's socket (docs/protocol.md): a request line, an answer line."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(BOUND)
        self.sock.connect(path)
        self.lines = self.sock.makefile("rb")

    def ask(self, **request):
        self.sock.sendall(json.dumps(request).encode() + b"\n")
        return json.loads(self.lines.readline())

    def token(self, account):
        answer = self.ask(op="token", account=account, min_valid=0, timeout=0)
        return answer.get("token")


def memory(pid):
    """(RSS, PSS) in MiB from /proc/PID/smaps_rollup."""
    values = {}
    with open("/proc/%d/smaps_rollup" % pid) as rollup:
        for line in rollup:
            parts = line.split()
            if parts and parts[0] in ("Rss:", "Pss:"):
                values[parts[0]] = int(parts[1]) / 1024
    return values["Rss:"], values["Pss:"]


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def quantile(values, q):
    """Nearest rank: the smallest value with at least q of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


def summary(values, unit="ms", scale=1000):
    if not values:
        return "no samples"
    return "p50 %.0f %s, p99 %.0f %s, max %.0f %s (n=%d)" % (
        quantile(values, 0.5) * scale, unit, quantile(values, 0.99) * scale, unit, max(values) * scale, unit, len(values))


def world_up(lifetime):
    """fleet.py's world: certificates, three etcd members with TLS and auth, the fake Firebase."""
    F.TOKEN_LIFETIME = lifetime
    world = F.World()
    world.make_certificates()
    world.start_etcd()
    world.start_fake()
    world.write_key("fleet.key")
    return world


def start_members(world, members, parallel):
    """fleet.py's Member.start, a few at a time: each waits for its daemon to answer."""
    with ThreadPoolExecutor(parallel) as pool:
        for started in [pool.submit(m.start) for m in members]:
            started.result()


def leases_granted(world, members):
    """Until every member holds its fleet lease: a member asked to refresh before its lease is
    granted follows instead (an import then answers fleet_follower after a lease's wait)."""
    def granted():
        listing = world.etcdctl("lease", "list").stdout.split()
        return len(listing) > 1 and listing[1].isdigit() and int(listing[1]) >= len(members)
    if F.poll(BOUND, granted) is None:
        raise SystemExit("fleet-scale: the members' leases were not all granted")


def tear_down(world, members):
    """Everything stopped (fleet.World.stop_all); the world's directory removed unless something
    failed (then kept, as scripts/test-fleet keeps it, and named)."""
    failed = bool(F.failures or sys.exc_info()[0] is not None)
    world.members = members
    world.stop_all(keep=failed)
    if failed or os.environ.get("TOKEND_FLEET_KEEP"):
        print("fleet-scale: the world is kept in " + world.root, flush=True)


def etcdctl_argv(world, *args):
    return ["etcdctl", "--endpoints", ",".join("https://127.0.0.1:%d" % p for p in world.client_ports),
            "--cacert", world.path("ca.crt"), "--cert", world.path("root.crt"), "--key", world.path("root.key"), *args]


def etcd_metrics(world):
    """Counters summed over the three etcd members: gRPC calls handled by method, and the MVCC
    puts/txns/ranges (each member applies every write, so those are taken from one member)."""
    context = ssl.create_default_context(cafile=world.path("ca.crt"))
    context.load_cert_chain(world.path("root.crt"), world.path("root.key"))
    totals = {}
    for index, port in enumerate(world.client_ports):
        with urllib.request.urlopen("https://127.0.0.1:%d/metrics" % port, context=context, timeout=10) as answer:
            text = answer.read().decode()
        for line in text.splitlines():
            if line.startswith("grpc_server_handled_total{"):
                method = line.split('grpc_method="', 1)[1].split('"', 1)[0]
                key = "grpc " + method
                totals[key] = totals.get(key, 0) + float(line.rsplit(" ", 1)[1])
            elif index == 0 and line.split(" ")[0] in ("etcd_mvcc_put_total", "etcd_mvcc_txn_total", "etcd_mvcc_range_total",
                                                       "etcd_mvcc_delete_total", "etcd_debugging_mvcc_put_total"):
                name, value = line.split(" ")
                totals[name] = float(value)
    return totals


class TimedLog:
    """A member's log through a FIFO at fleet.py's log path: each line is timestamped as it
    arrives (tokend's own lines carry no time), kept in tokend.timed.log, and lines holding
    `marker` are noted by time."""

    def __init__(self, member, marker):
        self.marker = marker
        self.times = []
        path = os.path.join(member.dir, "tokend.log")
        os.mkfifo(path, 0o600)
        self.out = open(os.path.join(member.dir, "tokend.timed.log"), "w")
        threading.Thread(target=self.read, args=(path,), daemon=True).start()

    def read(self, path):
        with open(path, "rb") as lines:
            for line in lines:
                now = time.monotonic()
                text = line.decode(errors="replace").rstrip("\n")
                self.out.write("%.4f %s\n" % (now, text))
                self.out.flush()
                if self.marker in text:
                    self.times.append(now)


class Sampler:
    """Calls `probe` every `interval` seconds on a thread until stop(); keeps what it returns."""

    def __init__(self, interval, probe):
        self.samples = []
        self.stopped = threading.Event()

        def loop():
            while not self.stopped.is_set():
                self.samples.append(probe())
                self.stopped.wait(interval)

        threading.Thread(target=loop, daemon=True).start()

    def stop(self):
        self.stopped.set()
        return self.samples


def load_summary(samples):
    """The 1-minute load average over a run's samples: min / mean / max."""
    ones = [float(s.split()[0]) for s in samples] or [0.0]
    return "%.2f / %.2f / %.2f (1-min load average, min / mean / max of %d samples)" % (min(ones), sum(ones) / len(ones), max(ones), len(ones))


def header(args, title):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    memory_total = next(l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal"))
    return ["## %s" % title, "",
            "- when: %s UTC" % time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
            "- command: `Benchmarks/fleet-scale %s`" % " ".join(sys.argv[1:]),
            "- machine: %d cores (%s), %.0f GiB; shared with other builds and tests" % (os.cpu_count(), cpu, int(memory_total) / 1048576),
            "- build: %s (%s)" % (os.environ.get("FLEET_SCALE_BUILD", "?"), F.BIN),
            "- etcd: %s" % subprocess.run(["etcd", "--version"], capture_output=True, text=True).stdout.splitlines()[0]]


def report(args, lines):
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    if args.out:
        with open(args.out, "a") as out:
            out.write(text + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["followers", "accounts"])
    parser.add_argument("--members", type=int, help="followers: 20; accounts: 3")
    parser.add_argument("--rounds", type=int, default=200, help="followers: rotations measured")
    parser.add_argument("--poll", type=float, default=0.005, help="followers: seconds between a poller's asks (its resolution)")
    parser.add_argument("--accounts", type=int, default=1000, help="accounts: shared accounts")
    parser.add_argument("--import-on", choices=["spread", "m1"], default="spread", help="accounts: where each is imported")
    parser.add_argument("--lifetime", type=int, help="the fake's token lifetime, s (followers 20, accounts 240)")
    parser.add_argument("--duration", type=int, default=240, help="accounts: seconds of natural refreshes measured")
    parser.add_argument("--out", help="append the figures to this markdown file")
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    # Each mode is its own file (Benchmarks/fleet-scale-MODE.py), given this module's helpers.
    spec = importlib.util.spec_from_file_location("fleet_scale_" + args.mode, os.path.join(here, "fleet-scale-%s.py" % args.mode))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.exit(module.run(args, sys.modules[__name__]))


if __name__ == "__main__":
    main()
