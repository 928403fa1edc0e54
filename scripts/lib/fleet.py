#!/usr/bin/env python3
"""The fleet's world (issue 50): three etcd 3.4 members on loopback (TLS, client certificates,
auth with a `tokend` user limited to /tokend/), the fake Firebase with reuse detection, tokend
members each in its own private session (its own local store), and the checks' helpers: one world
for scripts/test-fleet (fleet_checks.py), scripts/chaos --fleet and Benchmarks/fleet-scale."""
import base64, json, os, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request  # noqa: E401

LIB = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, LIB)
from fleet_proxy import Proxy  # noqa: E402,F401  (the relay m3 reaches etcd through; callers take it from here)

BIN = os.environ.get("TOKEND_BIN_DIR") or sys.exit("fleet.py: run me through scripts/test-fleet or scripts/chaos --fleet")
SESSION = os.path.join(LIB, "private-session")
ACCOUNT = "shared"
# Short enough that a quorum loss outlives the tokens in seconds, long enough that a refresh and
# its propagation fit on two loaded cores many times over.
TOKEN_LIFETIME = 20
# The election lease: a holder killed or cut off is replaced this long after (etcd's minimum is
# 1.5 election timeouts, 3 s here).
LEASE = 6
# Bounds on waits, generous for two shared cores: a missed bound is a hang, not slowness.
START_BOUND = 60
REACH_BOUND = 20
TOKENCTL_BOUND = 60


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
        """`accounts`: the shared accounts' names (Benchmarks/fleet-scale shares 1,000)."""
        endpoints = ", ".join('"https://127.0.0.1:%d"' % p for p in ports)
        return ("[fleet]\nendpoints = [%s]\nca = \"%s\"\ncert = \"%s\"\nkey = \"%s\"\nuser = \"tokend\"\npassword_file = \"%s\"\n"
                "sealing_key = \"%s\"\nlease = \"%ds\"\n") % (
            endpoints, self.path("ca.crt"), self.path("tokend.crt"), self.path("tokend.key"), self.path("etcd-password"),
            self.path(key_file), LEASE) + "".join(
            "\n[account.%s]\nprovider = \"firebase\"\napi_key = \"test-api-key\"\nemulator = \"%s\"\nfleet = true\n" % (
                name, self.emulator) for name in accounts)


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


def all_serve(members, token, bound=REACH_BOUND, account=ACCOUNT, world=None):
    """Seconds until each member has served `token`, or with `world` one the provider issued
    after it (a member back from away may catch up past it while 20 s tokens rotate); None past
    the bound."""
    start = time.monotonic()
    waiting = list(members)

    def caught_up(served):
        issued = [r.get("issued_id_token") for r in world.refreshes() if r.get("status") == 200] if world else []
        return served == token or (token in issued and served in issued[issued.index(token) + 1:])

    def reached():
        waiting[:] = [m for m in waiting if not caught_up(m.token(account=account)[1])]
        return not waiting

    return (time.monotonic() - start) if poll(bound, reached) else None


failures, measured = 0, {}  # the checks' count of failures, and the figures they measured


def ok(name):
    print("ok    " + name, flush=True)


def fail(name, detail=""):
    global failures
    failures += 1
    print("FAIL  " + name + (": " + detail if detail else ""), flush=True)


def check(name, condition, detail=""):
    (ok if condition else lambda n: fail(n, detail))(name)
    return condition


def no_reuse(world, where, since=0):
    """The provider never saw a refresh token twice, and answered every refresh (from the `since`th on)."""
    seen = {}
    for r in world.refreshes()[since:]:
        presented = r.get("presented_refresh_token")
        if presented in seen:
            return fail("no refresh token presented twice (%s)" % where, "a token presented at %s again at %s" % (seen[presented], r.get("at")))
        seen[presented] = r.get("at")
        if r.get("status") != 200:
            return fail("every refresh answered 200 (%s)" % where, "status %s %s" % (r.get("status"), r.get("error_code")))
    ok("no refresh token presented twice, every refresh answered (%s: %d refreshes)" % (where, len(seen)))
