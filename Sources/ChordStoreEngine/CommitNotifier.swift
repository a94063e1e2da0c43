import Synchronization

/// Wakes the tasks waiting for the log to grow (change-feed subscribers, live queries)
/// when the writer commits. Holds one waiter per waiting task and nothing per event, so
/// subscribers cost no memory while they wait, and never slow the writer down.
final class CommitNotifier: Sendable {
    private struct State {
        var head: UInt64 = 0
        var closed = false
    }

    private let state: Mutex<State>
    private let waiters = Waiters<UInt64, Void>()
    /// Waits for the stores or tokens to change past a version (a server ending the calls
    /// of a revoked token).
    private let accessWaiters = Waiters<UInt64, Void>()
    /// Counts the commits that changed the stores or tokens (or might have: a replicated
    /// batch, a cut of the log), so that caches of them know to reload.
    private let serverChanges = Atomic<UInt64>(0)

    init(head: UInt64) {
        state = Mutex(State(head: head))
    }

    /// How many commits changed (or may have changed) the stores or tokens so far.
    var serverVersion: UInt64 { serverChanges.load(ordering: .acquiring) }

    /// Called after a commit that changed the stores or tokens, before its callers learn of it.
    func serverChanged() {
        let now = serverChanges.add(1, ordering: .releasing).newValue
        accessWaiters.resume { $0 < now ? () : nil }
    }

    /// Returns when the stores or tokens changed past `version` (``serverVersion``), when
    /// the store closes, or when the task is cancelled.
    func waitForServerChange(after version: UInt64) async {
        await accessWaiters.wait(for: version, timeout: nil, otherwise: ()) { version in
            serverVersion > version || state.withLock { $0.closed } ? () : nil
        }
    }

    /// The last log position published.
    var head: UInt64 { state.withLock { $0.head } }

    /// Whether the store is closing (``close()``).
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Called by the writer after a commit that ended at `head`.
    func published(_ head: UInt64) {
        let now = state.withLock { state -> UInt64 in
            state.head = max(state.head, head)
            return state.head
        }
        waiters.resume { $0 < now ? () : nil }
    }

    /// The log was truncated back to `head` (a follower discarding a divergent suffix):
    /// waiters are woken to re-read their position.
    func rewound(to head: UInt64) {
        state.withLock { $0.head = head }
        waiters.resumeAll(with: ())
    }

    /// Wakes everyone for good (the store is closing).
    func close() {
        state.withLock { $0.closed = true }
        waiters.resumeAll(with: ())
        accessWaiters.resumeAll(with: ())
    }

    /// Returns when the log holds an event after `sequence`, after `timeout`, when the
    /// store closes, or when the task is cancelled, whichever comes first.
    func wait(after sequence: UInt64, timeout: Duration) async {
        await waiters.wait(for: sequence, timeout: timeout, otherwise: ()) { sequence in
            state.withLock { $0.closed || $0.head > sequence } ? () : nil
        }
    }
}
