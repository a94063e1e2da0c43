@testable import ChordStoreServer
import ChordStoreWire
import Testing

/// The quota of streams and live queries per token and per store.
@Suite("Call quota (pure)")
struct CallQuotaTests {
    @Test("one token cannot take every live query or stream, nor one store's tokens; slots come back")
    func quota() {
        var limits = WireLimits()
        limits.maxLiveQueries = 10
        limits.maxLiveQueriesPerToken = 3
        limits.maxLiveQueriesPerStore = 5
        limits.maxStreamsPerToken = 4
        limits.maxStreamsPerStore = 7
        var quota = CallQuota(limits: limits)
        for _ in 0..<3 { #expect(quota.take(.liveQuery, token: "t1", store: "a") == nil) }
        #expect(quota.take(.liveQuery, token: "t1", store: "a")?.message.contains("--max-live-queries-per-token") == true)
        #expect(quota.take(.stream, token: "t1", store: "a") == nil)
        #expect(quota.take(.stream, token: "t1", store: "a")?.message.contains("--max-streams-per-token") == true, "4 streams, live queries included")
        for _ in 0..<2 { #expect(quota.take(.liveQuery, token: "t2", store: "a") == nil) }
        #expect(quota.take(.liveQuery, token: "t3", store: "a")?.message.contains("--max-live-queries-per-store") == true)
        #expect(quota.take(.stream, token: "t3", store: "a") == nil, "the store's 7th stream")
        #expect(quota.take(.stream, token: "t4", store: "a")?.message.contains("--max-streams-per-store") == true)
        // Another store's token is not locked out by store a.
        #expect(quota.take(.liveQuery, token: "admin", store: "b") == nil)
        #expect(quota.take(.liveQuery, token: nil, store: "c") == nil)
        quota.release(.liveQuery, token: "t1", store: "a")
        #expect(quota.take(.liveQuery, token: "t2", store: "a") == nil, "a released slot is taken again")
        for store in ["d", "e", "f"] { #expect(quota.take(.liveQuery, token: nil, store: store) == nil) }
        #expect(quota.take(.liveQuery, token: nil, store: "g")?.message.contains("--max-live-queries)") == true, "10 in all")
        let held: [(String, CallQuota.Kind)] = [
            ("t1", .liveQuery), ("t1", .liveQuery), ("t1", .stream), ("t2", .liveQuery), ("t2", .liveQuery), ("t2", .liveQuery), ("t3", .stream),
        ]
        for (token, kind) in held { quota.release(kind, token: token, store: "a") }
        #expect(quota.streamsByToken["t1"] == nil && quota.streamsByToken["t2"] == nil && quota.streamsByToken["t3"] == nil)
        #expect(quota.liveQueriesByStore["a"] == nil && quota.streamsByStore["a"] == nil && quota.liveQueries == 5)
        #expect(CallQuota.kind(of: .watchQuery) == .liveQuery && CallQuota.kind(of: .subscribe) == .stream && CallQuota.kind(of: .replicate) == nil)
    }
}
