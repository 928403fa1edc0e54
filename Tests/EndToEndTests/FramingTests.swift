import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// docs/protocol.md's framing rules through a real socket. Issue 8, item 8: the partial-line
/// timeout counts only while the daemon wants to read (the line's total bound, and the clocks'
/// arithmetic, are tested on a manual clock in `LineFramingChannelHandlerTests`).
@Suite struct FramingTests {
    /// What the daemon gives a client to finish a line it has started (docs/protocol.md).
    static let partialLineTimeout: Double = 10

    /// A client pipelines requests and reads none of the replies, until the daemon stops taking
    /// its bytes (back-pressure), with part of a line in the daemon's buffer. It then reads
    /// nothing for longer than the partial-line timeout: that pause is the daemon's, not the
    /// client's, so the client is not cut, and once it reads, every request is answered.
    @Test func aPipeliningClientThatReadsLateIsNeverCut() async throws {
        let world = try await DaemonHarness.start()
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            let connection = try RawConnection(path: world.socketPath)
            // 28-byte lines: the daemon's reads, in power-of-two chunks, end inside a line.
            let request = Array("{\"op\":\"hello\",\"id\":\"pipe\"}\n".utf8)
            let batch = Array([[UInt8]](repeating: request, count: 512).joined())
            var sent = 0
            var outcome = RawConnection.SendOutcome.sent
            while outcome == .sent, sent < 50_000_000 {
                // Stalled for 3 s: the daemon has stopped reading from us.
                let result = await connection.sendNonBlocking(Array(batch[(sent % batch.count)...]), stallLimit: 3)
                sent += result.count
                outcome = result.outcome
            }
            #expect(outcome == .stalled, "the daemon pushed back (outcome \(outcome) after \(sent) bytes)")
            // Reading nothing, past the partial-line timeout (counted from the stall's start).
            try await Task.sleep(for: .seconds(Self.partialLineTimeout))
            // Finish the last line while reading: the daemon resumes reading as replies drain.
            let rest = Array(request[(sent % request.count)...])
            let finishing = Task { await connection.send(rest) }
            let expected = (sent + rest.count) / request.count
            var answered = 0
            while answered < expected, let line = try await connection.readLine(timeout: 60) {
                let response = try JSONDecoder().decode(Response.self, from: Data(line))
                guard response.ok, response.id == .string("pipe") else { break }
                answered += 1
            }
            #expect(await finishing.value == rest.count, "the daemon took the rest of the line")
            #expect(answered == expected, "\(answered) of \(expected) pipelined requests answered")
        }
    }

    /// Lines the accept loop answers at once and lines that need the engine, in one write: the
    /// connection is handed to a channel at the first engine line, and the replies still come
    /// in request order (docs/architecture.md, "A connection").
    @Test func repliesKeepRequestOrderAcrossTheHandOver() async throws {
        let world = try await DaemonHarness.start()
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            try await world.importNewUser()
            let connection = try RawConnection(path: world.socketPath)
            let lines = [
                #"{"op":"hello","id":1}"#, #"{"op":"token","account":"work","id":2}"#, #"{"op":"status","id":3}"#,
                #"{"op":"hello","id":4}"#, #"{"op":"token","account":"work","id":5}"#, #"{"op":"hello","#,
            ]
            #expect(await connection.send(Array(lines.joined(separator: "\n").utf8)) > 0)
            try await Task.sleep(for: .milliseconds(200))  // the last line's end comes in a later read
            #expect(await connection.send(Array("\"id\":6}\n".utf8)) > 0)
            var ids: [RequestID?] = []
            while ids.count < 6, let line = try await connection.readLine(timeout: 30) {
                let response = try JSONDecoder().decode(Response.self, from: Data(line))
                #expect(response.ok, "\(String(decoding: line, as: UTF8.self))")
                ids.append(response.id)
            }
            #expect(ids == (1...6).map { RequestID.number(Double($0)) })
        }
    }

    /// `printf '{"op":"hello"}' | socat - UNIX-CONNECT:…`: the last line has no newline and the
    /// client half-closes. It is a request all the same, and gets its answer (it used to get
    /// nothing, and socat exited 0).
    @Test func aLastLineWithoutItsNewlineIsAnswered() async throws {
        let world = try await DaemonHarness.start()
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            let socketPath = world.socketPath
            let environment = world.environment
            let run = try await offPool {
                try ChildProcess.run("/usr/bin/socat", ["-", "UNIX-CONNECT:\(socketPath)"], environment: environment, stdin: "{\"op\":\"hello\",\"id\":9}")
            }
            #expect(run.status == 0, "\(run.stderr)")
            let reply = try JSONDecoder().decode(Response.self, from: Data(run.stdout.utf8))
            #expect(reply.ok && reply.id == .number(9), "\(run.stdout)")
        }
    }
}
