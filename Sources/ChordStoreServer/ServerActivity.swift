import Synchronization

/// Counts of a server's connections and calls in flight, shared by its connections:
/// the connection limit and graceful shutdown read them.
final class ServerActivity: Sendable {
    private let connections = Atomic(0)
    private let calls = Atomic(0)
    private let draining = Atomic(false)
    private let slowReaders = Atomic(0)

    /// Set at shutdown: new calls are refused with `UNAVAILABLE`.
    var isDraining: Bool { draining.load(ordering: .relaxed) }
    func startDraining() { draining.store(true, ordering: .relaxed) }

    /// Takes a connection slot if fewer than `limit` are taken.
    func admitConnection(limit: Int) -> Bool {
        var current = connections.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = connections.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func connectionClosed() { connections.subtract(1, ordering: .relaxed) }
    func callStarted() { calls.add(1, ordering: .relaxed) }
    func callEnded() { calls.subtract(1, ordering: .relaxed) }

    func slowReaderCut() { slowReaders.add(1, ordering: .relaxed) }
    /// Streams ended because their reader fell behind, since the server started.
    var slowReadersCut: Int { slowReaders.load(ordering: .relaxed) }

    /// Connections open now.
    var openConnections: Int { connections.load(ordering: .relaxed) }
    /// Calls in flight now, over all connections.
    var callsInFlight: Int { calls.load(ordering: .relaxed) }
}
