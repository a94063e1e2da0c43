import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreProto
import ChordStoreServer
import ChordStoreWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

/// What one client can hold of the server, and how fast a revoked token lets go
/// (docs/SECURITY.md, docs/PROTOCOL.md §6): slots of strangers, streams and live queries
/// per token and per store, and the calls of a revoked token, over the framed port and
/// the call runner the gRPC and HTTP endpoints share.
@Suite("Hoarding and revocation")
struct HoardingTests {
    static var secured: ServerSecurity { SecurityTests.secured }
    static let admin = ClientCredentials(token: SecurityTests.adminSecret)

    /// A server with stores `a` and `b`, and a read-only token of `a`.
    static func start(_ limits: WireLimits = WireLimits()) async throws -> (TestServer, readOnly: String) {
        let server = try await TestServer.start(limits: limits, security: secured)
        let setup = try await Connection.connect(host: "127.0.0.1", port: server.port, credentials: admin)
        for name in ["a", "b"] {
            _ = try await setup.call(.createStore, Chordstore_V1_CreateStoreRequest.with { $0.name = name }, as: Chordstore_V1_StoreInfo.self)
        }
        let secret = try await setup.call(.createToken, Chordstore_V1_CreateTokenRequest.with {
            $0.role = .readOnly
            $0.store = "a"
        }, as: Chordstore_V1_CreatedToken.self).secret
        await setup.close()
        return (server, secret)
    }

    @Test("strangers from six addresses keeping connections alive with Health hold a small share of the slots; a client with a token always gets in")
    func strangersCannotHoldEveryConnection() async throws {
        var limits = WireLimits()
        limits.maxConnections = 32
        let (server, _) = try await Self.start(limits)
        defer { Task { await server.stop() } }
        var strangers: [RawClient] = []
        for _ in 0..<6 {
            for host in 2...7 {
                let stranger = try RawClient(port: server.port, source: "127.0.0.\(host)")
                try stranger.call(1, Method.health.rawValue, Chordstore_V1_HealthRequest())
                strangers.append(stranger)
            }
        }
        // 36 strangers connected: they hold an eighth of the 32 slots at most.
        let share = limits.unauthenticatedConnections
        #expect(share == 4)
        #expect(await eventually(timeout: .seconds(5)) { server.server.openConnections <= share })
        // The admin gets in, at once, every time.
        for attempt in 0..<3 {
            let admin = try await Connection.connect(host: "127.0.0.1", port: server.port, credentials: Self.admin)
            let profile: Chordstore_V1_Profile = try await admin.call(.getProfile, Chordstore_V1_GetProfileRequest(), timeout: .seconds(5))
            #expect(profile.chordsets == 0, "attempt \(attempt)")
            // Strangers keep coming: the proven connection keeps its slot.
            for host in 2...7 { strangers.append(try RawClient(port: server.port, source: "127.0.0.\(host)")) }
            let again: Chordstore_V1_Profile = try await admin.call(.getProfile, Chordstore_V1_GetProfileRequest(), timeout: .seconds(5))
            #expect(again.chordsets == 0)
        }
        // The oldest strangers were closed, saying why.
        let evicted = try await strangers[0].readUntilClosed()
        #expect(evicted?.status.code == StatusCode.unavailable.rawValue && evicted?.status.message.contains("credential") == true, "\(String(describing: evicted))")
    }

    @Test("a connection that shows no valid credential within the unauthenticated timeout is closed, Health or not")
    func unauthenticatedTimeout() async throws {
        var limits = WireLimits()
        // Long enough for the admin's connection and first call on a busy machine (at
        // 300 ms a parallel run once closed it before that call arrived).
        limits.unauthenticatedTimeout = .seconds(1)
        let (server, _) = try await Self.start(limits)
        defer { Task { await server.stop() } }
        let stranger = try RawClient(port: server.port)
        try stranger.call(1, Method.health.rawValue, Chordstore_V1_HealthRequest())
        let closed = try await stranger.readUntilClosed()
        #expect(closed?.status.code == StatusCode.unauthenticated.rawValue, "\(String(describing: closed))")
        // A connection whose first call shows a valid credential stays open past the
        // timeout. On a loaded machine that first call can itself come later than the
        // timeout, which then closes the connection (rightly): connected again, then.
        var admin = try await Connection.connect(host: "127.0.0.1", port: server.port, credentials: Self.admin)
        var attempts = 1
        while true {
            let failure: ClientError
            do {
                _ = try await admin.call(.getProfile, Chordstore_V1_GetProfileRequest(), as: Chordstore_V1_Profile.self)
                break
            } catch {
                failure = error
            }
            guard failure.code == .unavailable, attempts < 5 else { throw failure }
            attempts += 1
            await admin.close()
            admin = try await Connection.connect(host: "127.0.0.1", port: server.port, credentials: Self.admin)
        }
        try await Task.sleep(for: .milliseconds(1_500))
        _ = try await admin.call(.getProfile, Chordstore_V1_GetProfileRequest(), as: Chordstore_V1_Profile.self)
        await admin.close()
    }

    @Test("one token cannot take every live query: past its share it is refused, on the framed port and the other endpoints alike, and the admin's live query on another store runs")
    func liveQueriesPerToken() async throws {
        var limits = WireLimits()
        limits.maxLiveQueries = 8
        limits.maxLiveQueriesPerToken = 3
        let (server, readOnly) = try await Self.start(limits)
        defer { Task { await server.stop() } }
        let hoarder = try await Connection.connect(host: "127.0.0.1", port: server.port, store: "a", credentials: ClientCredentials(token: readOnly))
        var held: [ServerStream<Chordstore_V1_QueryUpdate>.AsyncIterator] = []
        for _ in 0..<3 {
            var updates = try await hoarder.stream(.watchQuery, Chordstore_V1_QueryRequest(), as: Chordstore_V1_QueryUpdate.self).makeAsyncIterator()
            #expect(try await updates.next()?.isInitial == true)
            held.append(updates)
        }
        var refused = try await hoarder.stream(.watchQuery, Chordstore_V1_QueryRequest(), as: Chordstore_V1_QueryUpdate.self).makeAsyncIterator()
        let error = await #expect(throws: ClientError.self) { _ = try await refused.next() }
        #expect(error?.code == .resourceExhausted && error?.message.contains("--max-live-queries-per-token") == true, "\(String(describing: error))")
        // The same token through the executor, as the gRPC and HTTP endpoints call it: the same share.
        let executor = server.server.callExecutor
        let call = try await executor.admit(
            .watchQuery, metadata: ["authorization": "Bearer \(readOnly)"], store: "a", minSequence: 0, peer: CallPeer(address: "127.0.0.1", port: 1))
        let viaExecutor = await #expect(throws: WireError.self) {
            try await executor.stream(call, payload: .bytes(Data())) { _ throws(WireError) in }
        }
        #expect(viaExecutor?.code == .resourceExhausted)
        // The admin's live query on store b is not locked out.
        let admin = try await Connection.connect(host: "127.0.0.1", port: server.port, store: "b", credentials: Self.admin)
        var adminUpdates = try await admin.stream(.watchQuery, Chordstore_V1_QueryRequest(), as: Chordstore_V1_QueryUpdate.self).makeAsyncIterator()
        #expect(try await adminUpdates.next()?.isInitial == true)
        await admin.close()
        await hoarder.close()
        _ = held
    }

    @Test("a revoked token's idle live query and min_sequence reads end at once with UNAUTHENTICATED, on the framed port and through the call runner")
    func revocationEndsIdleCalls() async throws {
        let (server, readOnly) = try await Self.start()
        defer { Task { await server.stop() } }
        let token = ClientCredentials(token: readOnly)
        let victim = try await Connection.connect(host: "127.0.0.1", port: server.port, store: "a", credentials: token)
        let stream = try await victim.stream(.watchQuery, Chordstore_V1_QueryRequest(), as: Chordstore_V1_QueryUpdate.self)
        let watch = Task {
            var updates = 0
            for try await _ in stream { updates += 1 }
            return updates
        }
        let waiting = Task {
            try await victim.call(.getProfile, Chordstore_V1_GetProfileRequest(), timeout: .seconds(20), minSequence: 99, as: Chordstore_V1_Profile.self)
        }
        // The same token's waiting read through the executor, as the gRPC and HTTP endpoints call it.
        let executor = server.server.callExecutor
        let call = try await executor.admit(
            .getProfile, metadata: ["authorization": "Bearer \(readOnly)"], store: "a", minSequence: 99, peer: CallPeer(address: "127.0.0.1", port: 2))
        let viaRunner = Task { try await executor.unary(call, payload: .bytes(Data())) }
        try await Task.sleep(for: .milliseconds(300))  // every call is waiting
        let id = String(readOnly.split(separator: ".")[1])
        let admin = try await Connection.connect(host: "127.0.0.1", port: server.port, credentials: Self.admin)
        _ = try await admin.call(.revokeToken, Chordstore_V1_RevokeTokenRequest.with { $0.tokenID = id }, as: Chordstore_V1_RevokeTokenReply.self)
        let revoked = ContinuousClock.now
        let watchEnd = await #expect(throws: ClientError.self) { _ = try await within(.seconds(5)) { try await watch.value } }
        #expect(watchEnd?.code == .unauthenticated, "\(String(describing: watchEnd))")
        let readEnd = await #expect(throws: ClientError.self) { _ = try await within(.seconds(5)) { try await waiting.value } }
        #expect(readEnd?.code == .unauthenticated, "\(String(describing: readEnd))")
        let runnerEnd = await #expect(throws: WireError.self) { _ = try await within(.seconds(5)) { try await viaRunner.value } }
        #expect(runnerEnd?.code == .unauthenticated, "\(String(describing: runnerEnd))")
        // The store has no next event, and the waiting read's deadline is 20 s: the bound leaves a loaded machine room.
        #expect(ContinuousClock.now - revoked < .seconds(5), "ended at once, not at the store's next event")
        let settled = await eventually(timeout: .seconds(2)) { server.server.callsInFlight == 0 }
        #expect(settled, "the revoked calls' work ended too")
        await admin.close()
        await victim.close()
    }
}
