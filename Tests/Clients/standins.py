"""Loopback stand-ins for the cloud token services tokend's real clients talk to, and the helpers
the client scripts share. Each stand-in answers as the real service documents it:

- Google's Security Token Service, sts.googleapis.com/v1/token: an RFC 8693 token exchange
  (https://cloud.google.com/iam/docs/reference/sts/rest/v1/TopLevel/token): a form with
  grant_type token-exchange, subject_token and subject_token_type; JSON back.
- AWS STS, the query API (https://docs.aws.amazon.com/STS/latest/APIReference/): the form
  Action=AssumeRoleWithWebIdentity (unsigned, carrying WebIdentityToken) answered with
  temporary credentials in XML, and Action=GetCallerIdentity signed with those credentials.

When built with `live_token`, a stand-in refuses a subject token that is not the account's live
token at the moment it asks (as the real services refuse a token that fails verification)."""

import base64
import json
import re
import subprocess
import threading
import time
import urllib.parse
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def readme_block(path, heading, language):
    """The first ```LANGUAGE block of README's section HEADING, as written."""
    text = open(path, encoding="utf-8").read()
    section = text.split(heading + "\n", 1)[1]
    return re.search(r"```%s\n(.*?)```" % language, section, re.S).group(1)


def tokenctl_live_token(tokenctl, account):
    """What `tokenctl token ACCOUNT` hands out now: the token the stand-ins accept."""
    def live():
        run = subprocess.run([tokenctl, "token", account], capture_output=True, text=True)
        return run.stdout.strip() if run.returncode == 0 else None
    return live


def wait_for_change(path, old, timeout=30):
    """Polls the token file until it holds something other than `old` (a deadline, not a sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            current = open(path, encoding="utf-8").read()
        except FileNotFoundError:
            current = None
        if current and current != old:
            return current
        time.sleep(0.05)
    raise TimeoutError("%s still holds the old token after %d s" % (path, timeout))


class StandIn(BaseHTTPRequestHandler):
    received = []
    live_token = None

    def form(self):
        length = int(self.headers.get("Content-Length", "0"))
        return {key: values[0] for key, values in urllib.parse.parse_qs(self.rfile.read(length).decode()).items()}

    def answer(self, status, payload, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def is_live(self, token):
        return token and (self.live_token is None or token == self.live_token())

    def log_message(self, *arguments):
        pass


class GoogleSTS(StandIn):
    audience = None

    def do_POST(self):
        form = self.form()
        self.received.append(form)
        if form.get("grant_type") == TOKEN_EXCHANGE and self.is_live(form.get("subject_token")) and form.get("audience") == self.audience:
            status, body = 200, {
                "access_token": "sts-access-token-%d" % len(self.received),
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "token_type": "Bearer",
                "expires_in": 3600,
            }
        else:
            status, body = 400, {"error": "invalid_grant", "error_description": "not a live subject token for this audience"}
        self.answer(status, json.dumps(body).encode(), "application/json")


class AWSSTS(StandIn):
    # Credentials that botocore must refresh at its next use: less than its mandatory refresh
    # window (10 minutes) left, so every call after the first reads the token file again.
    lifetime = timedelta(minutes=5)
    issued = {}

    def do_POST(self):
        form = self.form()
        action = form.get("Action")
        namespace = "https://sts.amazonaws.com/doc/2011-06-15/"
        if action == "AssumeRoleWithWebIdentity":
            self.received.append(form.get("WebIdentityToken"))
            if not (self.is_live(form.get("WebIdentityToken")) and form.get("RoleArn")):
                return self.error(400, "InvalidIdentityToken", "the web identity token is not the account's live token")
            key = "ASIASTANDIN%04d" % len(self.received)
            self.issued[key] = form["RoleArn"].split("/")[-1] + "/" + form.get("RoleSessionName", "")
            expiration = (datetime.now(timezone.utc) + self.lifetime).strftime("%Y-%m-%dT%H:%M:%SZ")
            body = (
                '<AssumeRoleWithWebIdentityResponse xmlns="%s"><AssumeRoleWithWebIdentityResult>'
                "<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>stand-in-secret</SecretAccessKey>"
                "<SessionToken>stand-in-session</SessionToken><Expiration>%s</Expiration></Credentials>"
                "<SubjectFromWebIdentityToken>user</SubjectFromWebIdentityToken>"
                "<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/%s</Arn><AssumedRoleId>AROA:%s</AssumedRoleId></AssumedRoleUser>"
                "</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>"
                "</AssumeRoleWithWebIdentityResponse>" % (namespace, key, expiration, self.issued[key], key)
            )
            return self.answer(200, body.encode(), "text/xml")
        if action == "GetCallerIdentity":
            match = re.search(r"Credential=([A-Z0-9]+)/", self.headers.get("Authorization", ""))
            if not match or match.group(1) not in self.issued:
                return self.error(403, "InvalidClientTokenId", "not signed with credentials this STS issued")
            body = (
                '<GetCallerIdentityResponse xmlns="%s"><GetCallerIdentityResult>'
                "<Arn>arn:aws:sts::123456789012:assumed-role/%s</Arn><UserId>AROA:%s</UserId><Account>123456789012</Account>"
                "</GetCallerIdentityResult><ResponseMetadata><RequestId>2</RequestId></ResponseMetadata></GetCallerIdentityResponse>"
                % (namespace, self.issued[match.group(1)], match.group(1))
            )
            return self.answer(200, body.encode(), "text/xml")
        self.error(400, "InvalidAction", "not an action this stand-in knows")

    def error(self, status, code, message):
        body = '<ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>3</RequestId></ErrorResponse>' % (code, message)
        self.answer(status, body.encode(), "text/xml")


def serve(handler):
    """Starts `handler` on a free loopback port in a daemon thread; returns its base URL."""
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return "http://127.0.0.1:%d" % server.server_port


class Registry(StandIn):
    """An OCI registry behind a token service, as the distribution spec's token authentication
    works (https://distribution.github.io/distribution/spec/auth/token/): /v2/ answers 401 with a
    Bearer challenge naming the realm; the client fetches a token there with HTTP Basic (the
    credential helper's Username and Secret) and retries with it. Accepts only `username` with
    the account's live token; serves one repository's tag list."""

    username = "oauth2accesstoken"
    bearers = set()
    # Where each credential received is appended as a JSON line, for a caller in another process.
    log = None

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/token":
            return self.token()
        authorization = self.headers.get("Authorization", "")
        if not (authorization.startswith("Bearer ") and authorization[7:] in self.bearers):
            realm = "http://%s/token" % self.headers.get("Host")
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer realm="%s",service="stand-in"' % realm)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path == "/v2/":
            return self.answer(200, b"{}", "application/json")
        if path == "/v2/tokend/demo/tags/list":
            return self.answer(200, json.dumps({"name": "tokend/demo", "tags": ["latest"]}).encode(), "application/json")
        self.answer(404, b'{"errors":[{"code":"NAME_UNKNOWN"}]}', "application/json")

    def token(self):
        authorization = self.headers.get("Authorization", "")
        user, _, secret = base64.b64decode(authorization[6:]).decode().partition(":") if authorization.startswith("Basic ") else ("", "", "")
        self.received.append({"username": user, "secret": secret})
        if self.log:
            with open(self.log, "a") as file:
                file.write(json.dumps(self.received[-1]) + "\n")
        if user != self.username or not self.is_live(secret):
            return self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}', "application/json")
        bearer = "registry-bearer-%d" % len(self.received)
        self.bearers.add(bearer)
        self.answer(200, json.dumps({"token": bearer, "access_token": bearer, "expires_in": 300}).encode(), "application/json")
