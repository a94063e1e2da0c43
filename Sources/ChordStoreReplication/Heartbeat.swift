import Synchronization

/// When a follower last heard from its leader.
final class Heartbeat: Sendable {
    private let last = Mutex(ContinuousClock.now)

    /// Notes that the leader spoke now.
    func beat() { last.withLock { $0 = .now } }

    /// How long since the leader last spoke.
    var silence: Duration { ContinuousClock.now - last.withLock { $0 } }
}
