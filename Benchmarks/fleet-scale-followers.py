"""Benchmarks/fleet-scale followers: N members following one shared account (see fleet-scale.py)."""
import json
import os
import subprocess
import threading
import time

import fleet as F

# What a follower logs once a session the watch brought is in its memory and its local store.
MARKER = "session taken from the fleet"
# Between two rotations: the previous one's stragglers (log lines, late watch answers) land
# before the next starts, so each rotation is measured alone.
GAP = 0.3
# How long after every socket serves a rotation its followers' log lines may still come: their
# keyring writes, which follow the serving, came up to 3.5 s after the write at load 30.
MARK_BOUND = 5


class Poller:
    """Asks one member for the account's token, while armed, until it differs from the one the
    rotation replaces; notes when it first did."""

    def __init__(self, S, member, interval):
        self.member = member
        self.client = S.Client(member.socket)
        self.interval = interval
        self.armed = threading.Event()
        self.old = None
        self.seen = None
        threading.Thread(target=self.loop, daemon=True).start()

    def arm(self, old):
        self.old, self.seen = old, None
        self.armed.set()

    def loop(self):
        while True:
            self.armed.wait()
            token = self.client.token(F.ACCOUNT)
            if token and token != self.old:
                self.seen = time.monotonic()
                self.armed.clear()
            else:
                time.sleep(self.interval)


class Watcher:
    """`etcdctl watch` of the account's session key: when each write reached a watcher of etcd."""

    def __init__(self, S, world):
        self.times = []
        self.process = subprocess.Popen(S.etcdctl_argv(world, "watch", "/tokend/session/" + F.ACCOUNT, "-w", "json"),
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ, ETCDCTL_API="3"))
        world.processes.append(self.process)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.process.stdout:
            now = time.monotonic()
            if line.startswith(b"{"):
                self.times += [now] * len(json.loads(line).get("Events") or [])


def run(args, S):
    count = args.members or 20
    world = S.world_up(args.lifetime or 20)
    members = [F.Member(world, i + 1, world.client_ports) for i in range(count)]
    logs = {m.name: S.TimedLog(m, MARKER) for m in members}
    watcher = Watcher(S, world)
    loads = S.Sampler(5, S.loadavg)
    try:
        started = time.monotonic()
        S.start_members(world, members, 4)
        S.leases_granted(world, members)
        up = time.monotonic() - started
        code, _, err = members[0].tokenctl("import", F.ACCOUNT, stdin=world.first_refresh_token + "\n")
        if code != 0:
            raise SystemExit("fleet-scale: the import failed: " + err)
        if F.all_serve(members, F.newest_id_token(world), bound=S.BOUND) is None:
            raise SystemExit("fleet-scale: the imported session did not reach every member")
        holder = next(m for m in members if m.pid == world.holder_pid())
        followers = [m for m in members if m is not holder]
        pollers = [Poller(S, m, args.poll) for m in members]
        control = S.Client(holder.socket)
        refreshes_before, events_before = len(world.refreshes()), len(watcher.times)
        idle = {m.name: S.memory(m.pid) for m in members}
        outside_all, outside_every, followers_every, inside_all, inside_every, at_holder, skipped, unlogged = [], [], [], [], [], [], 0, 0
        for _ in range(args.rounds):
            old = control.token(F.ACCOUNT)
            events = len(watcher.times)
            marks = {m.name: len(logs[m.name].times) for m in followers}
            for p in pollers:
                p.arm(old)
            answer = control.ask(op="refresh", account=F.ACCOUNT, timeout=60)
            if not answer.get("ok"):
                raise SystemExit("fleet-scale: the holder's refresh failed: %s" % answer)
            reached = F.poll(S.BOUND, lambda: all(p.seen for p in pollers) and len(watcher.times) > events)
            if not reached:
                raise SystemExit("fleet-scale: a rotation did not reach every member within %d s" % S.BOUND)
            # A follower whose own refresh was in flight takes the session as that refresh's
            # answer, with no log line (AccountEngine.followFleet): its inside figure is left out.
            F.poll(MARK_BOUND, lambda: all(len(logs[m.name].times) > marks[m.name] for m in followers))
            time.sleep(GAP)  # pacing, not synchronisation: see GAP
            if len(watcher.times) - events != 1:
                skipped += 1  # another write (a natural refresh) in the same rotation: not one to time
                continue
            written = watcher.times[events]
            outside = [p.seen - written for p in pollers]
            logged = [m for m in followers if len(logs[m.name].times) > marks[m.name]]
            unlogged += len(followers) - len(logged)
            inside = [logs[m.name].times[marks[m.name]] - written for m in logged] or [None]
            outside_all += [o for o, p in zip(outside, pollers) if p.member is not holder]
            followers_every.append(max(o for o, p in zip(outside, pollers) if p.member is not holder))
            at_holder.append(next(p.seen for p in pollers if p.member is holder) - written)
            outside_every.append(max(outside))
            if len(logged) == len(followers):
                inside_every.append(max(inside))
            inside_all += [i for i in inside if i is not None]
        rotations = len(world.refreshes()) - refreshes_before
        writes = len(watcher.times) - events_before
        busy = {m.name: S.memory(m.pid) for m in members}
        F.no_reuse(world, "%d rotations followed by %d members" % (rotations, count))
    finally:
        load = loads.stop()
        S.tear_down(world, members)
    lines = S.header(args, "%d members following one account" % count) + [
        "- members up (%d tokend, each in its own private session with its own gnome-keyring) in %.0f s" % (count, up),
        "- token lifetime %d s; rotations forced on the holder (`refresh` on its socket) one at a time, %.1f s apart; "
        "pollers ask every %.0f ms while a rotation is under way" % (F.TOKEN_LIFETIME, GAP, args.poll * 1000),
        "- load during the run: " + S.load_summary(load),
        "- rotations: %d forced, %d refreshes at the provider, %d writes seen by the etcd watcher, %d left out (two writes in one rotation)"
        % (args.rounds, rotations, writes, skipped),
        "",
        "From the holder's write reaching an etcd watcher (`etcdctl watch`, timestamped on arrival) to:",
        "",
        "| what | measured from | figures |",
        "| --- | --- | --- |",
        "| every member serving the new token (the slowest of %d, per rotation) | outside: each member's socket | %s |" % (count, S.summary(outside_every)),
        "| every follower serving it (the slowest of %d, per rotation) | outside: each member's socket | %s |" % (len(followers), S.summary(followers_every)),
        "| one follower serving it (every follower, every rotation) | outside: each member's socket | %s |" % S.summary(outside_all),
        "| the holder serving it (it writes to etcd, then serves) | outside: its socket | %s |" % S.summary(at_holder),
        "| every follower has it in memory and its local store (slowest of %d; rotations where each logged it) | inside: its log line | %s |" % (len(followers), S.summary(inside_every)),
        "| one follower has it (every follower, every rotation) | inside: its log line | %s |" % S.summary(inside_all),
        "",
        "Follower samples with no log line (their own refresh was in flight and took the session as its answer): %d of %d. " % (unlogged, len(followers) * (args.rounds - skipped)) +
        "The outside figures carry up to one poll interval (%.0f ms) of resolution; a negative one is a member that served "
        "the token before the watcher's process read it." % (args.poll * 1000),
        "",
        "| member memory (MiB) | RSS mean | RSS max | PSS mean | PSS max |",
        "| --- | --- | --- | --- | --- |",
    ] + ["| %s | %.1f | %.1f | %.1f | %.1f |" % (when, sum(v[0] for v in sample.values()) / count, max(v[0] for v in sample.values()),
                                                sum(v[1] for v in sample.values()) / count, max(v[1] for v in sample.values()))
         for when, sample in (("before the rotations", idle), ("after them", busy))]
    S.report(args, lines)
    return 1 if F.failures else 0
