import ChordStoreAPI
import ChordStoreDomain
import ChordStoreProto
@testable import ChordStoreServer
import ChordStoreWire
import NIOCore
import SwiftProtobuf
import Testing

/// The framed connection's state machine, fed plain values: frames, cancels, results,
/// deadlines, writability and progress readings, with no socket and no clock.
@Suite("Connection state machine")
struct ConnectionStateMachineTests {
    static let limits = ConnectionStateMachine.Limits(wire(calls: 2))

    static func wire(calls: Int) -> WireLimits {
        var limits = WireLimits()
        limits.maxFrameSize = 4_096
        limits.maxCallsPerConnection = calls
        limits.slowReaderTimeout = .seconds(10)
        return limits
    }
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func frame(_ kind: Chordstore_V1_Frame.OneOf_Kind) -> ByteBuffer {
        var frame = Chordstore_V1_Frame()
        frame.kind = kind
        return ByteBuffer(bytes: try! frame.serializedBytes() as [UInt8])
    }

    func call(_ id: UInt64, _ method: Method = .subscribe) -> ByteBuffer {
        frame(.call(Chordstore_V1_Call.with {
            $0.callID = id
            $0.method = method.rawValue
        }))
    }

    func cancel(_ id: UInt64) -> ByteBuffer { frame(.cancel(Chordstore_V1_Cancel.with { $0.callID = id })) }

    /// Starts call `id` the way the handler does once admission passes.
    func start(_ machine: inout ConnectionStateMachine, _ id: UInt64, _ method: Method = .subscribe, stream: Bool = true, due: NIODeadline? = nil) -> UInt64 {
        guard case .start(let call) = machine.frameReceived(call(id, method), at: t0) else {
            Issue.record("call \(id) did not start")
            return 0
        }
        let refusal = machine.refusal(of: call.callID)
        #expect(refusal == nil)
        let token = machine.nextToken()
        _ = machine.started(call.callID, token: token, method: method, isStream: stream, at: t0, due: due)
        return token
    }

    func code(_ end: ConnectionStateMachine.CallEnd?) -> StatusCode? {
        guard let end else { return nil }
        if case .failure(let error) = end.result { return error.code }
        return .ok
    }

    @Test("a call ends once: a cancel ends it, its task's later result is dropped, and the task still counts until it finishes")
    func endsOnce() {
        var machine = ConnectionStateMachine(limits: Self.limits, authenticated: true)
        let token = start(&machine, 1)
        #expect(machine.running == 1)
        guard case .end(let end) = machine.frameReceived(cancel(1), at: t0) else { Issue.record("no end"); return }
        #expect(code(end) == .cancelled && end.cancelsTask && end.started == nil, "a stream's latency is not counted")
        let active = machine.isActive(1, token: token)
        #expect(!active)
        guard case .none = machine.frameReceived(cancel(1), at: t0) else { Issue.record("a second cancel acted"); return }
        let (releases, late) = machine.finished(1, token: token, with: .success(.none), at: t0)
        #expect(late == nil && releases && machine.running == 0)
    }

    @Test("a call id reused after its call ended is the new call's: the old task's result does not end it")
    func reusedID() {
        var machine = ConnectionStateMachine(limits: Self.limits, authenticated: true)
        let first = start(&machine, 7, .getProfile, stream: false)
        _ = machine.frameReceived(cancel(7), at: t0)
        let second = start(&machine, 7, .getProfile, stream: false)
        #expect(first != second)
        let stale = machine.finished(7, token: first, with: .success(.bytes([1])), at: t0).end
        #expect(stale == nil)
        let end = machine.finished(7, token: second, with: .success(.bytes([2])), at: t0).end
        #expect(code(end) == .ok && end?.started == t0)
    }

    @Test("calls past the connection's limit, an id in flight, and tasks still finishing past twice the limit are refused")
    func limits() {
        var machine = ConnectionStateMachine(limits: Self.limits, authenticated: true)
        let a = start(&machine, 1)
        let refusalOfOne = machine.refusal(of: 1)
        #expect(refusalOfOne?.code == .invalidArgument)
        _ = start(&machine, 2)
        let refusalOfThree = machine.refusal(of: 3)
        #expect(refusalOfThree?.code == .resourceExhausted)
        // Cancelled calls free their slots, but their tasks still run.
        _ = machine.frameReceived(cancel(1), at: t0)
        _ = machine.frameReceived(cancel(2), at: t0)
        _ = start(&machine, 3)
        _ = start(&machine, 4)
        _ = machine.frameReceived(cancel(3), at: t0)
        _ = machine.frameReceived(cancel(4), at: t0)
        let refusal = machine.refusal(of: 5)
        #expect(refusal?.code == .resourceExhausted && refusal?.reason == .stillFinishing)
        _ = machine.finished(1, token: a, with: .success(.none), at: t0)
        let refusalOfFive = machine.refusal(of: 5)
        #expect(refusalOfFive == nil)
    }

    @Test("a result after the deadline ends the call with DEADLINE_EXCEEDED; a reply too large for a frame with RESOURCE_EXHAUSTED")
    func deadlineAndSize() {
        var machine = ConnectionStateMachine(limits: Self.limits, authenticated: true)
        let late = start(&machine, 1, .getProfile, stream: false, due: t0 + .milliseconds(5))
        let lateEnd = machine.end(1, token: late, with: .success(.bytes([1])), at: t0 + .milliseconds(6))
        #expect(code(lateEnd) == .deadlineExceeded)
        let large = start(&machine, 2, .getProfile, stream: false)
        let end = machine.end(2, token: large, with: .success(.bytes(Array(repeating: 0, count: 4_090))), at: t0)
        #expect(code(end) == .resourceExhausted)
    }

    @Test("while a failed authentication is answered, frames are held in order and run after it; too many close the connection")
    func penalty() {
        var machine = ConnectionStateMachine(limits: Self.limits, authenticated: false)
        machine.penalize()
        let reads = machine.shouldRead(writable: true)
        #expect(!reads)
        guard case .none = machine.frameReceived(call(1, .health), at: t0), case .none = machine.frameReceived(call(2, .getProfile), at: t0) else {
            Issue.record("a held frame ran")
            return
        }
        let early = machine.nextHeldFrame(at: t0)
        #expect(early == nil, "nothing runs before the penalty is over")
        machine.penaltyOver()
        let readsWritable = machine.shouldRead(writable: true)
        let readsUnwritable = machine.shouldRead(writable: false)
        #expect(readsWritable && !readsUnwritable)
        var order: [UInt64] = []
        while let next = machine.nextHeldFrame(at: t0) { if case .start(let call) = next { order.append(call.callID) } }
        #expect(order == [1, 2])
        machine.penalize()
        _ = machine.frameReceived(call(3), at: t0)
        _ = machine.frameReceived(call(4), at: t0)
        guard case .goAway(let error) = machine.frameReceived(call(5), at: t0) else { Issue.record("no GoAway past the held frames"); return }
        #expect(error.code == .resourceExhausted && machine.phase == .closing)
        guard case .none = machine.frameReceived(call(6), at: t0) else { Issue.record("a closing connection ran a frame"); return }
    }

    @Test("a frame that is not a Call or Cancel, or not a Frame at all, closes the connection, once")
    func badFrames() {
        var machine = ConnectionStateMachine(limits: Self.limits, authenticated: true)
        guard case .goAway(let error) = machine.frameReceived(frame(.reply(Chordstore_V1_Reply())), at: t0) else { Issue.record("no GoAway"); return }
        #expect(error.code == .invalidArgument)
        guard case .none = machine.goAway(WireError(.internal, "again")) else { Issue.record("two GoAways"); return }
        var other = ConnectionStateMachine(limits: Self.limits, authenticated: true)
        guard case .goAway = other.frameReceived(ByteBuffer(bytes: [0xFF, 0xFF, 0xFF]), at: t0) else { Issue.record("garbage ran"); return }
    }

    @Test("streams wait for the client while the channel is not writable; writability, their end or a timeout ends the wait")
    func waits() {
        var machine = ConnectionStateMachine(limits: Self.limits, authenticated: true)
        let token = start(&machine, 1)
        let ready = machine.waitForWritable(1, token: token, writable: true)
        #expect(ready == .ready)
        guard case .wait(let first) = machine.waitForWritable(1, token: token, writable: false) else { Issue.record("no wait"); return }
        let released = machine.writable()
        #expect(released == [first])
        guard case .wait(let second) = machine.waitForWritable(1, token: token, writable: false) else { Issue.record("no wait"); return }
        let timedOut = machine.waitTimedOut(second)
        let again = machine.waitTimedOut(second)
        #expect(timedOut && !again, "a wait times out once")
        guard case .wait(let third) = machine.waitForWritable(1, token: token, writable: false) else { Issue.record("no wait"); return }
        let end = machine.end(1, token: token, with: .failure(WireError(.cancelled, "x")), at: t0)
        #expect(end?.waiters == [third])
        let afterEnd = machine.waitForWritable(1, token: token, writable: false)
        #expect(afterEnd == .ended)
    }

    @Test("a client that takes none of its streams' bytes for the slow-reader timeout has its streams ended with SLOW_READER; readings stop with the last stream")
    func slowReader() {
        var machine = ConnectionStateMachine(limits: Self.limits, authenticated: true)
        let clock = ContinuousClock.now
        _ = start(&machine, 1)
        _ = start(&machine, 2, .getProfile, stream: false)
        #expect(machine.watchingProgress)
        for (taken, at) in [(UInt64(100), clock), (200, clock + .seconds(9)), (200, clock + .seconds(15))] {
            let reading = machine.progressRead(taken: taken, waiting: true, at: at, deadline: t0)
            #expect(reading.ends.isEmpty, "within the timeout of its last progress")
        }
        let (ends, stop) = machine.progressRead(taken: 200, waiting: true, at: clock + .seconds(25), deadline: t0)  // 10 s after the first reading without progress
        #expect(ends.map(\.callID) == [1] && !stop)
        if case .failure(let error) = ends.first?.result { #expect(error.reason == .slowReader) } else { Issue.record("not ended") }
        let active = machine.isActive(2, token: 2)
        #expect(active, "a unary call is not a stream")
        let last = machine.progressRead(taken: 200, waiting: true, at: clock + .seconds(40), deadline: t0)
        #expect(last.stop)
        #expect(!machine.watchingProgress)
    }

    @Test("the drain ends the clients' streams and not replication's; idleness closes a connection without calls only; closing cancels everything")
    func drainIdleClose() {
        var machine = ConnectionStateMachine(limits: ConnectionStateMachine.Limits(Self.wire(calls: 8)), authenticated: true)
        let subscribe = start(&machine, 1)
        let replicate = start(&machine, 2, .replicate)
        _ = start(&machine, 3, .getProfile, stream: false)
        let ends = machine.drain(at: t0)
        #expect(ends.map(\.callID) == [1] && code(ends.first) == .unavailable)
        if case .failure(let error) = ends.first?.result { #expect(error.reason == .shuttingDown) }
        guard case .none = machine.idle(.seconds(60)) else { Issue.record("closed with calls in flight"); return }
        let (tokens, _) = machine.closed()
        #expect(Set(tokens) == [replicate, 3] && !tokens.contains(subscribe))
        var idle = ConnectionStateMachine(limits: Self.limits, authenticated: true)
        guard case .goAway(let error) = idle.idle(.seconds(60)) else { Issue.record("an idle connection stays"); return }
        #expect(error.code == .unavailable)
    }

    @Test("the first real credential proves the connection, once; an anonymous call does not")
    func proving() {
        var machine = ConnectionStateMachine(limits: Self.limits, authenticated: false)
        let anonymous = machine.proved(.anonymous)
        let first = machine.proved(.unrestricted)
        let again = machine.proved(.unrestricted)
        #expect(!anonymous && first && !again && machine.authenticated)
    }
}
