import Foundation
import Synchronization

/// The thread that folds committed events into the LMDB views in the background, for a
/// backend whose live state is in memory (the views are then its checkpoint). A commit
/// calls ``note()``; the thread wakes, lets later commits join for ``coalescing``, then
/// folds everything the views lack in one transaction of the views. Folding many events
/// at once writes each page the events share once, not once per commit.
final class ViewsCheckpointer: Sendable {
    private struct State {
        var pending = false
        var sleeping = false
        var stopped = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// How long the thread waits after a wake-up before it folds.
    let coalescing: Duration

    /// Starts the thread; `fold` brings the views to the log's last event (it records
    /// its own failures).
    init(coalescing: Duration, fold: @escaping @Sendable () -> Void) {
        self.coalescing = coalescing
        let thread = Thread { [self] in
            GroupCommitWriter.nameThisThread("cs-checkpoint")
            run(fold)
        }
        thread.start()
    }

    /// Tells the thread the log has events the views lack.
    func note() {
        let signal = state.withLock { state -> Bool in
            state.pending = true
            defer { state.sleeping = false }
            return state.sleeping
        }
        if signal { wake.signal() }
    }

    /// Stops the thread once its fold in progress (if any) ends. Idempotent.
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

    private func run(_ fold: () -> Void) {
        while true {
            let (work, stopped) = state.withLock { state -> (Bool, Bool) in
                if state.stopped { return (false, true) }
                if state.pending {
                    state.pending = false
                    return (true, false)
                }
                state.sleeping = true
                return (false, false)
            }
            if stopped { break }
            if !work {
                wake.wait()
                continue
            }
            if coalescing > .zero { Thread.sleep(forTimeInterval: Double(coalescing / .microseconds(1)) / 1_000_000) }
            fold()
        }
        finished.signal()
    }
}
