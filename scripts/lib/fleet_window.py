"""Checks 11-13 of scripts/lib/fleet_checks.py (which runs them, in fleet.py's world, with its counts): kill -9
of the holder while its refresh is in flight at the provider.

README ("The one window") says what may happen there: a holder that dies after the provider
rotated the refresh token and before its write reached etcd leaves the rotated-away token as the
fleet's, and the next holder presents it again. The fake's faults place the kill exactly:
  11. `hang` on the token route: the request reached the provider, which never acts on it (as a
      holder killed before the provider answered). The next holder presents the same token, which
      the provider never rotated: no reuse, one rotation, the fleet goes on.
  12. `delay`: the provider rotates at once and holds its answer, and the holder dies meanwhile:
      the window. With the provider set to keep old refresh tokens valid (Firebase and Google do;
      so does a provider within its reuse grace), the next holder's refresh presents the
      rotated-away token and is answered: one reuse, accepted, and the fleet goes on.
  13. the same at a provider that revokes the whole family on reuse (past any grace): the next
      holder's refresh is refused, the family is revoked, the account says needs_login; no member
      serves an expired token meanwhile.
In each, another member takes over before the tokens the survivors held at the kill expire, and
no member serves an expired token (checked by polling every survivor throughout). Tokens live
LIFETIME here, not the suite's 20 s (below says why).
"""
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import fleet
from fleet import ACCOUNT, LEASE, REACH_BOUND, check, jwt_exp, measured, poll, rotated_away_reuses

# The tokens' lifetime here: the refresh margin (a third of it, 20 s) then exceeds what a takeover
# may take, a lease for the dead holder's to lapse plus a lease a follower waits for the holder's
# session (12 s), as README's defaults do many times over (5 min against 10 s). With the suite's
# 20 s tokens the margin is about one lease, and a loaded machine missed it (by 4.6 s, load 15).
LIFETIME = 60
# `delay`'s hold on the answer: longer than the kill takes to follow the request (a poll of 50 ms
# plus a tokenctl call); the answer then goes to a dead holder's closed connection.
ANSWER_HELD = 30


class Watch:
    """Polls every survivor's `token` until stopped: never an expired token, 0 or 75 or 77 only."""

    def __init__(self, members):
        self.members = members
        self.stop = threading.Event()
        self.served_after_exp = []
        self.other_exits = []
        self.exits = {}
        self.threads = [threading.Thread(target=self.poll, args=(m,), daemon=True) for m in members]
        for t in self.threads:
            t.start()

    def poll(self, member):
        while not self.stop.is_set():
            code, token, err = member.token(timeout=2)
            self.exits.setdefault(member.name, set()).add(code)
            if code == 0:
                exp = jwt_exp(token)
                if exp is None or exp <= time.time():
                    self.served_after_exp.append("%s exp %s at %.1f" % (member.name, exp, time.time()))
            elif code not in (75, 77):
                self.other_exits.append("%s exit %d: %s" % (member.name, code, err[:160]))
            self.stop.wait(0.2)

    def end(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=fleet.TOKENCTL_BOUND)


def holder(world, members):
    return next((m for m in members if m.pid == world.holder_pid()), None)


def kill_in_flight(world, members, fault, label):
    """The holder refreshes with `fault` on the provider's answer and is killed -9 the moment the
    request is in the provider's log. Returns (killed member, the request as logged, the survivors'
    earliest token expiry at the kill, the kill's time), or None."""
    killed = poll(LEASE * 4 + 20, lambda: holder(world, members))
    if not check("%s: one member holds the election" % label, killed is not None, "holder pid %s" % world.holder_pid()):
        return None
    survivors = [m for m in members if m is not killed]
    # A fresh session first, as a holder's refresh comes a margin before expiry: README's default
    # margin (5 min) is 30 leases of 10 s; the test's (a third of 20 s) is about one lease of 6 s.
    killed.tokenctl("refresh", ACCOUNT)
    fleet.all_serve(members, fleet.newest_id_token(world))
    expiries = [jwt_exp(m.token()[1]) for m in survivors]
    if not check("%s: the survivors serve tokens before the kill" % label, all(expiries), "%s" % expiries):
        return None
    before = len(world.refreshes())
    world.control("POST", "faults", fault)
    threading.Thread(target=killed.tokenctl, args=("refresh", ACCOUNT), daemon=True).start()
    sent = poll(REACH_BOUND, lambda: world.refreshes()[before:])
    killed.kill9()
    at = time.time()
    world.control("DELETE", "faults")
    if not check("%s: the holder's refresh reached the provider before the kill" % label, sent is not None):
        return None
    return killed, sent[0], min(expiries), at


def take_over(world, survivors, after, label):
    """A survivor refreshes (forced, as check 3) once the killed holder's lease is gone; the first
    refresh the provider logs after `after` requests, and when it came."""
    refreshed = poll(LEASE * 4 + 20, lambda: survivors[0].tokenctl("refresh", ACCOUNT)[0] in (0, 75, 77)
                     and [r for r in world.refreshes()[after:] if not r.get("fault")])
    return (refreshed[0], time.time()) if refreshed else (None, None)


def story(requests, token):
    """What the provider saw for one refresh token, in order, without the token."""
    return "; ".join("%s%s%s%s" % (r.get("status"), " (fault %s)" % r["fault"].get("fault") if r.get("fault") else "",
                                    " rotated" if r.get("rotated") else "", " " + r["error_code"] if r.get("error_code") else "")
                     for r in requests if r.get("presented_refresh_token") == token)


def case(world, members, fault, label, lenient):
    """One kill in flight; returns what the takeover's refresh looked like at the provider."""
    if lenient:
        world.control("POST", "options", {"revoke_previous": False, "revoke_family_on_reuse": False})
    start = len(world.refreshes())
    killed = kill_in_flight(world, members, fault, label)
    if killed is None:
        return None
    member, in_flight, expiry, at = killed
    survivors = [m for m in members if m is not member]
    watch = Watch(survivors)
    index = world.refreshes().index(in_flight) + 1 if in_flight in world.refreshes() else start + 1
    takeover, when = take_over(world, survivors, index, label)
    measured["%s takeover s" % label] = "%.1f" % ((when or time.time()) - at)
    check("%s: another member refreshes before the survivors' tokens expire" % label,
          takeover is not None and when < expiry, "took over at %s, tokens expire at %.1f" % (when, expiry))
    if lenient:
        world.control("POST", "options", {"revoke_previous": True, "revoke_family_on_reuse": True})
    return member, survivors, watch, in_flight, takeover


def scenario(world, members):
    world.control("POST", "options", {"lifetime": LIFETIME})
    # 11. Killed before the provider acted: the token presented again was never rotated.
    result = case(world, members, {"fault": "hang", "count": 1}, "kill in flight (hang)", lenient=False)
    if result:
        member, survivors, watch, in_flight, takeover = result
        token = in_flight.get("presented_refresh_token")
        check("kill in flight (hang): the takeover presents the token the provider never acted on, answered 200",
              takeover and takeover.get("presented_refresh_token") == token and takeover.get("status") == 200,
              story(world.refreshes(), token))
        check("kill in flight (hang): no reuse at the provider", not rotated_away_reuses(world.refreshes()))
        print("      the provider saw the in-flight token: %s" % story(world.refreshes(), token), flush=True)
        finish(world, members, member, survivors, watch, "kill in flight (hang)")

    # 12. Inside the window, at a provider that accepts the rotated-away token again.
    result = case(world, members, {"fault": "delay", "late": ANSWER_HELD, "count": 1}, "window (reuse accepted)", lenient=True)
    if result:
        member, survivors, watch, in_flight, takeover = result
        token = in_flight.get("presented_refresh_token")
        check("window (reuse accepted): the provider rotated the in-flight token and the takeover presents it again, answered 200",
              in_flight.get("rotated") and takeover and takeover.get("presented_refresh_token") == token and takeover.get("status") == 200,
              story(world.refreshes(), token))
        reuses = rotated_away_reuses(world.refreshes())
        check("window (reuse accepted): the provider saw exactly that one reuse", [r.get("presented_refresh_token") for r in reuses] == [token],
              "%d reuses" % len(reuses))
        print("      the provider saw the in-flight token: %s" % story(world.refreshes(), token), flush=True)
        finish(world, members, member, survivors, watch, "window (reuse accepted)")

    # 13. Inside the window, at a provider that revokes the family on reuse: needs_login.
    result = case(world, members, {"fault": "delay", "late": ANSWER_HELD, "count": 1}, "window (reuse revoked)", lenient=False)
    if result:
        member, survivors, watch, in_flight, takeover = result
        token = in_flight.get("presented_refresh_token")
        check("window (reuse revoked): the takeover presents the rotated-away token and the provider refuses it",
              takeover and takeover.get("presented_refresh_token") == token and takeover.get("status") != 200,
              story(world.refreshes(), token))
        said = poll(LIFETIME + 30, lambda: all('"needs_login"' in m.tokenctl("status", ACCOUNT, "--json")[1] for m in survivors))
        check("window (reuse revoked): the survivors say needs_login", said is not None,
              " | ".join(m.tokenctl("status", ACCOUNT, "--json")[1][:200] for m in survivors))
        print("      the provider saw the in-flight token: %s" % story(world.refreshes(), token), flush=True)
        issued = in_flight.get("issued_refresh_token")
        check("window (reuse revoked): the provider revoked the family (the token it issued to the killed holder is refused too)",
              issued and presented_at_provider(world, issued) != 200)
        watch.end()
        check("window (reuse revoked): no survivor served an expired token", not watch.served_after_exp, "; ".join(watch.served_after_exp[:3]))
        check("window (reuse revoked): the survivors answered 0, 75 or 77 only", not watch.other_exits, "; ".join(watch.other_exits[:3]))
        print("      survivors' exits meanwhile: %s" % ", ".join("%s %s" % (n, sorted(c)) for n, c in sorted(watch.exits.items())), flush=True)


def presented_at_provider(world, token):
    """The status the fake's token endpoint answers `token` with, presented directly."""
    body = urllib.parse.urlencode({"grant_type": "refresh_token", "refresh_token": token}).encode()
    request = urllib.request.Request("http://%s/securetoken.googleapis.com/v1/token?key=test-api-key" % world.emulator, data=body)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def finish(world, members, member, survivors, watch, label):
    """The killed member back; every member on the fleet's newest token; the watch's verdict."""
    member.start()
    check("%s: every member serves the fleet's newest token, the restarted one with no login" % label,
          fleet.all_serve(members, fleet.newest_id_token(world), bound=LEASE * 4 + 20) is not None)
    watch.end()
    check("%s: no survivor served an expired token" % label, not watch.served_after_exp, "; ".join(watch.served_after_exp[:3]))
    check("%s: the survivors answered 0 or 75 only" % label, not [e for e in watch.other_exits] and
          all(codes <= {0, 75} for codes in watch.exits.values()), "%s %s" % (watch.other_exits[:3], watch.exits))
