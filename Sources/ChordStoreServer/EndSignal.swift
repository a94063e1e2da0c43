public import ChordStoreWire
import Synchronization

/// Ends a call from outside its work, once, with a status: what a revocation of the
/// call's token does to a call of the gRPC and HTTP endpoints (``CallBounds``).
public final class EndSignal: Sendable {
    private let signal = OneShotSignal()
    private let status = Mutex<WireError?>(nil)

    /// A signal that has not fired.
    public init() {}

    /// Ends the call with `error` (only the first one counts).
    public func fire(_ error: WireError) {
        let first = status.withLock { status in
            guard status == nil else { return false }
            status = error
            return true
        }
        if first { signal.fire() }
    }

    /// The status the call ends with, once the signal fired (`nil`: the task was
    /// cancelled first).
    public func wait() async -> WireError? {
        await signal.wait()
        return status.withLock { $0 }
    }
}
