"""google-auth (PyPI), the real client: a Google external account whose subject token is a
tokend token file (credential_source.file), exchanged at a loopback stand-in for Google's STS
(standins.py) that accepts only the account's live token.

Usage: google_token_file.py README TOKENCTL ACCOUNT
The configuration is README.md's, as written, but for `token_url` (the stand-in) and the
runtime directory (README's /run/user/1000 is ours). Refreshes the credentials, has tokend
refresh the account, waits for the file to change and refreshes them again: google-auth must
read the file anew. Prints one JSON line: whether both worked, the error if not, every exchange
the stand-in received and the token file's contents before and after."""

import json
import os
import subprocess
import sys

import google.auth.transport.requests
from google.auth import identity_pool

from standins import GoogleSTS, readme_block, serve, tokenctl_live_token, wait_for_change


def main():
    readme, tokenctl, account = sys.argv[1:4]
    info = json.loads(readme_block(readme, "### Google Cloud (token file)", "json"))
    path = info["credential_source"]["file"].replace("/run/user/1000", os.environ["XDG_RUNTIME_DIR"])
    info["credential_source"]["file"] = path
    GoogleSTS.audience = info["audience"]
    GoogleSTS.live_token = staticmethod(tokenctl_live_token(tokenctl, account))
    info["token_url"] = serve(GoogleSTS) + "/v1/token"
    # What google.auth.default() builds for a file source; built directly, because default()
    # also asks Cloud Resource Manager for the project, which has no stand-in here.
    credentials = identity_pool.Credentials.from_info(info, scopes=["https://www.googleapis.com/auth/cloud-platform"])
    request = google.auth.transport.requests.Request()
    result = {"ok": False, "files": []}
    try:
        result["files"].append(open(path, encoding="utf-8").read())
        credentials.refresh(request)
        subprocess.run([tokenctl, "refresh", account], check=True, capture_output=True)
        result["files"].append(wait_for_change(path, result["files"][0]))
        credentials.refresh(request)
        result["ok"] = True
    except Exception as error:  # what google-auth raises is what the test reads
        result["error"] = "%s: %s" % (type(error).__name__, error)
    result["received"] = GoogleSTS.received
    print(json.dumps(result))


main()
