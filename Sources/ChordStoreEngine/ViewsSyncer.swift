import Foundation
import Synchronization

/// The thread that keeps the views' restore point (``ViewsRestorePoint``) close behind
/// their commits, on the ``RestorePointSchedule``: woken by commits (``note(_:)``), asleep
/// while idle.
final class ViewsSyncer: Sendable {
    private struct State {
        var schedule: RestorePointSchedule
        var sleeping = false
    }

    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the thread. `take` takes a restore point and returns the last event it
    /// covers, or `nil` if it took none (it failed, or none may be taken now).
    init(interval: Duration, events: UInt64, take: @escaping @Sendable () -> UInt64?) {
        state = Mutex(State(schedule: RestorePointSchedule(interval: interval, events: events, now: .now)))
        let thread = Thread { [self] in
            GroupCommitWriter.nameThisThread("cs-views-sync")
            run(take)
        }
        thread.start()
    }

    /// Tells the thread that the views now hold events up to `sequence`.
    func note(_ sequence: UInt64) {
        let signal = state.withLock { state -> Bool in
            guard state.schedule.note(sequence), state.sleeping else { return false }
            state.sleeping = false
            return true
        }
        if signal { wake.signal() }
    }

    /// Stops the thread once a restore point in progress (if any) is taken. Idempotent.
    func stop() {
        let signal = state.withLock { state -> Bool in
            guard state.schedule.stop(), state.sleeping else { return false }
            state.sleeping = false
            return true
        }
        if signal { wake.signal() }
        finished.wait()
        finished.signal()
    }

    private func run(_ take: () -> UInt64?) {
        while true {
            let now = ContinuousClock.now
            let step = state.withLock { state -> RestorePointSchedule.Step in
                let step = state.schedule.next(now: now)
                if case .sleep = step { state.sleeping = true }
                return step
            }
            switch step {
            case .stop:
                finished.signal()
                return
            case .sleep(let deadline?):
                let wait = max(.zero, deadline - .now)
                if wake.wait(timeout: .now() + .nanoseconds(Int(wait / .nanoseconds(1)))) == .timedOut {
                    state.withLock { $0.sleeping = false }
                }
            case .sleep(nil):
                wake.wait()
            case .take:
                let covered = take()
                state.withLock { $0.schedule.taken(covered) }
            }
        }
    }
}
