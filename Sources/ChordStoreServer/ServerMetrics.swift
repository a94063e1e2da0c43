public import ChordStoreAPI
public import CoreMetrics
import ChordStoreEngine
import ChordStoreDomain
import ChordStoreWire
import Synchronization

/// What the server records of its calls through swift-metrics, into one factory
/// (Prometheus on the HTTP endpoint, a test double in tests): calls by method and status
/// code, the latency of unary calls by method, and failed authentications. Handles are
/// made once per label set and kept, so a call costs a dictionary lookup under a lock and
/// the increments.
public final class ServerMetrics: Sendable {
    private struct CallKey: Hashable {
        var method: Method?
        var code: StatusCode
    }

    private let factory: any MetricsFactory
    private let counters = Mutex<[CallKey: Counter]>([:])
    private let timers = Mutex<[Method: CoreMetrics.Timer]>([:])
    private let failedAuthentications: Counter

    /// Records into `factory`.
    public init(factory: any MetricsFactory) {
        self.factory = factory
        failedAuthentications = Counter(label: "chordstore_failed_authentications_total", dimensions: [], factory: factory)
    }

    /// The `method` label of a method: its name without the service (`AddChordset`), or
    /// `unknown` for a name no method has (a client cannot add labels at will).
    public static func label(_ method: Method?) -> String {
        guard let method else { return "unknown" }
        return String(method.rawValue.split(separator: "/").last ?? "unknown")
    }

    /// A call of `method` ended with `code`; `duration` is its time from start to its
    /// final reply (`nil` for streams, whose length is not a latency).
    func callEnded(_ method: Method?, code: StatusCode, duration: Duration?) {
        let key = CallKey(method: method, code: code)
        let counter = counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(
                label: "chordstore_calls_total", dimensions: [("method", Self.label(method)), ("code", "\(code)")], factory: factory)
            counters[key] = counter
            return counter
        }
        counter.increment()
        guard let method, let duration else { return }
        let timer = timers.withLock { timers in
            if let timer = timers[method] { return timer }
            let timer = CoreMetrics.Timer(label: "chordstore_call_seconds", dimensions: [("method", Self.label(method))], factory: factory)
            timers[method] = timer
            return timer
        }
        timer.recordNanoseconds(duration.nanoseconds)
    }

    /// A call's credential was refused.
    func authenticationFailed() {
        failedAuthentications.increment()
    }
}
