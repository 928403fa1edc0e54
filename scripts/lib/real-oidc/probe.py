#!/usr/bin/env python3
"""The suite's view from the server side, against $REAL_OIDC_ISSUER (secrets from $REAL_OIDC_STATE):

  probe.py introspect < TOKEN          RFC 7662 as the resource server: the JSON answer
  probe.py userinfo < TOKEN            GET /o/userinfo/ with the bearer token: "STATUS BODY"
  probe.py refresh CLIENT_ID < RT      a refresh grant with RT, as that public client: "STATUS ERROR"
                                       (only for tokens expected dead: a live one would rotate)
  probe.py approve-device USER_CODE    signs in at Django's login form and approves the code at
                                       the device verification page, as a user would
Tokens come on stdin, never in argv.
"""
import json
import os
import re
import sys
from pathlib import Path

import requests

ISSUER = os.environ["REAL_OIDC_ISSUER"]
ORIGIN = ISSUER.rsplit("/o", 1)[0]
STATE = Path(os.environ["REAL_OIDC_STATE"])
TIMEOUT = 15


def stdin_token():
    token = sys.stdin.read().strip()
    if not token:
        sys.exit("probe.py: no token on stdin")
    return token


def introspect():
    answer = requests.post(ISSUER + "/introspect/", data={"token": stdin_token()},
                           auth=("resource-api", (STATE / "resource-api-secret").read_text().strip()),
                           timeout=TIMEOUT)
    print(json.dumps(answer.json() if answer.status_code == 200 else {"http_status": answer.status_code, "body": answer.text[:300]}))


def userinfo():
    answer = requests.get(ISSUER + "/userinfo/", headers={"Authorization": "Bearer " + stdin_token()}, timeout=TIMEOUT)
    print(answer.status_code, answer.text.replace("\n", " ")[:300])


def refresh(client_id):
    answer = requests.post(ISSUER + "/token/", data={
        "grant_type": "refresh_token", "refresh_token": stdin_token(), "client_id": client_id}, timeout=TIMEOUT)
    try:
        error = answer.json().get("error", "-")
    except ValueError:
        error = "not-json"
    print(answer.status_code, error)


def csrf(page):
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    if not match:
        sys.exit("probe.py: no CSRF token on the page:\n" + page[:500])
    return match.group(1)


def approve_device(user_code):
    session = requests.Session()
    login = session.get(ORIGIN + "/accounts/login/", params={"next": "/o/device/"}, timeout=TIMEOUT)
    entered = session.post(login.url, data={
        "csrfmiddlewaretoken": csrf(login.text), "username": "alice",
        "password": (STATE / "user-password").read_text(), "next": "/o/device/"},
        headers={"Referer": login.url}, timeout=TIMEOUT)
    if not entered.url.rstrip("/").endswith("/o/device"):
        sys.exit("probe.py: the login did not lead to the device page: %s\n%s" % (entered.url, entered.text[:500]))
    confirm = session.post(entered.url, data={"csrfmiddlewaretoken": csrf(entered.text), "user_code": user_code},
                           headers={"Referer": entered.url}, timeout=TIMEOUT)
    if "device-confirm" not in confirm.url:
        sys.exit("probe.py: the user code was refused: %s\n%s" % (confirm.url, re.sub(r"\s+", " ", confirm.text)[:800]))
    status = session.post(confirm.url, data={"csrfmiddlewaretoken": csrf(confirm.text), "action": "accept"},
                          headers={"Referer": confirm.url}, timeout=TIMEOUT)
    heading = re.search(r"<h1>(.*?)</h1>", status.text, re.S)
    print(re.sub(r"\s+", " ", heading.group(1)).strip() if heading else status.text[:300])


if __name__ == "__main__":
    command, arguments = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if command == "introspect":
        introspect()
    elif command == "userinfo":
        userinfo()
    elif command == "refresh" and len(arguments) == 1:
        refresh(arguments[0])
    elif command == "approve-device" and len(arguments) == 1:
        approve_device(arguments[0])
    else:
        sys.exit(__doc__)
