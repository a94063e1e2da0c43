import Synchronization

/// Waits until a goal is met, each ended by the change that meets it, by its timeout, or
/// by its cancellation: the one registry of waits (the log growing, a majority
/// acknowledging, a server's calls ending). A wait is a suspended task
/// (``wait(for:timeout:otherwise:check:)``) or a closure called with the outcome
/// (``register(for:timeout:otherwise:check:_:)``), which needs no task: an event loop
/// registers one for a quorum write and is called back.
///
/// ``wait(for:timeout:otherwise:check:)`` first asks `check` under the registry's lock:
/// an outcome ends the wait at once, and none registers it. Whoever changes the state
/// that goals are about changes it first and then calls ``resume(where:)``; since the
/// check and the registration are one step under the same lock, no change published
/// after the check is missed. A wait holds its continuation or closure and nothing per
/// change. The timeouts of all waits share one timer task, which sleeps until the
/// earliest deadline (kept in a heap): a wait whose deadline is later than the one armed
/// starts nothing (a task and a dispatch timer per wait were a large part of a quorum
/// leader's CPU per write, docs/PERFORMANCE.md), and the timer wakes at most every
/// ``timerResolution``, ending every wait whose deadline passed. A timeout thus never
/// ends a wait before its deadline.
///
/// A wait for a counter to reach a value (a quorum write waiting for its sequence number
/// to be on a majority) can be registered with that value as its threshold: such waits
/// are kept in the order of their thresholds, apart from the others, and
/// ``resume(through:with:)`` ends those a new value reaches without looking at the rest,
/// where ``resume(where:)`` asks about every other wait (an acknowledgement that ends two
/// of fifty quorum writes looked at all fifty; docs/PERFORMANCE.md).
///
/// ```swift
/// let waiters = Waiters<UInt64, Bool>()
/// // A reader: wait until the head passes 10, at most a second.
/// let reached = await waiters.wait(for: 10, timeout: .seconds(1), otherwise: false) { head.load() > $0 ? true : nil }
/// // The writer, after moving the head:
/// waiters.resume { head.load() > $0 ? true : nil }
/// ```
public final class Waiters<Goal: Sendable, Outcome: Sendable>: Sendable {
    /// What ends a wait: a suspended task's continuation, or a registered closure.
    private enum Waiter {
        case task(CheckedContinuation<Outcome, Never>)
        case callback(@Sendable (Outcome) -> Void)

        func deliver(_ outcome: Outcome) {
            switch self {
            case .task(let continuation): continuation.resume(returning: outcome)
            case .callback(let body): body(outcome)
            }
        }
    }

    /// A registered wait: its goal, its waiter, and the outcome its timeout gives.
    private struct Entry {
        let goal: Goal
        let waiter: Waiter
        let otherwise: Outcome
    }

    private struct State {
        /// The registered waits without a threshold.
        var waiting: [Int: Entry] = [:]
        /// The registered waits with a threshold, and their ids in its order.
        var ordered: [Int: Entry] = [:]
        var thresholds = ThresholdQueue()
        /// Task waits begun and not returned yet, registered or not.
        var live: Set<Int> = []
        /// Outcomes of live task waits cancelled before they registered.
        var early: [Int: Outcome] = [:]
        var next = 0
        /// The deadlines of registered waits, earliest first. A wait that ended leaves its
        /// entry behind, dropped when it comes to the top (ids are never reused), or when
        /// such entries outnumber the live ones (``take(_:)``): every quorum write's wait
        /// ends long before its timeout, and its entry would otherwise stay that long.
        var deadlines = DeadlineHeap()
        /// When the timer wakes next; `nil`: no timer runs.
        var armedAt: ContinuousClock.Instant?
        /// The running timer, and its generation: a timer whose generation is not the
        /// current one was replaced or stopped, and ends.
        var timer: Task<Void, Never>?
        var generation = 0
        var timersStarted = 0

        /// Registers wait `id`, noting its deadline; returns the instant a new timer must
        /// wake at, if the deadline comes before the one armed (or none is).
        mutating func register(
            _ id: Int, goal: Goal, threshold: UInt64?, waiter: Waiter, otherwise: Outcome, deadline: ContinuousClock.Instant?
        ) -> ContinuousClock.Instant? {
            let entry = Entry(goal: goal, waiter: waiter, otherwise: otherwise)
            if let threshold {
                ordered[id] = entry
                thresholds.insert(threshold, id)
            } else {
                waiting[id] = entry
            }
            guard let deadline else { return nil }
            deadlines.push(deadline, id)
            guard armedAt.map({ deadline < $0 }) ?? true else { return nil }
            return deadline
        }

        /// How many waits are registered.
        var count: Int { waiting.count + ordered.count }

        /// Removes wait `id`; returns its entry if it was registered. A timer armed far
        /// ahead (a long timeout) stops once no wait is left, rather than sleep on.
        mutating func take(_ id: Int) -> Entry? {
            guard let entry = waiting.removeValue(forKey: id) ?? ordered.removeValue(forKey: id) else { return nil }
            if count == 0, let armedAt, armedAt - .now > Waiters.idleTimerLimit {
                stopTimer()
            } else if deadlines.count > 2 * count + Waiters.deadlineSlack {
                let (waiting, ordered) = (self.waiting, self.ordered)
                deadlines.keep { waiting[$0] != nil || ordered[$0] != nil }
            }
            dropEndedThresholds()
            return entry
        }

        /// Drops the ids of ended waits from the thresholds once they outnumber the live
        /// ones: quorum writes that time out while no follower answers would otherwise
        /// leave one each.
        mutating func dropEndedThresholds() {
            guard thresholds.count > 2 * ordered.count + Waiters.deadlineSlack else { return }
            let ordered = self.ordered
            thresholds.keep { ordered[$0] != nil }
        }

        mutating func stopTimer() {
            timer?.cancel()
            timer = nil
            generation += 1
            armedAt = nil
            deadlines.removeAll()
        }
    }

    /// A wait registered with a closure: ``cancel(_:with:)`` ends it.
    public struct Registration: Sendable {
        fileprivate let id: Int
    }

    private let state = Mutex(State())

    /// The longest timeout honoured; a longer one is this one (a century).
    static var maxTimeout: Duration { .seconds(3_155_760_000) }
    /// The least time between two wakes of the timer.
    static var timerResolution: Duration { .milliseconds(5) }
    /// Entries of ended waits the deadlines may hold beyond the live waits' count before
    /// they are dropped.
    static var deadlineSlack: Int { 64 }
    /// A timer armed further ahead than this stops when the last wait ends.
    static var idleTimerLimit: Duration { .seconds(60) }

    /// An empty registry.
    public init() {}

    private static func deadline(after timeout: Duration?) -> ContinuousClock.Instant? {
        timeout.map { ContinuousClock.now.advanced(by: min(max($0, .zero), maxTimeout)) }
    }

    /// Returns `check`'s outcome once it has one (checked now, then at each
    /// ``resume(where:)`` that gives this goal an outcome, or with a `threshold`, at the
    /// ``resume(through:with:)`` that reaches it), or `otherwise` when `timeout` passes
    /// (`nil`: never) or the task is cancelled. `check` runs under the registry's lock: it
    /// must be quick and must not call the registry.
    public func wait(
        for goal: Goal, threshold: UInt64? = nil, timeout: Duration?, otherwise: Outcome, check: (Goal) -> Outcome?
    ) async -> Outcome {
        let deadline = Self.deadline(after: timeout)
        let id = state.withLock { state -> Int in
            state.next += 1
            state.live.insert(state.next)
            return state.next
        }
        defer {
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
                    register(id, goal: goal, threshold: threshold, waiter: .task(continuation), otherwise: otherwise, deadline: deadline, &state)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            end(id, with: otherwise)
        }
    }

    /// Calls `body` once with `check`'s outcome: at once, on this thread, if it has one
    /// now (and returns `nil`), else from the ``resume(where:)`` that gives it one (with a
    /// `threshold`, the ``resume(through:with:)`` that reaches it), or with `otherwise`
    /// when `timeout` passes (`nil`: never) or ``cancel(_:with:)`` ends it. `body` runs on
    /// whichever thread ends the wait, outside the registry's lock: it must be quick (post
    /// to an event loop). `check` runs under the lock.
    public func register(
        for goal: Goal, threshold: UInt64? = nil, timeout: Duration?, otherwise: Outcome, check: (Goal) -> Outcome?,
        _ body: @escaping @Sendable (Outcome) -> Void
    ) -> Registration? {
        let deadline = Self.deadline(after: timeout)
        // The check and the registration are one step under the lock: no change is missed.
        let (now, registration) = state.withLock { state -> (Outcome?, Registration?) in
            if let outcome = check(goal) { return (outcome, nil) }
            state.next += 1
            let id = state.next
            register(id, goal: goal, threshold: threshold, waiter: .callback(body), otherwise: otherwise, deadline: deadline, &state)
            return (nil, Registration(id: id))
        }
        if let now { body(now) }
        return registration
    }

    /// Ends the registered wait with `outcome`, if it has not ended yet.
    public func cancel(_ registration: Registration, with outcome: Outcome) {
        end(registration.id, with: outcome)
    }

    /// Resumes every waiter registered without a threshold to which `decide` gives an
    /// outcome, with it; the others go on waiting. `decide` runs under the registry's lock.
    /// The waiters are resumed inside one ``AnswerBatch``: a receiver that wakes a thread
    /// for them wakes it once.
    public func resume(where decide: (Goal) -> Outcome?) {
        let ready = state.withLock { state -> [(Waiter, Outcome)] in
            guard !state.waiting.isEmpty else { return [] }
            var ready: [(Int, Outcome)] = []
            for (id, entry) in state.waiting {
                if let outcome = decide(entry.goal) { ready.append((id, outcome)) }
            }
            return ready.compactMap { id, outcome in state.take(id).map { ($0.waiter, outcome) } }
        }
        deliver(ready)
    }

    /// Resumes, with `outcome`, every waiter registered with a threshold of at most
    /// `value`, in the order of their thresholds, looking at no other.
    public func resume(through value: UInt64, with outcome: Outcome) {
        let ready = state.withLock { state -> [(Waiter, Outcome)] in
            var ready: [(Waiter, Outcome)] = []
            var ids: [Int] = []
            state.thresholds.removeThrough(value) { ids.append($0) }
            for id in ids {
                if let entry = state.take(id) { ready.append((entry.waiter, outcome)) }
            }
            return ready
        }
        deliver(ready)
    }

    /// Resumes every waiter with `outcome`, those with a threshold too.
    public func resumeAll(with outcome: Outcome) {
        let ready = state.withLock { state -> [(Waiter, Outcome)] in
            let ids = Array(state.waiting.keys) + Array(state.ordered.keys)
            state.thresholds.removeAll()
            return ids.compactMap { state.take($0).map { ($0.waiter, outcome) } }
        }
        deliver(ready)
    }

    /// Delivers each outcome in one batch of answers (``AnswerBatch``): a quorum's
    /// acknowledgement ends many writes at once, and their event loops are each woken
    /// once for all of them.
    private func deliver(_ ready: [(Waiter, Outcome)]) {
        guard !ready.isEmpty else { return }
        AnswerBatch.run { for (waiter, outcome) in ready { waiter.deliver(outcome) } }
    }

    /// How many waits are registered now.
    public var count: Int { state.withLock { $0.count } }

    /// How many timer tasks this registry has started: one each time a wait's deadline
    /// came before every deadline armed (or none was), not one per wait.
    package var timersStarted: Int { state.withLock { $0.timersStarted } }

    /// Whether a timer is armed (it stops when no deadline is left to wait for).
    package var timerArmed: Bool { state.withLock { $0.armedAt != nil } }

    /// How many deadlines the timer holds, those of ended waits included (for tests).
    package var deadlineCount: Int { state.withLock { $0.deadlines.count } }

    /// How many ids the thresholds hold, those of ended waits included (for tests).
    package var thresholdCount: Int { state.withLock { $0.thresholds.count } }

    /// Registers wait `id` and arms a timer if its deadline is the earliest. Called under
    /// the lock.
    private func register(
        _ id: Int, goal: Goal, threshold: UInt64?, waiter: Waiter, otherwise: Outcome, deadline: ContinuousClock.Instant?,
        _ state: inout State
    ) {
        if let wake = state.register(id, goal: goal, threshold: threshold, waiter: waiter, otherwise: otherwise, deadline: deadline) {
            arm(at: wake, &state)
        }
    }

    /// Starts the timer for `instant`, replacing (and cancelling) the one armed for a
    /// later deadline. Called under the lock.
    private func arm(at instant: ContinuousClock.Instant, _ state: inout State) {
        state.timer?.cancel()
        state.generation += 1
        state.armedAt = instant
        state.timersStarted += 1
        let generation = state.generation
        state.timer = Task.detached { [self] in await runTimer(from: instant, generation: generation) }
    }

    /// Sleeps until `instant`, ends every wait whose deadline passed, and sleeps again
    /// until the earliest deadline left (at least ``timerResolution`` later); ends when
    /// none is left or it was replaced.
    private func runTimer(from instant: ContinuousClock.Instant, generation: Int) async {
        var wake = instant
        while true {
            try? await Task.sleep(until: wake, clock: .continuous)
            let (expired, next) = state.withLock { state -> ([(Waiter, Outcome)], ContinuousClock.Instant?) in
                guard state.generation == generation else { return ([], nil) }
                let now = ContinuousClock.now
                var expired: [(Waiter, Outcome)] = []
                while let top = state.deadlines.first, top.at <= now {
                    state.deadlines.pop()
                    if let entry = state.waiting.removeValue(forKey: top.id) ?? state.ordered.removeValue(forKey: top.id) {
                        expired.append((entry.waiter, entry.otherwise))
                    }
                }
                state.dropEndedThresholds()
                // Entries of waits that ended meanwhile are dropped, not woken for.
                while let top = state.deadlines.first, state.waiting[top.id] == nil, state.ordered[top.id] == nil { state.deadlines.pop() }
                guard let earliest = state.deadlines.first?.at else {
                    state.timer = nil
                    state.armedAt = nil
                    state.deadlines.removeAll()
                    return (expired, nil)
                }
                let next = max(earliest, now.advanced(by: Self.timerResolution))
                state.armedAt = next
                return (expired, next)
            }
            for (waiter, outcome) in expired { waiter.deliver(outcome) }
            guard let next else { return }
            wake = next
        }
    }

    private func end(_ id: Int, with outcome: Outcome) {
        let waiter = state.withLock { state -> Waiter? in
            if let entry = state.take(id) { return entry.waiter }
            if state.live.contains(id) { state.early[id] = outcome }  // it will register: make it return at once
            return nil
        }
        waiter?.deliver(outcome)
    }
}
