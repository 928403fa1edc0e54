"""oidc-provider-mock for the benchmark, accepting the `offline_access` scope that oidc-agent
always asks for when it refreshes. Prints ISSUER=http://127.0.0.1:PORT on stdout, then serves.
Usage: oidc_provider.py [oidc-provider-mock options other than --port]
"""
import socket
import sys

from oidc_provider_mock import _storage
from oidc_provider_mock.__main__ import run

# The mock's scope list is a class constant; oidc-agent's refreshes fail without this one.
_storage.Client.SCOPES_SUPPORTED = (*_storage.Client.SCOPES_SUPPORTED, "offline_access")

# uvicorn cannot report a port it picked: take a free one and hand it over (a tiny race on a
# machine of our own, acceptable for a benchmark).
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
print(f"ISSUER=http://127.0.0.1:{port}", flush=True)
run.main(["--port", str(port), *sys.argv[1:]])
