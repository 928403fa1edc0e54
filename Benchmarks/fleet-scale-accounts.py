"""Benchmarks/fleet-scale accounts: many shared accounts across three members (see fleet-scale.py)."""
import base64
import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import fleet as F

# Imports in flight at once: enough to keep three daemons busy, few enough that each import's
# own refresh stays well inside its timeout on two shared cores.
IMPORTERS = 6
# Seconds of memory samples with no refresh due (after the imports, before the first natural
# refresh, which comes two thirds of a lifetime after each import).
IDLE = 10


def new_user(world):
    """An anonymous user of the fake's, and its first refresh token (the control plane's)."""
    request = urllib.request.Request("http://%s/_fake/users" % world.emulator, data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        session = json.load(answer)
    return session["uid"], session["refresh_token"]


def holders(world, members):
    """Each account's election holder, by member name (the key's value ends in the holder's pid)."""
    by_pid = {m.pid: m.name for m in members}
    listing = json.loads(world.etcdctl("get", "/tokend/holder/", "--prefix", "-w", "json").stdout).get("kvs", [])
    found = {}
    for kv in listing:
        account = base64.b64decode(kv["key"]).decode()[len("/tokend/holder/"):]
        pid = base64.b64decode(kv["value"]).decode().rsplit("/", 1)[-1]
        found[account] = by_pid.get(int(pid) if pid.isdigit() else None, "?")
    return found


def not_serving(S, member):
    """The accounts the member holds no live token for, with their state."""
    answer = S.Client(member.socket).ask(op="list")
    return [(a["name"], a.get("state"), a.get("message", "")[:120]) for a in answer.get("accounts", []) if a.get("expires_in", 0) <= 0]


def memory_table(samples, members):
    rows = []
    for m in members:
        rss = [s[m.name][0] for s in samples]
        pss = [s[m.name][1] for s in samples]
        rows.append("| %s | %.1f | %.1f | %.1f | %.1f |" % (m.name, sum(rss) / len(rss), max(rss), sum(pss) / len(pss), max(pss)))
    return rows


def run(args, S):
    count, lifetime = args.accounts, args.lifetime or 240
    names = ["a%04d" % i for i in range(count)]
    world = S.world_up(lifetime)
    members = [F.Member(world, i + 1, world.client_ports, accounts=names) for i in range(args.members or 3)]
    loads = S.Sampler(5, S.loadavg)
    try:
        S.start_members(world, members, len(members))
        S.leases_granted(world, members)
        users = [new_user(world) for _ in names]
        account_of = {uid: name for (uid, _), name in zip(users, names)}
        started = time.monotonic()

        def give(index):
            member = members[index % len(members)] if args.import_on == "spread" else members[0]
            answer = S.Client(member.socket).ask(op="import", account=names[index], refresh_token=users[index][1], timeout=S.BOUND)
            if not answer.get("ok"):
                print("fleet-scale: import of %s on %s: %s" % (names[index], member.name, answer.get("error")), flush=True)
            return answer.get("ok", False)

        with ThreadPoolExecutor(IMPORTERS) as pool:
            failed = sum(1 for done in pool.map(give, range(count)) if not done)
        imported = time.monotonic() - started
        if F.poll(S.BOUND * 2, lambda: not any(not_serving(S, m) for m in members)) is None:
            raise SystemExit("fleet-scale: not every member serves every account: " + "; ".join(
                "%s: %d, such as %s" % (m.name, len(missing), missing[:3]) for m in members for missing in [not_serving(S, m)]))
        settled = time.monotonic() - started
        probe = lambda: {m.name: S.memory(m.pid) for m in members}
        before_idle = len(world.refreshes())
        idle = S.Sampler(1, probe)
        time.sleep(IDLE)  # the measuring window itself, not a wait for anything
        idle_samples = idle.stop()
        idle_refreshes = len(world.refreshes()) - before_idle
        first = len(world.refreshes())
        revision, metrics, held_before = world.revision(), S.etcd_metrics(world), holders(world, members)
        busy = S.Sampler(2, probe)
        time.sleep(args.duration)  # the measuring window itself
        busy_samples = busy.stop()
        refreshes = world.refreshes()[first:]
        revisions, metrics_after, held = world.revision() - revision, S.etcd_metrics(world), holders(world, members)
        F.no_reuse(world, "%d accounts on %d members" % (count, len(members)))
    finally:
        load = loads.stop()
        S.tear_down(world, members)
    per_member = {}
    for r in refreshes:
        holder = held.get(account_of.get(r.get("uid")), "?")
        per_member[holder] = per_member.get(holder, 0) + 1
    holding = {m.name: sum(1 for h in held.values() if h == m.name) for m in members}
    moved = sum(1 for a, h in held.items() if held_before.get(a) != h)
    done = len(refreshes) or 1
    deltas = {k: metrics_after.get(k, 0) - metrics.get(k, 0) for k in metrics_after}
    lines = S.header(args, "%d shared accounts across %d members" % (count, len(members))) + [
        "- token lifetime %d s (each account refreshes about every %d s); imports %s, %d at a time" % (
            lifetime, lifetime * 2 // 3, "round robin over the members" if args.import_on == "spread" else "all on m1", IMPORTERS),
        "- %d imports (%d failed) in %.0f s; every member serving every account %.0f s after the first" % (count, failed, imported, settled),
        "- load during the run: " + S.load_summary(load),
        "- idle window %d s (%d refreshes in it); refresh window %d s: %d refreshes at the provider, %d accounts refreshed at least once"
        % (IDLE, idle_refreshes, args.duration, len(refreshes), len({r.get("uid") for r in refreshes})),
        "",
        "| member | elections held | refreshes sent in the window |",
        "| --- | --- | --- |",
    ] + ["| %s | %d | %d |" % (m.name, holding[m.name], per_member.get(m.name, 0)) for m in members] + [
        "",
        "Elections that changed hands during the window: %d. Refreshes of an account with no holder at the end: %d." % (moved, per_member.get("?", 0)),
        "",
        "etcd per refresh in the window (%d refreshes): %.2f revisions (writes); " % (len(refreshes), revisions / done)
        + "; ".join("%s %.2f" % (k, v / done) for k, v in sorted(deltas.items()) if v)
        + " (gRPC calls handled, summed over the three etcd members; tokend's JSON requests reach them through etcd's gateway)",
        "",
        "| tokend memory (MiB), idle | RSS mean | RSS max | PSS mean | PSS max |",
        "| --- | --- | --- | --- | --- |",
    ] + memory_table(idle_samples, members) + [
        "",
        "| tokend memory (MiB), while refreshing | RSS mean | RSS max | PSS mean | PSS max |",
        "| --- | --- | --- | --- | --- |",
    ] + memory_table(busy_samples, members)
    S.report(args, lines)
    return 1 if F.failures or failed else 0
