import Testing
@testable import TokendServer

/// Running one hook: output, exit status, signals, the timeout, and what a hook leaves behind.
@Suite struct HookProcessTests {
    let environment = ["PATH": "/usr/bin:/bin"]

    @Test func outputAndStatus() {
        let outcome = HookProcess.runBlocking(["sh", "-c", "echo out; echo err >&2; exit 3"], environment: environment, timeout: 30)
        #expect(outcome.ending == .exited(3))
        #expect(String(decoding: outcome.output, as: UTF8.self) == "out\nerr\n")
    }

    @Test func onlyTheGivenEnvironmentAndNoInheritedDescriptors() {
        let outcome = HookProcess.runBlocking(
            ["sh", "-c", "echo \"$TOKEND_EVENT\"; ls /proc/self/fd | wc -l"], environment: environment.merging(["TOKEND_EVENT": "refreshed"]) { $1 },
            timeout: 30)
        // stdin, stdout, stderr, and the descriptor ls reads /proc/self/fd through.
        #expect(String(decoding: outcome.output, as: UTF8.self).split(separator: "\n").map { $0.trimmed } == ["refreshed", "4"])
    }

    @Test func aSignalIsReportedAsSuch() {
        #expect(HookProcess.runBlocking(["sh", "-c", "kill -TERM $$"], environment: environment, timeout: 30).ending == .signalled(15))
    }

    @Test func aMissingProgramIsNotStarted() {
        guard case .notStarted = HookProcess.runBlocking(["/nonexistent/hook"], environment: environment, timeout: 30).ending else {
            Issue.record("expected notStarted")
            return
        }
    }

    /// The hook exits while a child it left in the background still holds the pipe: the run
    /// ends with the hook, not with that child.
    @Test func aBackgroundChildDoesNotKeepTheRunGoing() {
        let outcome = HookProcess.runBlocking(["sh", "-c", "(sleep 10; echo late) & echo now"], environment: environment, timeout: 60)
        #expect(outcome.ending == .exited(0))
        #expect(String(decoding: outcome.output, as: UTF8.self) == "now\n")
    }

    @Test func pastTheTimeoutItIsKilled() {
        let outcome = HookProcess.runBlocking(["sh", "-c", "echo started; exec sleep 60"], environment: environment, timeout: 3)
        #expect(outcome.ending == .timedOut)
        #expect(String(decoding: outcome.output, as: UTF8.self) == "started\n")
    }

    @Test func outputIsCapped() {
        let outcome = HookProcess.runBlocking(["sh", "-c", "head -c 200000 /dev/zero"], environment: environment, timeout: 60)
        #expect(outcome.ending == .exited(0), "the hook is never blocked on a full pipe")
        #expect(outcome.output.count == HookProcess.outputLimit)
    }
}
