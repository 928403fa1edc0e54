"""Check 14 of scripts/test-fleet (fleet_checks.py): imports on a member that has just started,
before etcd granted it a lease (it answered `unavailable`: it followed a holder that did not
exist), and who holds what is imported (README, "Who refreshes a shared account": the importing
member, when nobody holds the account; before, the others raced it and often won).

Two more members share accounts of their own (m1-m3 do not have them): m6 reaches etcd through
relays of its own, cut while it starts, so that its first lease grant fails and its keep-alive
loop waits a third of its lease before the next; the relays are restored and an account is
imported on m6 at once. Then m5 joins, and more accounts are imported on m6 while m5, which has
its lease, could race it for their elections."""
import os

from fleet import LEASE, START_BOUND, Member, Proxy, all_serve, check, no_reuse, poll

ACCOUNTS = ["fresh%d" % i for i in range(1, 5)]
# m6's lease: the pause after its failed grant (a third of it, 5 s) is the window in which etcd
# answers and m6 has no lease yet; an import takes well under that.
SLOW_LEASE = 15
# An import on m6 may wait for that lease; tokenctl's default (30 s) would do, this is a bound.
IMPORT_TIMEOUT = 45


def log_says(member, text):
    with open(os.path.join(member.dir, "tokend.log"), errors="replace") as log:
        return text in log.read()


def imported(world, member, name):
    """Imports a new user's session as `name` on `member`; its exit code and error."""
    user = world.control("POST", "users", {})
    code, _, err = member.tokenctl("import", name, "--timeout", str(IMPORT_TIMEOUT), stdin=user["refresh_token"] + "\n")
    return code, err


def serves_everywhere(members, owner, name):
    code, token, _ = owner.token(account=name)
    return code == 0 and all_serve(members, token, account=name) is not None


def scenario(world, members):
    # Only this check's refreshes: checks 11-13 before it leave a reuse and faulted ones on purpose.
    first = len(world.refreshes())
    relays = [Proxy(port) for port in world.client_ports]
    for relay in relays:
        relay.cut()
    m6 = Member(world, 6, [relay.port for relay in relays], accounts=ACCOUNTS)
    with open(m6.config) as source:
        text = source.read().replace('lease = "%ds"' % LEASE, 'lease = "%ds"' % SLOW_LEASE)
    with open(m6.config, "w") as out:
        out.write(text)
    world.members.append(m6)
    m6.start()
    check("m6, started cut off from etcd, says the fleet is unreachable", poll(START_BOUND, lambda: log_says(m6, "fleet unreachable")))
    for relay in relays:
        relay.restore()
    code, err = imported(world, m6, ACCOUNTS[0])
    check("an import on a member that has no lease yet waits for it and succeeds", code == 0, "exit %d: %s" % (code, err[:300]))
    check("that member holds the imported account's election", world.holder_pid(ACCOUNTS[0]) == m6.pid,
          "holder pid %s, m6 %s" % (world.holder_pid(ACCOUNTS[0]), m6.pid))

    m5 = Member(world, 5, world.client_ports, accounts=ACCOUNTS)
    world.members.append(m5)
    m5.start()
    check("a member that joins serves the account imported before it came", serves_everywhere([m5], m6, ACCOUNTS[0]))
    holders = {}
    for name in ACCOUNTS[1:]:
        code, err = imported(world, m6, name)
        check("import of %s on m6 exits 0" % name, code == 0, "exit %d: %s" % (code, err[:300]))
        holders[name] = world.holder_pid(name)
    check("the importing member holds every account it imported (m5 could have raced it)",
          all(pid == m6.pid for pid in holders.values()), "holders %s, m6 %s, m5 %s" % (holders, m6.pid, m5.pid))
    check("the other member serves each imported session", all(serves_everywhere([m5], m6, name) for name in ACCOUNTS[1:]))
    no_reuse(world, "imports on a member just started", since=first)
    for member in (m5, m6):
        member.stop()
