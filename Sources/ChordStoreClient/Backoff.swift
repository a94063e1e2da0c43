/// Waits between retries: doubling from `first`, up to `limit` if one is given, each wait
/// lengthened by up to `jitter` of itself at random, so that many clients do not retry in
/// step. The client's call retries and a replica's reconnections both use it.
public struct Backoff: Sendable {
    /// The first wait.
    public let first: Duration
    /// The longest wait before jitter (`nil`: no limit).
    public let limit: Duration?
    /// The largest random share added to a wait (0: none).
    public let jitter: Double
    private var current: Duration

    /// Creates a backoff at its first wait.
    public init(first: Duration, limit: Duration?, jitter: Double) {
        self.first = first
        self.limit = limit
        self.jitter = jitter
        self.current = first
    }

    /// The next wait.
    public mutating func next() -> Duration {
        let wait = current
        current = limit.map { min(current * 2, $0) } ?? current * 2
        return jitter > 0 ? wait + wait * Double.random(in: 0..<jitter) : wait
    }

    /// Starts again from `first` (after a success).
    public mutating func reset() { current = first }
}
