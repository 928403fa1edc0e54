"""google-auth (PyPI), the real client: a Google external account (workload identity
federation) whose subject token comes from `tokenctl exec-credential --format google`
(credential_source.executable), exchanged at a loopback stand-in for Google's Security Token
Service. The stand-in answers as sts.googleapis.com/v1/token does for an RFC 8693 token exchange
(grant_type token-exchange, subject_token and its type in a form; an access token back).

Usage: google_external_account.py README TOKENCTL [SUBJECT_TOKEN_TYPE]
The configuration is README.md's, as written, but for `token_url` (the stand-in), the path of
tokenctl, and SUBJECT_TOKEN_TYPE when given. Prints one JSON line: whether google-auth got
credentials, its error if not, and every exchange the stand-in received. The caller sets
GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1, as google-auth requires of every executable source."""

import json
import re
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

import google.auth.transport.requests
from google.auth import pluggable

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
received = []


def readme_configuration(path):
    text = open(path, encoding="utf-8").read()
    section = text.split("### Google Cloud (workload identity federation)", 1)[1]
    return json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))


class SecurityTokenService(BaseHTTPRequestHandler):
    audience = None

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        form = {key: values[0] for key, values in urllib.parse.parse_qs(self.rfile.read(length).decode()).items()}
        received.append(form)
        if form.get("grant_type") == TOKEN_EXCHANGE and form.get("subject_token") and form.get("audience") == self.audience:
            status, body = 200, {
                "access_token": "sts-access-token-%d" % len(received),
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "token_type": "Bearer",
                "expires_in": 3600,
            }
        else:
            status, body = 400, {"error": "invalid_request", "error_description": "not a token exchange for this audience"}
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *arguments):
        pass


def main():
    info = readme_configuration(sys.argv[1])
    executable = info["credential_source"]["executable"]
    executable["command"] = re.sub(r"^tokenctl ", sys.argv[2] + " ", executable["command"])
    if len(sys.argv) > 3:
        info["subject_token_type"] = sys.argv[3]
    SecurityTokenService.audience = info["audience"]
    server = HTTPServer(("127.0.0.1", 0), SecurityTokenService)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    info["token_url"] = "http://127.0.0.1:%d/v1/token" % server.server_port
    # What google.auth.default() builds for an executable source; built directly, because default()
    # also asks Cloud Resource Manager for the project, which has no stand-in here.
    credentials = pluggable.Credentials.from_info(info, scopes=["https://www.googleapis.com/auth/cloud-platform"])
    try:
        credentials.refresh(google.auth.transport.requests.Request())
        result = {"ok": True, "access_token": credentials.token}
    except Exception as error:  # what google-auth raises is what the failure tests read
        result = {"ok": False, "error": "%s: %s" % (type(error).__name__, error)}
    result["received"] = received
    print(json.dumps(result))


main()
