import NIOCore

/// Events of the last ``window`` (30 s), counted in 30 one-second buckets: what one
/// more event makes, in constant room whatever the rate (the resets a gRPC client sends
/// on a connection, ``StreamResetHandler``).
struct ResetRate: Sendable {
    static let window = 30
    private var buckets = [Int](repeating: 0, count: window)
    /// The second (since the clock's start) of the newest bucket.
    private var newest: Int64 = 0

    /// Counts one event at `now`; returns the events of the window, this one included.
    mutating func count(at now: NIODeadline) -> Int {
        let current = Int64(truncatingIfNeeded: now.uptimeNanoseconds / 1_000_000_000)
        let elapsed = current - newest
        if elapsed >= Int64(Self.window) {
            buckets = [Int](repeating: 0, count: Self.window)
        } else if elapsed > 0 {
            for step in 1...Int(elapsed) { buckets[Int((newest + Int64(step)) % Int64(Self.window))] = 0 }
        }
        newest = max(newest, current)
        buckets[Int(current % Int64(Self.window))] += 1
        return buckets.reduce(0, +)
    }
}
