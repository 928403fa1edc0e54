#!/usr/bin/env python3
"""The smallest SMTP relay dovecot's submission service can hand mail to (scripts/test-mail):

  relay.py PORT DOVECOT_CONF   listens on 127.0.0.1:PORT; every message it accepts goes to
                               dovecot's LDA for each recipient's local part (dovecot-lda -d)

dovecot's submission service is a proxy: it needs a relay MTA behind it (submission_relay_host),
which a desktop test has none of. This one speaks just what dovecot sends (RFC 5321: EHLO, MAIL,
RCPT, DATA, RSET, NOOP, QUIT) on loopback and delivers locally, so a sent message can be read
back over IMAP. It prints one line per delivery (sender, recipient, LDA status), never content.
"""
import socketserver
import subprocess
import sys

LDA = "/usr/lib/dovecot/dovecot-lda"


class Session(socketserver.StreamRequestHandler):
    def reply(self, line):
        self.wfile.write((line + "\r\n").encode())
        self.wfile.flush()

    def handle(self):
        sender, recipients = None, []
        self.reply("220 relay.test ESMTP")
        for raw in self.rfile:
            verb = raw.decode("utf-8", "replace").strip()
            upper = verb.upper()
            if upper.startswith("EHLO"):
                self.reply("250-relay.test")
                self.reply("250 8BITMIME")
            elif upper.startswith("HELO"):
                self.reply("250 relay.test")
            elif upper.startswith("MAIL FROM:"):
                sender, recipients = verb[10:].split()[0].strip("<>"), []
                self.reply("250 ok")
            elif upper.startswith("RCPT TO:"):
                recipients.append(verb[8:].split()[0].strip("<>"))
                self.reply("250 ok")
            elif upper == "DATA":
                self.reply("354 end with .")
                lines = []
                for line in self.rfile:
                    if line in (b".\r\n", b".\n"):
                        break
                    lines.append(line[1:] if line.startswith(b"..") else line)
                message = b"".join(lines)
                status = [self.deliver(sender, rcpt, message) for rcpt in recipients]
                self.reply("250 delivered" if all(s == 0 for s in status) else "451 local delivery failed")
            elif upper in ("RSET", "NOOP"):
                sender, recipients = (None, []) if upper == "RSET" else (sender, recipients)
                self.reply("250 ok")
            elif upper == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("502 not implemented")

    def deliver(self, sender, recipient, message):
        user = recipient.split("@")[0]
        done = subprocess.run([LDA, "-c", self.server.dovecot_conf, "-d", user, "-f", sender or ""],
                              input=message, capture_output=True)
        print("delivered from %s to %s: lda exit %d %s" % (sender, recipient, done.returncode,
                                                          done.stderr.decode("utf-8", "replace").strip()[:200]), flush=True)
        return done.returncode


class Relay(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    server = Relay(("127.0.0.1", int(sys.argv[1])), Session)
    server.dovecot_conf = sys.argv[2]
    server.serve_forever()
