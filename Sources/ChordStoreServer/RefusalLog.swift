import ChordStoreWire
import Logging
import Synchronization

/// Logs refused connections without flooding the log: the first refusal at once, then
/// at most one line every 5 s counting those in between (a flood of connections from
/// one address would otherwise write a line per connection).
final class RefusalLog: Sendable {
    private struct State {
        var lastLogged: ContinuousClock.Instant?
        var unlogged = 0
    }

    private let logger: Logger
    private let state = Mutex(State())
    static let interval: Duration = .seconds(5)

    init(logger: Logger) { self.logger = logger }

    func note(_ refusal: ConnectionAdmission.Refusal, from address: String, limits: WireLimits, at now: ContinuousClock.Instant = .now) {
        let skipped = state.withLock { state -> Int? in
            if let last = state.lastLogged, now - last < Self.interval {
                state.unlogged += 1
                return nil
            }
            defer {
                state.lastLogged = now
                state.unlogged = 0
            }
            return state.unlogged
        }
        guard let skipped else { return }
        let reason = switch refusal {
        case .full: "the server holds \(limits.maxConnections) connections, its limit"
        case .perAddress: "\(address) holds \(limits.maxConnectionsPerAddress) connections, the limit per address"
        case .reserved: "only the connections kept for new addresses are left, and \(address) holds some"
        }
        logger.warning("refused a connection", metadata: [
            "from": "\(address)", "reason": "\(reason)", "refused since the last report": "\(skipped)",
        ])
    }
}
