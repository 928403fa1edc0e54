#!/usr/bin/env python3
"""The API behind tokend's proxy in scripts/test-proxy: a TLS server on loopback (its certificate
from the test's own CA) that checks every bearer token at django-oauth-toolkit's introspection
endpoint (RFC 7662, as the resource server `resource-api`) and answers 200 only for an active one.

  upstream.py PORT_FILE CERT KEY LOG       listens on 127.0.0.1 (a free port, written to PORT_FILE)

Routes: GET /v1/...          {"ok": true, "path": ..., "scope": ...}
        POST|PUT /upload     reads the body in 64 KiB pieces (Content-Length or chunked), answers its size
        GET /download?bytes=N  N bytes in 64 KiB pieces, with Content-Length
Every other answer: 401 with the reason. LOG gets one line per request: method, path, and what
the Authorization field was: "bearer-active", "bearer-inactive", "missing", or "other:VALUE" for
a value that is not a bearer token DOT knows (a client's own, never tokend's). Never a token.
Environment: REAL_OIDC_ISSUER, REAL_OIDC_STATE (the resource server's secret), as probe.py.
"""
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import requests

ISSUER = os.environ["REAL_OIDC_ISSUER"]
STATE = Path(os.environ["REAL_OIDC_STATE"])
SECRET = (STATE / "resource-api-secret").read_text().strip()
PIECE = 64 * 1024
LOCK = threading.Lock()


def introspect(token):
    answer = requests.post(ISSUER + "/introspect/", data={"token": token}, auth=("resource-api", SECRET), timeout=15)
    return answer.json() if answer.status_code == 200 else {"active": False}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def note(self, what):
        with LOCK, open(LOG, "a") as log:
            log.write("%s %s %s\n" % (self.command, urlsplit(self.path).path, what))

    def answer(self, status, body, content_type="application/json"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def authorized(self):
        value = self.headers.get("Authorization")
        values = self.headers.get_all("Authorization") or []
        if value is None:
            self.note("missing")
            return None
        if len(values) > 1:
            self.note("other:%d-authorization-fields" % len(values))
            return None
        if value.startswith("Bearer "):
            info = introspect(value[len("Bearer "):])
            if info.get("active") is True:
                self.note("bearer-active")
                return info
            self.note("other:" + value if value in CLIENT_VALUES else "bearer-inactive")
            return None
        self.note("other:" + value)
        return None

    def pieces(self, left):
        while left:
            piece = self.rfile.read(min(PIECE, left))
            if not piece:
                return
            left -= len(piece)
            yield piece

    def body_pieces(self):
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            yield from self.pieces(int(self.headers.get("Content-Length", "0")))
            return
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return
            yield from self.pieces(size)
            self.rfile.readline()

    def do_GET(self):
        info = self.authorized()
        if info is None:
            return self.answer(401, json.dumps({"error": "invalid_token"}))
        url = urlsplit(self.path)
        if url.path == "/download":
            count = int(parse_qs(url.query).get("bytes", ["0"])[0])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(count))
            self.end_headers()
            piece = b"d" * PIECE
            while count:
                self.wfile.write(piece[:min(PIECE, count)])
                count -= min(PIECE, count)
            return
        self.answer(200, json.dumps({"ok": True, "path": self.path, "scope": info.get("scope")}))

    def do_POST(self):
        info = self.authorized()
        total = sum(len(piece) for piece in self.body_pieces())
        if info is None:
            return self.answer(401, json.dumps({"error": "invalid_token"}))
        self.answer(200, json.dumps({"ok": True, "bytes": total}))

    do_PUT = do_POST


if __name__ == "__main__":
    port_file, cert, key, LOG = sys.argv[1:5]
    # Values a test client sends as its own Authorization: logged by value (they are not tokend's).
    CLIENT_VALUES = set(filter(None, os.environ.get("UPSTREAM_CLIENT_VALUES", "").split("|")))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()
