"""scripts/chaos --fleet: the chaos run on a fleet (issue 50, README "A fleet").

The world of scripts/test-fleet, started by its own code (scripts/lib/fleet.py: three etcd 3.4
members on loopback with TLS, client certificates and auth; three real tokend daemons, each in
its own private session; member m3 reaching etcd only through TCP proxies this run controls),
sharing two accounts, under a schedule drawn from one seeded PRNG: kill -9 of an account's holder
or of a follower, one etcd member stopped and started (SIGSTOP/SIGCONT), quorum lost (two stopped)
and back, m3 cut from etcd and restored, provider outages (scripts/lib/chaos.py's faults: none of
them lets the provider act on a refresh it does not answer), pauses. No clock is stepped. Client
threads keep asking every member for tokens all along.

The provider rotates refresh tokens and keeps the old ones valid (as Firebase does), so that a
reuse is seen in its log without revoking anything, and the run goes on to count them all.

Invariants, checked all along:
  * reuse:   the provider never sees a refresh token it rotated away presented again. The one
             excuse is README's window: a member killed, cut off or left without quorum between
             the provider's answer and the session's write to etcd (a fault event within a lease
             after the rotating refresh); such reuses are counted apart and named in the summary.
  * expiry:  every token a member serves has at least `--min-valid` left by the provider's clock.
  * owner:   every token served belongs to the account's user.
  * exits:   `token` answers 0 or 75 (a member cut off, without quorum, or behind a provider
             outage); 69 only while that member was down; nothing else, no call unanswered.
  * settle:  at every settle point (faults cleared, etcd whole, m3 restored, every member up) a
             forced refresh on any member goes through, and every member serves its token.
"""
import collections
import random
import signal
import subprocess
import threading
import time

import chaos
import fleet
from fleet import LEASE, Member, Proxy, World, poll, rotated_away_reuses

ACCOUNTS = [fleet.ACCOUNT, "shared2"]
CLIENTS = 3
MIN_VALID = 1
TOKEN_TIMEOUT = 5  # the request's own `timeout`; a cut-off member answers 75 within it
SETTLE_BOUND = LEASE * 6 + 60  # a new election after a lease, then a refresh and its spread
STEP_WEIGHTS = {
    "kill_holder": 3, "kill_follower": 2, "etcd_stop": 2, "etcd_start": 2, "quorum": 1, "cut": 2,
    "outage": 3, "clear_faults": 2, "pause": 3,
}


class FleetChaos:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.log = chaos.Log()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.violations = []
        self.counts = collections.Counter()
        self.uid = {}
        self.epoch = {}  # per member: bumped on every kill and start; odd while down
        self.events = []  # (real time, what) of every fault that can open README's window
        self.excused = []  # the fault events that excused a reuse (README's window)
        self.judged = set()  # refresh tokens whose reuse was judged

    # chaos.World's: the same lock, violations, log, args and stop are kept here.
    violate = chaos.World.violate

    def event(self, what):
        with self.lock:
            self.events.append((time.time(), what))

    # -- the world ----------------------------------------------------------------------------

    def start(self):
        world = self.world = World()
        world.make_certificates()
        world.start_etcd()
        world.start_fake()
        # Old refresh tokens stay valid: a reuse is counted from the log, not a revoked family.
        world.control("POST", "options", {"revoke_previous": False, "revoke_family_on_reuse": False})
        world.write_key("fleet.key")
        world.proxies = [Proxy(p) for p in world.client_ports]
        self.members = [Member(world, 1, world.client_ports, accounts=ACCOUNTS), Member(world, 2, world.client_ports, accounts=ACCOUNTS),
                        Member(world, 3, [p.port for p in world.proxies], accounts=ACCOUNTS)]
        world.members = list(self.members)
        for m in self.members:
            m.start()
            self.epoch[m.name] = 0
        self.stopped_etcd = set()
        tokens = {fleet.ACCOUNT: world.first_refresh_token}
        self.uid[fleet.ACCOUNT] = next(l.split("=", 1)[1] for l in open(world.path("fake.out")).read().splitlines() if l.startswith("UID="))
        user = world.control("POST", "users", {})
        tokens["shared2"], self.uid["shared2"] = user["refresh_token"], user["uid"]
        for account in ACCOUNTS:
            code, _, err = self.rng.choice(self.members).tokenctl("import", account, stdin=tokens[account] + "\n")
            if code != 0:
                raise RuntimeError("import %s failed: %s" % (account, err))

    def state(self, member):
        with self.lock:
            return self.epoch[member.name]

    def kill(self, member):
        with self.lock:
            self.epoch[member.name] += 1
        self.event("kill -9 " + member.name)
        member.kill9()
        time.sleep(self.rng.uniform(0, 2))  # down for a while: its clients see 69
        member.start()
        with self.lock:
            self.epoch[member.name] += 1

    def holder(self, account):
        pid = self.world.holder_pid(account)
        return next((m for m in self.members if m.pid == pid), None)

    # -- clients ------------------------------------------------------------------------------

    def client(self, index):
        rng = random.Random("%s-fleet-client-%d" % (self.args.seed, index))
        while not self.stop.is_set():
            member, account = rng.choice(self.members), rng.choice(ACCOUNTS)
            before = self.state(member)
            asked = time.time()
            try:
                code, token, err = member.token(min_valid=MIN_VALID, timeout=TOKEN_TIMEOUT, account=account)
            except subprocess.TimeoutExpired:
                if before % 2 == 0 and self.state(member) == before:
                    self.violate("%s: token %s got no answer within %s s while up" % (member.name, account, fleet.TOKENCTL_BOUND))
                continue
            up_throughout = before % 2 == 0 and self.state(member) == before
            self.counts["exit %d" % code] += 1
            if code == 0:
                claims = chaos.jwt_claims(token) or {}
                if claims.get("exp", 0) - asked < MIN_VALID - 0.01:
                    self.violate("%s: token %s served with %.2f s left" % (member.name, account, claims.get("exp", 0) - asked))
                elif (claims.get("user_id") or claims.get("sub")) != self.uid[account]:
                    self.violate("%s: token %s belongs to another user" % (member.name, account))
            elif code == 75 or code == 69 and not up_throughout:
                pass
            else:
                self.violate("%s: token %s exited %d: %s" % (member.name, account, code, err.replace("\n", " | ")[:300]))
            time.sleep(rng.uniform(0, 0.3))  # client pacing

    # -- the reuse invariant ------------------------------------------------------------------

    def check_reuse(self):
        """Every reuse the provider saw is judged once: inside README's window (a fault event
        from just before the rotating refresh to a lease after it, the longest a holder may take
        to write its answer) or a violation."""
        refreshes = self.world.refreshes()
        for reuse in rotated_away_reuses(refreshes):
            presented = reuse.get("presented_refresh_token")
            if presented in self.judged:
                continue
            self.judged.add(presented)
            rotating = next(r for r in refreshes if r.get("presented_refresh_token") == presented and r.get("rotated") and not r.get("fault"))
            with self.lock:
                window = [what for at, what in self.events if rotating["at"] - 0.5 <= at <= rotating["at"] + LEASE]
            if window:
                self.excused.append(window[0])
                self.log("reuse in README's window (%s near the rotation)" % window[0])
            else:
                self.violate("the provider saw a rotated-away refresh token again (rotated at %.2f, presented again at %.2f), no fault near" % (
                    rotating["at"], reuse.get("at")))

    # -- steps --------------------------------------------------------------------------------

    def step(self, kind):
        rng, world = self.rng, self.world
        if kind == "kill_holder":
            member = self.holder(rng.choice(ACCOUNTS)) or rng.choice(self.members)
            self.kill(member)
            return member.name
        if kind == "kill_follower":
            holders = {self.world.holder_pid(a) for a in ACCOUNTS}
            followers = [m for m in self.members if m.pid not in holders]
            if not followers:
                return "skipped"
            member = rng.choice(followers)
            self.kill(member)
            return member.name
        if kind == "etcd_stop":
            running = [i for i in range(3) if i not in self.stopped_etcd]
            if len(running) < 3:
                return "skipped"
            i = rng.choice(running)
            self.etcd_signal(i, signal.SIGSTOP)
            return "e%d" % (i + 1)
        if kind == "etcd_start":
            if not self.stopped_etcd:
                return "skipped"
            i = rng.choice(sorted(self.stopped_etcd))
            self.etcd_signal(i, signal.SIGCONT)
            return "e%d" % (i + 1)
        if kind == "quorum":
            # Long enough, at times, for the members' tokens to run out (20 s): then 75.
            lost = rng.sample(range(3), 2)
            held = round(rng.uniform(2, 25), 1)
            for i in lost:
                self.etcd_signal(i, signal.SIGSTOP)
            self.stop.wait(held)
            for i in lost:
                self.etcd_signal(i, signal.SIGCONT)
            return "e%d e%d stopped for %.1f s" % (lost[0] + 1, lost[1] + 1, held)
        if kind == "cut":
            held = round(rng.uniform(2, 20), 1)
            self.event("m3 cut")
            for proxy in world.proxies:
                proxy.cut()
            self.stop.wait(held)
            for proxy in world.proxies:
                proxy.restore()
            return "m3 cut for %.1f s" % held
        if kind == "outage":
            fault = dict(rng.choice(chaos.FAULTS))
            fault["seconds"] = round(rng.uniform(2, 15), 1)
            world.control("POST", "faults", fault)
            return str(fault)
        if kind == "clear_faults":
            world.control("DELETE", "faults")
            return ""
        if kind == "pause":
            self.stop.wait(rng.uniform(0.5, 3))
            return ""
        raise ValueError(kind)

    def etcd_signal(self, i, sig):
        if sig == signal.SIGSTOP:
            self.event("etcd e%d stopped" % (i + 1))
            self.stopped_etcd.add(i)
        else:
            self.stopped_etcd.discard(i)
        self.world.etcd[i].send_signal(sig)

    def settle(self):
        """Faults cleared, etcd whole, m3 restored: a forced refresh of each account on a random
        member goes through, and every member serves the new token."""
        self.log("settle")
        self.world.control("DELETE", "faults")
        for i in sorted(self.stopped_etcd):
            self.etcd_signal(i, signal.SIGCONT)
        for proxy in self.world.proxies:
            proxy.restore()
        for account in ACCOUNTS:
            member = self.rng.choice(self.members)
            before = len(self.world.refreshes())
            refreshed = poll(SETTLE_BOUND, lambda: member.tokenctl("refresh", account)[0] == 0 and any(
                r.get("status") == 200 and r.get("uid") == self.uid[account] for r in self.world.refreshes()[before:]))
            if not refreshed:
                return self.violate("settle: a refresh of %s on %s did not go through within %d s" % (account, member.name, SETTLE_BOUND))
            issued = self.issued_id_tokens(account)
            newest, seen = issued[-1], len(issued) - 1
            if not self.all_caught_up(account, seen):
                # Named by expiry only: tokens are never printed.
                now = ", ".join("%s exp %s" % (m.name, fleet.jwt_exp(m.token(account=account)[1])) for m in self.members)
                return self.violate("settle: not every member served %s's newest token (exp %s) within %d s; serving now: %s" % (
                    account, fleet.jwt_exp(newest), SETTLE_BOUND, now))
        self.counts["settled"] += 1

    def issued_id_tokens(self, account):
        """The ID tokens the provider issued for `account`, in order."""
        # A 200 the fake answered under a fault (a malformed body, missing fields) issued no token.
        return [r["issued_id_token"] for r in self.world.refreshes()
                if r.get("status") == 200 and r.get("uid") == self.uid[account] and r.get("issued_id_token")]

    def all_caught_up(self, account, seen):
        """Whether each member serves `account`'s token issued `seen`-th or a later one, within the
        bound: a natural refresh (every ~12 s with 20 s tokens) may rotate past the forced one
        before a member is asked, and serving the newer session is converging too."""
        waiting = list(self.members)

        def reached():
            current = set(self.issued_id_tokens(account)[seen:])
            waiting[:] = [m for m in waiting if m.token(account=account)[1] not in current]
            return not waiting
        return poll(SETTLE_BOUND, reached)

    # -- the run ------------------------------------------------------------------------------

    def main(self):
        started = time.monotonic()
        print("chaos --fleet: seed %d, %.2f minutes" % (self.args.seed, self.args.minutes), flush=True)
        threads = []
        number = 0
        try:
            self.start()
            print("chaos --fleet: world up in %.1f s (%s)" % (time.monotonic() - started, self.world.root), flush=True)
            threads = [threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(CLIENTS)]
            for t in threads:
                t.start()
            kinds = list(STEP_WEIGHTS)
            weights = [STEP_WEIGHTS[k] for k in kinds]
            end = time.monotonic() + self.args.minutes * 60
            while time.monotonic() < end and not self.stop.is_set():
                number += 1
                kind = "settle" if number % 15 == 0 else self.rng.choices(kinds, weights)[0]
                detail = self.settle() if kind == "settle" else self.step(kind)
                self.counts["step " + kind] += 1
                self.log("step %d %s %s" % (number, kind, detail or ""))
                self.check_reuse()
                self.stop.wait(self.rng.uniform(0, 1))
            if not self.stop.is_set():
                self.settle()
                self.check_reuse()
        except (Exception, SystemExit) as error:  # the driver's own trouble (fleet.py exits on a start that fails): still replayable
            self.violate("driver error: %r" % error)
        finally:
            self.stop.set()
            for t in threads:
                t.join(timeout=fleet.TOKENCTL_BOUND + 5)
            try:  # the provider's log, read before its end
                refreshes = self.world.refreshes()
            except (OSError, AttributeError):
                refreshes = []
            self.shutdown()
        return self.report(number, time.monotonic() - started, refreshes)

    def report(self, steps, took, refreshes):
        print("chaos --fleet: %d steps: %s" % (steps, ", ".join("%s %d" % (k[5:], v) for k, v in sorted(self.counts.items()) if k.startswith("step "))))
        print("chaos --fleet: client calls: %s" % ", ".join("%s %d" % kv for kv in sorted(self.counts.items()) if kv[0].startswith("exit ")))
        reuses = len(rotated_away_reuses(refreshes))
        print("chaos --fleet: seed %d, %.1f min: %d refreshes at the provider (%d answered 200), %d faults, reuse %d (%d in README's window: %s), %d violations" % (
            self.args.seed, took / 60, len(refreshes), sum(1 for r in refreshes if r.get("status") == 200),
            sum(v for k, v in self.counts.items() if k.startswith("step ") and k[5:] not in ("pause", "settle", "clear_faults", "etcd_start")),
            reuses, len(self.excused), "; ".join(self.excused) or "none", len(self.violations)))
        if self.violations:
            print("chaos --fleet: FAILED, seed %d (replay: scripts/chaos --fleet --seed %d --minutes %s)" % (self.args.seed, self.args.seed, self.args.minutes))
            for violation in self.violations[:20]:
                print("  " + violation)
            print("step log (last %d lines):\n%s" % (len(self.log.lines), self.log.dump()))
            return 1
        print("chaos --fleet: passed, seed %d" % self.args.seed)
        return 0

    def shutdown(self):
        world = getattr(self, "world", None)
        if world is None:
            return
        for i in sorted(getattr(self, "stopped_etcd", ())):
            world.etcd[i].send_signal(signal.SIGCONT)
        for proxy in getattr(world, "proxies", ()):
            proxy.restore()
        world.stop_all(keep=bool(self.violations))
        if self.violations:
            print("chaos --fleet: the world is kept in %s" % world.root)
