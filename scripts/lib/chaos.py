#!/usr/bin/env python3
"""The chaos driver behind scripts/chaos (run it through that script: it builds the binaries and
gives this a private session bus and private XDG directories).

The real tokend (under libfaketime, so its wall clock can be stepped), a real gnome-keyring and
the real tokend-fake-firebase (with its /_fake/ control plane) under a random schedule drawn
from one seeded PRNG, while client threads keep asking for tokens with the real tokenctl.

Invariants, checked all along:
  * token:   every token served has at least `--min-valid` left by the provider's clock (the
             fake's, which is real time: the provider is another machine, only the daemon's
             clock is stepped), and belongs to a user the account was given.
  * exit:    every tokenctl exit is one the situation allows (75 for transient trouble, 69 only
             while tokend is down, 67 only around a config change, 77 only for an account whose
             user the provider revoked); never an internal error, never an unanswered call.
  * socket:  while tokend is up, `hello` is answered within SOCKET_BOUND.
  * keyring: whenever the keyring is open, each account the daemon was given holds an item, with
             a refresh token the fake issued to that account's user; and at every settle point
             (faults cleared, keyring unlocked, every account configured) each account converges
             to the newest refresh token the fake issued it, or to needs_login after a revocation.
Stepping back the daemon's clock must never make it serve a dead token: the token invariant
catches that, restarts included.
"""
import argparse
import base64
import collections
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

BIN = os.environ.get("TOKEND_BIN_DIR", ".build/debug")
# The private session scripts/chaos runs this in: its directory, and its keyring's verbs (not in
# --fleet mode, whose members each have their own: scripts/lib/chaos_fleet.py).
ROOT = os.environ.get("TOKEND_SESSION_ROOT")
SESSION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "private-session")
# The scripts' one world (the fake Firebase and its accounts), as every shell suite has it.
WORLD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "world.sh")
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
# Loaded before libfaketime: it keeps monotonic timers where a real wall-clock step leaves them
# (libfaketime shifts them by its offset; Sources/CTokendFaketimeFix says how it was measured).
FAKETIME_FIX = os.path.abspath(os.path.join(BIN, "libTokendFaketimeFix.so"))
ACCOUNTS = ["a0", "a1", "a2", "a3", "a4"]
# Short enough that refreshes keep happening in a short round; long enough that a refresh fits
# on two loaded cores.
TOKEN_LIFETIME = 20
MIN_VALID = 1
CLIENTS = 3
# Bounds on answers, generous for two shared cores: a missed bound is a hang, not slowness.
SOCKET_BOUND = 10.0
TOKENCTL_TIMEOUT = 5  # the request's own `timeout`
TOKENCTL_BOUND = 40.0  # the whole tokenctl run, which the request timeout bounds far below
SETTLE_BOUND = 90
# A reload is asynchronous: SIGHUP returns before the daemon has read the file. It may wait for
# an earlier reload's keyring reads (one at a time), each bounded by GDBus's 25 s call timeout.
RELOAD_BOUND = 60
# A keyring verb bounds each of its waits by 45 s itself (private-session); past this it hangs.
KEYRING_BOUND = 450
# Clock offsets the daemon's wall clock is stepped to (libfaketime's syntax): forward (a VM
# pause, NTP setting a late clock, a day's jump) and backward (a fast clock set right).
OFFSETS = ["+0", "+0", "+40s", "+10m", "+2h", "+1d", "-10s", "-30m", "-2h"]
FAULTS = [
    {"fault": "refuse"}, {"fault": "hang"}, {"fault": "drop"}, {"fault": "drop_mid_response"},
    {"fault": "status", "status": 500}, {"fault": "status", "status": 503},
    {"fault": "status", "status": 502}, {"fault": "status", "status": 429, "retry_after": 3},
    {"fault": "malformed_json"}, {"fault": "missing_fields"},
]
STEP_WEIGHTS = {
    "fault": 6, "clear_faults": 3, "revoke": 1, "reimport": 3, "kill9": 3, "keyring_lock": 2,
    "keyring_unlock": 3, "keyring_restart": 1, "sighup": 3, "clock": 3, "pause": 4,
}


class Violation(Exception):
    pass


def jwt_claims(token):
    try:
        payload = token.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except Exception:
        return None


class Log:
    """The step log: what was done when, printed on failure so that a run can be replayed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.lines = collections.deque(maxlen=400)
        self.start = time.monotonic()

    def __call__(self, text):
        with self.lock:
            self.lines.append("%8.2f %s" % (time.monotonic() - self.start, text))

    def dump(self):
        with self.lock:
            return "\n".join(self.lines)


class World:
    def __init__(self, args):
        self.args = args
        # `--store tpm2`: sessions sealed in swtpm (scripts/lib/chaos_tpm2.py), whose stop and
        # start stand in for the keyring's lock and unlock; else the private gnome-keyring.
        self.tpm = None
        if args.store == "tpm2":
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import chaos_tpm2
            self.tpm = chaos_tpm2.SoftTPM(ROOT)
        self.rng = random.Random(args.seed)
        self.log = Log()
        self.lock = threading.RLock()
        self.violations = []
        self.counts = collections.Counter()
        self.checks = collections.Counter()
        self.stop = threading.Event()
        self.socket_path = os.path.join(os.environ["XDG_RUNTIME_DIR"], "tokend/tokend.sock")
        self.config_path = os.path.join(os.environ["XDG_CONFIG_HOME"], "tokend/config.toml")
        self.offset_file = os.path.join(ROOT, "faketime")
        self.tokend_log = os.path.join(ROOT, "tokend.log")
        self.fake_log = os.path.join(ROOT, "fake.log")
        # The daemon's life: `epoch` changes on every kill and start, `up` once it answered.
        self.tokend = None
        self.epoch = 0
        self.up = False
        self.keyring_open = True  # running and unlocked
        self.offset = "+0"
        self.configured = set(ACCOUNTS)
        # Bumped on writing a configuration and again once the daemon lists its accounts
        # (`await_reload`): odd while a change is in progress.
        self.config_generation = 0
        # Per account: its current user, every user it was ever given, and whether the provider
        # revoked the current one (then needs_login is the right answer).
        self.user = {}
        self.users = collections.defaultdict(set)
        self.revoked = set()
        # Each user's first refresh token, from its creation: issued, though no refresh issued it.
        self.created_with = {}
        self.revocations = collections.Counter()
        self.last_kill = 0.0  # real time of the last kill -9, for the lost-response window

    # -- bookkeeping ------------------------------------------------------------------------

    def violate(self, what):
        with self.lock:
            self.violations.append(what)
            self.log("VIOLATION " + what)
        if not self.args.keep_going:
            self.stop.set()

    def env(self, faked=False):
        env = dict(os.environ)
        env["TOKEND_CONFIG"] = self.config_path
        env["TOKEND_SOCKET"] = self.socket_path
        if self.tpm is not None:
            env["XDG_STATE_HOME"] = self.tpm.state_home
        if faked:
            env.update({
                "LD_PRELOAD": FAKETIME_FIX + " " + FAKETIME, "FAKETIME_TIMESTAMP_FILE": self.offset_file,
                # Re-read on every call, so steps apply at once; boot time stays real.
                "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            })
        return env

    def run(self, argv, stdin=None, timeout=30, env=None):
        return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout, env=env or self.env())

    # -- the fake -----------------------------------------------------------------------------

    def start_fake(self):
        log = open(self.fake_log, "ab")
        self.fake = subprocess.Popen(
            [WORLD, "fake", "--lifetime", str(TOKEN_LIFETIME), "--rotate"],
            stdout=subprocess.PIPE, stderr=log, env=self.env())
        line = self.fake.stdout.readline().decode().strip()
        if not line.startswith("FIREBASE_AUTH_EMULATOR_HOST="):
            raise RuntimeError("the fake did not start: %r (see %s)" % (line, self.fake_log))
        self.emulator = line.split("=", 1)[1]

    def control(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request("http://%s/_fake/%s" % (self.emulator, path), data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.loads(reply.read())

    def newest_refresh_token(self, uid):
        return self.control("GET", "users/%s/refresh_token" % uid)["refresh_token"]

    def issued_refresh_tokens(self, uid):
        issued = {r["issued_refresh_token"] for r in self.control("GET", "requests") if r.get("uid") == uid and r.get("issued_refresh_token")}
        issued.add(self.newest_refresh_token(uid))
        with self.lock:
            if uid in self.created_with:
                issued.add(self.created_with[uid])
        return issued

    # -- the keyring --------------------------------------------------------------------------

    def keyring(self, verb):
        """lock, unlock, restart or stop the session's gnome-keyring through the one
        implementation every suite uses (scripts/lib/private-session keyring VERB), which
        returns once the keyring is so: unlock unlocks the serving one in place, as its prompt does.
        With the tpm2 store: lock stops swtpm, unlock starts it, restart does both."""
        if verb != "unlock":
            self.keyring_open = False  # before: tokend may find it closed at once
        if self.tpm is not None:
            if verb in ("lock", "restart", "stop"):
                self.tpm.stop()
            if verb in ("unlock", "restart"):
                self.tpm.start()
                self.keyring_open = True
            return
        result = self.run([SESSION, "keyring", verb], timeout=KEYRING_BOUND)
        for line in result.stderr.splitlines():  # a start a bus-activated keyring won, or why it failed
            self.log("keyring %s: %s" % (verb, line))
        if result.returncode != 0:
            raise RuntimeError("private-session keyring %s exited %d: %s" % (verb, result.returncode, result.stderr.strip()))
        if verb in ("unlock", "restart"):
            self.keyring_open = True

    def stored_refresh_token(self, account):
        """The account's item as secret-tool sees it: its refresh token, None without an item."""
        if self.tpm is not None:
            return (self.tpm.stored_session(account) or {}).get("refresh_token")
        result = self.run(["secret-tool", "lookup", "application", "tokend", "account", account], timeout=20)
        if result.returncode != 0 or not result.stdout:
            return None
        return json.loads(result.stdout).get("refresh_token")

    # -- tokend -------------------------------------------------------------------------------

    def write_config(self, accounts):
        sections = [self.run([WORLD, "account", name, self.emulator, "chaos-api-key"], timeout=30).stdout for name in sorted(accounts)]
        if not all(sections):
            raise RuntimeError("scripts/lib/world.sh account printed no section")
        os.makedirs(os.path.dirname(self.config_path), exist_ok=True)
        temporary = self.config_path + ".new"
        with open(temporary, "w") as f:
            if self.tpm is not None:
                f.write('store = "tpm2"\ntpm2_tcti = "%s"\n\n' % self.tpm.tcti)
            f.write("".join(sections))
        os.rename(temporary, self.config_path)

    def write_offset(self, offset):
        temporary = self.offset_file + ".new"
        with open(temporary, "w") as f:
            f.write(offset)
        os.rename(temporary, self.offset_file)
        self.offset = offset

    def hello(self, timeout):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(timeout)
            client.connect(self.socket_path)
            client.sendall(b'{"op":"hello"}\n')
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = client.recv(4096)
                if not chunk:
                    raise ConnectionError("closed without a reply")
                reply += chunk
            return json.loads(reply)

    def start_tokend(self):
        with self.lock:
            self.epoch += 1
        self.tokend = subprocess.Popen([BIN + "/tokend"], stdout=open(self.tokend_log, "ab"), stderr=subprocess.STDOUT, env=self.env(faked=True))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.tokend.poll() is not None:
                raise Violation("tokend exited with %s at start (log: %s)" % (self.tokend.returncode, self.tokend_log))
            try:
                if self.hello(2).get("ok"):
                    with self.lock:
                        self.up = True
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise Violation("tokend did not answer hello within 60 s of its start")

    def kill_tokend(self):
        with self.lock:
            self.up = False
            self.epoch += 1
        if self.tokend is not None:
            self.tokend.kill()
            self.tokend.wait()
            self.tokend = None
        self.last_kill = time.time()

    def check_tokend_alive(self):
        if self.tokend is not None and self.tokend.poll() is not None:
            with self.lock:
                self.up = False
            raise Violation("tokend died by itself with status %s" % self.tokend.returncode)

    def tokenctl(self, argv, stdin=None, timeout=TOKENCTL_BOUND):
        return self.run([BIN + "/tokenctl"] + argv, stdin=stdin, timeout=timeout)

    def import_new_user(self, account):
        session = self.control("POST", "users", {})
        with self.lock:
            # Before the import: clients may be served the new user's tokens before it returns.
            self.users[account].add(session["uid"])
            self.created_with[session["uid"]] = session["refresh_token"]
        result = self.tokenctl(["import", account], stdin=session["refresh_token"] + "\n")
        # An import during a provider backoff exits 75 but stores the session: what counts is
        # whether the item now holds the new user's session.
        if result.returncode != 0 and not (self.keyring_open and self.stored_refresh_token(account) in self.issued_refresh_tokens(session["uid"])):
            return False, result
        with self.lock:
            self.user[account] = session["uid"]
            self.revoked.discard(account)
        return True, result

    def status(self):
        reply = self.tokenctl(["status", "--json"])
        if reply.returncode != 0:
            return None
        accounts = json.loads(reply.stdout)  # the daemon's `accounts` array
        return {a["name"]: a for a in accounts}

    # -- clients and probes -------------------------------------------------------------------

    def snapshot(self, account):
        """[3]: configured and no change in progress: a call begun and answered within one change
        sees one generation, yet may meet either configuration (seed 5077, 29 min)."""
        with self.lock:
            stable = account in self.configured and self.config_generation % 2 == 0
            return (self.epoch, self.up, self.config_generation, stable, self.revocations[account], account in self.revoked)

    def client(self, index):
        rng = random.Random("%s-client-%d" % (self.args.seed, index))
        while not self.stop.is_set():
            account = rng.choice(ACCOUNTS)
            before = self.snapshot(account)
            asked = time.time()
            try:
                result = self.tokenctl(["token", account, "--min-valid", str(MIN_VALID), "--timeout", str(TOKENCTL_TIMEOUT)])
            except subprocess.TimeoutExpired:
                after = self.snapshot(account)
                if before[:2] == after[:2] and before[1]:
                    self.violate("tokenctl token %s got no answer within %s s while tokend was up" % (account, TOKENCTL_BOUND))
                continue
            after = self.snapshot(account)
            self.checks["client call"] += 1
            self.judge(account, asked, result, before, after)
            time.sleep(rng.uniform(0, 0.3))  # client pacing

    def judge(self, account, asked, result, before, after):
        code = result.returncode
        up_throughout = before[0] == after[0] and before[1] and after[1]
        configured_throughout = before[2] == after[2] and before[3]
        self.counts["exit %d" % code] += 1
        if code == 0:
            token = result.stdout.strip()
            claims = jwt_claims(token)
            if claims is None or "exp" not in claims:
                self.violate("token %s: not a JWT: %r" % (account, token[:40]))
                return
            left = claims["exp"] - asked
            self.checks["token alive"] += 1
            # exp is whole seconds; the daemon counts a lifetime minus 1 s, so >= min_valid holds.
            if left < MIN_VALID - 0.01:
                self.violate("token %s: served a token with %.2f s left (min-valid %d) at daemon offset %s" % (account, left, MIN_VALID, self.offset))
            uid = claims.get("user_id") or claims.get("sub")
            with self.lock:
                known = uid in self.users[account]
            self.checks["token owner"] += 1
            if not known:
                self.violate("token %s: belongs to uid %s, never given to this account" % (account, uid))
            return
        line = result.stderr.strip().replace("\n", " | ")
        if code == 69 and not up_throughout:
            return
        if code == 67 and not configured_throughout or code == 67 and not after[3]:
            return
        if code == 75:
            return
        if code == 77 and (before[4] != after[4] or before[5] or after[5]):
            return
        if not up_throughout and code in (77, 67):
            # Just restarted: the account may not be read yet, or the config just changed.
            if code == 67:
                return
        self.violate("tokenctl token %s exited %d: %s" % (account, code, line))

    def prober(self):
        while not self.stop.is_set():
            with self.lock:
                epoch, up = self.epoch, self.up
            if up:
                try:
                    ok = self.hello(SOCKET_BOUND).get("ok")
                except (OSError, ValueError) as error:
                    ok = error
                with self.lock:
                    still = self.epoch == epoch and self.up
                if still:
                    self.checks["socket answers"] += 1
                    if ok is not True:
                        self.violate("the socket did not answer hello within %s s while tokend was up: %s" % (SOCKET_BOUND, ok))
            time.sleep(0.5)

    # -- the keyring invariant ----------------------------------------------------------------

    def check_items(self):
        """While the keyring is open: each account with a live user holds an item whose refresh
        token the fake issued to that user."""
        with self.lock:
            if not self.keyring_open:
                return
            accounts = {a: self.user.get(a) for a in ACCOUNTS if a not in self.revoked and self.user.get(a)}
        for account, uid in accounts.items():
            stored = self.stored_refresh_token(account)
            with self.lock:
                if not self.keyring_open or account in self.revoked or self.user.get(account) != uid:
                    continue
            self.checks["keyring item"] += 1
            if stored is None:
                self.violate("keyring: %s has no item, though its user %s was never revoked" % (account, uid))
            elif stored not in self.issued_refresh_tokens(uid):
                self.violate("keyring: %s holds a refresh token the fake never issued to %s" % (account, uid))

    def trace_refresh_tokens(self, account, uid, stored, requests):
        """For a mismatch: the fake's last token requests of the account's user, each token named
        by its place in the user's history, never printed (the item's own is `stored`)."""
        names = {}
        def name(token):
            if token is None:
                return "-"
            if token == stored:
                names.setdefault(token, "stored")
            return names.setdefault(token, "t%d" % len(names))
        mine = [r for r in requests if r.get("uid") == uid and r.get("path", "").endswith("/token")]
        for r in mine[-8:]:
            self.log("  %s token request at %.2f: presented %s, issued %s, status %s%s" % (
                account, r["at"], name(r.get("presented_refresh_token")), name(r.get("issued_refresh_token")),
                r.get("status"), (", fault " + r["fault"]["fault"]) if r.get("fault") else ""))
        self.log("  %s tokend says %s" % (account, json.dumps((self.status() or {}).get(account, {}), sort_keys=True)))

    def settle(self, final=False):
        """Faults off, keyring unlocked, every account configured and tokend up. Once an account
        is active with nothing unsaved, its item must hold the newest refresh token the fake
        issued it. The one excuse is the lost-response window: the newest was issued to a daemon
        killed before it could save it (the item then holds the one that request presented,
        still good: the provider here does not revoke replaced tokens). A revoked account holds
        one of its revoked user's tokens or nothing."""
        self.log("settle")
        self.control("DELETE", "faults")
        if not self.keyring_open:
            self.keyring("unlock")
        self.set_config(set(ACCOUNTS))
        if not self.up:
            self.start_tokend()
        for account in ACCOUNTS:
            if account in self.revoked and self.rng.random() < 0.5 and not final:
                self.step_reimport(account)
        deadline = time.monotonic() + SETTLE_BOUND
        mismatches = collections.Counter()
        while True:
            pending = []
            status = self.status() or {}
            requests = self.control("GET", "requests")
            for account in ACCOUNTS:
                uid = self.user.get(account)
                entry = status.get(account, {})
                stored = self.stored_refresh_token(account)
                newest = self.newest_refresh_token(uid)
                if account in self.revoked:
                    # Dead either way; tokend deletes the item when a refresh with the very token
                    # it holds is refused, so one that rotated while the keyring was locked stays
                    # until then. What may not be there is a token of another user.
                    if stored is not None and stored not in self.issued_refresh_tokens(uid):
                        self.violate("settle: %s (revoked) holds a token the fake never issued to its user" % account)
                    continue
                state = entry.get("state")
                if state in ("needs_login", "config_error"):
                    # Nothing revoked this account's user, and its endpoint never changed.
                    self.violate("settle: %s says %s: %s" % (account, state, entry.get("message")))
                    return
                # In flight or not yet written: wait. Active, retrying or unavailable (a backoff
                # may outlast the settle, and need not: the item is checked all the same).
                if state not in ("active", "retrying", "unavailable") or entry.get("unsaved"):
                    pending.append("%s: %s%s" % (account, state, ", unsaved" if entry.get("unsaved") else ""))
                    continue
                if stored == newest:
                    continue
                issuing = [r for r in requests if r.get("issued_refresh_token") == newest]
                presented = issuing[-1].get("presented_refresh_token") if issuing else None
                if issuing and stored == presented and issuing[-1]["at"] < self.last_kill:
                    self.checks["lost-response window excused"] += 1
                    continue
                # A refresh may be answered and not yet written: only a mismatch that lasts is one.
                mismatches[account] += 1
                if mismatches[account] >= 6:
                    self.trace_refresh_tokens(account, uid, stored, requests)
                    self.violate("settle: %s is active with nothing unsaved, but its item does not hold the newest refresh token the fake issued (it holds %s)" % (
                        account, "nothing" if stored is None else "the one presented for it" if stored == presented else "an older one"))
                    return
                pending.append("%s: item behind the fake" % account)
            self.check_tokend_alive()
            if not pending:
                self.checks["settled account"] += len(ACCOUNTS)
                return
            if time.monotonic() > deadline:
                self.violate("settle: not settled within %d s: %s" % (SETTLE_BOUND, "; ".join(pending)))
                return
            time.sleep(0.5)

    # -- steps --------------------------------------------------------------------------------

    def set_config(self, accounts):
        with self.lock:
            self.configured = set(accounts)
            self.config_generation += 1
        self.write_config(accounts)
        if self.up and self.tokend is not None:
            self.tokend.send_signal(signal.SIGHUP)
            self.await_reload(accounts)
        with self.lock:
            self.config_generation += 1

    def await_reload(self, accounts):
        """Until the daemon lists the new accounts a client may still meet the old configuration
        (an added account is then unknown): the change is in progress until then."""
        deadline = time.monotonic() + RELOAD_BOUND
        while time.monotonic() < deadline:
            try:
                status = self.status()
            except subprocess.TimeoutExpired:
                status = None
            if status is not None and set(status) == set(accounts):
                return
            time.sleep(0.02)
        self.violate("tokend did not take up accounts %s within %d s of SIGHUP" % (",".join(sorted(accounts)), RELOAD_BOUND))

    def step_reimport(self, account):
        if not (self.up and self.keyring_open and account in self.configured):
            return "skipped"
        ok, result = self.import_new_user(account)
        return "ok" if ok else "failed %d: %s" % (result.returncode, result.stderr.strip())

    def step(self, kind):
        rng = self.rng
        if kind == "fault":
            fault = dict(rng.choice(FAULTS))
            fault["seconds"] = round(rng.uniform(2, 15), 1)
            self.control("POST", "faults", fault)
            return json.dumps(fault)
        if kind == "clear_faults":
            self.control("DELETE", "faults")
            return ""
        if kind == "revoke":
            candidates = sorted(a for a in self.user if a not in self.revoked)
            if not candidates:
                return "skipped"
            account = rng.choice(candidates)
            with self.lock:
                self.revoked.add(account)
                self.revocations[account] += 1
            self.control("POST", "users/%s/revoke" % self.user[account])
            return account
        if kind == "reimport":
            candidates = sorted(self.revoked)
            if not candidates:
                return "skipped"
            account = rng.choice(candidates)
            return "%s %s" % (account, self.step_reimport(account))
        if kind == "kill9":
            delay = round(rng.uniform(0, 2), 2)
            self.kill_tokend()
            time.sleep(delay)  # tokend down for a while: clients see 69
            self.start_tokend()
            return "down %.2f s" % delay
        if kind == "keyring_lock":
            if not self.keyring_open:
                return "skipped"
            self.keyring("lock")
            return ""
        if kind == "keyring_unlock":
            if self.keyring_open:
                return "skipped"
            self.keyring("unlock")
            return ""
        if kind == "keyring_restart":
            self.keyring("restart")
            return ""
        if kind == "sighup":
            accounts = {a for a in ACCOUNTS if rng.random() < 0.7} or {rng.choice(ACCOUNTS)}
            self.set_config(accounts)
            return ",".join(sorted(accounts))
        if kind == "clock":
            offset = rng.choice(OFFSETS)
            self.write_offset(offset)
            return offset
        if kind == "pause":
            time.sleep(rng.uniform(0.5, 3))
            return ""
        raise ValueError(kind)

    # -- the run ------------------------------------------------------------------------------

    def main(self):
        print("chaos: seed %d, %.2f minutes, store %s; world in %s" % (self.args.seed, self.args.minutes, self.args.store, ROOT), flush=True)
        self.write_offset("+0")
        if self.tpm is not None:
            self.tpm.start()
            self.tpm.seal_key()
        self.start_fake()
        self.write_config(ACCOUNTS)
        self.start_tokend()
        for account in ACCOUNTS:
            ok, result = self.import_new_user(account)
            if not ok:
                raise RuntimeError("import %s failed: %s" % (account, result.stderr))
        threads = [threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(CLIENTS)]
        threads.append(threading.Thread(target=self.prober, daemon=True))
        for thread in threads:
            thread.start()
        kinds = list(STEP_WEIGHTS)
        weights = [STEP_WEIGHTS[k] for k in kinds]
        end = time.monotonic() + self.args.minutes * 60
        number = 0
        progress = time.monotonic() + 300
        try:
            while time.monotonic() < end and not self.stop.is_set():
                number += 1
                if time.monotonic() > progress:  # a long run shows where it is
                    progress += 300
                    print("chaos: %d steps, %d checks, %d violations so far" % (number, sum(self.checks.values()), len(self.violations)), flush=True)
                if number % 25 == 0:
                    self.settle()
                    self.counts["step settle"] += 1
                    continue
                kind = self.rng.choices(kinds, weights)[0]
                detail = self.step(kind)
                self.counts["step " + kind] += 1
                self.log("step %d %s %s" % (number, kind, detail))
                self.check_tokend_alive()
                self.check_items()
                time.sleep(self.rng.uniform(0, 1))
            if not self.stop.is_set():
                self.settle(final=True)
                self.counts["step settle"] += 1
        except Violation as violation:
            self.violate(str(violation))
        except Exception as error:  # the driver's own trouble (a tool that failed): still replayable
            self.violate("driver error: %r" % error)
        finally:
            self.stop.set()
            for thread in threads:
                thread.join(timeout=TOKENCTL_BOUND + 5)
            self.shutdown()
        self.report(number)
        return 1 if self.violations else 0

    def report(self, steps):
        print("chaos: %d steps: %s" % (steps, ", ".join("%s %d" % kv for kv in sorted(self.counts.items()) if kv[0].startswith("step "))))
        print("chaos: exits: %s" % ", ".join("%s %d" % kv for kv in sorted(self.counts.items()) if kv[0].startswith("exit ")))
        print("chaos: invariant checks: %s (total %d)" % (", ".join("%s %d" % kv for kv in sorted(self.checks.items())), sum(self.checks.values())))
        if self.violations:
            print("chaos: FAILED, seed %d (replay: scripts/chaos --seed %d --minutes %s --store %s)" % (self.args.seed, self.args.seed, self.args.minutes, self.args.store))
            for violation in self.violations[:20]:
                print("  " + violation)
            print("step log (last %d lines):" % len(self.log.lines))
            print(self.log.dump())
            try:
                with open(self.tokend_log, errors="replace") as f:
                    print("tokend log (last 60 lines):\n" + "".join(f.readlines()[-60:]))
            except OSError:
                pass
        else:
            print("chaos: passed, seed %d" % self.args.seed)

    def shutdown(self):
        if self.tokend is not None:
            self.tokend.terminate()
            try:
                self.tokend.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.tokend.kill()
        if getattr(self, "fake", None) is not None:
            self.fake.terminate()
            try:
                self.fake.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.fake.kill()
        # The keyring is the session's: its teardown stops it. The TPM is the run's.
        if self.tpm is not None:
            self.tpm.stop()


def main():
    parser = argparse.ArgumentParser(prog="scripts/chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=None, help="the schedule's seed (default: random, printed)")
    parser.add_argument("--minutes", type=float, default=5, help="how long to run (default 5)")
    parser.add_argument("--keep-going", action="store_true", help="record violations and go on instead of stopping at the first")
    parser.add_argument("--store", choices=["secret-service", "tpm2"], default="secret-service",
                        help="where tokend keeps the sessions: the private gnome-keyring (default) or swtpm through the tpm2 store")
    parser.add_argument("--fleet", action="store_true",
                        help="three daemons sharing accounts through a real etcd cluster with TLS, under etcd and member faults (scripts/lib/chaos_fleet.py)")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 2**31)
    if args.fleet:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        sys.modules["chaos"] = sys.modules[__name__]  # chaos_fleet imports this module by name
        import chaos_fleet
        sys.exit(chaos_fleet.FleetChaos(args).main())
    if not ROOT:
        sys.exit("chaos.py: run me through scripts/chaos")
    if not os.path.exists(FAKETIME_FIX):
        sys.exit("chaos.py: %s is missing; build it: swift build --product TokendFaketimeFix" % FAKETIME_FIX)
    sys.exit(World(args).main())


if __name__ == "__main__":
    main()
