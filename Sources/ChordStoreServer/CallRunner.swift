public import ChordStoreAPI
import ChordStoreProto
import ChordStoreDomain
import ChordStoreEngine
public import ChordStoreWire
public import Foundation
import Logging

/// Runs the registry's methods for the transports other than the framed protocol (the
/// gRPC endpoint, the HTTP endpoint's JSON calls): the same credentials, permissions,
/// read-your-writes waits, command path, handlers and fault logging as a ``Server``
/// connection, as plain async calls. Deadlines and cancellation are the caller's:
/// cancelling the task ends the call.
///
/// ```swift
/// let runner = server.callRunner
/// let principal = try await runner.admit(.listChordsets, metadata: ["authorization": "Bearer …"], store: "default", peer: "10.0.0.7")
/// let reply = try await runner.unary(.listChordsets, payload: request, context: CallContext(session: "", peerAddress: "10.0.0.7", principal: principal))
/// ```
public struct CallRunner: Sendable {
    let dispatcher: ServiceDispatcher
    let authenticator: Authenticator
    let activity: ServerActivity
    let metrics: ServerMetrics?
    let logger: Logger

    /// The methods this runner serves: every method of the registry except those only
    /// cluster members call (replication, promotion, fencing), which stay on the
    /// framed protocol's port, where a member's source address is checked.
    public static var methods: [Method] { Method.allCases.filter { (try? entry(for: $0)) != nil } }

    /// Whether the server is shutting down (it refuses new calls).
    public var isDraining: Bool { activity.isDraining }

    /// Fires when the server starts draining: streams end with `UNAVAILABLE`.
    public var drainStarted: OneShotSignal { activity.drainStarted }

    /// Fires when the server's grace period at shutdown is over: unary calls still running
    /// end with `UNAVAILABLE`.
    public var graceOver: OneShotSignal { activity.graceOver }

    /// Whether calls need a credential (false with `--auth none`).
    public var requiresCredentials: Bool { authenticator.isEnabled }

    /// Whether `method` answers with a stream of messages.
    public static func isStream(_ method: Method) -> Bool { method.spec.isStream }

    /// Who a call with `metadata` comes from, if it may call `method` on `store`.
    /// An invalid credential counts towards `peer`'s failed guesses: the returned delay
    /// is how long to wait before answering (zero when there is no penalty).
    private func authorize(
        _ method: Method, metadata: [String: String], store: String, peer: String
    ) -> (result: Result<Principal, WireError>, delay: Duration) {
        let entry: MethodEntry
        do {
            entry = try Self.entry(for: method)
        } catch {
            return (.failure(error), .zero)
        }
        switch authenticator.authenticate(metadata) {
        case .success(let principal):
            if let denial = principal.check(entry.permission, store: store) { return (.failure(denial), .zero) }
            if case .token(let grant) = principal { authenticator.noteUse(grant.id) }
            return (.success(principal), .zero)
        case .failure(let error) where error.code == .unauthenticated:
            metrics?.authenticationFailed()
            let delay: Duration = switch authenticator.failed(from: ConnectionAdmission.key(for: peer), method: method, error: error) {
            case .answer: .zero
            case .delay(let delay), .close(after: let delay): delay
            }
            return (.failure(error), delay)
        case .failure(let error):
            return (.failure(error), .zero)
        }
    }

    /// Who a call with `metadata` comes from, if it may call `method` on `store`; a
    /// refusal comes after the delay a failed credential earns `peer` (its failed
    /// guesses are counted as on the framed port).
    public func admit(_ method: Method, metadata: [String: String], store: String, peer: String) async throws(WireError) -> Principal {
        let (result, delay) = authorize(method, metadata: metadata, store: store, peer: peer)
        if case .failure = result, delay > .zero { try? await Task.sleep(for: delay) }
        return try result.get()
    }

    /// Runs unary `method` (authorized with ``admit(_:metadata:store:peer:)``) and
    /// returns its reply message, serialized. A command returns once it is as durable as
    /// it asks; a read with `minSequence` first waits for that event of its store.
    public func unary(_ method: Method, payload: Data, context: CallContext, minSequence: UInt64 = 0) async throws(WireError) -> [UInt8] {
        let entry = try Self.entry(for: method)
        guard !activity.isDraining else { throw WireError(.unavailable, "the server is shutting down", reason: .shuttingDown) }
        let started = ContinuousClock.now
        activity.callStarted(method, stream: false)
        defer { activity.callEnded(method, stream: false) }
        do {
            let minSequence = entry.permission == .anyone ? 0 : minSequence
            let reply = try await registered(method, context: context, unless: entry.handler.isCommand) { [self] () async throws(WireError) -> [UInt8] in
                try await run(entry, payload: payload, context: context, minSequence: minSequence)
            }
            metrics?.callEnded(method, code: .ok, duration: ContinuousClock.now - started)
            return reply
        } catch {
            let error = Task.isCancelled && error.code != .deadlineExceeded ? WireError(.cancelled, "the call was cancelled") : error
            metrics?.callEnded(method, code: error.code, duration: ContinuousClock.now - started)
            logIfServerFault(error, method)
            throw error
        }
    }

    /// Runs server-streaming `method`, handing each page of messages to `emit`; returns
    /// when the stream ends (OK) and throws its final status otherwise.
    public func stream(
        _ method: Method, payload: Data, context: CallContext, emit: MethodHandler.Emit
    ) async throws(WireError) {
        guard case .serverStream(let run) = try Self.entry(for: method).handler else {
            throw WireError(.unimplemented, "method '\(method.rawValue)' is not a stream")
        }
        guard !activity.isDraining else { throw WireError(.unavailable, "the server is shutting down", reason: .shuttingDown) }
        activity.callStarted(method, stream: true)
        defer { activity.callEnded(method, stream: true) }
        let (activity, dispatcher) = (self.activity, self.dispatcher)
        // The stream runs in a child task only so that a revocation can end it; `emit` is
        // called from that one task, as it would be from this one.
        do {
            try await withoutActuallyEscaping(emit) { (emit) async throws(WireError) in
                let sender = UncheckedSend(emit)
                try await registered(method, context: context) { () async throws(WireError) in
                    try await run(dispatcher, payload, context, { activity.isDraining }, sender.value)
                }
            }
            metrics?.callEnded(method, code: .ok, duration: nil)
        } catch {
            metrics?.callEnded(method, code: error.code, duration: nil)
            logIfServerFault(error, method)
            throw error
        }
    }

    /// Runs `work` as a call of ``LiveCalls`` (unless `unless`): in its slot of the
    /// token's and the store's quota (`RESOURCE_EXHAUSTED` past it), ended with
    /// `UNAUTHENTICATED` the moment its token is revoked, as on the framed port.
    private func registered<T: Sendable>(
        _ method: Method, context: CallContext, unless: Bool = false, _ work: @escaping @Sendable () async throws(WireError) -> T
    ) async throws(WireError) -> T {
        guard !unless else { return try await work() }
        let ended = EndSignal()
        let ticket = try dispatcher.liveCalls.enter(method, principal: context.principal, store: context.store) { ended.fire($0) }
        guard ticket != nil else { return try await work() }
        defer { dispatcher.liveCalls.leave(ticket) }
        return try await CallBounds(timeout: nil).run(ended: ended, work)
    }

    /// Logs an `INTERNAL` or `DATA_LOSS` end, as the framed port does.
    private func logIfServerFault(_ error: WireError, _ method: Method) {
        guard error.code == .internal || error.code == .dataLoss else { return }
        logger.error("call failed", metadata: ["method": "\(method.rawValue)", "error": "\(error)"])
    }

    /// `method`'s registry entry, unless only cluster members call it (`UNIMPLEMENTED`).
    private static func entry(for method: Method) throws(WireError) -> MethodEntry {
        guard let entry = ServiceDispatcher.registry[method], entry.permission != .member else {
            throw WireError(.unimplemented, "method '\(method.rawValue)' is not served here")
        }
        return entry
    }

    private func run(_ entry: MethodEntry, payload: Data, context: CallContext, minSequence: UInt64) async throws(WireError) -> [UInt8] {
        do {
            switch entry.handler {
            case .command(let parse):
                let parsed = try parse(dispatcher, payload)
                let committed = try await submit(parsed, context: context)
                try await dispatcher.awaitDurability(parsed.context.durability, of: committed.recorded.logSequence)
                return ReplyPayload.field(1, committed.record[...]).serialized  // a CommandReply
            case .pointRead(let read):
                try await dispatcher.waitForSequence(minSequence, context: context)
                return try read(dispatcher, payload, context)
            case .unary(let run):
                if minSequence > 0 { try await dispatcher.waitForSequence(minSequence, context: context) }
                return try await run(dispatcher, payload, context)
            case .serverStream:
                throw WireError(.unimplemented, "a stream is not a unary call")
            }
        } catch {
            throw WireError.wrapping(error)
        }
    }

    /// The command's commit, through the one writer, or its refusal.
    private func submit(_ parsed: ParsedCommand, context: CallContext) async throws(WireError) -> CommittedEvent {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<CommittedEvent, WireError>, Never>) in
            dispatcher.submit(parsed, context: context) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }
}

/// A value handed to one child task that alone uses it (the compiler cannot see that).
private struct UncheckedSend<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
