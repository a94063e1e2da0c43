import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
import ChordStoreWire
import Foundation
import Logging
import NIOCore

/// One client connection of the framed protocol: a thin driver of its
/// ``ConnectionStateMachine`` (which decides) and the server's ``CallExecutor`` (which
/// runs every transport's calls). It feeds the machine the frames, timers, results and
/// the channel's state, and carries out what the machine says: replies, `GoAway`,
/// reading on or off, tasks, timers, the waits of streams for a slow client.
///
/// All state lives on the connection's event loop. Point reads and inline calls are
/// answered on it; commands go straight to the writer, whose answers come back through the
/// loop's ``LoopInbox`` (a command that asked for a majority then registers a wait, whose
/// end posts the answer to the inbox); other calls run as tasks that hop back to the loop
/// to reply. A connection-level problem (unparseable frame, frame too large or too slow,
/// idleness) gets a `GoAway` and the connection is closed; other connections are
/// unaffected.
final class ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let executor: CallExecutor
    private let limits: WireLimits
    private var logger: Logger
    /// The connection's number, by which the server's admission knows it.
    private let connection: Int
    /// Where the writer hands command answers back to this connection's loop.
    private let inbox: LoopInbox
    private var machine: ConnectionStateMachine
    private var credentials = CredentialCache()
    private var context: ChannelHandlerContext?
    private var peer = CallPeer(address: "", port: 0)
    /// The tasks of calls still running, by call token.
    private var tasks: [UInt64: Task<Void, Never>] = [:]
    /// The quorum waits of commands committed here, by call token (see `committed`).
    private var quorumWaits: [UInt64: ReplicationNode.QuorumWait] = [:]
    /// The deadline timers of calls in flight, by call token.
    private var deadlines: [UInt64: Scheduled<Void>] = [:]
    /// The waits of streams for the client to read, by waiter id, with their timers.
    private var waits: [Int: (promise: EventLoopPromise<Void>, timer: Scheduled<Void>)] = [:]
    private var unauthenticatedTimer: Scheduled<Void>?
    private var progressTimer: RepeatedTask?

    init(executor: CallExecutor, limits: WireLimits, logger: Logger, connection: Int, inbox: LoopInbox) {
        self.executor = executor
        self.limits = limits
        self.connection = connection
        self.inbox = inbox
        self.logger = logger
        self.logger[metadataKey: "connection"] = "\(connection)"
        machine = ConnectionStateMachine(limits: .init(limits), authenticated: !executor.requiresCredentials)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        peer = CallPeer(
            address: context.channel.remoteAddress?.ipAddress ?? "", port: context.channel.remoteAddress?.port ?? 0, connection: connection)
        guard !machine.authenticated else { return }
        let (bound, timeout) = (NIOLoopBound(self, eventLoop: context.eventLoop), limits.unauthenticatedTimeout)
        unauthenticatedTimer = context.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            bound.value.perform(bound.value.machine.goAway(WireError(
                .unauthenticated, "no call on this connection showed a valid credential within \(timeout)", reason: .noCredentialInTime)))
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        unauthenticatedTimer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        perform(machine.frameReceived(unwrapInboundIn(data), at: .now()))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case IdleStateHandler.IdleStateEvent.read:
            perform(machine.idle(limits.idleTimeout))
        case ConnectionEvent.endClientStreams:
            for end in machine.drain(at: .now()) { carryOut(end) }
        case ConnectionEvent.evict:
            perform(machine.goAway(WireError(
                .unavailable, "a newer connection took this one's slot: no call on it showed a valid credential (the server keeps few such connections)")))
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// Backpressure: while the client does not read its replies (the write buffer is over
    /// its high-water mark), stop reading its calls, so it cannot make replies pile up.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if machine.phase != .penalized { setReading(context.channel.isWritable) }
        if context.channel.isWritable {
            for id in machine.writable() { resolveWait(id, with: .success(())) }
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        perform(machine.goAway(WireError.wrapping(error)))
    }

    func channelInactive(context: ChannelHandlerContext) {
        let (tokens, waiters) = machine.closed()
        for token in tokens {
            tasks[token]?.cancel()
            quorumWaits.removeValue(forKey: token)?.cancel()
            deadlines.removeValue(forKey: token)?.cancel()
        }
        for id in waiters { resolveWait(id, with: .failure(WireError(.unavailable, "the connection closed"))) }
        progressTimer?.cancel()
        progressTimer = nil
        context.fireChannelInactive()
    }

    // MARK: The machine's actions

    private func perform(_ action: ConnectionStateMachine.FrameAction) {
        switch action {
        case .none: break
        case .start(let call): start(call)
        case .end(let end): carryOut(end)
        case .goAway(let error): sendGoAway(error)
        }
    }

    /// Writes a call's final reply, counts it, cancels its work if it was cut short, and
    /// fails the waits of its stream.
    private func carryOut(_ end: ConnectionStateMachine.CallEnd) {
        deadlines.removeValue(forKey: end.token)?.cancel()
        for id in end.waiters { resolveWait(id, with: .failure(WireError(.cancelled, "the call ended"))) }
        if end.cancelsTask {
            tasks[end.token]?.cancel()
            quorumWaits.removeValue(forKey: end.token)?.cancel()
        }
        switch end.result {
        case .success(let payload):
            answer(end.callID, end.method, started: end.started, payload: payload, error: nil)
        case .failure(let error):
            answer(end.callID, end.method, started: end.started, error: error)
        }
    }

    /// Turns reading from the socket on or off.
    private func setReading(_ on: Bool) {
        guard let context else { return }
        context.channel.setOption(ChannelOptions.autoRead, value: on).whenComplete { _ in }
        if on { context.read() }
    }

    // MARK: Calls

    /// The connection showed `principal`'s valid credential: it is no stranger's any more
    /// (even when the call it came with is not permitted).
    private func proved(_ principal: Principal) {
        guard machine.proved(principal) else { return }
        unauthenticatedTimer?.cancel()
        unauthenticatedTimer = nil
        executor.activity.connectionAuthenticated(connection)
    }

    private func start(_ call: CallFrame) {
        let (callID, now) = (call.callID, NIODeadline.now())
        if let refusal = machine.refusal(of: callID) {
            answer(callID, Method(rawValue: call.method), started: now, error: refusal)
            return
        }
        let admitted: CallExecutor.Call
        switch executor.admit(
            call.method, metadata: call.metadata, store: call.store, minSequence: call.minSequence, peer: peer, transport: .framed,
            cache: &credentials)
        {
        case .admitted(let admission):
            admitted = admission
        case .refused(let error):
            answer(callID, Method(rawValue: call.method), started: now, error: error)
            return
        case .denied(let error, let principal):
            proved(principal)
            answer(callID, Method(rawValue: call.method), started: now, error: error)
            return
        case .penalized(let error, let penalty):
            penalize(callID, Method(rawValue: call.method), error, penalty)
            return
        }
        proved(admitted.context.principal)
        let method = admitted.method
        if admitted.readsInline {
            // One short snapshot read: answering here saves two thread hops per call.
            switch executor.readInline(admitted, payload: .bytes(call.payload)) {
            case .success(let reply): answer(callID, method, started: now, payload: .bytes(reply), error: nil)
            case .failure(let error): answer(callID, method, started: now, error: error)
            }
            return
        }
        var parsed: ParsedCommand?
        if admitted.isCommand {
            do {
                parsed = try executor.parseCommand(admitted, payload: .bytes(call.payload))
            } catch {
                answer(callID, method, started: now, error: error)
                return
            }
        }
        guard let context else { return }
        let loop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: loop)
        let token = machine.nextToken()
        // A call that may run for long holds its slot of the token's and the store's
        // quota, and is ended at once if its token is revoked meanwhile.
        let ticket: LiveCalls.Ticket?
        do {
            ticket = try executor.enterLive(admitted) { error in loop.execute { bound.value.cut(callID, token: token, error) } }
        } catch {
            answer(callID, method, started: now, error: error)
            return
        }
        // The deadline is scheduled before the work starts: if this thread is descheduled
        // in between, the work's answer must not be queued on the loop ahead of it.
        var due: NIODeadline?
        if call.timeoutMicros > 0 {
            let timeout = TimeAmount.microseconds(Int64(clamping: call.timeoutMicros))
            deadlines[token] = loop.scheduleTask(in: timeout) {
                bound.value.cut(callID, token: token, WireError(.deadlineExceeded, "the deadline of \(call.timeoutMicros) µs passed"))
            }
            due = now + timeout
        }
        if machine.started(callID, token: token, method: method, isStream: admitted.isStream, at: now, due: due) { watchProgress() }
        executor.started(method, stream: admitted.isStream)
        let (executor, payload) = (self.executor, RequestPayload.bytes(call.payload))
        if let parsed {
            // Straight to the writer and back to this loop (one wake-up per loop and batch),
            // whatever durability the command asks for: see `committed`.
            let inbox = self.inbox
            executor.submit(parsed, context: admitted.context) { result in
                inbox.post { bound.value.committed(callID, token: token, method: method, parsed: parsed, result: result) }
            }
        } else if admitted.isStream {
            let stream = StreamWriter(channel: context.channel, callID: callID, token: token, limits: limits, handler: bound)
            tasks[token] = Task {
                let result: Result<ReplyPayload, WireError>
                do {
                    try await executor.performStream(admitted, payload: payload) { page throws(WireError) in try await stream.send(page) }
                    result = .success(.none)
                } catch {
                    result = .failure(WireError.wrapping(error))
                }
                executor.leave(ticket)
                // A plain `execute`, like the page the stream's last send may have posted
                // without waiting (`StreamWriter`): the loop runs them in order, so the
                // page is written before this status. Posted another way (through the
                // inbox, say), the status could overtake it, and end the call OK without
                // its last page.
                loop.execute { bound.value.finished(callID, token: token, method: method, isStream: true, with: result) }
            }
        } else {
            tasks[token] = Task {
                let result: Result<ReplyPayload, WireError>
                do throws(WireError) {
                    result = .success(try await executor.perform(admitted, payload: payload))
                } catch {
                    result = .failure(error)
                }
                executor.leave(ticket)
                loop.execute { bound.value.finished(callID, token: token, method: method, isStream: false, with: result) }
            }
        }
    }

    /// Ends call `token` early with `error` (its deadline, a revoked token).
    private func cut(_ callID: UInt64, token: UInt64, _ error: WireError) {
        if let end = machine.end(callID, token: token, with: .failure(error), at: .now()) { carryOut(end) }
    }

    /// A command's local commit (or its refusal) is back on this loop: it answers the call,
    /// unless the command asked for a majority's acknowledgement; that is a wait the call
    /// owns (its deadline or its connection closing cancels it), whose end posts the
    /// answer to this loop: no task, no thread of the concurrency pool.
    private func committed(
        _ callID: UInt64, token: UInt64, method: Method, parsed: ParsedCommand, result: Result<CommittedEvent, WireError>
    ) {
        guard case .success(let committed) = result, executor.awaitsQuorum(parsed), machine.isActive(callID, token: token) else {
            finished(callID, token: token, method: method, isStream: false, with: result.map(CallExecutor.reply))
            return
        }
        let bound = NIOLoopBound(self, eventLoop: inbox.loop)
        let inbox = self.inbox
        let wait = executor.whenDurable(parsed, of: committed) { result in
            inbox.post { bound.value.finished(callID, token: token, method: method, isStream: false, with: result) }
        }
        // The reply is posted, never run here: `finished` comes after this line.
        if let wait { quorumWaits[token] = wait }
    }

    /// A call's work is done: its result answers the call unless the call already ended
    /// (cancelled, past its deadline, or its connection closed).
    private func finished(_ callID: UInt64, token: UInt64, method: Method, isStream: Bool, with result: Result<ReplyPayload, WireError>) {
        tasks[token] = nil
        quorumWaits[token] = nil
        executor.finished(method, stream: isStream)
        let (releases, end) = machine.finished(callID, token: token, with: result, at: .now())
        // Streams, and calls that ended early, may leave large buffers behind.
        if releases { executor.activity.trimmer.released() }
        if let end { carryOut(end) }
    }

    // MARK: Failed authentications

    /// Refuses a call whose credential is invalid: at once, or after a delay during which
    /// the connection runs nothing more (frames already read wait their turn), or after
    /// the delay and then closing it.
    private func penalize(_ callID: UInt64, _ method: Method?, _ error: WireError, _ penalty: FailedAuthentications.Penalty) {
        let started = NIODeadline.now()
        let (delay, closes): (Duration, Bool)
        switch penalty {
        case .answer:
            answer(callID, method, started: started, error: error)
            return
        case .delay(let wait): (delay, closes) = (wait, false)
        case .close(after: let wait): (delay, closes) = (wait, true)
        }
        guard let context else { return }
        machine.penalize()
        setReading(false)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: TimeAmount(delay)) {
            let handler = bound.value
            handler.answer(callID, method, started: started, error: error)
            guard !closes else {
                handler.perform(handler.machine.goAway(WireError(
                    .unauthenticated, "too many failed authentications from this address; try again later", reason: .tooManyFailedAuthentications)))
                return
            }
            handler.machine.penaltyOver()
            // The frames read meanwhile, in order, until one is penalized in turn.
            while let next = handler.machine.nextHeldFrame(at: .now()) { handler.perform(next) }
            if let context = handler.context, handler.machine.shouldRead(writable: context.channel.isWritable) { handler.setReading(true) }
        }
    }

    // MARK: Streams and slow readers

    /// Whether call `token` is still in flight (a stream stops when it is not).
    func isActive(_ callID: UInt64, token: UInt64) -> Bool { machine.isActive(callID, token: token) }

    /// Succeeds once the client has taken enough of what was sent that the channel is
    /// writable again (at once if it is); fails when the call ends, the connection closes,
    /// or the client takes nothing for `timeout` (the slow-reader error).
    func whenWritable(_ callID: UInt64, token: UInt64, timeout: Duration) -> EventLoopFuture<Void> {
        guard let context else { return inbox.loop.makeFailedFuture(WireError(.unavailable, "the connection closed")) }
        let loop = context.eventLoop
        switch machine.waitForWritable(callID, token: token, writable: context.channel.isWritable) {
        case .ready:
            return loop.makeSucceededVoidFuture()
        case .ended:
            return loop.makeFailedFuture(WireError(.cancelled, "the call ended"))
        case .wait(let id):
            executor.activity.streamWaitedForSocket()
            let promise = loop.makePromise(of: Void.self)
            let bound = NIOLoopBound(self, eventLoop: loop)
            let timer = loop.scheduleTask(in: TimeAmount(timeout)) {
                if bound.value.machine.waitTimedOut(id) { bound.value.resolveWait(id, with: .failure(StreamWriter.slowReader(timeout))) }
            }
            waits[id] = (promise, timer)
            return promise.futureResult
        }
    }

    /// Completes wait `id` with `result`.
    private func resolveWait(_ id: Int, with result: Result<Void, WireError>) {
        guard let wait = waits.removeValue(forKey: id) else { return }
        wait.timer.cancel()
        switch result {
        case .success: wait.promise.succeed()
        case .failure(let error): wait.promise.fail(error)
        }
    }

    /// Reads the client's progress every second while streams are in flight.
    private func watchProgress() {
        guard progressTimer == nil, let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        progressTimer = context.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            bound.value.readProgress()
        }
    }

    private func readProgress() {
        guard let context else { return }
        let writable = context.channel.isWritable
        SocketProgress.read(context.channel) { [self] reading in
            let waiting = !writable || (reading?.waiting ?? false)
            let (ends, stop) = machine.progressRead(taken: reading?.taken ?? 0, waiting: waiting, at: .now, deadline: .now())
            for end in ends { carryOut(end) }
            if stop {
                progressTimer?.cancel()
                progressTimer = nil
            }
        }
    }

    // MARK: Writing

    /// Writes a call's final reply and counts it (by method and status code, with its
    /// latency from `started` when given).
    private func answer(_ callID: UInt64, _ method: Method?, started: NIODeadline?, payload: ReplyPayload = .none, error: WireError?) {
        executor.record(method, error, duration: started.map { Duration(NIODeadline.now() - $0) }, call: callID)
        reply(callID, payload: payload, status: error.map(Chordstore_V1_Status.init) ?? .ok)
    }

    /// Writes a reply frame and flushes it.
    func reply(_ callID: UInt64, payload: ReplyPayload = .none, status: Chordstore_V1_Status?) {
        guard let context, context.channel.isActive else { return }
        var buffer = context.channel.allocator.buffer(capacity: 64 + payload.count)
        do {
            try ReplyFrame.write(callID: callID, payload: payload, status: status, into: &buffer)
        } catch {
            logger.error("cannot encode a reply", metadata: ["error": "\(error)"])
            return
        }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    /// Writes a stream's messages (replies that do not end the call) in one buffer and
    /// flushes once.
    func stream(_ callID: UInt64, messages: [ReplyPayload]) {
        guard let context, context.channel.isActive else { return }
        var buffer = context.channel.allocator.buffer(capacity: messages.reduce(0) { $0 + $1.count + 24 })
        do {
            for message in messages {
                try ReplyFrame.write(callID: callID, payload: message, status: nil, into: &buffer)
            }
        } catch {
            logger.error("cannot encode a stream message", metadata: ["error": "\(error)"])
            return
        }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    /// Says `GoAway` with `error` and closes (the machine decided it, once).
    private func sendGoAway(_ error: WireError) {
        guard let context else { return }
        logger.notice("closing the connection", metadata: ["reason": "\(error)"])
        var buffer = context.channel.allocator.buffer(capacity: 256)
        let limit = error.reason == .frameTooLarge ? limits.maxFrameSize : 0
        if (try? ReplyFrame.write(.goAway(error, maxFrameSize: limit), into: &buffer)) != nil {
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        }
        guard error.reason == .frameTooLarge else {
            context.close(promise: nil)
            return
        }
        // The client may still be writing the frame: closing with its bytes unread would
        // reset the connection, and a client still writing would lose the GoAway. Only the
        // output is closed (the client reads the GoAway, then the end); what it still
        // sends is dropped unread (FrameReader has failed), and the connection closes when
        // the client closes it, or after the frame timeout.
        context.close(mode: .output, promise: nil)
        let channel = context.channel
        context.eventLoop.scheduleTask(in: TimeAmount(limits.frameTimeout)) { channel.close(promise: nil) }
    }
}
