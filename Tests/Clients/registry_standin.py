"""A loopback OCI registry stand-in (standins.Registry: token authentication, one repository
`tokend/demo` with the tag `latest`) for the real container tools a test runs against it.

Usage: registry_standin.py TOKENCTL ACCOUNT LOG
Prints `listening HOST:PORT` once it serves, then runs until killed. Accepts only the user name
oauth2accesstoken with ACCOUNT's live token (asked of tokenctl at each request); appends every
credential its token service receives to LOG as a JSON line."""

import sys
import threading

from standins import Registry, serve, tokenctl_live_token


def main():
    tokenctl, account, log = sys.argv[1:4]
    Registry.live_token = staticmethod(tokenctl_live_token(tokenctl, account))
    Registry.log = log
    print("listening " + serve(Registry)[len("http://"):], flush=True)
    threading.Event().wait()  # serves until the test kills it


main()
