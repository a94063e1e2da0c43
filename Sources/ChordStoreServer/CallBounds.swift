import ChordStoreDomain
public import ChordStoreWire

/// The ends a call's work can meet besides its own, for the endpoints beside the framed
/// port (gRPC, HTTP): its deadline, its cancellation by the client, and the endpoint's
/// shutdown (for streams). Each ends the work's task and gives the call its status, as
/// the framed protocol does: `DEADLINE_EXCEEDED`, `CANCELLED`, `UNAVAILABLE`.
public struct CallBounds: Sendable {
    /// How long the call may take (`nil`: no deadline).
    public var timeout: Duration?
    /// Fired when the call must end for the endpoint's shutdown: at once for a stream,
    /// once the grace period is over for a unary call (`nil`: the transport ends it).
    public var shutdown: OneShotSignal?
    /// When the call began (its deadline counts from there).
    public var started: ContinuousClock.Instant

    /// Bounds of a call that began at `started`.
    public init(timeout: Duration?, shutdown: OneShotSignal? = nil, started: ContinuousClock.Instant = .now) {
        self.timeout = timeout
        self.shutdown = shutdown
        self.started = started
    }

    /// `work`'s result, or the status of whichever end came first. `cancelled` fires
    /// when the client cancels the call (a transport's cancellation handler fires it);
    /// `ended` when the server ends it (its token revoked) with the status it is given.
    public func run<T: Sendable>(
        cancelled: OneShotSignal? = nil, ended: EndSignal? = nil, _ work: @escaping @Sendable () async throws(WireError) -> T
    ) async throws(WireError) -> T {
        let (timeout, shutdown) = (self.timeout, self.shutdown)
        let deadline = timeout.map { started + $0 }
        let outcome = await withTaskGroup(of: Result<T, WireError>?.self) { group in
            group.addTask {
                do {
                    return .success(try await work())
                } catch {
                    return .failure(WireError.wrapping(error))
                }
            }
            if let deadline {
                group.addTask {
                    try? await Task.sleep(until: deadline)
                    return Task.isCancelled ? nil : .failure(WireError(.deadlineExceeded, "the deadline of \(timeout ?? .zero) passed"))
                }
            }
            if let cancelled {
                group.addTask {
                    await cancelled.wait()
                    if Task.isCancelled { return nil }
                    // gRPC cancels the call at its deadline too (a moment before this
                    // task's own timer, which started later): that is the deadline's end.
                    if let deadline, ContinuousClock.now >= deadline - .milliseconds(20) {
                        return .failure(WireError(.deadlineExceeded, "the deadline of \(timeout ?? .zero) passed"))
                    }
                    return .failure(WireError(.cancelled, "the client cancelled the call"))
                }
            }
            if let ended {
                group.addTask {
                    guard let error = await ended.wait(), !Task.isCancelled else { return nil }
                    return .failure(error)
                }
            }
            if let shutdown {
                group.addTask {
                    await shutdown.wait()
                    return Task.isCancelled ? nil : .failure(WireError(.unavailable, "the server is shutting down", reason: .shuttingDown))
                }
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return .failure(WireError(.cancelled, "the call was cancelled"))
        }
        return try outcome.get()
    }
}
