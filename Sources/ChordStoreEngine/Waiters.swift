import Synchronization

/// Tasks waiting until a goal is met, each woken by the change that meets it, by its
/// timeout, or by its task's cancellation: the one registry of suspended waits (the log
/// growing, a majority acknowledging, a server's calls ending).
///
/// ``wait(for:timeout:otherwise:check:)`` first asks `check` under the registry's lock:
/// an outcome ends the wait at once, and none registers it. Whoever changes the state
/// that goals are about changes it first and then calls ``resume(where:)``; since the
/// check and the registration are one step under the same lock, no change published
/// after the check is missed. A wait holds one continuation and nothing per change; the
/// timeouts of all waits share one timer task, which sleeps until the earliest deadline
/// (a wait whose deadline is later than the one armed starts nothing: a task and a
/// dispatch timer per wait were a large part of a quorum leader's CPU per write,
/// docs/PERFORMANCE.md).
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
        /// The deadline of each live wait that has a timeout, and its fallback.
        var deadlines: [Int: (at: ContinuousClock.Instant, otherwise: Outcome)] = [:]
        /// When the timer wakes next; `nil`: no timer runs.
        var armedAt: ContinuousClock.Instant?
        /// The timer that wakes at `armedAt`, and its generation: a timer whose generation
        /// is not the current one was replaced by one for an earlier deadline, and ends.
        var timer: Task<Void, Never>?
        var generation = 0
        var timersStarted = 0
    }

    private let state = Mutex(State())

    /// The longest timeout honoured; a longer one is this one (a century).
    static var maxTimeout: Duration { .seconds(3_155_760_000) }

    /// An empty registry.
    public init() {}

    /// Returns `check`'s outcome once it has one (checked now, then at each
    /// ``resume(where:)`` that gives this goal an outcome), or `otherwise` when `timeout`
    /// passes (`nil`: never) or the task is cancelled. `check` runs under the registry's
    /// lock: it must be quick and must not call the registry.
    public func wait(for goal: Goal, timeout: Duration?, otherwise: Outcome, check: (Goal) -> Outcome?) async -> Outcome {
        let deadline = timeout.map { ContinuousClock.now.advanced(by: min(max($0, .zero), Self.maxTimeout)) }
        let id = state.withLock { state -> Int in
            state.next += 1
            state.live.insert(state.next)
            if let deadline {
                state.deadlines[state.next] = (deadline, otherwise)
                if state.armedAt.map({ deadline < $0 }) ?? true { arm(at: deadline, &state) }
            }
            return state.next
        }
        defer {
            state.withLock { state in
                state.live.remove(id)
                state.early[id] = nil
                state.deadlines[id] = nil
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

    /// How many timer tasks this registry has started: one each time a wait's deadline
    /// came before every deadline armed (or none was), not one per wait.
    public var timersStarted: Int { state.withLock { $0.timersStarted } }

    /// Starts the timer for `instant`, replacing (and cancelling) the one armed for a
    /// later deadline. Called under the lock.
    private func arm(at instant: ContinuousClock.Instant, _ state: inout State) {
        state.timer?.cancel()
        state.generation += 1
        state.armedAt = instant
        state.timersStarted += 1
        let generation = state.generation
        state.timer = Task { [self] in await runTimer(from: instant, generation: generation) }
    }

    /// Sleeps until `instant`, ends every wait whose deadline passed, and sleeps again
    /// until the earliest deadline left; ends when none is left or another timer replaced it.
    private func runTimer(from instant: ContinuousClock.Instant, generation: Int) async {
        var wake = instant
        while true {
            try? await Task.sleep(until: wake, clock: .continuous)
            let (expired, next) = state.withLock { state -> ([(CheckedContinuation<Outcome, Never>, Outcome)], ContinuousClock.Instant?) in
                guard state.generation == generation else { return ([], nil) }
                let now = ContinuousClock.now
                var expired: [(CheckedContinuation<Outcome, Never>, Outcome)] = []
                var earliest: ContinuousClock.Instant?
                for (id, deadline) in state.deadlines {
                    guard deadline.at <= now else {
                        earliest = earliest.map { min($0, deadline.at) } ?? deadline.at
                        continue
                    }
                    state.deadlines[id] = nil
                    if let waiter = state.waiting.removeValue(forKey: id) {
                        expired.append((waiter.continuation, deadline.otherwise))
                    } else if state.live.contains(id) {
                        state.early[id] = deadline.otherwise  // it will register: make it return at once
                    }
                }
                state.armedAt = earliest
                if earliest == nil { state.timer = nil }
                return (expired, earliest)
            }
            for (continuation, outcome) in expired { continuation.resume(returning: outcome) }
            guard let next else { return }
            wake = next
        }
    }

    private func end(_ id: Int, with outcome: Outcome) {
        let waiter = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
            if let waiter = state.waiting.removeValue(forKey: id) { return waiter.continuation }
            if state.live.contains(id) { state.early[id] = outcome }  // it will register: make it return at once
            return nil
        }
        waiter?.resume(returning: outcome)
    }
}
