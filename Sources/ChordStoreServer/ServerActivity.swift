import ChordStoreAPI
import ChordStoreEngine
import ChordStoreWire
import Synchronization

/// What a server's connections share: their admission (``ConnectionAdmission``), the
/// calls in flight (graceful shutdown waits for them), the budget of request bytes
/// buffered in partial frames, and counters for tests and operators.
final class ServerActivity: Sendable {
    private let admission: Mutex<ConnectionAdmission>
    /// Unary calls in flight (a drain waits for these).
    private let unary = Atomic(0)
    /// Server streams in flight, by method (they end when a drain starts).
    private let streams = Mutex<[Method: Int]>([:])
    private let streamCount = Atomic(0)
    private let draining = Atomic(false)
    /// A drain waiting for the calls to end (the goal: streams included).
    private let idle = Waiters<Bool, Bool>()
    private let slowReaders = Atomic(0)
    private let socketWaits = Atomic(0)
    private let buffered = Atomic(0)
    /// Fired when the server starts draining: the streams of every endpoint end.
    let drainStarted = OneShotSignal()
    /// Fired when the drain's grace period is over: the unary calls of every endpoint
    /// still running end.
    let graceOver = OneShotSignal()
    /// Gives memory back to the system after connections close and streams end.
    let trimmer = MemoryTrimmer()
    /// The most request bytes that partial frames may hold, over all connections.
    let maxBufferedBytes: Int

    init(limits: WireLimits) {
        admission = Mutex(ConnectionAdmission(
            maxConnections: limits.maxConnections, maxPerAddress: limits.maxConnectionsPerAddress,
            maxUnauthenticated: limits.unauthenticatedConnections))
        maxBufferedBytes = limits.maxBufferedBytes
    }

    /// Set at shutdown: new calls are refused with `UNAVAILABLE` (but acknowledgements of
    /// replication, which the calls in flight may wait for).
    var isDraining: Bool { draining.load(ordering: .sequentiallyConsistent) }
    func startDraining() { draining.store(true, ordering: .sequentiallyConsistent) }

    /// Returns `true` once no unary call (and with `streams`, no stream either) is in
    /// flight, or `false` when `timeout` passes first. Woken by the last call's end (once
    /// draining started), not polled.
    func waitForCalls(streams: Bool, timeout: Duration) async -> Bool {
        await idle.wait(for: streams, timeout: timeout, otherwise: false) { isIdle($0) ? true : nil }
    }

    private func isIdle(_ streams: Bool) -> Bool {
        unary.load(ordering: .sequentiallyConsistent) == 0 && (!streams || streamCount.load(ordering: .sequentiallyConsistent) == 0)
    }

    /// Takes a slot for connection `id` from `address` (perhaps closing an
    /// unauthenticated one for it), or says why not.
    func admitConnection(_ id: Int, from address: String) -> ConnectionAdmission.Admission {
        admission.withLock { $0.admit(address, id: id) }
    }

    /// Whether connection `id` still holds its slot (it was not evicted).
    func holdsConnection(_ id: Int) -> Bool { admission.withLock { $0.holds(id) } }

    /// Connection `id` showed a valid credential.
    func connectionAuthenticated(_ id: Int) { admission.withLock { $0.authenticated(id) } }

    /// Gives back the slot of connection `id`.
    func connectionClosed(_ id: Int) { admission.withLock { $0.release(id) } }

    /// A call of `method` started; `stream` tells a server stream from a unary call.
    func callStarted(_ method: Method, stream: Bool) {
        if stream {
            streamCount.add(1, ordering: .sequentiallyConsistent)
            streams.withLock { $0[method, default: 0] += 1 }
        } else {
            unary.add(1, ordering: .sequentiallyConsistent)
        }
    }

    /// A call of `method` ended (its task is done).
    func callEnded(_ method: Method, stream: Bool) {
        if stream {
            streams.withLock { $0[method, default: 1] -= 1 }
            streamCount.subtract(1, ordering: .sequentiallyConsistent)
        } else {
            unary.subtract(1, ordering: .sequentiallyConsistent)
        }
        // All sequentially consistent: either this sees the drain, or the drain's check
        // sees the call gone.
        if isDraining { idle.resume { isIdle($0) ? true : nil } }
    }

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
    func streamWaitedForSocket() { socketWaits.add(1, ordering: .relaxed) }
    /// Times a stream waited for its client to take what was sent, since the server started.
    var streamSocketWaits: Int { socketWaits.load(ordering: .relaxed) }
    /// Streams ended because their reader fell behind, since the server started.
    var slowReadersCut: Int { slowReaders.load(ordering: .relaxed) }

    /// Connections open now.
    var openConnections: Int { admission.withLock { $0.total } }
    /// Calls in flight now, over all connections.
    var callsInFlight: Int { unary.load(ordering: .relaxed) + streamCount.load(ordering: .relaxed) }
    /// Server streams in flight now, by method.
    var streamsInFlight: [Method: Int] { streams.withLock { $0 } }
    /// Request bytes reserved by partial frames now.
    var bufferedBytes: Int { buffered.load(ordering: .relaxed) }
}
