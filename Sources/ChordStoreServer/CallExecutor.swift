package import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
package import ChordStoreWire
import Foundation
import Logging

/// The one path every call takes, whatever its transport (the framed port, gRPC, JSON
/// over HTTP): admission (drain, the method's entry, authentication with the
/// connection's credential cache and the failed-guess penalty, permission, the session
/// and `min_sequence` rules), then the run (the `min_sequence` wait, a command through
/// the one writer and its durability, a read, a stream), the quota of long calls, and
/// the accounting (activity, metrics by method and code, fault logging). The transports
/// only move bytes: the framed port's ``ConnectionHandler`` drives the parts on its
/// event loop (point reads inline, commands through its inbox); the others call
/// ``admit(_:metadata:store:minSequence:peer:)``, then ``unary(_:payload:)`` or
/// ``stream(_:payload:emit:)``, as tasks. Deadlines and cancellation are the caller's.
///
/// ```swift
/// let executor = server.callExecutor
/// let call = try await executor.admit(.listChordsets, metadata: ["authorization": "Bearer …"], store: "default",
///                                     minSequence: 0, peer: CallPeer(address: "10.0.0.7", port: 53122))
/// let reply = try await executor.unary(call, payload: request)
/// ```
package final class CallExecutor: Sendable {
    let dispatcher: ServiceDispatcher
    let authenticator: Authenticator
    let activity: ServerActivity
    let metrics: ServerMetrics?
    let logger: Logger
    /// The credential caches of the transports without a connection object.
    let caches: CredentialCaches

    /// Which transport a call came over: only the framed port serves the methods cluster
    /// members call (replication, promotion, fencing), where a member's address is checked.
    package enum Transport: Sendable {
        case framed
        case grpc
        case http
    }

    /// A call that passed admission: what it runs and in which context.
    package struct Call: Sendable {
        /// The method.
        package let method: Method
        let entry: MethodEntry
        /// Who calls, on which store, in which session.
        package let context: CallContext
        /// The event of the store the call waits for first (0: none; always 0 for
        /// methods anyone may call, which would tell a stranger how far a store has come).
        package let minSequence: UInt64

        /// Whether the server answers with a stream of messages.
        package var isStream: Bool { entry.handler.isStream }
        /// Whether the call is a change of its store.
        var isCommand: Bool { entry.handler.isCommand }
        /// Whether it is a point read or an inline call with nothing to wait for: answered
        /// where it arrived.
        var readsInline: Bool {
            switch entry.handler {
            case .pointRead, .inline: minSequence == 0
            default: false
            }
        }
    }

    /// What admission says of a call.
    enum Admission {
        case admitted(Call)
        /// Refused with the error.
        case refused(WireError)
        /// Refused with the error, by the permission of a caller whose credential is
        /// valid: the connection has shown one (it is not a stranger's).
        case denied(WireError, Principal)
        /// Its credential is invalid: refused with the error, after the penalty the
        /// peer's failed guesses earn.
        case penalized(WireError, FailedAuthentications.Penalty)
    }

    init(dispatcher: ServiceDispatcher, authenticator: Authenticator, activity: ServerActivity, metrics: ServerMetrics?, logger: Logger, limits: WireLimits) {
        self.dispatcher = dispatcher
        self.authenticator = authenticator
        self.activity = activity
        self.metrics = metrics
        self.logger = logger
        self.caches = CredentialCaches(limit: limits.maxConnections)
    }

    /// Whether the server is shutting down (it refuses new calls).
    package var isDraining: Bool { activity.isDraining }

    /// Fires when the server starts draining: streams end with `UNAVAILABLE`.
    package var drainStarted: OneShotSignal { activity.drainStarted }

    /// Fires when the server's grace period at shutdown is over: unary calls still running
    /// end with `UNAVAILABLE`.
    package var graceOver: OneShotSignal { activity.graceOver }

    /// Whether calls need a credential (false with `--auth none`).
    package var requiresCredentials: Bool { authenticator.isEnabled }

    // MARK: Admission

    /// Admits a call of the method named `name` over `transport`, with its `metadata`, on
    /// `store`, from `peer`, using and updating the connection's credential `cache`.
    func admit(
        _ name: String, metadata: [String: String], store: String, minSequence: UInt64, peer: CallPeer, transport: Transport,
        cache: inout CredentialCache
    ) -> Admission {
        let method = Method(rawValue: name)
        // A drain still takes acknowledgements of replication: quorum writes in flight wait for them.
        guard !activity.isDraining || method == .ackReplication else {
            return .refused(WireError(.unavailable, "the server is shutting down", reason: .shuttingDown))
        }
        guard let method, let entry = ServiceDispatcher.registry[method] else {
            return .refused(WireError(.unimplemented, "unknown method '\(name.prefix(200))'"))
        }
        guard transport == .framed || entry.permission != .member else {
            return .refused(WireError(.unimplemented, "method '\(method.rawValue)' is not served here"))
        }
        // Who calls, and may they: before the payload is decoded.
        let principal: Principal
        switch authenticate(metadata, cache: &cache) {
        case .success(let proved):
            principal = proved
        case .failure(let error) where error.code == .unauthenticated:
            metrics?.authenticationFailed()
            return .penalized(error, authenticator.failed(from: ConnectionAdmission.key(for: peer.address), method: method, error: error))
        case .failure(let error):
            return .refused(error)  // the tokens could not be read: not a guess
        }
        if let denial = principal.check(entry.permission, store: store) { return .denied(denial, principal) }
        let session = metadata["session"].flatMap { $0.isEmpty ? nil : $0 } ?? peer.defaultSession
        return .admitted(Call(
            method: method, entry: entry, context: CallContext(session: session, peerAddress: peer.address, store: store, principal: principal),
            minSequence: entry.permission == .anyone ? 0 : minSequence))
    }

    /// Admits a call of `method` for a transport without connections of its own (gRPC,
    /// HTTP): the peer's credential cache is kept here, and a refused credential is
    /// answered after its penalty's delay.
    package func admit(
        _ method: Method, metadata: [String: String], store: String, minSequence: UInt64, peer: CallPeer, transport: Transport = .grpc
    ) async throws(WireError) -> Call {
        var cache = caches.cache(of: peer)
        let admission = admit(method.rawValue, metadata: metadata, store: store, minSequence: minSequence, peer: peer, transport: transport, cache: &cache)
        caches.keep(cache, for: peer)
        switch admission {
        case .admitted(let call):
            return call
        case .refused(let error), .denied(let error, _):
            metrics?.callEnded(method, code: error.code, duration: nil)
            throw error
        case .penalized(let error, let penalty):
            switch penalty {
            case .answer: break
            case .delay(let delay), .close(after: let delay): try? await Task.sleep(for: delay)
            }
            metrics?.callEnded(method, code: error.code, duration: nil)
            throw error
        }
    }

    /// The principal `metadata`'s credentials prove, taken from `cache` while the
    /// credentials and the tokens stay the same.
    private func authenticate(_ metadata: [String: String], cache: inout CredentialCache) -> Result<Principal, WireError> {
        let token = metadata["authorization"], member = metadata["cluster-secret"]
        let version = authenticator.version
        if let principal = cache.principal(token: token, member: member, version: version) {
            noteUse(principal, cache: &cache)
            return .success(principal)
        }
        let result = authenticator.authenticate(metadata)
        if case .success(let principal) = result {
            cache = CredentialCache()
            (cache.token, cache.member, cache.version, cache.principal) = (token, member, version, principal)
            noteUse(principal, cache: &cache)
        }
        return result
    }

    /// Notes a token's use, at most once a second per connection.
    private func noteUse(_ principal: Principal, cache: inout CredentialCache) {
        guard case .token(let grant) = principal, cache.shouldNoteUse(at: .now) else { return }
        authenticator.noteUse(grant.id)
    }

    // MARK: Running

    /// Answers a point read or an inline call with nothing to wait for, where the call
    /// arrived.
    func readInline(_ call: Call, payload: RequestPayload) -> Result<[UInt8], WireError> {
        let read: @Sendable (ServiceDispatcher, RequestPayload, CallContext) throws -> [UInt8]
        switch call.entry.handler {
        case .pointRead(let handler), .inline(let handler): read = handler
        default: return .failure(WireError(.internal, "\(call.method.rawValue) is not answered inline"))
        }
        do {
            return .success(try read(dispatcher, payload, call.context))
        } catch {
            return .failure(WireError.wrapping(error))
        }
    }

    /// A command's request, parsed.
    func parseCommand(_ call: Call, payload: RequestPayload) throws(WireError) -> ParsedCommand {
        guard case .command(let parse) = call.entry.handler else { throw WireError(.internal, "\(call.method.rawValue) is not a command") }
        do {
            return try parse(dispatcher, payload)
        } catch {
            throw WireError.wrapping(error)
        }
    }

    /// Hands a parsed command to the one writer; `done` gets its local commit or refusal.
    func submit(_ parsed: ParsedCommand, context: CallContext, done: @escaping @Sendable (Result<CommittedEvent, WireError>) -> Void) {
        dispatcher.submit(parsed, context: context, completion: done)
    }

    /// Whether a command committed with `parsed`'s durability still waits for a majority.
    func awaitsQuorum(_ parsed: ParsedCommand) -> Bool { dispatcher.awaitsQuorum(parsed.context.durability) }

    /// Waits until `committed` is as durable as `parsed` asks; returns the command's reply.
    func awaitDurability(_ parsed: ParsedCommand, of committed: CommittedEvent) async throws(WireError) -> ReplyPayload {
        do {
            try await dispatcher.awaitDurability(parsed.context.durability, of: committed.recorded.logSequence)
        } catch {
            throw WireError.wrapping(error)
        }
        return Self.reply(committed)
    }

    /// Calls `done` with the command's reply once `committed` is as durable as `parsed`
    /// asks, without a task (``awaitDurability(_:of:)`` for a call answered on its event
    /// loop); returns the wait to cancel when the call ends first, if one is left.
    func whenDurable(
        _ parsed: ParsedCommand, of committed: CommittedEvent, _ done: @escaping @Sendable (Result<ReplyPayload, WireError>) -> Void
    ) -> ReplicationNode.QuorumWait? {
        dispatcher.whenDurable(parsed.context.durability, of: committed.recorded.logSequence) { held in
            done(held.map { Self.reply(committed) })
        }
    }

    /// A command's reply: a `CommandReply` holding the committed event.
    static func reply(_ committed: CommittedEvent) -> ReplyPayload { .field(1, committed.record[...]) }

    /// Runs unary `call` to its reply: waits for its `min_sequence`, then reads, or
    /// commits and waits for the durability the command asks.
    func perform(_ call: Call, payload: RequestPayload) async throws(WireError) -> ReplyPayload {
        do {
            switch call.entry.handler {
            case .command:
                let parsed = try parseCommand(call, payload: payload)
                let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<CommittedEvent, WireError>, Never>) in
                    submit(parsed, context: call.context) { continuation.resume(returning: $0) }
                }
                return try await awaitDurability(parsed, of: try result.get())
            case .pointRead(let read):
                try await dispatcher.waitForSequence(call.minSequence, context: call.context)
                return .bytes(try read(dispatcher, payload, call.context))
            case .unary(let run):
                if call.minSequence > 0 { try await dispatcher.waitForSequence(call.minSequence, context: call.context) }
                return .bytes(try await run(dispatcher, payload, call.context))
            case .inline(let run):
                if call.minSequence > 0 { try await dispatcher.waitForSequence(call.minSequence, context: call.context) }
                return .bytes(try run(dispatcher, payload, call.context))
            case .serverStream:
                throw WireError(.unimplemented, "\(call.method.rawValue) is a stream, not a unary call")
            }
        } catch {
            throw WireError.wrapping(error)
        }
    }

    /// Runs streaming `call`, handing each page of messages to `emit`; returns when the
    /// stream ends (OK) and throws its final status otherwise.
    func performStream(_ call: Call, payload: RequestPayload, emit: MethodHandler.Emit) async throws(WireError) {
        guard case .serverStream(let run) = call.entry.handler else {
            throw WireError(.unimplemented, "method '\(call.method.rawValue)' is not a stream")
        }
        let activity = self.activity
        try await run(dispatcher, payload, call.context, { activity.isDraining }, emit)
    }

    /// Enters a call that may run for long (not a command) in its slot of the token's and
    /// the store's quota (`RESOURCE_EXHAUSTED` past it); `end` is called if its token is
    /// revoked meanwhile. `nil`: the call is not counted (a member's, or a command).
    func enterLive(_ call: Call, end: @escaping @Sendable (WireError) -> Void) throws(WireError) -> LiveCalls.Ticket? {
        guard !call.isCommand else { return nil }
        return try dispatcher.liveCalls.enter(call.method, principal: call.context.principal, store: call.context.store, end: end)
    }

    /// Leaves the quota entered with ``enterLive(_:end:)``.
    func leave(_ ticket: LiveCalls.Ticket?) { dispatcher.liveCalls.leave(ticket) }

    // MARK: Accounting

    /// A call starts running (counted while it runs: the drain waits for it).
    func started(_ method: Method, stream: Bool) { activity.callStarted(method, stream: stream) }

    /// A call's work is done.
    func finished(_ method: Method, stream: Bool) { activity.callEnded(method, stream: stream) }

    /// A call's final status is sent: counted by method and code (with its latency when
    /// given); a server fault (`INTERNAL`, `DATA_LOSS`) is logged, and a slow reader
    /// counted.
    func record(_ method: Method?, _ error: WireError?, duration: Duration?, call id: UInt64? = nil) {
        guard let error else {
            metrics?.callEnded(method, code: .ok, duration: duration)
            return
        }
        metrics?.callEnded(method, code: error.code, duration: duration)
        if error.reason == .slowReader { activity.slowReaderCut() }
        guard error.code == .internal || error.code == .dataLoss else { return }
        var metadata: Logger.Metadata = ["method": "\(method?.rawValue ?? "?")", "error": "\(error)"]
        if let id { metadata["call"] = "\(id)" }
        logger.error("call failed", metadata: metadata)
    }

    // MARK: Calls as tasks (gRPC, HTTP)

    /// Runs unary `call` (admitted with ``admit(_:metadata:store:minSequence:peer:transport:)``)
    /// and returns its reply message, serialized.
    package func unary(_ call: Call, payload: RequestPayload) async throws(WireError) -> [UInt8] {
        let started = ContinuousClock.now
        do throws(WireError) {
            guard !activity.isDraining else { throw WireError(.unavailable, "the server is shutting down", reason: .shuttingDown) }
            self.started(call.method, stream: false)
            defer { finished(call.method, stream: false) }
            let reply = try await live(call) { () async throws(WireError) -> [UInt8] in try await self.perform(call, payload: payload).serialized }
            record(call.method, nil, duration: ContinuousClock.now - started)
            return reply
        } catch {
            let error = Task.isCancelled && error.code != .deadlineExceeded ? WireError(.cancelled, "the call was cancelled") : error
            record(call.method, error, duration: ContinuousClock.now - started)
            throw error
        }
    }

    /// Runs streaming `call`, handing each page of messages to `emit`; returns when the
    /// stream ends (OK) and throws its final status otherwise.
    package func stream(_ call: Call, payload: RequestPayload, emit: MethodHandler.Emit) async throws(WireError) {
        do throws(WireError) {
            guard !activity.isDraining else { throw WireError(.unavailable, "the server is shutting down", reason: .shuttingDown) }
            started(call.method, stream: true)
            defer { finished(call.method, stream: true) }
            // The stream runs in a child task only so that a revocation can end it; `emit`
            // is called from that one task, as it would be from this one.
            try await withoutActuallyEscaping(emit) { (emit) async throws(WireError) in
                let sender = UncheckedSend(emit)
                try await live(call) { () async throws(WireError) in try await self.performStream(call, payload: payload, emit: sender.value) }
            }
            record(call.method, nil, duration: nil)
        } catch {
            record(call.method, error, duration: nil)
            throw error
        }
    }

    /// Runs `work` in the call's slot of the quota of long calls, ended with
    /// `UNAUTHENTICATED` the moment its token is revoked.
    private func live<T: Sendable>(_ call: Call, _ work: @escaping @Sendable () async throws(WireError) -> T) async throws(WireError) -> T {
        let ended = EndSignal()
        guard let ticket = try enterLive(call, end: { ended.fire($0) }) else { return try await work() }
        defer { leave(ticket) }
        return try await CallBounds(timeout: nil).run(ended: ended, work)
    }
}

/// A value handed to one child task that alone uses it (the compiler cannot see that).
private struct UncheckedSend<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
