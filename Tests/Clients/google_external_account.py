"""google-auth (PyPI), the real client: a Google external account (workload identity
federation) whose subject token comes from `tokenctl exec-credential --format google`
(credential_source.executable), exchanged at a loopback stand-in for Google's Security Token
Service (standins.py).

Usage: google_external_account.py README TOKENCTL [SUBJECT_TOKEN_TYPE]
The configuration is README.md's, as written, but for `token_url` (the stand-in), the path of
tokenctl, and SUBJECT_TOKEN_TYPE when given. Prints one JSON line: whether google-auth got
credentials, its error if not, and every exchange the stand-in received. The caller sets
GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1, as google-auth requires of every executable source."""

import json
import re
import sys

import google.auth.transport.requests
from google.auth import pluggable

from standins import GoogleSTS, readme_block, serve


def main():
    info = json.loads(readme_block(sys.argv[1], "### Google Cloud (workload identity federation)", "json"))
    executable = info["credential_source"]["executable"]
    executable["command"] = re.sub(r"^tokenctl ", sys.argv[2] + " ", executable["command"])
    if len(sys.argv) > 3:
        info["subject_token_type"] = sys.argv[3]
    GoogleSTS.audience = info["audience"]
    info["token_url"] = serve(GoogleSTS) + "/v1/token"
    # What google.auth.default() builds for an executable source; built directly, because default()
    # also asks Cloud Resource Manager for the project, which has no stand-in here.
    credentials = pluggable.Credentials.from_info(info, scopes=["https://www.googleapis.com/auth/cloud-platform"])
    try:
        credentials.refresh(google.auth.transport.requests.Request())
        result = {"ok": True, "access_token": credentials.token}
    except Exception as error:  # what google-auth raises is what the failure tests read
        result = {"ok": False, "error": "%s: %s" % (type(error).__name__, error)}
    result["received"] = GoogleSTS.received
    print(json.dumps(result))


main()
