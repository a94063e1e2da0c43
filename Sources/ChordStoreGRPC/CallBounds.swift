import ChordStoreWire
import GRPCCore

/// The ends a gRPC call's work can meet besides its own: its deadline (the
/// `grpc-timeout` header), its cancellation by the client, and the endpoint's shutdown
/// (for streams). Each ends the work's task and gives the call its status, as the framed
/// protocol does: `DEADLINE_EXCEEDED`, `CANCELLED`, `UNAVAILABLE`.
struct CallBounds: Sendable {
    /// How long the call may take (`nil`: no deadline).
    var timeout: Duration?
    /// Fired when the endpoint shuts down; `nil` for unary calls, which may finish.
    var shutdown: OneShotSignal? = nil
    /// When the call began (its deadline counts from there).
    var started = ContinuousClock.now

    /// `work`'s result, or the status of whichever end came first.
    func run<T: Sendable>(_ work: @escaping @Sendable () async throws(WireError) -> T) async throws(WireError) -> T {
        let (timeout, shutdown) = (self.timeout, self.shutdown)
        let cancelled = OneShotSignal()
        let deadline = timeout.map { started + $0 }
        let outcome: Result<T, WireError> = await withRPCCancellationHandler {
            await withTaskGroup(of: Result<T, WireError>?.self) { group in
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
                if let shutdown {
                    group.addTask {
                        await shutdown.wait()
                        return Task.isCancelled ? nil : .failure(WireError(.unavailable, "the server is shutting down"))
                    }
                }
                defer { group.cancelAll() }
                while let next = await group.next() {
                    if let next { return next }
                }
                return .failure(WireError(.cancelled, "the call was cancelled"))
            }
        } onCancelRPC: {
            cancelled.fire()  // the client reset the stream
        }
        return try outcome.get()
    }

    /// The `grpc-timeout` header's duration (`nil` when absent or malformed): 1 to 8
    /// digits (gRPC's limit, so no unit overflows), then H, M, S, m, u or n.
    static func timeout(in metadata: Metadata) -> Duration? {
        guard let text = metadata[stringValues: "grpc-timeout"].first(where: { _ in true }), (2...9).contains(text.utf8.count),
              let unit = text.last, text.dropLast().allSatisfy(\.isASCII), let amount = Int64(text.dropLast()), amount >= 0
        else { return nil }
        switch unit {
        case "H": return .seconds(amount * 3_600)
        case "M": return .seconds(amount * 60)
        case "S": return .seconds(amount)
        case "m": return .milliseconds(amount)
        case "u": return .microseconds(amount)
        case "n": return .nanoseconds(amount)
        default: return nil
        }
    }
}
