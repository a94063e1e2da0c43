import ChordStoreAPI
import ChordStoreEngine
import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import Foundation
import Logging
import NIOCore
import SwiftProtobuf

/// One client connection: parses frames, runs each call, and writes replies.
///
/// All state lives on the connection's event loop. Point reads are answered on it;
/// commands go straight to the writer, whose answers come back through the loop's
/// ``LoopInbox`` (a command that asked for a majority then waits for it in a task);
/// other calls run as tasks that hop back to the loop to reply.
/// A call ends exactly once: with its result, or earlier by `Cancel`, its deadline, or
/// the connection closing (a later result is then dropped). Its slot among the
/// connection's calls is free once its final reply is written, even if its task is
/// still winding down. A connection-level problem (unparseable frame, frame too large or
/// too slow, idleness) gets a `GoAway` and the connection is closed; other connections
/// are unaffected.
///
/// While streams are in flight, the connection checks every second that the client
/// takes the bytes sent to it (``ReadProgress``): one that takes none for the slow-reader
/// timeout while some wait has its streams ended with `RESOURCE_EXHAUSTED`, whether or
/// not they have more to send.
final class ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let dispatcher: ServiceDispatcher
    private let authenticator: Authenticator
    /// Where calls are counted (`nil`: nowhere).
    private let metrics: ServerMetrics?
    /// The credentials this connection showed last and who they proved, at which access
    /// version: the same credentials are taken again without hashing until the tokens
    /// change (a revocation holds from the next call on).
    private var lastCredentials: (token: String?, member: String?, version: UInt64, principal: Principal)?
    /// When this connection last noted its token's use.
    private var lastUseNoted: NIODeadline = .distantPast
    /// Whether a failed authentication's delay is running: the connection reads nothing,
    /// and frames already read wait in ``held`` until it ends.
    private var penalized = false
    private var held: [ByteBuffer] = []
    private var heldBytes = 0
    private let limits: WireLimits
    private let activity: ServerActivity
    private var logger: Logger
    private let session: String
    /// The connection's number, by which the server's admission knows it.
    private let connection: Int
    /// Whether a call of this connection showed a valid credential: until then it holds
    /// one of the few slots of unauthenticated connections, for a short while.
    private var authenticated = false
    private var unauthenticatedTimer: Scheduled<Void>?
    /// A call not yet answered.
    private struct InFlight {
        /// Tells a reused call id's calls apart.
        var token: UInt64
        var task: Task<Void, Never>?
        /// The timer that ends the call, and when it must have ended.
        var deadline: (timer: Scheduled<Void>, due: NIODeadline)?
        var method: Method
        var isStream: Bool
        /// When the call started (its latency ends at its final reply).
        var started: NIODeadline
    }

    /// Calls not yet answered, by call id: their number is what the per-connection limit
    /// counts.
    private var calls: [UInt64: InFlight] = [:]
    private var nextToken: UInt64 = 0
    /// Tasks still running, their calls answered or not: what a client can keep the
    /// server busy with by cancelling calls (or letting their deadlines pass) and sending
    /// more. Capped at ``maxRunningFactor`` × the call limit.
    private var running = 0
    static let maxRunningFactor = 2
    /// Whether the client takes what is sent to it, checked while streams run.
    private var progress = ReadProgress()
    private var progressTimer: RepeatedTask?
    private var context: ChannelHandlerContext?
    private var closing = false
    /// The IP address the connection comes from.
    private var peerAddress = ""
    /// Where the writer hands command answers back to this connection's loop.
    private let inbox: LoopInbox
    /// Streams waiting for the client to take what was sent to it (the channel to be
    /// writable again), each with the timer that gives up on a slow reader.
    private var writableWaiters: [WritableWaiter] = []

    private struct WritableWaiter {
        var callID: UInt64
        var token: UInt64
        var promise: EventLoopPromise<Void>
        var timer: Scheduled<Void>
    }

    init(
        dispatcher: ServiceDispatcher, authenticator: Authenticator, limits: WireLimits, activity: ServerActivity, logger: Logger,
        session: String, connection: Int, inbox: LoopInbox, metrics: ServerMetrics?
    ) {
        self.connection = connection
        self.metrics = metrics
        self.dispatcher = dispatcher
        self.authenticator = authenticator
        self.inbox = inbox
        self.limits = limits
        self.activity = activity
        self.logger = logger
        self.session = session
        self.logger[metadataKey: "connection"] = "\(session)"
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        peerAddress = context.channel.remoteAddress?.ipAddress ?? ""
        authenticated = !authenticator.isEnabled  // no credential to wait for
        guard !authenticated else { return }
        let (bound, timeout) = (NIOLoopBound(self, eventLoop: context.eventLoop), limits.unauthenticatedTimeout)
        unauthenticatedTimer = context.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            bound.value.goAway(WireError(
                .unauthenticated, "no call on this connection showed a valid credential within \(timeout)", reason: .noCredentialInTime))
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        unauthenticatedTimer?.cancel()
    }

    /// A call showed a valid credential (or the server asks for none): the connection
    /// keeps its slot for good.
    private func noteAuthenticated(_ principal: Principal) {
        guard !authenticated, principal != .anonymous else { return }
        authenticated = true
        unauthenticatedTimer?.cancel()
        unauthenticatedTimer = nil
        activity.connectionAuthenticated(connection)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        let body = unwrapInboundIn(data)
        if penalized {
            // Frames that were read before reading stopped: kept, in order, within bounds.
            guard held.count < limits.maxCallsPerConnection, heldBytes + body.readableBytes <= limits.maxFrameSize * 2 else {
                goAway(WireError(.resourceExhausted, "frames sent while a failed authentication is answered exceed what is held"))
                return
            }
            held.append(body)
            heldBytes += body.readableBytes
            return
        }
        handle(body)
    }

    /// Runs one frame: a call's start, or a cancel.
    private func handle(_ body: ByteBuffer) {
        let frame: Chordstore_V1_Frame
        do {
            frame = try body.withUnsafeReadableBytes { try Chordstore_V1_Frame(serializedBytes: $0.bytes) }
        } catch {
            goAway(WireError(.invalidArgument, "a frame is not a chordstore.v1.Frame: \(error)"))
            return
        }
        switch frame.kind {
        case .call(let call): start(call)
        case .cancel(let cancel):
            if let token = calls[cancel.callID]?.token {
                end(cancel.callID, token: token, with: .failure(WireError(.cancelled, "cancelled by the client")))
            }
        case .reply, .goAway, nil:
            goAway(WireError(.invalidArgument, "a client sends only Call and Cancel frames"))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case IdleStateHandler.IdleStateEvent.read = event, calls.isEmpty {
            goAway(WireError(.unavailable, "the connection was idle for \(limits.idleTimeout)"))
            return
        }
        if case ConnectionEvent.endClientStreams = event {
            endClientStreams()
            return
        }
        if case ConnectionEvent.evict = event {
            goAway(WireError(
                .unavailable, "a newer connection took this one's slot: no call on it showed a valid credential (the server keeps few such connections)"))
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// The server is draining: the streams of clients (not replication's, which the
    /// calls in flight may need) end now with `UNAVAILABLE`, so that they hold up neither
    /// the drain nor the client, which can resubscribe elsewhere.
    private func endClientStreams() {
        let error = WireError(.unavailable, "the server is shutting down", reason: .shuttingDown)
        for (callID, call) in calls where call.isStream && call.method != .replicate {
            end(callID, token: call.token, with: .failure(error))
        }
    }

    /// Backpressure: while the client does not read its replies (the write buffer is over
    /// its high-water mark), stop reading its calls, so it cannot make replies pile up.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if !penalized {
            context.channel.setOption(ChannelOptions.autoRead, value: context.channel.isWritable).whenComplete { _ in }
            if context.channel.isWritable { context.read() }
        }
        if context.channel.isWritable { resolveWaiters(with: .success(())) { _ in true } }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        goAway(WireError.wrapping(error))
    }

    func channelInactive(context: ChannelHandlerContext) {
        for (_, call) in calls {
            call.task?.cancel()
            call.deadline?.timer.cancel()
        }
        calls.removeAll()
        resolveWaiters(with: .failure(WireError(.unavailable, "the connection closed"))) { _ in true }
        progressTimer?.cancel()
        progressTimer = nil
        context.fireChannelInactive()
    }

    // MARK: Credentials

    /// The principal `metadata`'s credentials prove, reusing this connection's last answer
    /// while the credentials and the tokens stay the same.
    private func authenticate(_ metadata: [String: String]) -> Result<Principal, WireError> {
        let token = metadata["authorization"], member = metadata["cluster-secret"]
        let version = authenticator.version
        if let last = lastCredentials, last.token == token, last.member == member, last.version == version {
            noteUse(last.principal)
            return .success(last.principal)
        }
        let result = authenticator.authenticate(metadata)
        if case .success(let principal) = result {
            lastCredentials = (token, member, version, principal)
            lastUseNoted = .distantPast
            noteUse(principal)
        }
        return result
    }

    /// Notes a token's use, at most once a second per connection.
    private func noteUse(_ principal: Principal) {
        guard case .token(let grant) = principal else { return }
        let now = NIODeadline.now()
        guard now - lastUseNoted >= .seconds(1) else { return }
        lastUseNoted = now
        authenticator.noteUse(grant.id)
    }

    /// Refuses a call whose credential is invalid: at once, or after a delay during which
    /// the connection handles nothing more (frames already read wait their turn), or after
    /// the delay and then closing it.
    private func refuse(_ callID: UInt64, _ method: Method, _ error: WireError, penalty: FailedAuthentications.Penalty) {
        switch penalty {
        case .answer:
            answer(callID, method, started: nil, status: .init(error))
        case .delay(let delay), .close(after: let delay):
            guard let context else { return }
            let closing = if case .close = penalty { true } else { false }
            penalized = true
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: TimeAmount(delay)) {
                let handler = bound.value
                handler.answer(callID, method, started: nil, status: .init(error))
                if closing {
                    handler.goAway(WireError(
                        .unauthenticated, "too many failed authentications from this address; try again later", reason: .tooManyFailedAuthentications))
                    return
                }
                handler.penalized = false
                // The frames read meanwhile, in order, until one is penalized in turn.
                while !handler.penalized, !handler.closing, !handler.held.isEmpty {
                    let next = handler.held.removeFirst()
                    handler.heldBytes -= next.readableBytes
                    handler.handle(next)
                }
                if !handler.penalized, let context = handler.context, context.channel.isWritable {
                    context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
                    context.read()
                }
            }
        }
    }

    // MARK: Calls

    private func start(_ call: Chordstore_V1_Call) {
        let callID = call.callID
        let started = NIODeadline.now()
        let method = Method(rawValue: call.method)
        guard calls[callID] == nil else {
            answer(callID, method, started: started, status: .init(WireError(.invalidArgument, "call id \(callID) is already in flight")))
            return
        }
        guard calls.count < limits.maxCallsPerConnection else {
            answer(callID, method, started: started, status: .init(WireError(
                .resourceExhausted, "\(limits.maxCallsPerConnection) calls are in flight on this connection, its limit")))
            return
        }
        guard running < Self.maxRunningFactor * limits.maxCallsPerConnection else {
            answer(callID, method, started: started, status: .init(WireError(
                .resourceExhausted,
                "\(running) calls of this connection, ended or not, are still finishing their work (at most \(Self.maxRunningFactor) × \(limits.maxCallsPerConnection)); retry shortly",
                reason: .stillFinishing)))
            return
        }
        // A drain still takes acknowledgements of replication: quorum writes in flight wait for them.
        guard !activity.isDraining || method == .ackReplication else {
            answer(callID, method, started: started, status: .init(WireError(.unavailable, "the server is shutting down", reason: .shuttingDown)))
            return
        }
        guard let method, let entry = ServiceDispatcher.registry[method] else {
            answer(callID, method, started: started, status: .init(WireError(.unimplemented, "unknown method '\(call.method)'")))
            return
        }
        guard let context else { return }
        // Who calls, and may they: before the payload is decoded.
        let principal: Principal
        switch authenticate(call.metadata) {
        case .success(let proved):
            principal = proved
            noteAuthenticated(proved)
        case .failure(let error) where error.code == .unauthenticated:
            metrics?.authenticationFailed()
            refuse(callID, method, error, penalty: authenticator.failed(from: ConnectionAdmission.key(for: peerAddress), method: method, error: error))
            return
        case .failure(let error):
            answer(callID, method, started: started, status: .init(error))  // the tokens could not be read: not a guess
            return
        }
        if let denial = principal.check(entry.permission, store: call.store) {
            answer(callID, method, started: started, status: .init(denial))
            return
        }
        let handler = entry.handler
        // A method anyone may call (Health) works on no store: it never waits on one,
        // which would tell a caller without a credential how far a store has come.
        let minSequence = entry.permission == .anyone ? 0 : call.minSequence
        let session = call.metadata["session"].flatMap { $0.isEmpty ? nil : $0 } ?? self.session  // empty = not given
        let callContext = CallContext(session: session, peerAddress: peerAddress, store: call.store, principal: principal)
        if case .pointRead(let read) = handler, minSequence == 0 {
            // One short snapshot read: answering here saves two thread hops per call.
            do {
                answer(callID, method, started: started, payload: .bytes(try read(dispatcher, call.payload, callContext)), status: .ok)
            } catch {
                answer(callID, method, started: started, status: .init(WireError.wrapping(error)))
            }
            return
        }
        var parsed: ParsedCommand?
        if case .command(let parse) = handler {
            do {
                parsed = try parse(dispatcher, call.payload)
            } catch {
                answer(callID, method, started: started, status: .init(WireError.wrapping(error)))
                return
            }
        }
        let loop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: loop)
        let dispatcher = self.dispatcher
        let payload = call.payload
        nextToken += 1
        let token = nextToken
        // A call that may run for long holds its slot of the token's and the store's
        // quota, and is ended at once if its token is revoked meanwhile.
        var ticket: LiveCalls.Ticket?
        if !handler.isCommand {
            do {
                ticket = try dispatcher.liveCalls.enter(method, principal: principal, store: call.store) { error in
                    loop.execute { bound.value.end(callID, token: token, with: .failure(error)) }
                }
            } catch {
                answer(callID, method, started: started, status: .init(error))
                return
            }
        }
        running += 1
        let isStream = handler.isStream
        activity.callStarted(method, stream: isStream)
        // The deadline is scheduled before the work starts: if this thread is descheduled
        // in between, the work's answer must not be queued on the loop ahead of it.
        var deadline: (timer: Scheduled<Void>, due: NIODeadline)?
        if call.timeoutMicros > 0 {
            let timeout = TimeAmount.microseconds(Int64(clamping: call.timeoutMicros))
            let timer = loop.scheduleTask(in: timeout) {
                bound.value.end(
                    callID, token: token,
                    with: .failure(WireError(.deadlineExceeded, "the deadline of \(call.timeoutMicros) µs passed")))
            }
            deadline = (timer, .now() + timeout)
        }
        let task: Task<Void, Never>?
        switch handler {
        case .command:
            // Straight to the writer and back to this loop (one wake-up per loop and batch),
            // whatever durability the command asks for: see `committed`.
            task = nil
            let inbox = self.inbox
            let durability = parsed!.context.durability
            dispatcher.submit(parsed!, context: callContext) { result in
                inbox.post { bound.value.committed(callID, token: token, method: method, durability: durability, result: result) }
            }
        case .serverStream(let run):
            let stream = StreamWriter(
                channel: context.channel, callID: callID, token: token, limits: limits, handler: bound)
            let activity = self.activity
            let isDraining: @Sendable () -> Bool = { activity.isDraining }
            task = Task {
                let result: Result<ReplyPayload, WireError>
                do {
                    try await run(dispatcher, payload, callContext, isDraining) { page throws(WireError) in try await stream.send(page) }
                    result = .success(.none)
                } catch {
                    result = .failure(WireError.wrapping(error))
                }
                dispatcher.liveCalls.leave(ticket)
                loop.execute { bound.value.finished(callID, token: token, method: method, isStream: isStream, with: result) }
            }
        case .pointRead(let read):
            task = Task {
                let result: Result<ReplyPayload, WireError>
                do {
                    try await dispatcher.waitForSequence(minSequence, context: callContext)
                    result = .success(.bytes(try read(dispatcher, payload, callContext)))
                } catch {
                    result = .failure(WireError.wrapping(error))
                }
                dispatcher.liveCalls.leave(ticket)
                loop.execute { bound.value.finished(callID, token: token, method: method, isStream: isStream, with: result) }
            }
        case .unary(let run):
            task = Task {
                let result: Result<ReplyPayload, WireError>
                do {
                    if minSequence > 0 { try await dispatcher.waitForSequence(minSequence, context: callContext) }
                    result = .success(.bytes(try await run(dispatcher, payload, callContext)))
                } catch {
                    result = .failure(WireError.wrapping(error))
                }
                dispatcher.liveCalls.leave(ticket)
                loop.execute { bound.value.finished(callID, token: token, method: method, isStream: isStream, with: result) }
            }
        }
        calls[callID] = InFlight(token: token, task: task, deadline: deadline, method: method, isStream: isStream, started: started)
        if isStream { watchProgress() }
    }

    /// A command's local commit (or its refusal) is back on this loop: it answers the call,
    /// unless the command asked for a majority's acknowledgement; that is awaited in a task
    /// the call owns (its deadline or cancel ends the wait).
    private func committed(
        _ callID: UInt64, token: UInt64, method: Method, durability: Chordstore_V1_Durability, result: Result<CommittedEvent, WireError>
    ) {
        guard case .success(let committed) = result, dispatcher.awaitsQuorum(durability), isActive(callID, token: token) else {
            finished(callID, token: token, method: method, isStream: false, with: result.map { .field(1, $0.record[...]) })
            return
        }
        let loop = inbox.loop
        let bound = NIOLoopBound(self, eventLoop: loop)
        let dispatcher = self.dispatcher
        calls[callID]?.task = Task {
            let result: Result<ReplyPayload, WireError>
            do {
                try await dispatcher.awaitDurability(durability, of: committed.recorded.logSequence)
                result = .success(.field(1, committed.record[...]))
            } catch {
                result = .failure(WireError.wrapping(error))
            }
            loop.execute { bound.value.finished(callID, token: token, method: method, isStream: false, with: result) }
        }
    }

    /// A call's task is done: its result answers the call unless the call already ended
    /// (cancelled, past its deadline, or its connection closed).
    func finished(_ callID: UInt64, token: UInt64, method: Method, isStream: Bool, with result: Result<ReplyPayload, WireError>) {
        running -= 1
        activity.callEnded(method, stream: isStream)
        // Streams, and calls that ended early (cancelled, past their deadline, cut), may
        // leave large buffers behind.
        let call = calls[callID]
        if call?.token != token || call?.isStream == true { activity.trimmer.released() }
        end(callID, token: token, with: result)
    }

    /// Ends call `token` (under `callID`) with its final reply, once: later ends of the
    /// same call, and ends meant for an earlier call that used the same id, are ignored.
    func end(_ callID: UInt64, token: UInt64, with result: Result<ReplyPayload, WireError>) {
        guard let call = calls[callID], call.token == token else { return }
        calls[callID] = nil
        call.deadline?.timer.cancel()
        if call.isStream {
            resolveWaiters(with: .failure(WireError(.cancelled, "the call ended"))) { $0.callID == callID && $0.token == token }
        }
        var result = result
        // NIO may run a result's hop to this loop before a deadline task that came due
        // earlier: a result that arrives after the deadline still ends the call with it.
        if let due = call.deadline?.due, case .success = result, NIODeadline.now() >= due {
            result = .failure(WireError(.deadlineExceeded, "the deadline passed before the call ended"))
        }
        if case .success(let payload) = result, payload.count > limits.maxFrameSize - 64 {
            result = .failure(WireError(
                .resourceExhausted,
                "the reply is \(payload.count) bytes, over the frame limit of \(limits.maxFrameSize); ask for less (a smaller limit)"))
        }
        let started = call.isStream ? nil : call.started
        switch result {
        case .success(let payload):
            answer(callID, call.method, started: started, payload: payload, status: .ok)
        case .failure(let error):
            call.task?.cancel()
            if error.reason == .slowReader { activity.slowReaderCut() }
            if error.code == .internal || error.code == .dataLoss {
                logger.error("call failed", metadata: ["call": "\(callID)", "error": "\(error)"])
            }
            answer(callID, call.method, started: started, status: .init(error))
        }
    }

    /// Whether call `token` is still in flight (a stream stops when it is not).
    func isActive(_ callID: UInt64, token: UInt64) -> Bool { calls[callID]?.token == token }

    /// Succeeds once the client has taken enough of what was sent that the channel is
    /// writable again (at once if it is); fails when the call ends, the connection closes,
    /// or the client takes nothing for `timeout` (the slow-reader error).
    func whenWritable(_ callID: UInt64, token: UInt64, timeout: Duration) -> EventLoopFuture<Void> {
        guard let context else { return inbox.loop.makeFailedFuture(WireError(.unavailable, "the connection closed")) }
        let loop = context.eventLoop
        guard isActive(callID, token: token) else { return loop.makeFailedFuture(WireError(.cancelled, "the call ended")) }
        if context.channel.isWritable { return loop.makeSucceededVoidFuture() }
        activity.streamWaitedForSocket()
        let promise = loop.makePromise(of: Void.self)
        let bound = NIOLoopBound(self, eventLoop: loop)
        let timer = loop.scheduleTask(in: TimeAmount(timeout)) {
            bound.value.resolveWaiters(with: .failure(StreamWriter.slowReader(timeout))) { $0.callID == callID && $0.token == token }
        }
        writableWaiters.append(WritableWaiter(callID: callID, token: token, promise: promise, timer: timer))
        return promise.futureResult
    }

    /// Completes the waiters that `matching` picks with `result`.
    private func resolveWaiters(with result: Result<Void, WireError>, matching: (WritableWaiter) -> Bool) {
        guard !writableWaiters.isEmpty else { return }
        var kept: [WritableWaiter] = []
        var done: [WritableWaiter] = []
        for waiter in writableWaiters {
            if matching(waiter) { done.append(waiter) } else { kept.append(waiter) }
        }
        writableWaiters = kept
        for waiter in done {
            waiter.timer.cancel()
            switch result {
            case .success: waiter.promise.succeed()
            case .failure(let error): waiter.promise.fail(error)
            }
        }
    }

    // MARK: Slow readers

    /// Checks the client's progress every second while streams are in flight.
    private func watchProgress() {
        guard progressTimer == nil, let context else { return }
        progress = ReadProgress()
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        progressTimer = context.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            bound.value.checkProgress()
        }
    }

    private func checkProgress() {
        guard let context, calls.values.contains(where: \.isStream) else {
            progressTimer?.cancel()
            progressTimer = nil
            return
        }
        let writable = context.channel.isWritable
        SocketProgress.read(context.channel) { [self] reading in
            let waiting = !writable || (reading?.waiting ?? false)
            let stalled = progress.observe(taken: reading?.taken ?? 0, waiting: waiting, at: .now)
            guard stalled >= limits.slowReaderTimeout else { return }
            let error = StreamWriter.slowReader(limits.slowReaderTimeout)
            for (callID, call) in calls where call.isStream {
                end(callID, token: call.token, with: .failure(error))
            }
            progress = ReadProgress()  // a stream started later gets its own time
        }
    }

    /// Writes a call's final reply and counts it (by method and status code, with its
    /// latency from `started` when given).
    private func answer(
        _ callID: UInt64, _ method: Method?, started: NIODeadline?, payload: ReplyPayload = .none, status: Chordstore_V1_Status?
    ) {
        if let metrics {
            let code = StatusCode(rawValue: status?.code ?? 0) ?? .unknown
            metrics.callEnded(method, code: code, duration: started.map { Duration(NIODeadline.now() - $0) })
        }
        reply(callID, payload: payload, status: status)
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

    private func goAway(_ error: WireError) {
        guard !closing, let context else { return }
        closing = true
        logger.notice("closing the connection", metadata: ["reason": "\(error)"])
        var buffer = context.channel.allocator.buffer(capacity: 256)
        if (try? ReplyFrame.write(.goAway(error), into: &buffer)) != nil {
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        }
        context.close(promise: nil)
    }
}
