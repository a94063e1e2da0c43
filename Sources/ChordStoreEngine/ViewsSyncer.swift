import Foundation
import Synchronization

/// The thread that keeps the views' durable checkpoint (``ViewsCheckpoint``) close behind
/// their commits: woken by commits (``note(_:)``), it takes a checkpoint at most every
/// `interval`, or at once when `events` events have committed since the last one. Idle,
/// it sleeps until the next commit.
final class ViewsSyncer: Sendable {
    private struct State {
        var stopped = false
        /// Commits since the last checkpoint.
        var dirty = false
        /// `events` events since the last checkpoint: take one now.
        var urgent = false
        var sleeping = false
        /// The last event the last checkpoint covered.
        var covered: UInt64 = 0
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let interval: Duration
    private let events: UInt64

    /// Starts the thread. `take` makes a checkpoint and returns the last event it covers,
    /// or `nil` if it made none (it failed, or the views may not be checkpointed now).
    init(interval: Duration, events: UInt64, take: @escaping @Sendable () -> UInt64?) {
        self.interval = interval
        self.events = max(1, events)
        let thread = Thread { [self] in
            GroupCommitWriter.nameThisThread("cs-views-sync")
            run(take)
        }
        thread.start()
    }

    /// Tells the thread that the views now hold events up to `sequence`.
    func note(_ sequence: UInt64) {
        let signal = state.withLock { state -> Bool in
            if state.stopped { return false }
            let wasDirty = state.dirty
            state.dirty = true
            let becameUrgent = !state.urgent && sequence >= state.covered &+ events
            if becameUrgent { state.urgent = true }
            // Woken when its wait changes: from none to the interval's, or to none.
            guard state.sleeping, becameUrgent || !wasDirty else { return false }
            state.sleeping = false
            return true
        }
        if signal { wake.signal() }
    }

    /// Stops the thread once a checkpoint in progress (if any) ends. Idempotent.
    func stop() {
        let signal = state.withLock { state -> Bool in
            if state.stopped { return false }
            state.stopped = true
            defer { state.sleeping = false }
            return state.sleeping
        }
        if signal { wake.signal() }
        finished.wait()
        finished.signal()
    }

    private enum Step {
        case stop, take, sleep(until: DispatchTime?)
    }

    private func run(_ take: () -> UInt64?) {
        var due = DispatchTime.now()
        // After a checkpoint that failed, the next waits for the interval, however many
        // events come meanwhile.
        var failed = false
        while true {
            let now = DispatchTime.now()
            let step = state.withLock { state -> Step in
                if state.stopped { return .stop }
                if (state.urgent && !failed) || (state.dirty && now >= due) {
                    state.urgent = false
                    state.dirty = false
                    return .take
                }
                state.sleeping = true
                return .sleep(until: state.dirty || state.urgent ? due : nil)
            }
            switch step {
            case .stop:
                finished.signal()
                return
            case .sleep(let deadline):
                if let deadline {
                    if wake.wait(timeout: deadline) == .timedOut { state.withLock { $0.sleeping = false } }
                } else {
                    wake.wait()
                }
            case .take:
                due = .now() + .nanoseconds(Int(interval / .nanoseconds(1)))
                let covered = take()
                failed = covered == nil
                if let covered { state.withLock { $0.covered = max($0.covered, covered) } }
            }
        }
    }
}
