/// Whether a client takes the bytes a server sends it: fed the bytes the client has
/// acknowledged so far and whether any are waiting for it (in the server's buffers or
/// its socket's), it tells how long the client has taken none while some waited. A
/// pure value; ``ConnectionHandler`` feeds it once a second while streams run.
struct ReadProgress {
    private var taken: UInt64 = 0
    private var stalledSince: ContinuousClock.Instant?

    /// Records a reading taken at `now`; returns how long the client has taken nothing
    /// while bytes waited for it (zero if it took some since the last reading, or if
    /// nothing waits).
    mutating func observe(taken: UInt64, waiting: Bool, at now: ContinuousClock.Instant) -> Duration {
        guard waiting, taken == self.taken else {
            self.taken = taken
            stalledSince = nil
            return .zero
        }
        let since = stalledSince ?? now
        stalledSince = since
        return now - since
    }
}
