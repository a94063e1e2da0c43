import ChordStoreAPI
import ChordStoreDomain
import ChordStoreWire

/// How much of the server's streams one token and one store may hold at once
/// (docs/PROTOCOL.md §6): server streams (`Subscribe`, `ReadLog`, `WatchQuery`) per token
/// and per store, live queries (`WatchQuery`) per token, per store and in all. So one
/// token, or the tokens of one store, cannot take every slot and lock the others out. A
/// pure value: ``LiveCalls`` keeps it under a lock.
struct CallQuota: Sendable {
    /// What a call holds while it runs.
    enum Kind: Sendable, Hashable {
        /// A server stream.
        case stream
        /// A live query (a stream too, and counted as one).
        case liveQuery
    }

    let limits: WireLimits
    private(set) var streamsByToken: [String: Int] = [:]
    private(set) var streamsByStore: [String: Int] = [:]
    private(set) var liveQueriesByToken: [String: Int] = [:]
    private(set) var liveQueriesByStore: [String: Int] = [:]
    private(set) var liveQueries = 0

    init(limits: WireLimits) {
        self.limits = limits
    }

    /// The kind a call of `method` holds (`nil`: none counted).
    static func kind(of method: Method) -> Kind? {
        switch method {
        case .watchQuery: .liveQuery
        case .subscribe, .readLog: .stream
        default: nil
        }
    }

    /// Takes a slot of `kind` for a call of `token` (`nil`: no token, as with `--auth
    /// none`) on `store` (resolved), or says why not (`RESOURCE_EXHAUSTED`).
    mutating func take(_ kind: Kind, token: String?, store: String) -> WireError? {
        if let token, streamsByToken[token, default: 0] >= limits.maxStreamsPerToken {
            return WireError(.resourceExhausted, "token \(token) holds \(limits.maxStreamsPerToken) streams, its limit (--max-streams-per-token)")
        }
        if streamsByStore[store, default: 0] >= limits.maxStreamsPerStore {
            return WireError(.resourceExhausted, "store \(store) has \(limits.maxStreamsPerStore) streams open, its limit (--max-streams-per-store)")
        }
        if kind == .liveQuery {
            if let token, liveQueriesByToken[token, default: 0] >= limits.maxLiveQueriesPerToken {
                return WireError(
                    .resourceExhausted, "token \(token) runs \(limits.maxLiveQueriesPerToken) live queries, its limit (--max-live-queries-per-token)")
            }
            if liveQueriesByStore[store, default: 0] >= limits.maxLiveQueriesPerStore {
                return WireError(
                    .resourceExhausted, "store \(store) has \(limits.maxLiveQueriesPerStore) live queries running, its limit (--max-live-queries-per-store)")
            }
            if liveQueries >= limits.maxLiveQueries {
                return WireError(.resourceExhausted, "the server runs \(limits.maxLiveQueries) live queries, its limit (--max-live-queries)")
            }
            liveQueries += 1
            liveQueriesByStore[store, default: 0] += 1
            if let token { liveQueriesByToken[token, default: 0] += 1 }
        }
        streamsByStore[store, default: 0] += 1
        if let token { streamsByToken[token, default: 0] += 1 }
        return nil
    }

    /// Gives back a slot taken with ``take(_:token:store:)``.
    mutating func release(_ kind: Kind, token: String?, store: String) {
        Self.decrement(&streamsByStore, store)
        if let token { Self.decrement(&streamsByToken, token) }
        guard kind == .liveQuery else { return }
        liveQueries -= 1
        Self.decrement(&liveQueriesByStore, store)
        if let token { Self.decrement(&liveQueriesByToken, token) }
    }

    /// Counts one less under `key`, forgetting keys that reach zero (the maps hold only
    /// what is open).
    private static func decrement(_ counts: inout [String: Int], _ key: String) {
        guard let count = counts[key] else { return }
        counts[key] = count > 1 ? count - 1 : nil
    }
}
