import Synchronization

/// Tasks waiting until a goal is met, each woken by the change that meets it, by its
/// timeout, or by its task's cancellation: the one registry of suspended waits (the log
/// growing, a majority acknowledging, a server's calls ending).
///
/// ``wait(for:timeout:otherwise:check:)`` first asks `check` under the registry's lock:
/// an outcome ends the wait at once, and none registers it. Whoever changes the state
/// that goals are about changes it first and then calls ``resume(where:)``; since the
/// check and the registration are one step under the same lock, no change published
/// after the check is missed. A wait holds one continuation and one timer task, and
/// nothing per change.
///
/// ```swift
/// let waiters = Waiters<UInt64, Bool>()
/// // A reader: wait until the head passes 10, at most a second.
/// let reached = await waiters.wait(for: 10, timeout: .seconds(1), otherwise: false) { head.load() > $0 ? true : nil }
/// // The writer, after moving the head:
/// waiters.resume { head.load() > $0 ? true : nil }
/// ```
public final class Waiters<Goal: Sendable, Outcome: Sendable>: Sendable {
    private struct State {
        var waiting: [Int: (goal: Goal, continuation: CheckedContinuation<Outcome, Never>)] = [:]
        /// Waits begun and not returned yet, registered or not.
        var live: Set<Int> = []
        /// Outcomes of live waits that ended (timed out, cancelled) before they registered.
        var early: [Int: Outcome] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    /// An empty registry.
    public init() {}

    /// Returns `check`'s outcome once it has one (checked now, then at each
    /// ``resume(where:)`` that gives this goal an outcome), or `otherwise` when `timeout`
    /// passes (`nil`: never) or the task is cancelled. `check` runs under the registry's
    /// lock: it must be quick and must not call the registry.
    public func wait(for goal: Goal, timeout: Duration?, otherwise: Outcome, check: (Goal) -> Outcome?) async -> Outcome {
        let id = state.withLock { state -> Int in
            state.next += 1
            state.live.insert(state.next)
            return state.next
        }
        let timer = timeout.map { timeout in
            Task { [self] in
                do { try await Task.sleep(for: timeout) } catch { return }  // cancelled: the wait is over
                end(id, with: otherwise)
            }
        }
        defer {
            timer?.cancel()
            state.withLock { state in
                state.live.remove(id)
                state.early[id] = nil
            }
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let now = state.withLock { state -> Outcome? in
                    if let outcome = state.early.removeValue(forKey: id) { return outcome }
                    if let outcome = check(goal) { return outcome }
                    state.waiting[id] = (goal, continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            end(id, with: otherwise)
        }
    }

    /// Resumes every waiter to which `decide` gives an outcome, with it; the others go on
    /// waiting. `decide` runs under the registry's lock.
    public func resume(where decide: (Goal) -> Outcome?) {
        let ready = state.withLock { state -> [(CheckedContinuation<Outcome, Never>, Outcome)] in
            guard !state.waiting.isEmpty else { return [] }
            var ready: [(CheckedContinuation<Outcome, Never>, Outcome)] = []
            for (id, waiter) in state.waiting {
                guard let outcome = decide(waiter.goal) else { continue }
                state.waiting[id] = nil
                ready.append((waiter.continuation, outcome))
            }
            return ready
        }
        for (continuation, outcome) in ready { continuation.resume(returning: outcome) }
    }

    /// Resumes every waiter with `outcome`.
    public func resumeAll(with outcome: Outcome) {
        resume { _ in outcome }
    }

    /// How many waits are registered now.
    public var count: Int { state.withLock { $0.waiting.count } }

    private func end(_ id: Int, with outcome: Outcome) {
        let waiter = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
            if let waiter = state.waiting.removeValue(forKey: id) { return waiter.continuation }
            if state.live.contains(id) { state.early[id] = outcome }  // it will register: make it return at once
            return nil
        }
        waiter?.resume(returning: outcome)
    }
}
