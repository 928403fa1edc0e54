#!/usr/bin/env python3
"""The fleet's checks (issue 50; run through scripts/test-fleet, which builds and installs).

A real etcd 3.4 cluster (three members on loopback, TLS between everyone, client certificates,
auth on with a `tokend` user whose role is limited to /tokend/), three real tokend daemons, each
in its own private session (runtime dir, socket, gnome-keyring: its own local store), sharing one
Firebase account through etcd, and the fake Firebase rotating refresh tokens with reuse detection
(a rotated-away token presented again revokes the whole family). Member 3 reaches etcd through
TCP proxies this script controls, so that it can be cut off.

Checks, in order (each prints ok/FAIL):
  1. an import on one member reaches the others (measured);
  2. rounds of `tokenctl refresh` on all three members at once: exactly one refresh at the
     provider per round, no refresh token presented twice, every member serving the new token
     within a measured bound;
  3. kill -9 of the holder while idle: another member refreshes once its lease expired; the
     killed member comes back without a login;
  4. one etcd member stopped (SIGSTOP): refreshes and serving go on;
  5. quorum lost (two stopped): members serve valid tokens, then exit 75 naming the fleet, never
     an expired token, no refresh at the provider; quorum back: fresh tokens with no login;
  6. the holder cut off from etcd (its proxies closed): it stops refreshing, another member takes
     over, no reuse when it comes back, and it serves the fleet's newest token again;
  7. no token the provider issued is in etcd's data directories or in `etcdctl get --prefix`;
  8. a member with another sealing key reads nothing (an error naming sealing_key and the
     steps, in status too) and writes nothing (etcd's revision unchanged);
  9. a logout on one member removes the session from etcd and from every member (exit 77);
 10. a login on another member is the fleet's: sealed in etcd, served by every member;
 11-13. kill -9 of the holder with its refresh in flight (scripts/lib/fleet_window.py): before
     the provider acted on it (no reuse), and inside README's one window, after the provider
     rotated and before the answer reached the holder, at a provider that accepts the old token
     again (Firebase, a grace period) and at one that revokes the family on reuse.
Throughout checks 1-10: the provider never sees a refresh token twice and never answers a refresh
with an error (its reuse detection would revoke the family).
"""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

BIN = os.environ.get("TOKEND_BIN_DIR") or sys.exit("fleet.py: run me through scripts/test-fleet")
LIB = os.path.dirname(os.path.abspath(__file__))
SESSION = os.path.join(LIB, "private-session")
ACCOUNT = "shared"
# Short enough that a quorum loss outlives the tokens in seconds, long enough that a refresh and
# its propagation fit on two loaded cores many times over.
TOKEN_LIFETIME = 20
# The election lease: a holder killed or cut off is replaced this long after (etcd's minimum is
# 1.5 election timeouts, 3 s here).
LEASE = 6
ROUNDS = 10
# Bounds on waits, generous for two shared cores: a missed bound is a hang, not slowness.
START_BOUND = 60
REACH_BOUND = 20
TOKENCTL_BOUND = 60

failures = 0
measured = {}


def ok(name):
    print("ok    " + name, flush=True)


def fail(name, detail=""):
    global failures
    failures += 1
    print("FAIL  " + name + (": " + detail if detail else ""), flush=True)


def check(name, condition, detail=""):
    (ok if condition else lambda n: fail(n, detail))(name)
    return condition


def poll(seconds, probe):
    """probe() until it returns something true, or None at the deadline (no guessed sleeps)."""
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def jwt_exp(token):
    try:
        payload = token.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"]
    except Exception:
        return None


def run(argv, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, timeout=TOKENCTL_BOUND, **kwargs)


class Proxy:
    """A TCP relay to one etcd member, which the test can cut (every connection closed, new ones
    refused at once) and restore: a member cut off from etcd while its process runs on."""

    def __init__(self, target_port):
        self.target = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.cut_off = False
        self.lock = threading.Lock()
        self.open = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.cut_off:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    def pump(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data or self.cut_off:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        self.cut_off = True
        with self.lock:
            for end in self.open:
                try:
                    end.shutdown(socket.SHUT_RDWR)
                    end.close()
                except OSError:
                    pass
            self.open = []

    def restore(self):
        self.cut_off = False


class World:
    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="tokend-fleet.")
        os.chmod(self.root, 0o700)
        self.etcd = []
        self.members = []
        self.processes = []

    # ---- certificates: one CA; a server certificate for every member (also the gateway's
    # client certificate towards etcd's gRPC server); etcdctl's root; tokend's, with no CN
    # (etcd 3.4's gateway refuses a client certificate with one when client-cert-auth is on).
    def openssl(self, *args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=self.root)

    def certificate(self, name, subject, extensions):
        self.openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr", "-subj", subject)
        with open(os.path.join(self.root, name + ".ext"), "w") as ext:
            ext.write(extensions)
        self.openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                     "-days", "2", "-out", name + ".crt", "-extfile", name + ".ext")
        os.chmod(os.path.join(self.root, name + ".key"), 0o600)

    def make_certificates(self):
        self.openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                     "-subj", "/CN=tokend fleet test CA")
        self.certificate("server", "/CN=etcd", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
        self.certificate("root", "/CN=root", "extendedKeyUsage=clientAuth\n")
        self.certificate("tokend", "/O=tokend fleet member", "extendedKeyUsage=clientAuth\n")

    def path(self, name):
        return os.path.join(self.root, name)

    def stop_all(self, keep=False):
        """Every member, then every other process the world started; its directory goes unless
        `keep` (a failure's evidence) or TOKEND_FLEET_KEEP."""
        for m in self.members:
            m.stop()
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        if not keep and not os.environ.get("TOKEND_FLEET_KEEP"):
            shutil.rmtree(self.root, ignore_errors=True)

    # ---- etcd
    def start_etcd(self):
        self.client_ports = [free_port() for _ in range(3)]
        peer_ports = [free_port() for _ in range(3)]
        cluster = ",".join("e%d=https://127.0.0.1:%d" % (i + 1, peer_ports[i]) for i in range(3))
        tls = ["--cert-file", self.path("server.crt"), "--key-file", self.path("server.key"),
               "--trusted-ca-file", self.path("ca.crt"), "--client-cert-auth",
               "--peer-cert-file", self.path("server.crt"), "--peer-key-file", self.path("server.key"),
               "--peer-trusted-ca-file", self.path("ca.crt"), "--peer-client-cert-auth"]
        for i in range(3):
            log = open(self.path("etcd%d.log" % (i + 1)), "w")
            argv = ["etcd", "--name", "e%d" % (i + 1), "--data-dir", self.path("etcd%d.data" % (i + 1)),
                    "--listen-client-urls", "https://127.0.0.1:%d" % self.client_ports[i],
                    "--advertise-client-urls", "https://127.0.0.1:%d" % self.client_ports[i],
                    "--listen-peer-urls", "https://127.0.0.1:%d" % peer_ports[i],
                    "--initial-advertise-peer-urls", "https://127.0.0.1:%d" % peer_ports[i],
                    "--initial-cluster", cluster, "--initial-cluster-state", "new", "--initial-cluster-token", "tokend-fleet",
                    "--heartbeat-interval", "200", "--election-timeout", "2000", *tls]
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            self.etcd.append(process)
            self.processes.append(process)
        healthy = poll(START_BOUND, lambda: self.etcdctl("endpoint", "health", "--cluster").returncode == 0)
        if not healthy:
            raise SystemExit("fleet.py: etcd did not become healthy; see %s/etcd*.log" % self.root)
        password = base64.b16encode(os.urandom(12)).decode()
        with open(self.path("etcd-password"), "w") as out:
            out.write(password + "\n")
        os.chmod(self.path("etcd-password"), 0o600)
        for step in (["user", "add", "root", "--new-user-password", base64.b16encode(os.urandom(12)).decode(), "--interactive=false"],
                     ["user", "grant-role", "root", "root"],
                     ["role", "add", "tokend"],
                     ["role", "grant-permission", "tokend", "--prefix=true", "readwrite", "/tokend/"],
                     ["user", "add", "tokend", "--new-user-password", password, "--interactive=false"],
                     ["user", "grant-role", "tokend", "tokend"],
                     ["auth", "enable"]):
            done = self.etcdctl(*step)
            if done.returncode != 0:
                raise SystemExit("fleet.py: etcdctl %s failed: %s" % (" ".join(step[:2]), done.stderr.strip()))

    def etcdctl(self, *args, endpoints=None):
        ports = endpoints or self.client_ports
        argv = ["etcdctl", "--endpoints", ",".join("https://127.0.0.1:%d" % p for p in ports),
                "--cacert", self.path("ca.crt"), "--cert", self.path("root.crt"), "--key", self.path("root.key"),
                "--command-timeout", "5s", *args]
        return run(argv, env=dict(os.environ, ETCDCTL_API="3"))

    def revision(self):
        answer = self.etcdctl("get", "/tokend/", "--prefix", "-w", "json")
        return json.loads(answer.stdout)["header"]["revision"] if answer.returncode == 0 else None

    def holder_pid(self, account=ACCOUNT):
        answer = self.etcdctl("get", "/tokend/holder/" + account, "--print-value-only")
        value = answer.stdout.strip()
        return int(value.rsplit("/", 1)[1]) if answer.returncode == 0 and "/" in value else None

    # ---- the fake Firebase
    def start_fake(self):
        self.fake_out = open(self.path("fake.out"), "w")
        process = subprocess.Popen(
            [os.path.join(BIN, "tokend-fake-firebase"), "--lifetime", str(TOKEN_LIFETIME), "--rotate", "--revoke-previous",
             "--revoke-family-on-reuse", "--create-user"],
            stdout=self.fake_out, stderr=open(self.path("fake.log"), "w"), stdin=subprocess.DEVNULL)
        self.processes.append(process)
        lines = poll(START_BOUND, lambda: [l for l in open(self.path("fake.out")).read().splitlines() if l.startswith("UID=")] and
                     open(self.path("fake.out")).read().splitlines())
        if not lines:
            raise SystemExit("fleet.py: the fake Firebase did not start")
        values = dict(line.split("=", 1) for line in lines if "=" in line)
        self.emulator = values["FIREBASE_AUTH_EMULATOR_HOST"]
        self.first_refresh_token = values["REFRESH_TOKEN"]

    def fake(self, path):
        with urllib.request.urlopen("http://%s/_fake/%s" % (self.emulator, path), timeout=10) as answer:
            return json.load(answer)

    def control(self, method, path, body=None):
        """POST or DELETE on the fake's control plane (faults, options, users)."""
        request = urllib.request.Request("http://%s/_fake/%s" % (self.emulator, path), method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)

    def refreshes(self):
        """Every refresh the provider saw, in order."""
        return [r for r in self.fake("requests") if r.get("grant_type") == "refresh_token"]

    def issued_tokens(self):
        tokens = set()
        for r in self.fake("requests"):
            for key in ("issued_refresh_token", "issued_id_token", "presented_refresh_token"):
                if r.get(key):
                    tokens.add(r[key])
        tokens.add(self.first_refresh_token)
        return tokens

    # ---- tokend members
    def write_key(self, name):
        with open(self.path(name), "w") as out:
            out.write(base64.b64encode(os.urandom(32)).decode() + "\n")
        os.chmod(self.path(name), 0o600)

    def config(self, ports, key_file, accounts=(ACCOUNT,)):
        endpoints = ", ".join('"https://127.0.0.1:%d"' % p for p in ports)
        fleet = ("[fleet]\nendpoints = [%s]\nca = \"%s\"\ncert = \"%s\"\nkey = \"%s\"\nuser = \"tokend\"\npassword_file = \"%s\"\n"
                 "sealing_key = \"%s\"\nlease = \"%ds\"\n") % (
            endpoints, self.path("ca.crt"), self.path("tokend.crt"), self.path("tokend.key"), self.path("etcd-password"),
            self.path(key_file), LEASE)
        return fleet + "".join("\n[account.%s]\nprovider = \"firebase\"\napi_key = \"test-api-key\"\nemulator = \"%s\"\nfleet = true\n" % (
            account, self.emulator) for account in accounts)


class Member:
    def __init__(self, world, index, ports, key_file="fleet.key", accounts=(ACCOUNT,)):
        self.world = world
        self.name = "m%d" % index
        self.dir = world.path(self.name)
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.socket = os.path.join(self.dir, "tokend.sock")
        self.config = os.path.join(self.dir, "config.toml")
        with open(self.config, "w") as out:
            out.write(world.config(ports, key_file, accounts))
        os.chmod(self.config, 0o600)
        self.pid = None
        self.session = None

    def start(self):
        pidfile = os.path.join(self.dir, "tokend.pid")
        if os.path.exists(pidfile):
            os.unlink(pidfile)
        log = open(os.path.join(self.dir, "tokend.log"), "a")
        # Its own private session: bus, gnome-keyring, XDG_RUNTIME_DIR (the local store).
        self.session = subprocess.Popen(
            [SESSION, "--private-home", "--", "sh", "-c", 'echo $$ > "$0"; exec "$@"', pidfile,
             os.path.join(BIN, "tokend"), "--socket", self.socket, "--config", self.config],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.world.processes.append(self.session)
        up = poll(START_BOUND, lambda: os.path.exists(pidfile) and open(pidfile).read().strip() and self.tokenctl("list")[0] == 0)
        if not up:
            raise SystemExit("fleet.py: tokend %s did not start; see %s/tokend.log" % (self.name, self.dir))
        self.pid = int(open(pidfile).read().strip())

    def tokenctl(self, *args, stdin=None):
        # tokenctl's options follow its command: `tokenctl token ACCOUNT --socket PATH`.
        done = run([os.path.join(BIN, "tokenctl"), *args, "--socket", self.socket], input=stdin)
        return done.returncode, done.stdout.strip(), done.stderr.strip()

    def token(self, min_valid=1, timeout=5, account=ACCOUNT):
        return self.tokenctl("token", account, "--min-valid", str(min_valid), "--timeout", str(timeout))

    def kill9(self):
        os.kill(self.pid, signal.SIGKILL)
        self.session.wait(timeout=START_BOUND)

    def stop(self):
        """SIGTERM to tokend itself (its private session, told to end, would leave it running),
        then the session's end."""
        if self.session is None or self.session.poll() is not None:
            return
        for sig in (signal.SIGCONT, signal.SIGTERM):
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                break
        try:
            self.session.wait(timeout=START_BOUND)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self.session.wait(timeout=START_BOUND)


def served_ok(member, now=None):
    """The token the member serves, checked alive by the provider's clock (real time); None if
    it serves none. An expired token is a violation, counted at once."""
    code, token, err = member.token()
    if code != 0:
        return None
    exp = jwt_exp(token)
    if exp is None or exp <= (now or time.time()):
        fail("%s never serves an expired token" % member.name, "exp %s at %.0f" % (exp, time.time()))
        return None
    return token


def no_reuse(world, where):
    """The provider never saw a refresh token twice, and answered every refresh."""
    seen = {}
    for r in world.refreshes():
        presented = r.get("presented_refresh_token")
        if presented in seen:
            return fail("no refresh token presented twice (%s)" % where, "a token presented at %s again at %s" % (seen[presented], r.get("at")))
        seen[presented] = r.get("at")
        if r.get("status") != 200:
            return fail("every refresh answered 200 (%s)" % where, "status %s %s" % (r.get("status"), r.get("error_code")))
    ok("no refresh token presented twice, every refresh answered (%s: %d refreshes)" % (where, len(seen)))


def rotated_away_reuses(refreshes):
    """The refreshes that presented a refresh token an earlier refresh had rotated away: reuse as
    the provider sees it. A request a fault answered never reached the provider's ledger, so
    the same token presented again after one is no reuse."""
    rotated = set()
    reuses = []
    for r in refreshes:
        presented = r.get("presented_refresh_token")
        if r.get("fault"):
            continue
        if presented in rotated:
            reuses.append(r)
        if r.get("status") == 200 and r.get("rotated"):
            rotated.add(presented)
    return reuses


def newest_id_token(world):
    ok_refreshes = [r for r in world.refreshes() if r.get("status") == 200]
    return ok_refreshes[-1]["issued_id_token"] if ok_refreshes else None


def all_serve(members, token, bound=REACH_BOUND, account=ACCOUNT):
    """Seconds until each member has served `token` (each is asked until it does; a member may
    move on to a newer one after, as a natural refresh comes); None past the bound."""
    start = time.monotonic()
    waiting = list(members)

    def reached():
        waiting[:] = [m for m in waiting if m.token(account=account)[1] != token]
        return not waiting

    return (time.monotonic() - start) if poll(bound, reached) else None


def main():
    started = time.monotonic()
    world = World()
    try:
        world.make_certificates()
        world.start_etcd()
        world.start_fake()
        world.write_key("fleet.key")
        world.proxies = [Proxy(p) for p in world.client_ports]
        members = [Member(world, 1, world.client_ports), Member(world, 2, world.client_ports),
                   Member(world, 3, [p.port for p in world.proxies])]
        world.members = list(members)  # the stranger of check 8 joins this list, not the fleet's
        for m in members:
            m.start()
        print("      world up in %.1f s (%s)" % (time.monotonic() - started, world.root), flush=True)
        scenario(world, members)
    finally:
        world.stop_all(keep=failures != 0)
    print("      measured: " + ", ".join("%s %s" % (k, v) for k, v in measured.items()))
    print("      took %.0f s" % (time.monotonic() - started))
    if failures:
        print("scripts/test-fleet: %d check(s) failed; the world is kept in %s" % (failures, world.root))
        sys.exit(1)
    print("scripts/test-fleet: all checks passed")


def scenario(world, members):
    m1, m2, m3 = members
    # 1. An import on m1 is the fleet's.
    code, _, err = m1.tokenctl("import", ACCOUNT, stdin=world.first_refresh_token + "\n")
    check("import on m1 exits 0", code == 0, err)
    token = newest_id_token(world)
    took = all_serve(members, token) if token else None
    check("the imported session reaches m2 and m3", took is not None)
    measured["import reach s"] = "%.2f" % (took or -1)
    if os.environ.get("TOKEND_FLEET_ONLY") == "window":  # checks 1 and 11-13 only
        import fleet_window
        return fleet_window.scenario(world, members)

    # 2. Rounds of forced refreshes on all members at once: one provider refresh each.
    reaches = []
    for round_number in range(ROUNDS):
        before = len(world.refreshes())
        threads = [threading.Thread(target=m.tokenctl, args=("refresh", ACCOUNT)) for m in members]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        count = len(world.refreshes()) - before
        if count != 1:
            fail("round %d: exactly one refresh at the provider" % round_number, "%d" % count)
            break
        newest = newest_id_token(world)
        took = all_serve(members, newest)
        if took is None:
            fail("round %d: every member serves the new token" % round_number,
                 "at %.1f: %s" % (time.time(), ", ".join("%s %s" % (m.name, "newest" if m.token()[1] == newest else "other") for m in members)))
            break
        reaches.append(took)
    else:
        ok("%d rounds of refreshes forced on three members at once: one provider refresh each, every member serving it" % ROUNDS)
    if reaches:
        reaches.sort()
        measured["rotation reach p50/max s"] = "%.2f/%.2f" % (reaches[len(reaches) // 2], reaches[-1])
    no_reuse(world, "forced rounds")
    if os.environ.get("TOKEND_FLEET_ONLY") == "rounds":
        return

    # 3. kill -9 of the holder, idle: another member takes over.
    holder = next((m for m in members if m.pid == world.holder_pid()), None)
    if not check("one member holds the account's election", holder is not None, "holder pid %s" % world.holder_pid()):
        return
    holder.kill9()
    others = [m for m in members if m is not holder]
    before = len(world.refreshes())
    t0 = time.monotonic()
    took_over = poll(LEASE * 4 + 20, lambda: others[0].tokenctl("refresh", ACCOUNT)[0] == 0 and len(world.refreshes()) > before)
    check("after kill -9 of the holder, another member refreshes", took_over is not None)
    measured["takeover after kill -9 s"] = "%.1f" % (time.monotonic() - t0)
    check("the survivors serve the new token", all_serve(others, newest_id_token(world)) is not None)
    holder.start()
    check("the killed member, restarted with an empty local store, serves the fleet's token with no login",
          all_serve([holder], newest_id_token(world)) is not None)
    no_reuse(world, "kill -9")

    # 4. One etcd member stopped: nothing noticed.
    world.etcd[0].send_signal(signal.SIGSTOP)
    before = len(world.refreshes())
    refreshed = poll(LEASE * 4 + 20, lambda: m2.tokenctl("refresh", ACCOUNT)[0] == 0 and len(world.refreshes()) > before)
    check("one etcd member stopped: a refresh goes through", refreshed is not None)
    check("one etcd member stopped: every member serves the new token", all_serve(members, newest_id_token(world), bound=LEASE * 4) is not None)
    world.etcd[0].send_signal(signal.SIGCONT)
    no_reuse(world, "one etcd member stopped")

    # 5. Quorum lost: valid tokens served, then 75, never expired, no refresh.
    world.etcd[0].send_signal(signal.SIGSTOP)
    world.etcd[1].send_signal(signal.SIGSTOP)
    before = len(world.refreshes())
    t0 = time.time()
    served_until = {}
    answers_75 = {}

    def degraded(m):
        while time.time() - t0 < TOKEN_LIFETIME + 30:
            # Longer than the first refresh attempt's deadlines on every endpoint (3 x 2 s): the
            # answer then carries that refresh's failure (tokenctl's own default is 30 s).
            code, token, err = m.token(timeout=10)
            if code == 0:
                exp = jwt_exp(token)
                if exp is None or exp <= time.time():
                    fail("quorum lost: %s never serves an expired token" % m.name)
                    return
                served_until[m.name] = time.time()
            elif code == 75:
                answers_75[m.name] = err
                return
            else:
                fail("quorum lost: %s answers 0 or 75 only" % m.name, "exit %d: %s" % (code, err))
                return
            time.sleep(0.2)

    threads = [threading.Thread(target=degraded, args=(m,)) for m in members]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check("quorum lost: every member answers 75 once its token is spent",
          len(answers_75) == 3, "got 75 from %s" % sorted(answers_75))
    check("quorum lost: the 75 says the fleet cannot be reached",
          all("fleet" in e for e in answers_75.values()), "; ".join(answers_75.values())[:300])
    check("quorum lost: no refresh reached the provider", len(world.refreshes()) == before, "%d" % (len(world.refreshes()) - before))
    statuses = [m.tokenctl("status", ACCOUNT, "--json")[1] for m in members]
    check("quorum lost: tokenctl status says fleet_unreachable on every member", all("fleet_unreachable" in s for s in statuses),
          " | ".join(s[:200] for s in statuses))
    world.etcd[0].send_signal(signal.SIGCONT)
    world.etcd[1].send_signal(signal.SIGCONT)
    t0 = time.monotonic()
    back = poll(LEASE * 6 + 40, lambda: all(served_ok(m) for m in members))
    check("quorum back: every member serves a valid token with no login", back is not None)
    measured["recovery after quorum s"] = "%.1f" % (time.monotonic() - t0)
    no_reuse(world, "quorum")

    # 6. The holder cut off from etcd: make m3 the holder first (pause the current holder's
    # process past its lease), then cut m3's proxies.
    if world.holder_pid() != m3.pid:
        for m in (m1, m2):
            os.kill(m.pid, signal.SIGSTOP)
        became = poll(LEASE * 4 + 20, lambda: m3.tokenctl("refresh", ACCOUNT)[0] == 0 and world.holder_pid() == m3.pid)
        for m in (m1, m2):
            os.kill(m.pid, signal.SIGCONT)
        check("a holder paused past its lease loses the election to another member", became is not None)
        no_reuse(world, "holder paused")
    if world.holder_pid() == m3.pid:
        for proxy in world.proxies:
            proxy.cut()
        cut_at = len(world.refreshes())
        before_presented = {r.get("presented_refresh_token") for r in world.refreshes()}
        took_over = poll(LEASE * 4 + 30, lambda: m1.tokenctl("refresh", ACCOUNT)[0] == 0 and world.holder_pid() in (m1.pid, m2.pid)
                         and len(world.refreshes()) > cut_at)
        check("the holder cut off from etcd: another member takes over and refreshes", took_over is not None)
        m3.tokenctl("refresh", ACCOUNT)  # the cut-off member must not refresh behind the fleet's back
        for proxy in world.proxies:
            proxy.restore()
        check("the cut-off member serves the fleet's newest token once back", all_serve([m3], newest_id_token(world), bound=LEASE * 4 + 20) is not None)
        no_reuse(world, "holder cut off")
    else:
        fail("m3 holds the election before it is cut off", "holder pid %s" % world.holder_pid())

    # 7. Canaries: no issued token in etcd's files or in etcdctl get --prefix.
    tokens = world.issued_tokens()
    listing = world.etcdctl("get", "/tokend/", "--prefix").stdout
    check("no token in etcdctl get --prefix", listing and not any(t in listing for t in tokens), "listing %d bytes" % len(listing))
    found = []
    for i in range(3):
        for folder, _, files in os.walk(world.path("etcd%d.data" % (i + 1))):
            for name in files:
                data = open(os.path.join(folder, name), "rb").read()
                if any(t.encode() in data for t in tokens):
                    found.append(os.path.join(folder, name))
    check("no token in etcd's data directories (%d tokens looked for)" % len(tokens), not found, ", ".join(found[:3]))

    # 8. A member with another key reads nothing and writes nothing.
    world.write_key("wrong.key")
    stranger = Member(world, 4, world.client_ports, key_file="wrong.key")
    world.members.append(stranger)
    revision, refreshes = world.revision(), len(world.refreshes())
    stranger.start()
    code, _, err = stranger.token()
    check("a member with another sealing key serves no token and says its key is not the fleet's",
          code != 0 and "sealing_key" in err, "exit %d: %s" % (code, err))
    code, out, _ = stranger.tokenctl("status", ACCOUNT, "--json")
    check("its status says so too", "sealing_key" in out, out[:300])
    # The others go on meanwhile: the holder's natural refreshes each write the session key,
    # and an election may change hands among them; anything else changed is the stranger's.
    def legitimate(kv):
        key = base64.b64decode(kv["key"]).decode()
        value = base64.b64decode(kv.get("value", "")).decode(errors="replace")
        if key == "/tokend/session/" + ACCOUNT:
            return len(world.refreshes()) > refreshes
        return key.startswith("/tokend/holder/") and not value.endswith("/%d" % stranger.pid)
    listing = json.loads(world.etcdctl("get", "/tokend/", "--prefix", "-w", "json").stdout).get("kvs", [])
    wrote = [base64.b64decode(kv["key"]).decode() for kv in listing if int(kv["mod_revision"]) > revision and not legitimate(kv)]
    holder_now = world.holder_pid()
    check("a member with another sealing key wrote nothing to etcd", not wrote and holder_now != stranger.pid,
          "changed %s, holder %s" % (wrote, holder_now))
    stranger.kill9()

    # 9. A logout on one member is the fleet's.
    code, _, err = m2.tokenctl("logout", ACCOUNT)
    check("logout on m2 exits 0", code == 0, err)
    gone = poll(REACH_BOUND, lambda: world.etcdctl("get", "/tokend/session/" + ACCOUNT, "--print-value-only").stdout.strip() == "")
    check("the logout removed the session from etcd", gone is not None)
    forgotten = poll(REACH_BOUND, lambda: all(m.token()[0] == 77 for m in members))
    check("every member forgot the session (token exits 77)", forgotten is not None,
          "; ".join("%s exit %d %s" % ((m.name,) + (lambda r: (r[0], r[2][:160]))(m.token())) for m in members))

    # 10. A login on another member is the fleet's again.
    code, _, err = m3.tokenctl("login", ACCOUNT, "--anonymous")
    check("login on m3 exits 0", code == 0, err)
    stored = poll(REACH_BOUND, lambda: world.etcdctl("get", "/tokend/session/" + ACCOUNT, "--print-value-only").stdout.strip())
    check("the login's session is in etcd, sealed", stored is not None and stored.startswith("tokend-fleet 1:"))
    code, token, _ = m3.token()
    check("every member serves the login's session", code == 0 and all_serve(members, token) is not None)
    no_reuse(world, "end")

    # 11-13. The holder killed with a refresh in flight (scripts/lib/fleet_window.py).
    import fleet_window
    fleet_window.scenario(world, members)


if __name__ == "__main__":
    # fleet_window imports this module by name: one module, one count of failures.
    sys.modules["fleet"] = sys.modules[__name__]
    main()
