import ChordStoreWire
import Synchronization

/// What a server's connections share: their admission (``ConnectionAdmission``), the
/// calls in flight (graceful shutdown waits for them), the budget of request bytes
/// buffered in partial frames, and counters for tests and operators.
final class ServerActivity: Sendable {
    private let admission: Mutex<ConnectionAdmission>
    private let calls = Atomic(0)
    private let draining = Atomic(false)
    private let slowReaders = Atomic(0)
    private let buffered = Atomic(0)
    /// Gives memory back to the system after connections close and streams end.
    let trimmer = MemoryTrimmer()
    /// The most request bytes that partial frames may hold, over all connections.
    let maxBufferedBytes: Int

    init(limits: WireLimits) {
        admission = Mutex(ConnectionAdmission(maxConnections: limits.maxConnections, maxPerAddress: limits.maxConnectionsPerAddress))
        maxBufferedBytes = limits.maxBufferedBytes
    }

    /// Set at shutdown: new calls are refused with `UNAVAILABLE`.
    var isDraining: Bool { draining.load(ordering: .relaxed) }
    func startDraining() { draining.store(true, ordering: .relaxed) }

    /// Takes a connection slot for `address`, or says why not.
    func admitConnection(from address: String) -> ConnectionAdmission.Refusal? {
        admission.withLock { $0.admit(address) }
    }

    /// Gives back the slot of a connection from `address`.
    func connectionClosed(from address: String) { admission.withLock { $0.release(address) } }

    func callStarted() { calls.add(1, ordering: .relaxed) }
    func callEnded() { calls.subtract(1, ordering: .relaxed) }

    /// Reserves `bytes` of the buffered-bytes budget for a frame in progress; `false` if
    /// the budget cannot hold them.
    func reserveBuffered(_ bytes: Int) -> Bool {
        var current = buffered.load(ordering: .relaxed)
        while current + bytes <= maxBufferedBytes {
            let (exchanged, original) = buffered.compareExchange(
                expected: current, desired: current + bytes, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives back `bytes` of the budget (the frame completed, or its connection closed).
    func releaseBuffered(_ bytes: Int) { buffered.subtract(bytes, ordering: .relaxed) }

    func slowReaderCut() { slowReaders.add(1, ordering: .relaxed) }
    /// Streams ended because their reader fell behind, since the server started.
    var slowReadersCut: Int { slowReaders.load(ordering: .relaxed) }

    /// Connections open now.
    var openConnections: Int { admission.withLock { $0.total } }
    /// Calls in flight now, over all connections.
    var callsInFlight: Int { calls.load(ordering: .relaxed) }
    /// Request bytes reserved by partial frames now.
    var bufferedBytes: Int { buffered.load(ordering: .relaxed) }
}
