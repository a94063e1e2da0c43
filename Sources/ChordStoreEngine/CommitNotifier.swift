import Synchronization

/// Wakes the tasks waiting for the log to grow (change-feed subscribers, live queries)
/// when the writer commits. Holds one continuation per waiter and nothing per event, so
/// subscribers cost no memory while they wait, and never slow the writer down.
final class CommitNotifier: Sendable {
    private struct State {
        var head: UInt64 = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits in progress, registered or not yet.
        var pending: Set<Int> = []
        /// Pending waits woken (by timeout or cancellation) before they registered.
        var woken: Set<Int> = []
        var nextID = 0
        var closed = false
    }

    private let state = Mutex(State())
    /// Counts the commits that changed the stores or tokens (or might have: a replicated
    /// batch, a cut of the log), so that caches of them know to reload.
    private let serverChanges = Atomic<UInt64>(0)

    init(head: UInt64) {
        state.withLock { $0.head = head }
    }

    /// How many commits changed (or may have changed) the stores or tokens so far.
    var serverVersion: UInt64 { serverChanges.load(ordering: .acquiring) }

    /// Called after a commit that changed the stores or tokens, before its callers learn of it.
    func serverChanged() {
        serverChanges.add(1, ordering: .releasing)
    }

    /// The last log position published.
    var head: UInt64 { state.withLock { $0.head } }

    /// Called by the writer after a commit that ended at `head`.
    func published(_ head: UInt64) {
        wakeAll { $0.head = max($0.head, head) }
    }

    /// The log was truncated back to `head` (a follower discarding a divergent suffix):
    /// waiters are woken to re-read their position.
    func rewound(to head: UInt64) {
        wakeAll { $0.head = head }
    }

    private func wakeAll(_ update: (inout State) -> Void) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            update(&state)
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Wakes everyone for good (the store is closing).
    func close() {
        state.withLock { $0.closed = true }
        published(0)
    }

    /// Returns when the log holds an event after `sequence`, after `timeout`, when the
    /// store closes, or when the task is cancelled, whichever comes first.
    func wait(after sequence: UInt64, timeout: Duration) async {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            state.pending.insert(state.nextID)
            return state.nextID
        }
        let timer = Task { [self] in
            do { try await Task.sleep(for: timeout) } catch { return }  // cancelled: the wait is over
            wake(id)
        }
        defer {
            timer.cancel()
            state.withLock { state in
                state.pending.remove(id)
                state.woken.remove(id)
            }
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.closed || state.head > sequence || state.woken.contains(id) { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            wake(id)
        }
    }

    private func wake(_ id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
            if state.pending.contains(id) { state.woken.insert(id) }  // it will register: make it return at once
            return nil
        }
        waiter?.resume()
    }
}
