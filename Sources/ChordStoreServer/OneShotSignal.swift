import Foundation
import Synchronization

/// Fires once; tasks wait on it (a wake-up, not a poll). An endpoint's shutdown is one
/// (streams in flight end with `UNAVAILABLE`), a client's cancel of a call another.
public final class OneShotSignal: Sendable {
    private struct State {
        var fired = false
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var next: UInt64 = 0
    }

    private let state = Mutex(State())

    /// A signal that has not fired.
    public init() {}

    /// Whether it has fired.
    public var hasFired: Bool { state.withLock { $0.fired } }

    /// Fires: every waiter returns, and later waits return at once.
    public func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.fired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the signal fired, or the task is cancelled.
    public func wait() async {
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.fired || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
