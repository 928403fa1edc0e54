import CTokendShims
import Synchronization
import TokendCore
import TokendProtocol
import TokendSystem
#if canImport(Glibc)
import Glibc
#endif

/// The listening socket's own thread (docs/architecture.md, "A connection"). It accepts each
/// connection, checks the peer's uid, and answers every line the daemon can answer at once
/// (`RequestRouter.answerAtOnce`: `hello`, or a token the account holds) with one read and one
/// write: no channel, no pipeline, no task. The first line that needs more (the engine, a stream,
/// the clock of a partial line, back-pressure on a full socket) hands the connection, with the
/// bytes it has not answered, to a NIO channel (`SocketListener.adopt`), which serves it from
/// then on. A `tokenctl token` is thus an accept, a read, a write and a close on this thread.
final class AcceptLoop: Sendable {
    /// Bytes read from a connection at a time: a few hundred request lines. A longer line is
    /// handed to a channel whole, whose framer holds up to the protocol's 64 KiB cap.
    static let readSize = 4096
    /// Connections accepted per wake-up before the loop serves the ones already open, so a flood
    /// of connects cannot starve them.
    static let acceptsPerWake = 64
    /// How long accepting pauses when the process is out of descriptors: the waiting connection
    /// keeps the socket readable, and without a pause the loop would spin on it (NIO's
    /// `AcceptBackoffHandler` does the same).
    static let pauseWhenOutOfDescriptors = 1.0

    private let owner: SocketListener
    private let listening: Int32
    private let poller: Int32
    /// Its read end wakes the loop to close everything and end; its write end (nil once closed)
    /// is written by `stop()`, under the lock, so a stop after the end writes to no reused number.
    private let stopReader: Int32
    private let stopWriter: Mutex<Int32?>
    /// The connections this loop serves (not those handed over), each with its peer: closed when
    /// it stops.
    private let connections = Mutex<[Int32: Caller]>([:])
    private let ended: @Sendable () -> Void

    /// Takes `listening` (a bound, listening socket) and serves it on a thread of its own until
    /// `stop()`; then closes it and every connection it still serves, and calls `ended`.
    init(listening: Int32, owner: SocketListener, ended: @escaping @Sendable () -> Void) throws(ListenerError) {
        var pipe: [Int32] = [-1, -1]
        let poller = epoll_create1(Int32(EPOLL_CLOEXEC))  // conversion: a C flag constant
        guard poller >= 0, tokend_pipe_cloexec(&pipe) == 0 else {
            if poller >= 0 { close(poller) }
            throw ListenerError(code: .bindFailed, description: "cannot create the accept loop's descriptors: \(String(cString: strerror(errno)))")
        }
        self.owner = owner
        self.listening = listening
        self.poller = poller
        self.stopReader = pipe[0]
        self.stopWriter = Mutex(pipe[1])
        self.ended = ended
        _ = fcntl(listening, F_SETFL, fcntl(listening, F_GETFL) | O_NONBLOCK)  // an activated socket comes blocking
        watch(listening)
        watch(stopReader)
        DedicatedThread.start("tokend-accept") { [self] in run() }
    }

    /// Ends the loop: no connection is accepted after it returns to its wait.
    func stop() {
        stopWriter.withLock { writer in
            var byte: UInt8 = 1
            if let writer { _ = write(writer, &byte, 1) }
        }
    }

    private func watch(_ fd: Int32) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
        event.data.fd = fd
        _ = epoll_ctl(poller, EPOLL_CTL_ADD, fd, &event)
    }

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        var buffers = Buffers()
        // The listener's router, copied once and lent to every line: read through `owner` per
        // line, the struct (its existentials and optionals) was copied and destroyed for each,
        // ~630 instructions of a `token` line's ~15,700 (callgrind).
        let router = owner.handler
        while true {
            let count = epoll_wait(poller, &events, Int32(events.count), -1)  // conversion: 64
            if count < 0 {
                if errno == EINTR { continue }
                owner.logger.critical("the accept loop cannot wait for its sockets; no more connections are accepted", metadata: ["errno": "\(errno)"])
                break
            }
            for index in 0..<Int(count) {  // conversion: epoll_wait's count, 0...64 here
                let fd = events[index].data.fd
                if fd == stopReader {
                    finish()
                    return
                } else if fd == listening {
                    acceptWaiting(router, &buffers)
                } else if let caller = connections.withLock({ $0[fd] }) {
                    // A descriptor handed over or closed earlier in this batch is not ours to read.
                    serve(fd, caller, router, &buffers)
                }
            }
        }
        finish()
    }

    private func acceptWaiting(_ router: RequestRouter, _ buffers: inout Buffers) {
        for _ in 0..<Self.acceptsPerWake {
            let fd = tokend_accept_connection(listening)
            guard fd >= 0 else {
                switch errno {
                case EINTR, ECONNABORTED, EPROTO: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: pauseAccepting()
                default: break  // EAGAIN: none left
                }
                return
            }
            var peer = tokend_peer_credentials()
            guard tokend_peer_credentials_of(fd, &peer) == 0, peer.uid == owner.uid else {
                owner.logger.warning("refused a client of another user", metadata: ["uid": "\(peer.uid)", "pid": "\(peer.pid)"])
                close(fd)
                continue
            }
            owner.onConnection()
            guard owner.openedConnection() else {
                owner.adopt(fd, overCap: true)
                continue
            }
            let caller: Caller
            switch owner.admit(PeerIdentity(pid: peer.pid, uid: peer.uid, gid: peer.gid)) {
            case .success(let admitted): caller = admitted
            case .failure(let refusal):
                owner.adopt(fd, refusal: refusal)
                continue
            }
            connections.withLock { $0[fd] = caller }
            watch(fd)
            serve(fd, caller, router, &buffers)  // on loopback the request is often there already
        }
    }

    /// Out of descriptors: accepting stops for a moment (the other connections are served).
    private func pauseAccepting() {
        owner.logger.warning("out of file descriptors; accepting pauses for a second")
        _ = epoll_ctl(poller, EPOLL_CTL_DEL, listening, nil)
        _ = TimerThread.shared.schedule(after: Self.pauseWhenOutOfDescriptors) { [self] in
            stopWriter.withLock { if $0 != nil { watch(listening) } }  // not once the loop has ended
        }
    }

    /// What the loop reuses from one read to the next: the bytes read, the replies to write and
    /// the codings of the last line (`CodingMemo`), so a line answered at once allocates nothing
    /// when it repeats the one before.
    struct Buffers {
        var input = [UInt8](repeating: 0, count: AcceptLoop.readSize)
        var output: [UInt8] = []
        var memo = CodingMemo()
    }

    /// Reads what the client sent and answers each line that can be answered at once; hands the
    /// connection over at the first one that cannot, or when the replies do not fit the socket.
    private func serve(_ fd: Int32, _ caller: Caller, _ router: RequestRouter, _ buffers: inout Buffers) {
        let count = buffers.input.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0, errno == EAGAIN || errno == EINTR { return }
        guard count > 0 else {
            closeConnection(fd)  // the client left between lines, or its socket failed
            return
        }
        // Work, for the idle release: a persistent client's lines as much as a new connection,
        // or the pages a long burst on open connections touched would stay until the next one.
        owner.onConnection()
        buffers.output.removeAll(keepingCapacity: true)
        var answered = 0  // bytes of the input whose lines are answered
        // The first request that needs the engine, decoded here once: the channel asks with it.
        var carried: DecodedRequest?
        while answered < count, carried == nil,
              let next = answerLine(at: answered, of: count, buffers.input, caller, router, &buffers.memo, &buffers.output, &carried) {
            answered = next
        }
        var written = 0
        while written < buffers.output.count {
            let sent = buffers.output.withUnsafeBytes { send(fd, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL)) }  // conversion: a C flag constant
            if sent > 0 {
                written += sent
            } else if sent < 0, errno == EINTR {
                continue
            } else if sent < 0, errno == EAGAIN {
                break
            } else {
                closeConnection(fd)  // the client is gone
                return
            }
        }
        if written < buffers.output.count || carried != nil || answered < count {
            connections.withLock { _ = $0.removeValue(forKey: fd) }
            _ = epoll_ctl(poller, EPOLL_CTL_DEL, fd, nil)
            owner.adopt(fd, caller: caller, unsent: buffers.output[written...], carried: carried, unanswered: buffers.input[answered..<count])
        }
    }

    /// Answers the line that starts at `start` of the first `count` bytes read, appending the
    /// reply to the output, or decodes it into `carried` when `RequestRouter.answerAtOnce` does
    /// not answer it (the channel asks the engine with it); returns where the next line starts,
    /// or nil when the line is the channel's to read: cut by the read, empty (the channel counts
    /// those), or ending in a CR (the framer drops it).
    private func answerLine(
        at start: Int, of count: Int, _ input: [UInt8], _ caller: Caller, _ router: RequestRouter, _ memo: inout CodingMemo, _ output: inout [UInt8],
        _ carried: inout DecodedRequest?
    ) -> Int? {
        let newline = Int32(UInt8(ascii: "\n"))  // conversion: memchr takes the byte as an int
        let end = input.withUnsafeBytes { bytes in
            memchr(bytes.baseAddress! + start, newline, count - start).map { bytes.baseAddress!.distance(to: UnsafeRawPointer($0)) }
        }
        guard let end, end > start, input[end - 1] != UInt8(ascii: "\r") else { return nil }
        let decoded = input.withUnsafeBytes { memo.decode(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
        if let response = router.answerAtOnce(decoded, from: caller) {
            output.append(contentsOf: memo.encode(response))
        } else {
            carried = decoded
        }
        return end + 1
    }

    private func closeConnection(_ fd: Int32) {
        connections.withLock { _ = $0.removeValue(forKey: fd) }
        close(fd)
        owner.closedConnection()
    }

    private func finish() {
        close(listening)
        for fd in connections.withLock({ Array($0.keys) }) { closeConnection(fd) }
        stopWriter.withLock { writer in
            close(poller)
            close(stopReader)
            if let writer { close(writer) }
            writer = nil
        }
        ended()
    }
}
