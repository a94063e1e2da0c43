import Foundation
import Synchronization

/// The thread that saves the live state in the background (``LiveStateFile``) when its
/// ``LiveSaveSchedule`` says a save is due: the saved state is the checkpoint a start
/// loads, so a kill or a machine crash costs the next start the replay of only the events
/// after it.
///
/// The writer calls ``committed(_:)`` after each commit: a lock held for a comparison,
/// and a wake-up of the thread only when a save starts.
final class LiveStateSaver: Sendable {
    private struct State {
        var schedule: LiveSaveSchedule
        var sleeping = false
        var stopped = false
    }

    private enum Turn {
        case save, sleep, stop
    }

    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// Saves completed since the thread started (for tests).
    let saves = Atomic(0)

    /// Starts the thread. `last` is the state saved already (the file the store opened
    /// from), `nil` if none; `save` saves the state now, or returns `nil` if it could not
    /// (it reports its own failures).
    init(last: LiveSaveSchedule.Saved?, least: UInt64, save: @escaping @Sendable () -> LiveSaveSchedule.Saved?) {
        state = Mutex(State(schedule: LiveSaveSchedule(last: last, least: least)))
        let thread = Thread { [self] in
            GroupCommitWriter.nameThisThread("cs-live-save")
            run(save)
        }
        thread.start()
    }

    /// Tells the saver the log's last committed sequence; wakes the thread if a save is due.
    func committed(_ sequence: UInt64) {
        let signal = state.withLock { state -> Bool in
            guard state.schedule.commit(sequence), state.sleeping else { return false }
            state.sleeping = false
            return true
        }
        if signal { wake.signal() }
    }

    /// Makes a save due now, or after the running one (the log was cut back to
    /// `sequence`: the state saved last may hold events it no longer has).
    func forget(at sequence: UInt64) {
        let signal = state.withLock { state -> Bool in
            state.schedule.forget(at: sequence)
            guard state.schedule.startIfDue(), state.sleeping else { return false }
            state.sleeping = false
            return true
        }
        if signal { wake.signal() }
    }

    /// The log sequence of the state saved last, while the log holds it (see
    /// ``LiveSaveSchedule/lastSaved``).
    var lastSaved: UInt64? { state.withLock { $0.schedule.lastSaved } }

    /// Stops the thread once its save in progress (if any) ends. Idempotent.
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

    private func run(_ save: () -> LiveSaveSchedule.Saved?) {
        while true {
            let turn = state.withLock { state -> Turn in
                if state.stopped { return .stop }
                // A save started by a commit while the thread was awake, or one that fell
                // due meanwhile (the last commit came while the thread saved).
                if state.schedule.saving || state.schedule.startIfDue() { return .save }
                state.sleeping = true
                return .sleep
            }
            switch turn {
            case .stop:
                finished.signal()
                return
            case .sleep:
                wake.wait()
            case .save:
                let saved = save()
                if saved != nil { saves.wrappingAdd(1, ordering: .relaxed) }
                state.withLock { $0.schedule.finished(saved) }
            }
        }
    }
}
