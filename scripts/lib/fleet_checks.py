#!/usr/bin/env python3
"""The fleet's checks (issue 50; run through scripts/test-fleet, which builds and installs), in the
world of scripts/lib/fleet.py, whose ok/fail counts they share.

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
     an expired token, no refresh at the provider; a member restarted meanwhile (nothing held
     locally) answers 75 too, not needs-login; quorum back: fresh tokens with no login;
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
     again (Firebase, a grace period) and at one that revokes the family on reuse;
 14. imports on a member that has just started, before etcd granted its lease: they wait for
     it and succeed, and the importing member holds the accounts' elections
     (scripts/lib/fleet_start.py).
Check 1 also asserts that the importing member (m1) holds the account's election.
Throughout checks 1-10: the provider never sees a refresh token twice and never answers a refresh
with an error (its reuse detection would revoke the family).
"""
import base64
import json
import os
import signal
import sys
import threading
import time

import fleet
import fleet_start
import fleet_window
from fleet import (ACCOUNT, LEASE, REACH_BOUND, TOKEN_LIFETIME, Member, Proxy, World, all_serve, check, fail, jwt_exp, measured,
                   newest_id_token, no_reuse, ok, poll)

ROUNDS = 10


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
        world.stop_all(keep=fleet.failures != 0)
    print("      measured: " + ", ".join("%s %s" % (k, v) for k, v in measured.items()))
    print("      took %.0f s" % (time.monotonic() - started))
    if fleet.failures:
        print("scripts/test-fleet: %d check(s) failed; the world is kept in %s" % (fleet.failures, world.root))
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
    check("m1, which imported it, holds the account's election", world.holder_pid() == m1.pid,
          "holder pid %s, m1 %s" % (world.holder_pid(), m1.pid))
    if os.environ.get("TOKEND_FLEET_ONLY") == "window":  # checks 1 and 11-13 only
        return fleet_window.scenario(world, members)
    if os.environ.get("TOKEND_FLEET_ONLY") == "start":  # checks 1 and 14 only
        return fleet_start.scenario(world, members)

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
    # Restarted meanwhile, a member holds nothing locally and cannot read etcd: 75, not a login
    # (it answered 77 "needs a new login" before: scripts/chaos --fleet, seed 50, found it).
    m2.kill9()
    m2.start()
    code, _, err = m2.token(timeout=10)
    check("quorum lost: a member restarted meanwhile answers 75 naming the fleet, not needs-login",
          code == 75 and ("fleet" in err or "etcd" in err), "exit %d: %s" % (code, err[:300]))
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
        took_over = poll(LEASE * 4 + 30, lambda: m1.tokenctl("refresh", ACCOUNT)[0] == 0 and world.holder_pid() in (m1.pid, m2.pid)
                         and len(world.refreshes()) > cut_at)
        check("the holder cut off from etcd: another member takes over and refreshes", took_over is not None)
        m3.tokenctl("refresh", ACCOUNT)  # the cut-off member must not refresh behind the fleet's back
        for proxy in world.proxies:
            proxy.restore()
        check("the cut-off member serves the fleet's newest token (or a later one) once back",
              all_serve([m3], newest_id_token(world), bound=LEASE * 4 + 20, world=world) is not None)
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
    fleet_window.scenario(world, members)
    # 14. Imports on a member that has just started (scripts/lib/fleet_start.py).
    fleet_start.scenario(world, members)


if __name__ == "__main__":
    main()
