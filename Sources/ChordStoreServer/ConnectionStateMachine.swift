import ChordStoreAPI
import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import NIOCore
import SwiftProtobuf

/// The state of one framed connection, as a plain value: its calls by call id, the tasks
/// still finishing, the frames held while a failed authentication is answered, the
/// streams waiting for the client to read, whether a call showed a valid credential, and
/// the client's reading progress. Each input (a frame, a cancel, a deadline, a result,
/// the channel's writability, a progress reading, the connection closing) returns what
/// to do; ``ConnectionHandler`` does it (writes, timers, tasks) and owns nothing else
/// that decides. No I/O, no clock: the caller passes the time.
///
/// A call ends exactly once: with its result, or earlier by `Cancel`, its deadline, a
/// slow reader, the drain or the connection closing (a later result is then dropped).
/// Its slot among the connection's calls is free once it ended, even if its task is
/// still winding down; those tasks count towards ``Limits/maxRunning``.
struct ConnectionStateMachine {
    /// The bounds of one connection (from ``ChordStoreWire/WireLimits``).
    struct Limits {
        /// Calls in flight at once.
        var maxCalls: Int
        /// Tasks still running, their calls answered or not: what a client could keep the
        /// server busy with by cancelling calls and sending more.
        var maxRunning: Int
        /// Frames held while a failed authentication is answered, and their bytes.
        var maxHeldFrames: Int
        var maxHeldBytes: Int
        /// The largest reply payload that fits a frame.
        var maxReplyBytes: Int
        /// How long a client may take none of a stream's bytes while some wait.
        var slowReaderTimeout: Duration

        init(_ limits: WireLimits) {
            maxCalls = limits.maxCallsPerConnection
            maxRunning = 2 * limits.maxCallsPerConnection
            maxHeldFrames = limits.maxCallsPerConnection
            maxHeldBytes = 2 * limits.maxFrameSize
            maxReplyBytes = limits.maxFrameSize - 64
            slowReaderTimeout = limits.slowReaderTimeout
        }
    }

    /// Whether the connection reads and runs frames.
    enum Phase: Equatable {
        /// It does.
        case open
        /// A failed authentication's delay runs: frames read meanwhile are held, in order.
        case penalized
        /// It said `GoAway` and closes: it runs nothing more.
        case closing
    }

    /// A call in flight.
    struct Call: Equatable {
        /// Tells a reused call id's calls apart (unique on the connection).
        let token: UInt64
        let method: Method?
        let isStream: Bool
        /// When the call started (its latency ends at its final reply).
        let started: NIODeadline
        /// When its deadline passes (`nil`: none).
        let due: NIODeadline?
    }

    /// A call's end, for the handler to carry out: write `result` as the final reply,
    /// count it, cancel the call's task when it ended before its work, and fail the
    /// stream's `waiters`.
    struct CallEnd {
        let callID: UInt64
        let token: UInt64
        let method: Method?
        /// When the call started (`nil` for a stream: its latency is not counted).
        let started: NIODeadline?
        let result: Result<ReplyPayload, WireError>
        /// The ids of the stream's waits for the client, to fail.
        let waiters: [Int]

        /// Whether the call's task must be cancelled (its work was cut short).
        var cancelsTask: Bool {
            if case .failure = result { return true }
            return false
        }
    }

    /// What a frame asks for.
    enum FrameAction {
        /// Nothing (held, or the connection closes).
        case none
        /// Start this call (after ``refusal(of:)`` and admission).
        case start(CallFrame)
        /// A cancel ended this call.
        case end(CallEnd)
        /// Say goodbye with this error and close (the machine is closing already).
        case goAway(WireError)
    }

    /// What a stream's wait for the client to read comes to.
    enum WaitDecision: Equatable {
        /// The channel is writable: go on at once.
        case ready
        /// The call ended: stop.
        case ended
        /// Wait, as waiter `id`, until ``writable()`` (or its timer, the call's end or the
        /// connection's).
        case wait(id: Int)
    }

    let limits: Limits
    private(set) var phase = Phase.open
    /// Calls not yet answered, by call id.
    private(set) var calls: [UInt64: Call] = [:]
    private var lastToken: UInt64 = 0
    /// Tasks still running, their calls answered or not.
    private(set) var running = 0
    /// Frames read while penalized, in order, and their bytes.
    private var held: [ByteBuffer] = []
    private var heldBytes = 0
    /// Whether a call showed a valid credential (or none is needed).
    private(set) var authenticated: Bool
    /// Streams waiting for the channel to be writable again.
    private var waiters: [(id: Int, callID: UInt64, token: UInt64)] = []
    private var lastWaiter = 0
    private var progress = ReadProgress()
    /// Whether progress readings are wanted (streams run).
    private(set) var watchingProgress = false

    /// A new connection's state; `authenticated` when the server asks for no credential.
    init(limits: Limits, authenticated: Bool) {
        self.limits = limits
        self.authenticated = authenticated
    }

    // MARK: Frames

    /// A frame arrived at `now`.
    mutating func frameReceived(_ body: ByteBuffer, at now: NIODeadline) -> FrameAction {
        switch phase {
        case .closing:
            return .none
        case .penalized:
            guard held.count < limits.maxHeldFrames, heldBytes + body.readableBytes <= limits.maxHeldBytes else {
                return goAway(WireError(.resourceExhausted, "frames sent while a failed authentication is answered exceed what is held"))
            }
            held.append(body)
            heldBytes += body.readableBytes
            return .none
        case .open:
            return run(body, at: now)
        }
    }

    /// The next frame held during a penalty, run at `now` once the connection is open
    /// again (`nil`: none, or it is not open).
    mutating func nextHeldFrame(at now: NIODeadline) -> FrameAction? {
        guard phase == .open, !held.isEmpty else { return nil }
        let next = held.removeFirst()
        heldBytes -= next.readableBytes
        return run(next, at: now)
    }

    private mutating func run(_ body: ByteBuffer, at now: NIODeadline) -> FrameAction {
        let frame: ClientFrame
        do {
            frame = try ClientFrame(body)
        } catch {
            return goAway(WireError(.invalidArgument, "a frame is not a chordstore.v1.Frame: \(error)"))
        }
        switch frame {
        case .call(let call):
            return .start(call)
        case .cancel(let callID):
            guard let token = calls[callID]?.token,
                  let end = end(callID, token: token, with: .failure(WireError(.cancelled, "cancelled by the client")), at: now)
            else { return .none }
            return .end(end)
        case .notFromClient:
            return goAway(WireError(.invalidArgument, "a client sends only Call and Cancel frames"))
        }
    }

    /// Closes the connection with `error`, once.
    mutating func goAway(_ error: WireError) -> FrameAction {
        guard phase != .closing else { return .none }
        phase = .closing
        return .goAway(error)
    }

    // MARK: Starting calls

    // (The queries the handler asks on every call are `mutating`: a non-mutating method of
    // a struct kept in a class's stored property gets a copy of the whole machine, a
    // retain of each of its collections, per call; measured in the framed port's profile.)

    /// Why call `callID` cannot start on this connection now, if it cannot: its id is in
    /// flight, or the connection's calls or finishing tasks are at their limit.
    mutating func refusal(of callID: UInt64) -> WireError? {
        if calls[callID] != nil { return WireError(.invalidArgument, "call id \(callID) is already in flight") }
        if calls.count >= limits.maxCalls {
            return WireError(.resourceExhausted, "\(limits.maxCalls) calls are in flight on this connection, its limit")
        }
        if running >= limits.maxRunning {
            return WireError(
                .resourceExhausted,
                "\(running) calls of this connection, ended or not, are still finishing their work (at most \(limits.maxRunning)); retry shortly",
                reason: .stillFinishing)
        }
        return nil
    }

    /// A call showed `principal`: true the first time it is a real credential (the
    /// connection then keeps its slot for good).
    mutating func proved(_ principal: Principal) -> Bool {
        guard !authenticated, principal != .anonymous else { return false }
        authenticated = true
        return true
    }

    /// The token a call about to start will have.
    mutating func nextToken() -> UInt64 {
        lastToken += 1
        return lastToken
    }

    /// Call `callID` starts, with `token`, at `now`, ending at `due` unless answered
    /// before; returns whether progress readings must start (it is the first stream).
    mutating func started(_ callID: UInt64, token: UInt64, method: Method?, isStream: Bool, at now: NIODeadline, due: NIODeadline?) -> Bool {
        calls[callID] = Call(token: token, method: method, isStream: isStream, started: now, due: due)
        running += 1
        guard isStream, !watchingProgress else { return false }
        watchingProgress = true
        progress = ReadProgress()
        return true
    }

    /// Whether call `token` is still in flight under `callID`.
    mutating func isActive(_ callID: UInt64, token: UInt64) -> Bool { calls[callID]?.token == token }

    // MARK: Ending calls

    /// Ends call `token` (under `callID`) with `result` at `now`, once: later ends of the
    /// same call, and ends meant for an earlier call that used the same id, give `nil`.
    /// A result after the call's deadline ends it with `DEADLINE_EXCEEDED` (a result may
    /// reach the loop before a deadline that came due earlier); a reply too large for a
    /// frame with `RESOURCE_EXHAUSTED`.
    mutating func end(_ callID: UInt64, token: UInt64, with result: Result<ReplyPayload, WireError>, at now: NIODeadline) -> CallEnd? {
        guard let call = calls[callID], call.token == token else { return nil }
        calls[callID] = nil
        var ended: [Int] = []
        if call.isStream {
            waiters.removeAll { waiter in
                guard waiter.callID == callID, waiter.token == token else { return false }
                ended.append(waiter.id)
                return true
            }
        }
        var result = result
        if let due = call.due, case .success = result, now >= due {
            result = .failure(WireError(.deadlineExceeded, "the deadline passed before the call ended"))
        }
        if case .success(let payload) = result, payload.count > limits.maxReplyBytes {
            result = .failure(WireError(
                .resourceExhausted,
                "the reply is \(payload.count) bytes, over the frame limit of \(limits.maxReplyBytes + 64); ask for less (a smaller limit)"))
        }
        return CallEnd(callID: callID, token: token, method: call.method, started: call.isStream ? nil : call.started, result: result, waiters: ended)
    }

    /// Call `token`'s task is done with `result` at `now`: one fewer running, and the call
    /// ends unless it already did. `releasesMemory`: the task may leave large buffers
    /// behind (a stream, or a call that ended early).
    mutating func finished(
        _ callID: UInt64, token: UInt64, with result: Result<ReplyPayload, WireError>, at now: NIODeadline
    ) -> (releasesMemory: Bool, end: CallEnd?) {
        running -= 1
        let call = calls[callID]
        let releases = call?.token != token || call?.isStream == true
        return (releases, end(callID, token: token, with: result, at: now))
    }

    // MARK: The connection

    /// The connection read nothing for the idle timeout: the error to close it with,
    /// unless calls are in flight.
    mutating func idle(_ timeout: Duration) -> FrameAction {
        guard calls.isEmpty else { return .none }
        return goAway(WireError(.unavailable, "the connection was idle for \(timeout)"))
    }

    /// The server drains: the clients' streams end now (not replication's, which the
    /// calls in flight may need).
    mutating func drain(at now: NIODeadline) -> [CallEnd] {
        let error = WireError(.unavailable, "the server is shutting down", reason: .shuttingDown)
        return calls.filter { $0.value.isStream && $0.value.method != .replicate }.compactMap { callID, call in
            end(callID, token: call.token, with: .failure(error), at: now)
        }
    }

    /// The connection closed: the calls whose tasks to cancel, and every waiter, to fail.
    mutating func closed() -> (tokens: [UInt64], waiters: [Int]) {
        phase = .closing
        let tokens = calls.values.map(\.token)
        calls.removeAll()
        let ids = waiters.map(\.id)
        waiters.removeAll()
        watchingProgress = false
        return (tokens, ids)
    }

    // MARK: Failed authentications

    /// A failed authentication is answered after a delay: until ``penaltyOver()`` the
    /// connection runs no frame and holds those it reads.
    mutating func penalize() {
        if phase == .open { phase = .penalized }
    }

    /// The delay is over: frames run again, the held ones first (``nextHeldFrame()``).
    mutating func penaltyOver() {
        if phase == .penalized { phase = .open }
    }

    /// Whether the connection should read from its socket: it runs frames, and the
    /// client takes its replies (`writable`), so they cannot pile up.
    mutating func shouldRead(writable: Bool) -> Bool { phase == .open && writable }

    // MARK: Waiting for the client

    /// Stream `token` wants to send more: go on if the channel is `writable`, else wait.
    mutating func waitForWritable(_ callID: UInt64, token: UInt64, writable: Bool) -> WaitDecision {
        guard isActive(callID, token: token) else { return .ended }
        if writable { return .ready }
        lastWaiter += 1
        waiters.append((lastWaiter, callID, token))
        return .wait(id: lastWaiter)
    }

    /// The channel is writable again: every waiter goes on.
    mutating func writable() -> [Int] {
        defer { waiters.removeAll() }
        return waiters.map(\.id)
    }

    /// Waiter `id` waited for the slow-reader timeout: true if it still waited (its
    /// stream then ends as a slow reader).
    mutating func waitTimedOut(_ id: Int) -> Bool {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return false }
        waiters.remove(at: index)
        return true
    }

    /// A reading of the client's progress at `now`: the bytes it has taken and whether
    /// some wait for it. A client that took none for the slow-reader timeout while some
    /// waited has its streams ended with `RESOURCE_EXHAUSTED` (`SLOW_READER`), whether or
    /// not they have more to send. `stop`: no stream runs; readings can stop.
    mutating func progressRead(taken: UInt64, waiting: Bool, at now: ContinuousClock.Instant, deadline: NIODeadline) -> (ends: [CallEnd], stop: Bool) {
        guard calls.values.contains(where: \.isStream) else {
            watchingProgress = false
            return ([], true)
        }
        guard progress.observe(taken: taken, waiting: waiting, at: now) >= limits.slowReaderTimeout else { return ([], false) }
        progress = ReadProgress()  // a stream started later gets its own time
        let error = StreamWriter.slowReader(limits.slowReaderTimeout)
        let ends = calls.filter(\.value.isStream).compactMap { callID, call in end(callID, token: call.token, with: .failure(error), at: deadline) }
        return (ends, false)
    }
}
