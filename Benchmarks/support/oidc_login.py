"""Logs user `bench` in to oidc-provider-mock headlessly (authorization code with PKCE, scope
`openid email offline_access`) and prints the refresh token on stdout, for oidc-gen --rt.
Usage: oidc_login.py ISSUER CLIENT_ID CLIENT_SECRET REDIRECT_URI
"""
import base64
import hashlib
import json
import secrets
import sys
import urllib.parse
import urllib.request

issuer, client_id, client_secret, redirect_uri = sys.argv[1:5]
discovery = json.load(urllib.request.urlopen(issuer + "/.well-known/openid-configuration"))
verifier = secrets.token_urlsafe(48)
challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
query = urllib.parse.urlencode({
    "response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "state": "s",
    "scope": "openid email offline_access", "code_challenge": challenge, "code_challenge_method": "S256",
})


class KeepRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # the 302 carries the code: read it, do not follow it


opener = urllib.request.build_opener(KeepRedirect)
try:
    opener.open(discovery["authorization_endpoint"] + "?" + query, data=b"sub=bench")
    sys.exit("oidc_login: the provider did not redirect")
except urllib.error.HTTPError as redirect:
    location = redirect.headers["Location"]
code = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)["code"][0]
basic = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
request = urllib.request.Request(
    discovery["token_endpoint"],
    data=urllib.parse.urlencode({"grant_type": "authorization_code", "code": code,
                                 "redirect_uri": redirect_uri, "code_verifier": verifier}).encode(),
    headers={"Authorization": "Basic " + basic})
print(json.load(urllib.request.urlopen(request))["refresh_token"])
