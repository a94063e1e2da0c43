import Foundation
import Synchronization

/// A thread that does one kind of background work when its ``ThreadSchedule`` says so:
/// the schedule is changed under a lock by whoever has news (``update(_:)``), which wakes
/// the thread only when the change says it must, and the thread sleeps while nothing is
/// due (until woken, or until the schedule's deadline). Wake-ups, not polls.
final class ScheduledThread<Schedule: ThreadSchedule>: Sendable {
    private struct State {
        var schedule: Schedule
        var sleeping = false
        var stopped = false
    }

    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the thread, named `name` (as `top -H` shows it), following `schedule`;
    /// `work` does one piece of work and reports its outcome to the schedule.
    init(name: String, schedule: Schedule, work: @escaping @Sendable () -> Schedule.Outcome) {
        state = Mutex(State(schedule: schedule))
        let thread = Thread { [self] in
            GroupCommitWriter.nameThisThread(name)
            run(work)
        }
        thread.start()
    }

    /// Changes the schedule; wakes the thread if `change` returns true and it sleeps.
    func update(_ change: (inout Schedule) -> Bool) {
        let signal = state.withLock { state -> Bool in
            guard change(&state.schedule), state.sleeping else { return false }
            state.sleeping = false
            return true
        }
        if signal { wake.signal() }
    }

    /// Reads the schedule.
    func read<T: Sendable>(_ body: (Schedule) -> T) -> T {
        state.withLock { body($0.schedule) }
    }

    /// Stops the thread once its work in progress (if any) ends; returns when it has
    /// stopped. Idempotent.
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

    private enum Turn {
        case stop, step(ScheduledStep)
    }

    private func run(_ work: () -> Schedule.Outcome) {
        while true {
            let now = ContinuousClock.now
            let turn = state.withLock { state -> Turn in
                if state.stopped { return .stop }
                let step = state.schedule.next(now: now)
                if case .sleep = step { state.sleeping = true }
                return .step(step)
            }
            switch turn {
            case .stop:
                finished.signal()
                return
            case .step(.sleep(let deadline?)):
                // At most a day at a time: a deadline centuries away would overflow.
                let wait = min(max(.zero, deadline - .now), .seconds(86_400))
                if wake.wait(timeout: .now() + .nanoseconds(Int(wait / .nanoseconds(1)))) == .timedOut {
                    // A signal sent after the timeout is left in the semaphore: the next
                    // sleep returns at once and asks the schedule again.
                    state.withLock { $0.sleeping = false }
                }
            case .step(.sleep(nil)):
                wake.wait()
            case .step(.work):
                let outcome = work()
                state.withLock { $0.schedule.finished(outcome) }
            }
        }
    }
}
