import Foundation
import TokendTestSupport

/// A local HTTP server that demands the current token, for `git` and `curl` end to end: `/api`
/// wants `Authorization: Bearer TOKEN`; everything else is `git http-backend` (smart HTTP) behind
/// `Authorization: Basic` with the token as the password, which is how git sends what a
/// credential helper answered. Python's standard library and Debian's git, nothing else.
final class BearerServer: Sendable {
    let directory: URL
    let port: Int
    /// posix_spawn (ChildProcess.start), not Foundation's Process: its waitUntilExit can miss the
    /// exit and hang the test.
    private let pid: pid_t

    static let script = #"""
    import base64, http.server, os, subprocess, sys
    root, token_file, log_file = sys.argv[1], sys.argv[2], sys.argv[3]

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args): pass
        def expected(self):
            with open(token_file) as f: return f.read().strip()
        def record(self, text):
            with open(log_file, "a") as f: f.write(text + "\n")
        def deny(self, scheme):
            self.send_response(401)
            self.send_header("WWW-Authenticate", scheme + ' realm="tokend-test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
        def handle_any(self):
            auth = self.headers.get("Authorization", "")
            if self.path.startswith("/api"):
                if auth != "Bearer " + self.expected():
                    self.record("api denied"); return self.deny("Bearer")
                self.record("api ok")
                body = b"hello, token holder\n"
                self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
                return self.wfile.write(body)
            user = None
            if auth.startswith("Basic "):
                name, _, password = base64.b64decode(auth[6:]).decode().partition(":")
                if password == self.expected(): user = name
            if user is None:
                self.record("git denied"); return self.deny("Basic")
            self.record("git ok user=" + user)
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path,
                       QUERY_STRING=query, REQUEST_METHOD=self.command, REMOTE_USER=user,
                       CONTENT_TYPE=self.headers.get("Content-Type", ""), CONTENT_LENGTH=str(length))
            out = subprocess.run(["git", "http-backend"], input=self.rfile.read(length), env=env,
                                 capture_output=True).stdout
            head, _, body = out.partition(b"\r\n\r\n")
            status, headers = 200, []
            for line in head.decode().split("\r\n"):
                key, _, value = line.partition(": ")
                if key.lower() == "status": status = int(value.split()[0])
                elif key: headers.append((key, value))
            self.send_response(status)
            for key, value in headers: self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        do_GET = handle_any
        do_POST = handle_any

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(os.path.join(root, "port"), "w") as f: f.write(str(server.server_address[1]))
    server.serve_forever()
    """#

    /// Starts the server in a fresh directory; `expectedToken` is what it accepts until changed.
    init(expectedToken: String) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokend-bearer-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Self.script.write(to: directory.appendingPathComponent("server.py"), atomically: true, encoding: .utf8)
        try Data(expectedToken.utf8).write(to: directory.appendingPathComponent("token"))
        chmod(directory.appendingPathComponent("token").path, 0o600)
        pid = try ChildProcess.start(
            "/usr/bin/python3", [directory.appendingPathComponent("server.py").path, directory.path,
             directory.appendingPathComponent("token").path, directory.appendingPathComponent("requests.log").path],
            environment: ProcessInfo.processInfo.environment)
        let portFile = directory.appendingPathComponent("port").path
        try await poll("the bearer server's port") { FileManager.default.fileExists(atPath: portFile) && !((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "").isEmpty }
        port = Int(try String(contentsOfFile: portFile, encoding: .utf8)) ?? 0
    }

    var requests: [String] {
        ((try? String(contentsOf: directory.appendingPathComponent("requests.log"), encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
    }

    /// A bare repository `name.git` under the server root with one commit, "first".
    func makeRepository(_ name: String, environment: [String: String]) async throws {
        let source = directory.appendingPathComponent("source-\(name)").path
        let commands: [[String]] = [
            ["init", "-q", "-b", "main", source],
            ["-C", source, "-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "--allow-empty", "-m", "first"],
            ["clone", "-q", "--bare", source, directory.appendingPathComponent("\(name).git").path],
        ]
        for arguments in commands {
            let result = try await runChild("/usr/bin/git", arguments, environment: environment)
            guard result.status == 0 else { throw HarnessError("git \(arguments.joined(separator: " ")): \(result.stderr)") }
        }
    }

    func stop() {
        ChildProcess.stop(pid)
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A short-lived program run to completion off the cooperative pool (see `offPool`).
func runChild(_ path: String, _ arguments: [String], environment: [String: String]) async throws -> ChildProcess.Result {
    try await offPool { try ChildProcess.run(path, arguments, environment: environment) }
}
