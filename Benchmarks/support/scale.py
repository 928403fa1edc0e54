"""The scale run's client side (scripts/bench --scale): talks to tokend over its socket and to the
fake Firebase over its control plane, with the standard library only. Writes JSON facts for
Benchmarks/support/scale_report.py. Never prints a token.

  scale.py provision EMULATOR_HOST SOCKET ACCOUNTS [SPREAD]   users on the fake, imported into tokend
  scale.py sample SOCKET ACCOUNTS SECONDS RATE OUT [LATE]     a client asking random accounts for tokens
  scale.py serve-all SOCKET ACCOUNTS OUT                every account asked once (after a restart)
  scale.py startup TOKEND SOCKET ACCOUNTS OUT LOG       restarts tokend, times its start-up
  scale.py status SOCKET OUT                            size and states of one `status` reply
"""
import base64
import concurrent.futures
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time


def ask(path, request, timeout=120.0):
    """One request on its own connection, as tokenctl does; the reply and its size in bytes."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(path)
        conn.sendall((json.dumps(request) + "\n").encode())
        chunks = []
        while not chunks or not chunks[-1].endswith(b"\n"):
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    line = b"".join(chunks)
    return json.loads(line), len(line)


def set_lifetime(emulator, seconds):
    """The lifetime of the tokens the fake mints from now on (its control plane)."""
    host, port = emulator.rsplit(":", 1)
    fake = http.client.HTTPConnection(host, int(port), timeout=60)
    fake.request("POST", "/_fake/options", body=json.dumps({"lifetime": seconds}), headers={"Content-Type": "application/json"})
    fake.getresponse().read()
    fake.close()


def provision(emulator, sock, accounts, spread_lifetime=0):
    """One anonymous user per account (so no two accounts share a session), imported in parallel:
    each import also runs the account's first refresh, so this is the fake's and the keyring's
    first burst too. With `spread_lifetime`, the accounts are imported in 20 batches whose first
    tokens live 1/20, 2/20, … of it: their refreshes then come as steadily as those of accounts
    that have run for a while, instead of all at once one lifetime later. The fake mints tokens
    of `spread_lifetime` afterwards."""
    if spread_lifetime:
        batches = 20
        facts = {"provisioned": 0, "provision_failed": 0, "provision_seconds": 0.0}
        edges = [accounts * k // batches for k in range(batches + 1)]
        for k in range(batches):
            set_lifetime(emulator, max(60, spread_lifetime * (k + 1) // batches))
            part = provision_range(emulator, sock, edges[k] + 1, edges[k + 1])
            for key in facts:
                facts[key] += part[key]
        set_lifetime(emulator, spread_lifetime)
        facts["provision_seconds"] = round(facts["provision_seconds"], 1)
        return facts
    return provision_range(emulator, sock, 1, accounts)


def provision_range(emulator, sock, first, last):
    host, port = emulator.rsplit(":", 1)

    def one(index):
        fake = http.client.HTTPConnection(host, int(port), timeout=60)
        fake.request("POST", "/_fake/users", body="{}", headers={"Content-Type": "application/json"})
        session = json.loads(fake.getresponse().read())
        fake.close()
        reply, _ = ask(sock, {"op": "import", "account": f"a{index}", "refresh_token": session["refresh_token"]})
        return reply.get("ok", False)

    started = time.monotonic()
    # Eight at a time: enough to keep tokend, the fake and the keyring busy on 2 cores.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(first, last + 1)))
    elapsed = time.monotonic() - started
    failed = results.count(False)
    print(f"provisioned a{first}..a{last}: {len(results) - failed} in {elapsed:.1f} s", file=sys.stderr)
    return {"provisioned": len(results) - failed, "provision_failed": failed, "provision_seconds": round(elapsed, 1)}


def jwt_expiry(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"]


def sample(sock, accounts, seconds, rate, out, late=20 / 3):
    """Asks random accounts for a token `rate` times a second, one connection per request, with
    `min_valid` 0: the daemon's proactive refreshes alone must keep every answer valid. Counts
    failed answers, expired tokens (by the token's own `exp`, against this machine's clock), and
    answers with less than `late` seconds left, a third of the margin (a proactive refresh that
    came late; 60-second tokens: margin 20 s)."""
    counts = {"answers": 0, "failed": 0, "expired": 0, "late": 0}
    errors = {}
    min_left = None
    latencies = []
    deadline = time.monotonic() + seconds
    next_at = time.monotonic()
    while time.monotonic() < deadline:
        name = f"a{random.randint(1, accounts)}"
        asked = time.monotonic()
        try:
            reply, _ = ask(sock, {"op": "token", "account": name, "min_valid": 0, "timeout": 30})
        except OSError as error:
            reply = {"ok": False, "error": {"code": f"socket: {error.__class__.__name__}"}}
        latencies.append(time.monotonic() - asked)
        counts["answers"] += 1
        if not reply.get("ok"):
            counts["failed"] += 1
            code = reply.get("error", {}).get("code", "?")
            errors[code] = errors.get(code, 0) + 1
        else:
            left = jwt_expiry(reply["token"]) - time.time()
            min_left = left if min_left is None else min(min_left, left)
            if left <= 0:
                counts["expired"] += 1
            elif left < late:
                counts["late"] += 1
        next_at += 1 / rate
        time.sleep(max(0, next_at - time.monotonic()))
    latencies.sort()
    pick = lambda q: round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000, 2)
    facts = {**counts, "errors": errors, "min_seconds_left": round(min_left or 0, 1),
             "latency_ms_p50": pick(0.5), "latency_ms_p99": pick(0.99), "latency_ms_max": pick(1.0)}
    with open(out, "w") as f:
        json.dump(facts, f)


def startup(tokend, sock, accounts, out, log):
    """Starts tokend with a NOTIFY_SOCKET of our own and times, from the spawn: the socket
    answering `hello`, READY=1 (sent once every stored session has been read), and every account
    out of `waiting_for_keyring`."""
    notify_dir = tempfile.mkdtemp()
    notify_path = os.path.join(notify_dir, "notify")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.setblocking(False)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    started = time.monotonic()
    daemon = subprocess.Popen([tokend], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log, "ab"))
    facts = {"pid": daemon.pid}
    ready = None
    deadline = started + 300
    while time.monotonic() < deadline and ready is None:
        now = time.monotonic()
        if "socket_ms" not in facts:
            try:
                ask(sock, {"op": "hello"}, timeout=5)
                facts["socket_ms"] = round((time.monotonic() - started) * 1000)
            except OSError:
                pass
        try:
            while True:
                if b"READY=1" in notify.recv(4096):
                    ready = time.monotonic()
        except BlockingIOError:
            pass
        if ready is None:
            time.sleep(0.002)
    facts["ready_ms"] = round((ready - started) * 1000) if ready else None
    while time.monotonic() < deadline:
        reply, size = ask(sock, {"op": "list"})
        waiting = sum(1 for a in reply["accounts"] if a.get("state") == "waiting_for_keyring")
        if waiting == 0:
            facts["all_restored_ms"] = round((time.monotonic() - started) * 1000)
            break
        time.sleep(0.01)
    facts["accounts"] = accounts
    with open(out, "w") as f:
        json.dump(facts, f)
    print(daemon.pid)


def serve_all(sock, accounts, out):
    """Asks every account for a token valid at least 60 s, 16 at a time, right after a restart:
    each must be served from what the keyring holds (its stored token, or a refresh with its
    stored refresh token), none may need a login."""
    def one(index):
        asked = time.monotonic()
        try:
            reply, _ = ask(sock, {"op": "token", "account": f"a{index}", "min_valid": 60, "timeout": 120})
        except OSError as error:
            reply = {"ok": False, "error": {"code": f"socket: {error.__class__.__name__}"}}
        return reply, time.monotonic() - asked

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(1, accounts + 1)))
    errors = {}
    for reply, _ in results:
        if not reply.get("ok"):
            code = reply.get("error", {}).get("code", "?")
            errors[code] = errors.get(code, 0) + 1
    latencies = sorted(took for _, took in results)
    facts = {"served": sum(1 for reply, _ in results if reply.get("ok")), "asked": accounts, "errors": errors,
             "serve_all_seconds": round(time.monotonic() - started, 1),
             "serve_latency_ms_p50": round(latencies[len(latencies) // 2] * 1000, 1),
             "serve_latency_ms_max": round(latencies[-1] * 1000, 1)}
    with open(out, "w") as f:
        json.dump(facts, f)


def status(sock, out):
    started = time.monotonic()
    reply, size = ask(sock, {"op": "status"})
    states = {}
    for account in reply.get("accounts", []):
        states[account.get("state")] = states.get(account.get("state"), 0) + 1
    facts = {"status_bytes": size, "status_ms": round((time.monotonic() - started) * 1000), "states": states}
    with open(out, "w") as f:
        json.dump(facts, f)


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "provision":
        json.dump(provision(args[0], args[1], int(args[2]), int(args[3]) if len(args) > 3 else 0), sys.stdout)
    elif command == "sample":
        sample(args[0], int(args[1]), float(args[2]), float(args[3]), args[4], *(float(a) for a in args[5:6]))
    elif command == "serve-all":
        serve_all(args[0], int(args[1]), args[2])
    elif command == "startup":
        startup(args[0], args[1], int(args[2]), args[3], args[4])
    elif command == "status":
        status(args[0], args[1])
    else:
        sys.exit(f"scale.py: unknown command {command}")
