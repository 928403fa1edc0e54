"""The `tpm2` store for `scripts/chaos --store tpm2`: a real TPM 2.0 simulator (swtpm) on loopback
TCP that the run stops and starts (the store unusable, then back, its state kept as across a power
cycle), and a reader of what tokend sealed in it that does not use tokend's code.

The reader knows the key because the run seals it itself before tokend first starts: 32 random
bytes sealed with tpm2-tools under the owner hierarchy's ECC P-256 primary (the template of
Sources/CTokendTPM2: restricted decrypt, AES-128-CFB, no dictionary-attack lockout), written as
tokend's `key.sealed` (the marshalled TPM2B_PUBLIC, then TPM2B_PRIVATE). tokend then unseals that
key, so a template that drifted from tpm2-tools' shows at once as a store that never works. The
sessions are read as Sources/TokendKeyring/Stores/TPM2Store.swift writes them: a magic line, the
endpoint and the AES-256-GCM box (nonce, ciphertext, tag) in base64, the account and endpoint
bound in as associated data (python3-cryptography's AESGCM opens it).
"""
import base64
import json
import os
import socket
import subprocess
import tempfile
import time

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MAGIC = "tokend-tpm2 1"
# Sources/CTokendTPM2/CTokendTPM2.c's primary and sealed-object templates, in tpm2-tools' words.
PRIMARY = ["-C", "o", "-g", "sha256", "-G", "ecc256:aes128cfb",
           "-a", "restricted|decrypt|fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda"]
SEALED_ATTRIBUTES = "fixedtpm|fixedparent|userwithauth|noda"
# swtpm answers within a second here; 30 s is a simulator that did not start.
START_BOUND = 30


def free_port():
    """A loopback port for swtpm, which takes it and the next one (its control channel)."""
    for _ in range(20):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        try:
            with socket.socket() as second:
                second.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no free pair of loopback ports for swtpm")


class SoftTPM:
    def __init__(self, root):
        self.root = root
        self.state = os.path.join(root, "tpm")
        # tokend's XDG_STATE_HOME: the store's files are in STATE_HOME/tokend/tpm2.
        self.state_home = os.path.join(root, "state")
        self.directory = os.path.join(self.state_home, "tokend", "tpm2")
        self.port = free_port()
        self.process = None
        self.key = None

    @property
    def tcti(self):
        return "swtpm:host=127.0.0.1,port=%d" % self.port

    def start(self):
        os.makedirs(self.state, exist_ok=True)
        with open(os.path.join(self.root, "swtpm.log"), "ab") as log:
            self.process = subprocess.Popen(
                ["swtpm", "socket", "--tpm2", "--tpmstate", "dir=" + self.state,
                 "--server", "type=tcp,port=%d,bindaddr=127.0.0.1" % self.port,
                 "--ctrl", "type=tcp,port=%d,bindaddr=127.0.0.1" % (self.port + 1),
                 "--flags", "not-need-init,startup-clear"], stdout=log, stderr=log)
        deadline = time.monotonic() + START_BOUND
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError("swtpm exited with %s (see %s/swtpm.log)" % (self.process.returncode, self.root))
                time.sleep(0.05)
        raise RuntimeError("swtpm did not answer within %d s" % START_BOUND)

    def stop(self):
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=20)
            self.process = None

    def seal_key(self):
        """Before tokend's first start: a new key, sealed by this TPM, as tokend's key.sealed."""
        key = os.urandom(32)
        env = dict(os.environ, TPM2TOOLS_TCTI=self.tcti)
        with tempfile.TemporaryDirectory(dir=self.root) as work:
            def tool(*argv, stdin=None):
                subprocess.run(argv, input=stdin, env=env, cwd=work, check=True, capture_output=True, timeout=60)
            tool("tpm2_createprimary", *PRIMARY, "-c", "primary.ctx")
            tool("tpm2_create", "-C", "primary.ctx", "-g", "sha256", "-a", SEALED_ATTRIBUTES, "-i", "-", "-u", "key.pub", "-r", "key.priv", stdin=key)
            # No resource manager in front of swtpm: what the tools loaded stays in its three slots.
            tool("tpm2_flushcontext", "-t")
            with open(os.path.join(work, "key.pub"), "rb") as public, open(os.path.join(work, "key.priv"), "rb") as private:
                blob = public.read() + private.read()
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        os.chmod(os.path.dirname(self.directory), 0o700)
        descriptor = os.open(os.path.join(self.directory, "key.sealed"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as f:
            f.write(blob)
        self.key = key

    def stored_session(self, account):
        """The account's token set as the store holds it; None when it holds none."""
        try:
            with open(os.path.join(self.directory, account + ".session")) as f:
                lines = f.read().split("\n")
        except FileNotFoundError:
            return None
        if len(lines) < 3 or lines[0] != MAGIC:
            raise RuntimeError("%s.session is not a session file tokend writes" % account)
        endpoint, sealed = base64.b64decode(lines[1]), base64.b64decode(lines[2])
        associated = MAGIC.encode() + b"\0" + account.encode() + b"\0" + endpoint
        return json.loads(AESGCM(self.key).decrypt(sealed[:12], sealed[12:], associated))
