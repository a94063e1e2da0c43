/// Waits between reconnection attempts: doubling from `first` up to `limit`, with up to
/// a quarter of random jitter so that many devices do not reconnect in step.
struct Backoff: Sendable {
    let first: Duration
    let limit: Duration
    private var current: Duration

    init(first: Duration = .milliseconds(100), limit: Duration = .seconds(10)) {
        self.first = first
        self.limit = limit
        self.current = first
    }

    /// The next wait.
    mutating func next() -> Duration {
        let wait = current
        current = min(current * 2, limit)
        let jitter = Double.random(in: 0..<0.25)
        return wait + wait * jitter
    }

    /// Starts again from `first` (after a success).
    mutating func reset() { current = first }
}
