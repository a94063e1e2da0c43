/// Limits guessing: counts the failed authentications of each peer address over a window
/// and says what to do with the next one. A pure state machine (the caller passes the
/// time); ``Authenticator`` drives it.
///
/// The first ``freeFailures`` failures of a window are answered at once; the next are
/// answered after a delay that doubles, from ``firstDelay`` to ``maxDelay``; from
/// ``closeAfter`` failures on, the connection is closed after the longest delay. A valid
/// credential is never delayed, so a guesser sharing an address slows no one else down.
public struct FailedAuthentications: Sendable {
    /// What to do with a failed call.
    public enum Penalty: Sendable, Equatable {
        /// Answer it now.
        case answer
        /// Answer it after the delay (the connection reads nothing meanwhile).
        case delay(Duration)
        /// Answer after the delay, then close the connection.
        case close(after: Duration)
    }

    /// How long an address's failures count.
    public var window: Duration = .seconds(60)
    /// Failures of a window answered at once.
    public var freeFailures = 3
    /// The delay of the first failure after the free ones; each next one doubles it.
    public var firstDelay: Duration = .milliseconds(100)
    /// The longest delay.
    public var maxDelay: Duration = .seconds(2)
    /// The failure of a window that closes the connection (and every later one).
    public var closeAfter = 10
    /// Most addresses remembered; past it, the oldest windows are forgotten first.
    public var maxPeers = 10_000

    private struct Peer {
        var since: ContinuousClock.Instant
        var failures: Int
    }

    private var peers: [String: Peer] = [:]
    /// Failures seen in all, since the server started.
    public private(set) var total: UInt64 = 0

    /// Creates the limiter with the default policy.
    public init() {}

    /// Notes a failure from `peer` at `now`; returns the penalty and the peer's failures
    /// in its current window.
    public mutating func failed(from peer: String, at now: ContinuousClock.Instant) -> (penalty: Penalty, failures: Int) {
        total &+= 1
        var entry = peers[peer] ?? Peer(since: now, failures: 0)
        if now - entry.since > window { entry = Peer(since: now, failures: 0) }
        entry.failures += 1
        if peers[peer] == nil, peers.count >= maxPeers { forgetOldest(now: now) }
        peers[peer] = entry
        let n = entry.failures
        if n >= closeAfter { return (.close(after: maxDelay), n) }
        if n <= freeFailures { return (.answer, n) }
        var delay = firstDelay
        for _ in 0..<(n - freeFailures - 1) where delay < maxDelay { delay = delay * 2 }
        return (.delay(min(delay, maxDelay)), n)
    }

    /// How many addresses are remembered now.
    public var peerCount: Int { peers.count }

    /// Makes room: drops the expired windows, and if that is not enough the oldest tenth,
    /// so that the work is done once per many new addresses, not for each.
    private mutating func forgetOldest(now: ContinuousClock.Instant) {
        peers = peers.filter { now - $0.value.since <= window }
        guard peers.count >= maxPeers else { return }
        let oldest = peers.sorted { $0.value.since < $1.value.since }.prefix(max(1, maxPeers / 10))
        for (peer, _) in oldest { peers[peer] = nil }
    }
}
